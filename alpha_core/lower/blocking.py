"""The GEMM's blocking decisions, as numbers: the register tile and cache blocks per vector
width, which products are worth packing, and the rows of a tree task's block. The code
generator (codegen/gemm.py, codegen/tiles.py) emits them; admission (plan/admission.py) counts
the scratch they need; neither asks the other.
"""

from __future__ import annotations

from dataclasses import dataclass

# A product below this many multiply-adds runs the plain loop in place (no packing, no tasks):
# for the small layers of small models the packing would cost more than it saves.
GEMM_MIN_WORK = 1 << 18


def packed(m: int, n: int, k: int) -> bool:
    """Whether an m x k by k x n product takes the packed GEMM."""
    return m * n * k >= GEMM_MIN_WORK


# Rows of a tree task's block of C: each leaf's block and the tree's pending values stay in the
# core's L2 beside the panels (a multiple of every MR).
TREE_MC = 96


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
    # each row of the tile reads B's vectors from memory, folded into its multiplies, rather
    # than from registers loaded once a step (gemm.py's kernel)
    fold_b: bool = False

    @property
    def scratch_floats(self) -> int:
        """One worker's packed panels: B (KC x NC), then A (MC x KC), 64-byte aligned."""
        return self.kc * self.nc + self.mc * self.kc + 16


def blocking_for(width: int, registers: int, fused: bool = False) -> Blocking:
    """The tile for `registers` vector registers of `width` lanes: as many accumulators as leave
    room for a row of B, a broadcast element of A and a product.

    On AVX-512 the unfused tile is one vector wide (NR = the width) and tall (MR = 24), so
    that each element of A meets exactly one vector of B: the broadcast then folds into its
    multiply (the embedded `{1to16}` operand), where three vectors of B per element kept a
    broadcast register and its shuffle in every step. Measured on one Zen 4 core
    (bench/gemm.py): 1024^3 from 73 to 85-87 GFLOP/s (8 x 48 before); SSE keeps 4 x 8, faster
    there than 12 x 4. A block of few rows (a leaf's examples, a small batch) takes the shorter
    tile `small_mr` where it pads fewer rows of A: 8 rows on AVX-512, 2 on AVX2. AVX-512's MC of
    264 (11 tiles) takes a batch of 256 rows in one block, where 240 left a block of 16 rows.

    AVX2 has no embedded broadcast: an element of A is a broadcast load of its own, and on a
    core that splits each 256-bit operation in two and feeds its FP pipes four operations a
    cycle (AMD Zen 1) the loads and broadcasts, not the arithmetic, are the limit. The
    one-vector 12 x 8 tile (a broadcast per multiply) gave 20 GFLOP/s on one Zen 1 core for an
    unfused 1024^3; 6 x 16 (a broadcast per two multiplies, B's two vectors in registers)
    23-24. The unfused tile is 3 x 32 with `fold_b`: B's four vectors are loaded again by each
    row, each load folded into its multiply (no FP operation of its own), and the registers B
    held are accumulators: three broadcasts per 12 multiply-adds and no other load operation.
    KC 192 keeps the B panel (24 KiB) in a 32 KiB L1. On the Zen 1 every unfused shape of
    bench/gemm.py gained 10-20% over 6 x 16 (4 x 24 and 2 x 48 folded measured less; A splat
    across vectors in its panel, folded the same way, gained less than its packing cost on
    products of 128 columns): docs/performance.md."""
    if fused and width >= 8:
        return _fused_blocking(width)
    if width == 8:
        return Blocking(8, 3, 32, 192, 192, 256, small_mr=2, fold_b=True)
    if width >= 16:
        return Blocking(16, 24, 16, 192, 264, 240, small_mr=8, registers=32)
    if registers >= 32:  # AArch64 NEON: 32 registers of 4 lanes
        return Blocking(4, 8, 12, 256, 96, 252, registers=32)
    return Blocking(4, 4, 8, 256, 96, 256)  # SSE: 16 registers of 4 lanes


def _fused_blocking(width: int) -> Blocking:
    """The tile of `arithmetic fused` on AVX-512 and AVX2: two vectors of B wide (12 x 32 and
    6 x 16, the shape of BLIS's kernels), and panels of B 960 columns wide.

    Unfused, a step of the one-vector tile is a multiply with A's element folded in and an add,
    two instructions per product, and the FMA units (which run both) are the limit. Fused, each
    product is one instruction, and the tall one-vector tile's element of A per product (a load
    each) and its share of packing become the limit: on a Sapphire Rapids core, 1024^3 in fused
    arithmetic ran at 122-139 GFLOP/s with 24 x 16 tiles and 240-column tasks, 167-169 with
    12 x 32 or 14 x 32 and 960 columns (A's panels packed once per 960 columns of C instead of
    per 240), 176 with 6 x 64 (which pads a 32-channel product to 64); AVX2 at the same core
    83 with 12 x 8, 103 with 6 x 16 (bench/gemm.py --fma; docs/performance.md). MC stays a
    multiple of TREE_MC's divisors (12 and 6 divide 96)."""
    if width >= 16:
        return Blocking(16, 12, 32, 256, 264, 960, small_mr=8, registers=32)
    return Blocking(8, 6, 16, 256, 192, 960, small_mr=4)
