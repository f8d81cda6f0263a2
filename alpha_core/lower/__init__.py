"""Lowering decisions with no code generation: live nodes, the GEMM's blocking tables, the leaf
kernel's batching, the one canonical combine tree, and which ops a GPU role computes. Asked by
admission and by the code generators alike, so checking a file never loads LLVM."""
