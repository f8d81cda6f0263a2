"""The peers of bench/round.py: gloo's all_reduce and a bare TCP round trip.

    python bench/round_peers.py --gloo-rank R --gloo-world W --gloo-port P ...

is one gloo rank (round.py starts them); the rest is imported by round.py.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from machine import single_thread_env

BENCH = Path(__file__).resolve().parent
PINGPONG = BENCH / "tcp_pingpong" / "pingpong.c"
FLOATS = 2410  # the digits model's parameters
BYTES = FLOATS * 4


@dataclass
class Result:
    name: str
    us: float | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def per_s(self) -> float | None:
        return None if not self.us else 1e6 / self.us


# --------------------------------------------------------------------------------------------
# gloo: this file is also the rank program (`--gloo-rank`).


def gloo_rank(
    rank: int, world: int, port: int, warmup: int, iters: int, blocks: int, floats: int
) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    tensor = torch.zeros(floats, dtype=torch.float32)  # stays finite however often it is summed
    for _ in range(warmup):
        dist.all_reduce(tensor)
    means = []
    for _ in range(blocks):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(tensor)
        means.append((time.perf_counter() - t0) / iters)
    ok = bool(tensor.abs().sum().item() == 0.0)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        report = {"world": world, "floats": floats, "iters": iters, "block_means_s": means}
        report["ok"] = ok
        report["torch"] = torch.__version__
        print(json.dumps(report), flush=True)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gloo(world: int, warmup: int, iters: int, blocks: int, floats: int = FLOATS) -> Result:
    name = f"gloo all_reduce, world {world}" + ("" if floats == FLOATS else ", 4 MB")
    port = free_port()
    procs = []
    for rank in range(world):
        cmd = [sys.executable, str(Path(__file__).resolve()), "--gloo-rank", str(rank)]
        cmd += ["--gloo-world", str(world), "--gloo-port", str(port)]
        cmd += ["--gloo-warmup", str(warmup), "--gloo-iters", str(iters)]
        cmd += ["--gloo-blocks", str(blocks), "--gloo-floats", str(floats)]
        procs.append(
            subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=single_thread_env(),
            )
        )
    outputs = []
    failed = ""
    for p in procs:
        try:
            out, err = p.communicate(timeout=150)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            failed = "timed out"
        if p.returncode != 0 and not failed:
            failed = (err.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        outputs.append(out)
    if failed:
        return Result(name, note=f"failed: {failed}")
    report = json.loads(outputs[0].strip().splitlines()[-1])
    us = 1e6 * min(report["block_means_s"])
    note = f"torch {report['torch']}, {world} processes, 1 thread each"
    return Result(name, us, note, report)


# --------------------------------------------------------------------------------------------
# bare TCP


def build_pingpong(work: Path) -> tuple[Path, str]:
    exe = work / "pingpong"
    if shutil.which("gcc"):
        cmd = ["gcc", "-O2"]
    else:
        cmd = [sys.executable, "-m", "ziglang", "cc", "-O2"]
    subprocess.run(cmd + ["-o", str(exe), str(PINGPONG)], check=True)
    compiler = " ".join(Path(c).name if c == sys.executable else c for c in cmd)
    return exe, compiler


def pingpong(exe: Path, iters: int) -> dict[str, Any]:
    out = subprocess.run(
        [str(exe), str(BYTES), str(iters), str(iters // 10)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(out))


def main(argv: list[str] | None = None) -> int:
    """One gloo rank."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gloo-rank", type=int, required=True)
    parser.add_argument("--gloo-world", type=int, required=True)
    parser.add_argument("--gloo-port", type=int, required=True)
    parser.add_argument("--gloo-warmup", type=int, required=True)
    parser.add_argument("--gloo-iters", type=int, required=True)
    parser.add_argument("--gloo-blocks", type=int, required=True)
    parser.add_argument("--gloo-floats", type=int, default=FLOATS)
    a = parser.parse_args(argv)
    gloo_rank(
        a.gloo_rank,
        a.gloo_world,
        a.gloo_port,
        a.gloo_warmup,
        a.gloo_iters,
        a.gloo_blocks,
        a.gloo_floats,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
