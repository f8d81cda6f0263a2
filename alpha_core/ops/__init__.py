"""The operation table (ops/table.py) and the shape rules it names (ops/shapes.py): what every
phase does with each graph op, as data. Importable without llvmlite."""

from alpha_core.ops.table import (
    BINARY_OPERATORS,
    BOUND,
    BUILTINS,
    GPU_REFUSAL,
    GPU_SUPPORTED,
    IS_ADJOINT,
    LEAF,
    NO_ADJOINT_RULE,
    NOT_DIFFERENTIABLE,
    OPS,
    REF_EVALUATE,
    REF_LAYERS,
    ROW_WISE,
    Builtin,
    Op,
    builtins_of,
    op,
    ops_where,
)

__all__ = [
    "BINARY_OPERATORS",
    "BOUND",
    "BUILTINS",
    "GPU_REFUSAL",
    "GPU_SUPPORTED",
    "IS_ADJOINT",
    "LEAF",
    "NO_ADJOINT_RULE",
    "NOT_DIFFERENTIABLE",
    "OPS",
    "REF_EVALUATE",
    "REF_LAYERS",
    "ROW_WISE",
    "Builtin",
    "Op",
    "builtins_of",
    "op",
    "ops_where",
]
