"""Register tiles and cache blocks of the GEMM (gemm.py), per vector width."""

from __future__ import annotations

import functools

import llvmlite.binding as llvm

from alpha_core.lower.blocking import Blocking, blocking_for

_PROBE = """
define void @probe(ptr %p) {
  %v = load <16 x float>, ptr %p, align 64
  %w = fadd <16 x float> %v, %v
  store <16 x float> %w, ptr %p, align 64
  ret void
}
"""


@functools.cache
def vector_width(triple: str, cpu: str, features: str) -> int:
    """Float lanes of the widest vector register LLVM uses for this CPU: the width of the
    registers a 16-lane add compiles to (zmm 16, ymm 8, otherwise 4)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    tm = llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=2, reloc="pic", codemodel="default"
    )
    mod = llvm.parse_assembly(_PROBE)
    mod.triple = triple
    asm = tm.emit_assembly(mod)
    if "zmm" in asm:
        return 16
    if "ymm" in asm:
        return 8
    return 4


def blocking_of(triple: str, cpu: str, features: str, fused: bool = False) -> Blocking:
    """The tile for a target CPU: its vector width, and 32 registers on AVX-512 and AArch64
    (16 on the other x86-64 levels); `fused`: for a system of `arithmetic fused`."""
    width = vector_width(triple, cpu, features)
    aarch64 = triple.startswith("aarch64")
    registers = 32 if width == 16 or aarch64 else 16
    return blocking_for(width, registers, fused and not aarch64)
