"""A GPU role's product kernel by itself: GFLOP/s at 1024^3 and 4096^3 against torch.matmul.

Two halves, so that the GPU machine needs no compiler:

    python bench/gpu_gemm.py emit DIR [--profile h200]   # any machine: the kernels' PTX
    python bench/gpu_gemm.py run DIR                     # the GPU machine: needs libcuda.so.1
                                                         # and NumPy; torch for the peer

`emit` writes, for each size and arithmetic (unfused, fused), the `@` kernel a GPU role of that
profile runs for the product (alpha_core/codegen/gpu_tiles.py, the tile the profile's
multiprocessors choose), its PTX and launch geometry. `run` loads each module through the
driver API (ctypes, as the roles' runtime/gpu_cuda.c does), times the kernel with CUDA events
(best of 5 after a warm-up), and checks 256 sampled outputs bit for bit against NumPy float32
adding the same terms in the same order (k ascending from +0.0; fused: one fma each,
semantics/numpy_fma.py). The peer is torch.matmul in float32 with TF32 off, timed the same way.
scripts/qualify-gpu runs both halves; `run --shadow DIR` checks this harness on any machine by
running the host shadow's kernel instead (small sizes only: `emit --sizes 96`).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SAMPLES = 256


def emit(folder: Path, profile: str, sizes: list[int]) -> None:
    from alpha_core.codegen.gpu_products import matmul_product
    from alpha_core.codegen.gpu_tiles import BLOCK, blocks_of, product_module, tile_for
    from alpha_core.codegen.ptx import emit_ptx, lint_ptx
    from alpha_core.plan.profiles import DEVICE_PROFILES

    folder.mkdir(parents=True, exist_ok=True)
    sms = DEVICE_PROFILES[profile.replace("_", "-")].multiprocessors  # h100_80gb
    kernels = []
    for n in sizes:
        product = matmul_product(n, n, n)
        tile = tile_for(1, n, n, sms)
        for fused in (False, True):
            ptx = emit_ptx(product_module(product, tile, True, fused))
            assert lint_ptx(ptx, fused) == []
            name = f"matmul{n}_{'fused' if fused else 'unfused'}"
            (folder / f"{name}.ptx").write_text(ptx)
            blocks = blocks_of(tile, 1, n, n)
            kernels.append(
                {
                    "name": name,
                    "n": n,
                    "fused": fused,
                    "tile": tile.name,
                    "blocks": blocks,
                    "threads": BLOCK,
                }
            )
    (folder / "kernels.json").write_text(json.dumps({"profile": profile, "kernels": kernels}))


class Cuda:
    """The few driver calls the benchmark needs (libcuda.so.1, as the roles load it)."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        self._ok(self.lib.cuInit(0), "cuInit")
        dev = ctypes.c_int()
        self._ok(self.lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        self.ctx = ctypes.c_void_p()
        self._ok(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), dev), "primary ctx")
        self._ok(self.lib.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def _ok(self, r: int, what: str) -> None:
        if r != 0:
            raise RuntimeError(f"{what} failed: CUresult {r}")

    def alloc(self, nbytes: int) -> int:
        p = ctypes.c_uint64()
        self._ok(self.lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(nbytes)), "cuMemAlloc")
        return p.value

    def up(self, dst: int, a: np.ndarray) -> None:
        self._ok(
            self.lib.cuMemcpyHtoD_v2(
                ctypes.c_uint64(dst), a.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(a.nbytes)
            ),
            "HtoD",
        )

    def down(self, a: np.ndarray, src: int) -> None:
        self._ok(
            self.lib.cuMemcpyDtoH_v2(
                a.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint64(src), ctypes.c_size_t(a.nbytes)
            ),
            "DtoH",
        )

    def kernel(self, ptx: str, name: str) -> ctypes.c_void_p:
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self._ok(
            self.lib.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx.encode())),
            "cuModuleLoadData",
        )
        self._ok(self.lib.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), name)
        return fn

    def time_ms(self, launch: object, repeats: int = 5) -> float:
        start, stop = ctypes.c_void_p(), ctypes.c_void_p()
        self._ok(self.lib.cuEventCreate(ctypes.byref(start), 0), "cuEventCreate")
        self._ok(self.lib.cuEventCreate(ctypes.byref(stop), 0), "cuEventCreate")
        launch()  # type: ignore[operator]
        best = float("inf")
        for _ in range(repeats):
            self._ok(self.lib.cuEventRecord(start, None), "cuEventRecord")
            launch()  # type: ignore[operator]
            self._ok(self.lib.cuEventRecord(stop, None), "cuEventRecord")
            self._ok(self.lib.cuEventSynchronize(stop), "cuEventSynchronize")
            ms = ctypes.c_float()
            self._ok(self.lib.cuEventElapsedTime(ctypes.byref(ms), start, stop), "elapsed")
            best = min(best, ms.value)
        return best


def sampled_reference(
    a: np.ndarray, b: np.ndarray, rows: np.ndarray, cols: np.ndarray, fused: bool
) -> np.ndarray:
    """out[rows[i], cols[i]] added term by term, k ascending from +0.0, in float32."""
    from alpha_core.semantics.numpy_fma import fma32

    acc = np.zeros(len(rows), dtype=np.float32)
    with np.errstate(all="ignore"):
        for k in range(a.shape[1]):
            x, y = a[rows, k], b[k, cols]
            acc = fma32(x, y, acc) if fused else (acc + x * y).astype(np.float32)
    return acc


def _torch_ms(n: int) -> float | str:
    try:
        import torch
    except ImportError:
        return "torch not installed"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    x = torch.randn(n, n, device="cuda")
    y = torch.randn(n, n, device="cuda")
    torch.matmul(x, y)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.matmul(x, y)
        e.record()
        torch.cuda.synchronize()
        best = min(best, s.elapsed_time(e))
    return best


def run(folder: Path, shadow: bool) -> int:
    meta = json.loads((folder / "kernels.json").read_text())
    cuda = None if shadow else Cuda()
    rng = np.random.default_rng(4096)
    failures = 0
    for k in meta["kernels"]:
        n = int(k["n"])
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        out = np.zeros((n, n), dtype=np.float32)
        if cuda is None:  # the harness's control: the host shadow's kernel, block by block
            from gpu_kernels import shadow_kernel

            from alpha_core.codegen.gpu_products import matmul_product
            from alpha_core.codegen.gpu_tiles import TILES

            tile = next(t for t in TILES if t.name == k["tile"])
            t0 = time.perf_counter()
            shadow_kernel(matmul_product(n, n, n), tile, bool(k["fused"]))(out, a, b)
            ms: float = (time.perf_counter() - t0) * 1000
        else:
            fn = cuda.kernel((folder / f"{k['name']}.ptx").read_text(), "alpha_product")
            bufs = [cuda.alloc(4 * n * n) for _ in range(3)]
            cuda.up(bufs[1], a)
            cuda.up(bufs[2], b)
            table = np.array(bufs, dtype=np.uint64)
            targs = cuda.alloc(table.nbytes)
            cuda.up(targs, table)
            p_args, p_threads = ctypes.c_uint64(targs), ctypes.c_uint64(k["blocks"] * k["threads"])
            params = (ctypes.c_void_p * 2)(
                ctypes.cast(ctypes.byref(p_args), ctypes.c_void_p),
                ctypes.cast(ctypes.byref(p_threads), ctypes.c_void_p),
            )

            def launch(fn: ctypes.c_void_p = fn, params: object = params, k: dict = k) -> None:
                r = cuda.lib.cuLaunchKernel(
                    fn, k["blocks"], 1, 1, k["threads"], 1, 1, 0, None, params, None
                )
                if r != 0:
                    raise RuntimeError(f"cuLaunchKernel: CUresult {r}")

            ms = cuda.time_ms(launch)
            cuda.down(out, bufs[0])
        rows = rng.integers(0, n, SAMPLES)
        cols = rng.integers(0, n, SAMPLES)
        expected = sampled_reference(a, b, rows, cols, bool(k["fused"]))
        same = out[rows, cols].view(np.uint32).tolist() == expected.view(np.uint32).tolist()
        failures += not same
        gflops = 2 * n**3 / (ms / 1000) / 1e9
        peer = _torch_ms(n) if not shadow else "not timed (shadow)"
        ratio = f"{(peer / ms):.3f}" if isinstance(peer, float) else "-"
        print(
            json.dumps(
                {
                    "kernel": k["name"],
                    "tile": k["tile"],
                    "ms": round(ms, 4),
                    "gflops": round(gflops, 1),
                    "torch_ms": round(peer, 4) if isinstance(peer, float) else peer,
                    "of_torch": ratio,
                    "sampled_outputs_equal_reference": same,
                }
            )
        )
    return 1 if failures else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    e = sub.add_parser("emit")
    e.add_argument("dir", type=Path)
    e.add_argument("--profile", default="h200")
    e.add_argument("--sizes", default="1024,4096")
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("--shadow", action="store_true")
    args = ap.parse_args()
    if args.mode == "emit":
        emit(args.dir, args.profile, [int(s) for s in args.sizes.split(",")])
        return 0
    return run(args.dir, args.shadow)


if __name__ == "__main__":
    sys.exit(main())
