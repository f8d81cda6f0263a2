"""Alpha's numeric semantics: primitive arithmetic, math recipes and the initialiser.

One specification, two implementations: recipes are written once against
:class:`~alpha_core.semantics.arith.Arith` and interpreted either by NumPy (the reference)
or by llvmlite (the compiler), which therefore agree bit for bit.
"""

from alpha_core.semantics.arith import Arith, Arith64
from alpha_core.semantics.llvm_arith import LlvmArith
from alpha_core.semantics.mathfuncs import (
    MAX_ULP,
    RECIPES,
    emit_math_functions,
    numpy_math,
)
from alpha_core.semantics.numpy_arith import NumpyArith
from alpha_core.semantics.rng import emit_init, emit_init_function, numpy_init, numpy_uniform01

__all__ = [
    "MAX_ULP",
    "RECIPES",
    "Arith",
    "Arith64",
    "LlvmArith",
    "NumpyArith",
    "emit_init",
    "emit_init_function",
    "emit_math_functions",
    "numpy_init",
    "numpy_math",
    "numpy_uniform01",
]
