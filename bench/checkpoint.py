"""Checkpoint write and restore throughput: Alpha's captures against torch.save / torch.load.

    python bench/checkpoint.py [--repeats R] [--side N] [--json OUT] [--no-torch]

Two systems, side by side in one run:

- digits: examples/digits.alpha with `steps 40`, a capture every 10 rounds (adam: parameters,
  m, v and the two scalars: 28,928 bytes in 13 shards);
- big: one N x N parameter (default N = 5000: 25,000,000 floats, 100 MB) and a small output
  layer, sgd, 1 step, a capture at the end (about 100 MB in 2 shards).

Alpha write: the `write_ms` of the executable's `checkpoint` event: every shard's SHA-256 and
its bytes appended to the role's pack (in a partial capture folder), then the manifest and the
pack's trailer, one fsync of the pack, one of the capture folder, the rename that publishes the
capture and one fsync of the checkpoint folder. Alpha restore: the `read_ms` of the `resumed`
event of `--resume CAPTURE --evaluate-only`: the newest capture found, the manifest tree read
and checked, every shard read from its pack and its SHA-256 verified, the values copied into
place.

torch: the same tensors (read back from the capture, one tensor per kind and parameter) saved
as one dict with torch.save and loaded with torch.load(weights_only=True); "+ fsync + sha256"
adds what Alpha's figures include: an fsync of the file and a SHA-256 of its bytes (hashlib),
on write, and a SHA-256 on read. "atomic" also gives torch what Alpha's publication gives: the
file written under a temporary name, fsynced, renamed into place and the folder fsynced, so a
crash leaves the previous file whole. Reads come from the page cache on both sides (the file
was just written). Best of R for every figure. This is a benchmark, never a test.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(BENCH))

from machine import machine  # noqa: E402

BIG = """\
# bench/checkpoint.py: one N x N parameter (about 100 MB at N = 5000), sgd, one step.
system big {
  data train: synthetic(rows: 16, features: SIDE, classes: 10, seed: 1, holdout: 8)
  batch 8 leaves 1
  param w: f32[SIDE, SIDE] = normal(0.0, 0.01, seed: 1)
  param v: f32[SIDE, 10] = normal(0.0, 0.01, seed: 2)
  fn model(x: f32[B, SIDE]) -> f32[B, 10] {
    return relu(x @ w) @ v
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.01)
  steps 1
}
"""


@dataclass
class Figures:
    name: str
    bytes: int
    files: int
    write_ms: float
    read_ms: float
    torch: dict[str, float]

    def rows(self) -> list[tuple[str, float]]:
        out = [
            ("Alpha write (sha256, fsync)", self.write_ms),
            ("Alpha restore (sha256)", self.read_ms),
        ]
        return out + list(self.torch.items())


def mb_per_s(n: int, ms: float) -> float:
    return n / 1e6 / (ms / 1e3) if ms > 0 else float("inf")


def events(command: list[str]) -> list[dict[str, Any]]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    out = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} exited {done.returncode}: {done.stderr[-400:]}")
    return out


def build(source: str, folder: Path, every: int) -> str:
    from alpha_core.build.executables import build_program
    from alpha_core.build.outputs import Deployment
    from alpha_core.workspace.analysis import Workspace

    path = folder / "system.alpha"
    path.write_text(source)
    program, diags = Workspace().analyze_file(str(path)).program()
    if program is None:
        raise RuntimeError("; ".join(d.message for d in diags))
    d = Deployment(checkpoint_dir=str(folder / "ckpt"), checkpoint_every=every)
    return build_program(program, folder / "build", deployment=d).executables[0].path


def alpha(exe: str, folder: Path, repeats: int) -> tuple[float, float, int, int, Path]:
    writes, reads = [], []
    capture = folder / "ckpt"
    size = files = 0
    for r in range(repeats):
        shutil.rmtree(folder / "ckpt", ignore_errors=True)
        run = events([exe, "--quiet", "--params-out", str(folder / "out.params")])
        marks = [e for e in run if e.get("event") == "checkpoint"]
        writes += [float(e["write_ms"]) for e in marks]
        size, files = int(marks[-1]["bytes"]), int(marks[-1]["files"])
        capture = Path(str(marks[-1]["capture"]))
        for _ in range(2 if r == 0 else 1):
            back = events([exe, "--resume", str(capture), "--evaluate-only"])
            reads += [float(e["read_ms"]) for e in back if e.get("event") == "resumed"]
    return min(writes), min(reads), size, files, capture


def torch_figures(capture: Path, folder: Path, repeats: int) -> dict[str, float]:
    import torch

    from alpha_core.checkpoint import read_checkpoint

    ckpt = read_checkpoint(capture)
    tensors: dict[str, torch.Tensor] = {}
    for kind in ckpt.kinds:
        flat = ckpt.values(kind)
        if kind.endswith(".scalars"):
            tensors[kind] = torch.from_numpy(flat.copy())
            continue
        for t in ckpt.tensors:
            tensors[f"{kind}/{t.name}"] = torch.from_numpy(
                flat[t.offset : t.offset + t.count].copy()
            )
    path = folder / "torch.pt"
    best: dict[str, float] = {}

    def keep(name: str, start: float) -> None:
        ms = (time.perf_counter() - start) * 1e3
        best[name] = min(best.get(name, ms), ms)

    for _ in range(repeats):
        start = time.perf_counter()
        torch.save(tensors, path)
        keep("torch.save", start)
        start = time.perf_counter()
        torch.save(tensors, path)
        with path.open("rb+") as f:
            os.fsync(f.fileno())
        hashlib.sha256(path.read_bytes()).hexdigest()
        keep("torch.save + fsync + sha256", start)
        start = time.perf_counter()
        temporary = path.with_name(path.name + ".tmp")
        torch.save(tensors, temporary)
        with temporary.open("rb+") as f:
            os.fsync(f.fileno())
        hashlib.sha256(temporary.read_bytes()).hexdigest()
        os.replace(temporary, path)
        folder_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(folder_fd)
        finally:
            os.close(folder_fd)
        keep("torch atomic save + sha256", start)
        start = time.perf_counter()
        torch.load(path, weights_only=True)
        keep("torch.load", start)
        start = time.perf_counter()
        data = path.read_bytes()
        hashlib.sha256(data).hexdigest()
        torch.load(path, weights_only=True)
        keep("torch.load + sha256", start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--side", type=int, default=5000, help="the big parameter's side")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args()
    m = machine()
    print(f"machine: {m['cpu']}, {m['cores']} cores, {m['os']}")
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}")
    digits = (REPO / "examples" / "digits.alpha").read_text()
    digits = digits.replace('"data/', f'"{REPO}/examples/data/').replace("steps 300", "steps 40")
    systems = [("digits", digits, 10), ("big", BIG.replace("SIDE", str(args.side)), 1)]
    results: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="alpha-ckpt-bench-") as tmp:
        for name, source, every in systems:
            folder = Path(tmp) / name
            folder.mkdir()
            exe = build(source, folder, every)
            write, read, size, files, capture = alpha(exe, folder, args.repeats)
            peers = {} if args.no_torch else torch_figures(capture, folder, args.repeats)
            results.append(Figures(name, size, files, write, read, peers))
    for f in results:
        print(f"\n{f.name}: {f.bytes:,} bytes in {f.files} shards")
        for label, ms in f.rows():
            print(f"  {label:<30} {ms:10.2f} ms  {mb_per_s(f.bytes, ms):9.1f} MB/s")
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        **vars(f),
                        "mb_per_s": {k: mb_per_s(f.bytes, ms) for k, ms in f.rows()},
                    }
                    for f in results
                ],
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
