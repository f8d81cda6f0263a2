"""Which convolutions run as products on the packed GEMM (codegen/conv_gemm.py), and the scratch
their gathered operands take: decisions about shapes, without LLVM, asked by the code
generator and by admission (plan/admission.py) alike.
"""

from __future__ import annotations

from alpha_core.lower.blocking import GEMM_MIN_WORK, Blocking

# the three sums of docs/semantics.md §5 that are products over a gathered operand
CONV_PRODUCTS = frozenset({"conv2d", "conv2d_dx", "conv2d_dw"})


def multiply_adds(op: str, out: tuple[int, ...], ins: tuple[tuple[int, ...], ...]) -> int:
    """Terms of every sum of a convolution node (padded terms included)."""
    if op == "conv2d":  # x [B, C, H, W], w [O, C, KH, KW] -> [B, O, OH, OW]
        _, c, kh, kw = ins[1]
        return out[0] * out[1] * out[2] * out[3] * c * kh * kw
    if op == "conv2d_dx":  # d [B, O, OH, OW], w -> [B, C, H, W]
        o, _, kh, kw = ins[1]
        return out[0] * out[1] * out[2] * out[3] * o * kh * kw
    if op == "conv2d_dw":  # x, d [B, O, OH, OW] -> [O, C, KH, KW]
        b, _, oh, ow = ins[1]
        return out[0] * out[1] * out[2] * out[3] * b * oh * ow
    return 0


def on_gemm(op: str, out: tuple[int, ...], ins: tuple[tuple[int, ...], ...]) -> bool:
    """Whether a convolution node takes the GEMM: as for a matmul (lower/blocking.packed), a
    small one keeps the loops, where gathering and packing would cost more than they save."""
    return op in CONV_PRODUCTS and multiply_adds(op, out, ins) >= GEMM_MIN_WORK


# floats between a gathered block's rows beyond its columns: a row stride of a multiple of 1 KiB
# maps every row of a KC-row block onto a quarter of L1's sets (64 sets of 64 bytes), so a
# block that fits L1 would not stay there; 64 bytes more walks the rows over every set. It is
# also the room a row's last vector may spill into (codegen/conv_gemm.py, _Gather._run): at
# least the widest vector's lanes - 1.
GATHER_PAD = 16


def gather_floats(t: Blocking) -> int:
    """Floats a worker gathers into beside the panels: a KC x NC block of B (rows NC +
    GATHER_PAD floats apart), then an MC x KC block of A (conv2d_dx's transposed kernels) or
    an NC x MC block of C (conv2d_dw's transposed block), each 64-byte aligned."""
    return t.kc * (t.nc + GATHER_PAD) + t.mc * max(t.kc, t.nc) + 32
