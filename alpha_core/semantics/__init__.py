"""Alpha's numeric semantics: primitive arithmetic, math recipes and the initialiser.

One specification, two implementations: recipes are written once against
:class:`~alpha_core.semantics.arith.Arith` and interpreted either by NumPy (the reference)
or by llvmlite (the compiler), which therefore agree bit for bit. The package imports nothing
itself, so checking a file never loads llvmlite: the compiler imports `llvm_arith` where it
emits code.
"""
