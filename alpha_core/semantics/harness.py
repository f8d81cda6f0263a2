"""Build LLVM modules into host shared libraries, for differential testing of recipes.

The semantics tests must run the *compiled* recipes — optimised at O3 and vectorised,
exactly as the code generator will use them — and compare their bits with the NumPy
reference.  This module is the smallest path from an ``ir.Module`` to a callable: verify,
optimise with the new pass manager, emit an object for the host, link a shared library
with ``python -m ziglang cc`` and load it with ``ctypes``.  It is a test aid, not the
project's linker (that lives in ``alpha_core.link``).
"""

from __future__ import annotations

import ctypes
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir

_initialised = False


def init_llvm() -> None:
    """Initialise LLVM's targets once (``llvm.initialize()`` raises in llvmlite 0.50)."""
    global _initialised
    if not _initialised:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _initialised = True


def host_target_machine(cpu: str | None = None, features: str | None = None) -> Any:
    """An O3, PIC, default-code-model target machine for the running process.

    By default it uses the host CPU and its features (so the vectoriser uses the widest
    vectors and FMA instructions are *available* — the point is to show LLVM does not use
    them to fuse our separately rounded operations).
    """
    init_llvm()
    triple = llvm.get_process_triple()
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name() if cpu is None else cpu,
        features=llvm.get_host_cpu_features().flatten() if features is None else features,
        opt=3,
        reloc="pic",
        codemodel="default",
    )


def target_machine(triple: str, cpu: str = "", features: str = "") -> Any:
    """An O3, PIC, default-code-model target machine for any triple LLVM knows."""
    init_llvm()
    return llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=3, reloc="pic", codemodel="default"
    )


def optimise(module: ir.Module | str, tm: Any) -> Any:
    """Parse, verify and optimise (O3, new pass builder) a module; returns a ModuleRef."""
    init_llvm()
    mod = llvm.parse_assembly(str(module))
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    mod.verify()
    return mod


def _zig_target() -> str:
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return f"{arch}-linux-gnu"


def build_shared(module: ir.Module | str, out_dir: Path, name: str = "kernels") -> Path:
    """Compile ``module`` for the host and link it into ``out_dir/lib<name>.so``."""
    tm = host_target_machine()
    mod = optimise(module, tm)
    out_dir.mkdir(parents=True, exist_ok=True)
    obj = out_dir / f"{name}.o"
    obj.write_bytes(tm.emit_object(mod))
    (out_dir / f"{name}.opt.ll").write_text(str(mod))
    lib = out_dir / f"lib{name}.so"
    cmd = [sys.executable, "-m", "ziglang", "cc", "-shared", "-target", _zig_target()]
    subprocess.run([*cmd, str(obj), "-o", str(lib)], check=True, env=dict(os.environ))
    return lib


def emit_unary_kernel(module: ir.Module, name: str, fn: ir.Function) -> ir.Function:
    """Export ``void name(const float* x, float* y, i64 n)`` applying ``fn`` elementwise."""
    f32, i64, ptr = ir.FloatType(), ir.IntType(64), ir.PointerType()
    kernel = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, i64]), name=name)
    x, y, n = kernel.args
    entry = kernel.append_basic_block("entry")
    loop = kernel.append_basic_block("loop")
    done = kernel.append_basic_block("done")
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed(">", n, ir.Constant(i64, 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(i64, name="i")
    i.add_incoming(ir.Constant(i64, 0), entry)
    v = b.load(b.gep(x, [i], source_etype=f32), typ=f32, align=4)
    b.store(b.call(fn, [v]), b.gep(y, [i], source_etype=f32), align=4)
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)
    b.ret_void()
    return kernel


def unary_caller(lib: ctypes.CDLL, name: str) -> Callable[[Any], Any]:
    """Wrap an exported unary kernel as ``f(float32 array) -> float32 array``."""
    import numpy as np

    cfn = getattr(lib, name)
    cfn.restype = None
    cfn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]

    def call(x: Any) -> Any:
        xs = np.ascontiguousarray(x, dtype=np.float32)
        if xs.dtype != np.float32:
            raise TypeError("float32 input required")
        ys = np.empty_like(xs)
        cfn(xs.ctypes.data, ys.ctypes.data, xs.size)
        return ys

    return call
