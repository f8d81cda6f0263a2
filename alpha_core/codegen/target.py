"""Host targets and turning an LLVM module into object code for one of them."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir


@dataclass(frozen=True)
class HostTarget:
    name: str  # as a pairing spells it
    triple: str  # LLVM
    zig: str  # zig cc -target
    cpu: str
    features: str


TARGETS = {
    # x86-64-v2 (SSE4.2) runs on every x86-64 server of the last decade; vector width never
    # changes the bits, since only independent outputs are computed side by side.
    "x86_64": HostTarget(
        "x86_64", "x86_64-unknown-linux-musl", "x86_64-linux-musl", "x86-64-v2", ""
    ),
    "aarch64": HostTarget(
        "aarch64", "aarch64-unknown-linux-musl", "aarch64-linux-musl", "generic", "+neon"
    ),
}


@functools.cache
def _init() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def _machine(target: HostTarget) -> llvm.TargetMachine:
    _init()
    t = llvm.Target.from_triple(target.triple)
    return t.create_target_machine(
        cpu=target.cpu, features=target.features, opt=3, reloc="pic", codemodel="default"
    )


def optimized_ir(module: ir.Module, target: HostTarget) -> llvm.ModuleRef:
    tm = _machine(target)
    mod = llvm.parse_assembly(str(module))
    mod.triple = target.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def object_code(module: ir.Module, target: HostTarget) -> bytes:
    """Verified, optimised at O3 (no fast-math anywhere), emitted as an ELF object."""
    mod = optimized_ir(module, target)
    return bytes(_machine(target).emit_object(mod))
