"""LLVM code generation (llvmlite): kernels for the runtime, object code per target."""
