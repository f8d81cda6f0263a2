"""Register tiles and cache blocks of the GEMM (gemm.py), per vector width."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import llvmlite.binding as llvm


@dataclass(frozen=True)
class Blocking:
    """Register tile MR x NR (NR a multiple of the vector width) and cache blocks."""

    width: int  # float lanes per vector register
    mr: int
    nr: int
    kc: int
    mc: int  # a multiple of mr
    nc: int  # a multiple of nr
    small_mr: int = 0  # a second, shorter tile for blocks of few rows (0: none)
    registers: int = 16  # vector registers the target has

    @property
    def scratch_floats(self) -> int:
        """One worker's packed panels: B (KC x NC), then A (MC x KC), 64-byte aligned."""
        return self.kc * self.nc + self.mc * self.kc + 16


def blocking_for(width: int, registers: int) -> Blocking:
    """The tile for `registers` vector registers of `width` lanes: as many accumulators as leave
    room for a row of B, a broadcast element of A and a product.

    On AVX-512 and AVX2 the tile is one vector wide (NR = the width) and tall (MR = 24 or 12),
    so that each element of A meets exactly one vector of B: the broadcast then folds into its
    multiply (AVX-512's embedded `{1to16}` operand) or stays a plain load, where three vectors
    of B per element kept a broadcast register and its shuffle in every step. Measured on one
    Zen 4 core (bench/gemm.py): 1024^3 from 73 to 85-87 GFLOP/s on AVX-512 (8 x 48 before) and
    from 42 to 69-77 on AVX2 (4 x 24 before); SSE keeps 4 x 8, faster there than 12 x 4.
    A block of few rows (a leaf's examples, a small batch) takes the shorter tile `small_mr`
    where it pads fewer rows of A: 8 rows on AVX-512, 4 on AVX2. AVX-512's MC of 264 (11 tiles)
    takes a batch of 256 rows in one block, where 240 left a block of 16 rows beside it."""
    if width >= 16:
        return Blocking(16, 24, 16, 192, 264, 240, small_mr=8, registers=32)
    if width == 8:
        return Blocking(8, 12, 8, 256, 192, 240, small_mr=4)
    if registers >= 32:  # AArch64 NEON: 32 registers of 4 lanes
        return Blocking(4, 8, 12, 256, 96, 252, registers=32)
    return Blocking(4, 4, 8, 256, 96, 256)  # SSE: 16 registers of 4 lanes


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


def blocking_of(triple: str, cpu: str, features: str) -> Blocking:
    """The tile for a target CPU: its vector width, and 32 registers on AVX-512 and AArch64
    (16 on the other x86-64 levels)."""
    width = vector_width(triple, cpu, features)
    registers = 32 if width == 16 or triple.startswith("aarch64") else 16
    return blocking_for(width, registers)
