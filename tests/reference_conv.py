"""The NumPy reference of 2-D convolution and pooling and their adjoints, in the orders of
docs/semantics.md, written again (only the window geometry is shared with the compiler)."""

from __future__ import annotations

from typing import Any

import numpy as np

from alpha_core.ir.conv import window_of
from alpha_core.ir.graph import Node

Array = Any


def _padded(x: Array, p: int) -> tuple[Array, Array]:
    """x with p zeros on each side of its last two axes, and where the real values are."""
    pad = [(0, 0)] * (x.ndim - 2) + [(p, p), (p, p)]
    inside = np.pad(np.ones(x.shape[-2:], dtype=bool), p)
    return np.pad(x, pad), inside


def conv(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    dt = mode.dtype
    win = window_of(n.attrs)
    s = win.stride
    oh_n, ow_n = shape[-2:]
    if n.op == "conv2d":  # out[b,o,oh,ow] = Σ over c, kh, kw ascending
        x, w = ins
        xp, inside = _padded(x, win.padding)
        r = np.zeros(shape, dtype=dt)
        for c in range(w.shape[1]):
            for kh in range(win.kh):
                for kw in range(win.kw):
                    rows = slice(kh, kh + s * (oh_n - 1) + 1, s)
                    cols = slice(kw, kw + s * (ow_n - 1) + 1, s)
                    xv = xp[:, c, rows, cols][:, None, :, :]
                    ok = inside[rows, cols]
                    r = mode.muladd(r, xv, w[None, :, c, kh, kw, None, None], ok)
        return r
    if n.op == "conv2d_dw":  # dw[o,c,kh,kw] = Σ over b, oh, ow ascending
        x, d = ins
        xp, inside = _padded(x, win.padding)
        r = np.zeros(shape, dtype=dt)
        for bi in range(x.shape[0]):
            for oh in range(d.shape[2]):
                for ow in range(d.shape[3]):
                    patch = xp[bi, :, oh * s : oh * s + win.kh, ow * s : ow * s + win.kw]
                    ok = inside[oh * s : oh * s + win.kh, ow * s : ow * s + win.kw]
                    r = mode.muladd(r, d[bi, :, oh, ow][:, None, None, None], patch[None], ok)
        return r
    # conv2d_dx: dx[b,c,ih,iw] = Σ over o, kh, kw ascending of w[o,c,kh,kw] d[b,o,oh,ow]
    d, w = ins
    h, wd = shape[-2:]
    p = win.padding
    r = np.zeros(shape, dtype=dt)
    ih = np.arange(h)
    iw = np.arange(wd)
    for o in range(w.shape[0]):
        for kh in range(win.kh):
            th = ih + p - kh
            okh = (th >= 0) & (th % s == 0) & (th // s < d.shape[2])
            oh = np.where(okh, th // s, 0)
            for kw in range(win.kw):
                tw = iw + p - kw
                okw = (tw >= 0) & (tw % s == 0) & (tw // s < d.shape[3])
                ow = np.where(okw, tw // s, 0)
                dv = d[:, o][:, oh][:, :, ow][:, None, :, :]
                keep = okh[:, None] & okw[None, :]
                r = mode.muladd(r, w[None, o, :, kh, kw, None, None], dv, keep)
    return r


def pool(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    dt = mode.dtype
    win = window_of(n.attrs)
    s, k = win.stride, win.kh
    count = dt(win.kh * win.kw)
    if n.op in ("max_pool", "avg_pool"):
        x = ins[0]
        oh_n, ow_n = shape[-2:]
        r = np.zeros(shape, dtype=dt)
        for oh in range(oh_n):
            for ow in range(ow_n):
                patch = x[..., oh * s : oh * s + k, ow * s : ow * s + k]
                flat = patch.reshape(*patch.shape[:-2], -1)
                if n.op == "max_pool":
                    m = flat[..., 0].copy()
                    for j in range(flat.shape[-1]):
                        m = np.where(flat[..., j] > m, flat[..., j], m)
                else:
                    m = np.zeros(flat.shape[:-1], dtype=dt)
                    for j in range(flat.shape[-1]):
                        m = (m + flat[..., j]).astype(dt)
                    m = (m / count).astype(dt)
                r[..., oh, ow] = m
        return r
    r = np.zeros(shape, dtype=dt)
    lead = shape[:-2]
    flat_r = r.reshape(-1, *shape[-2:])
    if n.op == "max_pool_grad":
        x, d = ins
        xf, df = x.reshape(-1, *shape[-2:]), d.reshape(-1, *d.shape[-2:])
        g = np.arange(xf.shape[0])
        for oh in range(df.shape[1]):
            for ow in range(df.shape[2]):
                patch = xf[:, oh * s : oh * s + k, ow * s : ow * s + k].reshape(len(g), -1)
                m = patch[:, 0].copy()
                arg = np.zeros(len(g), dtype=np.int64)
                for j in range(patch.shape[1]):
                    more = patch[:, j] > m
                    m = np.where(more, patch[:, j], m)
                    arg = np.where(more, j, arg)
                rr, cc = oh * s + arg // k, ow * s + arg % k
                flat_r[g, rr, cc] = (flat_r[g, rr, cc] + df[:, oh, ow]).astype(dt)
        return flat_r.reshape(lead + shape[-2:])
    (d,) = ins
    df = d.reshape(-1, *d.shape[-2:])
    for oh in range(df.shape[1]):
        for ow in range(df.shape[2]):
            share = (df[:, oh, ow] / count).astype(dt)
            for kh in range(k):
                for kw in range(k):
                    at = (slice(None), oh * s + kh, ow * s + kw)
                    flat_r[at] = (flat_r[at] + share).astype(dt)
    return flat_r.reshape(lead + shape[-2:])


CONV = {
    "conv2d": conv,
    "conv2d_dx": conv,
    "conv2d_dw": conv,
    "max_pool": pool,
    "avg_pool": pool,
    "max_pool_grad": pool,
    "avg_pool_grad": pool,
}
