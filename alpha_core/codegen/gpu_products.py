"""Each product-like node of a graph as a sum over k per output (gpu_tiles.Product).

The terms and their order are the host's loops' (docs/semantics.md; conv_ops.py and the
matmul loops): `@` adds a[r, k] · w[k, c] over k ascending; a batched `@` the same in each
batch; conv2d adds x · w over (c, kh, kw) ascending, a padded position masked; its input
adjoint w · d over (o, kh, kw); its weight adjoint x · d over (b, oh, ow). As implicit
products (nothing is gathered in memory):

    op          batch  M   N            K             A[m, k]         B[k, n]
    matmul      1      R   C            K             a[m, k]         w[k, n]
    bmatmul     G      R   C            K             a[g, m, k]      c[g, k, n]
    conv2d      1      O   B·OH·OW      C·KH·KW       w[o, (c,kh,kw)] x at (b,oh,ow)+(c,kh,kw)
    conv2d_dx   1      C   B·H·W        O·KH·KW       w[o, c, kh, kw] d at (b,ih,iw)-(o,kh,kw)
    conv2d_dw   1      O   C·KH·KW      B·OH·OW       d[b, o, oh, ow] x at (b,oh,ow)+(c,kh,kw)
"""

from __future__ import annotations

from llvmlite import ir

from alpha_core.codegen.conv_ops import _at, _source, _target
from alpha_core.codegen.gpu_ir import unravel
from alpha_core.codegen.gpu_tiles import Product, Sources
from alpha_core.codegen.loops import i64, load
from alpha_core.ir.conv import window_of
from alpha_core.ir.graph import Node, size

PRODUCT_OPS = ("matmul", "bmatmul", "conv2d", "conv2d_dx", "conv2d_dw")


def matmul_product(m: int, n: int, k: int) -> Product:
    """out[r, c] = Σ_k a[r, k] · w[k, c]: `@` of an m x k and a k x n tensor."""

    def a_mm(b: ir.IRBuilder, src: Sources, g: ir.Value, r: ir.Value, kk: ir.Value) -> ir.Value:
        return load(b, src[0], b.add(b.mul(r, i64(k)), kk))

    def b_mm(
        b: ir.IRBuilder, src: Sources, g: ir.Value, kk: ir.Value, c: ir.Value
    ) -> tuple[ir.Value, None]:
        return load(b, src[1], b.add(b.mul(kk, i64(n)), c)), None

    def o_mm(b: ir.IRBuilder, src: Sources, g: ir.Value, r: ir.Value, c: ir.Value) -> ir.Value:
        return b.add(b.mul(r, i64(n)), c)

    return Product("matmul", 1, m, n, k, a_mm, b_mm, o_mm, False, False)


def product_of(
    node: Node,
    out_shape: tuple[int, ...],
    shapes: list[tuple[int, ...]],
) -> Product | None:
    """The node as a Product whose reads take the inputs' addresses (input 0, input 1), or
    None when it is not a product-like node."""
    op = node.op
    if op == "matmul":
        (m, k), (_, n) = shapes
        return matmul_product(m, n, k)
    if op == "bmatmul":
        sa, sc = shapes
        m, k, n = sa[-2], sa[-1], sc[-1]
        batch = size(sa[:-2])

        def a_bm(b: ir.IRBuilder, src: Sources, g: ir.Value, r: ir.Value, kk: ir.Value) -> ir.Value:
            return load(b, src[0], b.add(b.mul(g, i64(m * k)), b.add(b.mul(r, i64(k)), kk)))

        def b_bm(
            b: ir.IRBuilder, src: Sources, g: ir.Value, kk: ir.Value, c: ir.Value
        ) -> tuple[ir.Value, None]:
            return load(b, src[1], b.add(b.mul(g, i64(k * n)), b.add(b.mul(kk, i64(n)), c))), None

        def o_bm(b: ir.IRBuilder, src: Sources, g: ir.Value, r: ir.Value, c: ir.Value) -> ir.Value:
            return b.add(b.mul(g, i64(m * n)), b.add(b.mul(r, i64(n)), c))

        return Product(op, batch, m, n, k, a_bm, b_bm, o_bm, False, False)
    if op not in PRODUCT_OPS:
        return None
    win = window_of(node.attrs)
    if op == "conv2d":
        xs, ws = shapes
        bs, o_n, oh_n, ow_n = out_shape
        kdims = (ws[1], ws[2], ws[3])
        kk_n = size(kdims)

        def a_cv(b: ir.IRBuilder, src: Sources, g: ir.Value, o: ir.Value, kk: ir.Value) -> ir.Value:
            return load(b, src[1], b.add(b.mul(o, i64(kk_n)), kk))

        def b_cv(
            b: ir.IRBuilder, src: Sources, g: ir.Value, kk: ir.Value, n: ir.Value
        ) -> tuple[ir.Value, ir.Value]:
            c, kh, kw = unravel(b, kk, kdims)
            bi, oh, ow = unravel(b, n, (bs, oh_n, ow_n))
            ih, okh = _source(b, win, oh, kh, xs[2])
            iw, okw = _source(b, win, ow, kw, xs[3])
            return load(b, src[0], _at(b, [bi, c, ih, iw], xs)), b.and_(okh, okw)

        def o_cv(b: ir.IRBuilder, src: Sources, g: ir.Value, o: ir.Value, n: ir.Value) -> ir.Value:
            bi, oh, ow = unravel(b, n, (bs, oh_n, ow_n))
            return _at(b, [bi, o, oh, ow], out_shape)

        return Product(op, 1, o_n, bs * oh_n * ow_n, kk_n, a_cv, b_cv, o_cv, True, True)
    if op == "conv2d_dx":
        ds, ws = shapes
        bs, c_n, h, w = out_shape
        kdims = (ws[0], ws[2], ws[3])

        def a_dx(b: ir.IRBuilder, src: Sources, g: ir.Value, c: ir.Value, kk: ir.Value) -> ir.Value:
            o, kh, kw = unravel(b, kk, kdims)
            return load(b, src[1], _at(b, [o, c, kh, kw], ws))

        def b_dx(
            b: ir.IRBuilder, src: Sources, g: ir.Value, kk: ir.Value, n: ir.Value
        ) -> tuple[ir.Value, ir.Value]:
            o, kh, kw = unravel(b, kk, kdims)
            bi, ih, iw = unravel(b, n, (bs, h, w))
            oh, okh = _target(b, win, ih, kh, ds[2])
            ow, okw = _target(b, win, iw, kw, ds[3])
            return load(b, src[0], _at(b, [bi, o, oh, ow], ds)), b.and_(okh, okw)

        def o_dx(b: ir.IRBuilder, src: Sources, g: ir.Value, c: ir.Value, n: ir.Value) -> ir.Value:
            bi, ih, iw = unravel(b, n, (bs, h, w))
            return _at(b, [bi, c, ih, iw], out_shape)

        return Product(op, 1, c_n, bs * h * w, size(kdims), a_dx, b_dx, o_dx, True, False)
    # conv2d_dw
    xs, ds = shapes
    o_n, c_n, kh_n, kw_n = out_shape
    kdims = (ds[0], ds[2], ds[3])
    ndims = (c_n, kh_n, kw_n)

    def a_dw(b: ir.IRBuilder, src: Sources, g: ir.Value, o: ir.Value, kk: ir.Value) -> ir.Value:
        bi, oh, ow = unravel(b, kk, kdims)
        return load(b, src[1], _at(b, [bi, o, oh, ow], ds))

    def b_dw(
        b: ir.IRBuilder, src: Sources, g: ir.Value, kk: ir.Value, n: ir.Value
    ) -> tuple[ir.Value, ir.Value]:
        bi, oh, ow = unravel(b, kk, kdims)
        c, kh, kw = unravel(b, n, ndims)
        ih, okh = _source(b, win, oh, kh, xs[2])
        iw, okw = _source(b, win, ow, kw, xs[3])
        return load(b, src[0], _at(b, [bi, c, ih, iw], xs)), b.and_(okh, okw)

    def o_dw(b: ir.IRBuilder, src: Sources, g: ir.Value, o: ir.Value, n: ir.Value) -> ir.Value:
        return b.add(b.mul(o, i64(size(ndims))), n)

    return Product(op, 1, o_n, size(ndims), size(kdims), a_dw, b_dw, o_dw, True, True)
