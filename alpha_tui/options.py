"""alpha-tui's command line: what to open, what to choose at start, and the deployment inputs
a run gets (ports, captures, a steps override for a run long enough to kill and resume)."""

from __future__ import annotations

import argparse
import textwrap
from dataclasses import dataclass

from alpha_core.support.version import version_line

EPILOG = """examples:
  alpha-tui examples/digits.alpha --plan tree
  alpha-tui examples/digits.alpha --plan pair --steps 60000 --checkpoint-every 500
      a run long enough to kill a role (k) and resume it (u)
  alpha-tui examples/blobs.alpha --checkpoint-dir ckpt --port-base 31000

keys: ? in the app lists them all"""


@dataclass(frozen=True)
class Options:
    file: str
    plan: str | None = None
    pairing: str | None = None
    checkpoint_every: int = 0  # 0: a plan's own, or a tenth of a system's steps
    checkpoint_dir: str | None = None
    port_base: int | None = None  # None: free ports outside the ephemeral range
    steps: int | None = None  # None: the system's own
    hosts: str | None = None  # a hosts file: each role of a plan at its own address
    gpu_shadow: bool = False  # GPU roles built as their host shadow


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="alpha-tui",
        description=textwrap.fill(
            "Check a file, build a system or a plan, start every role on this machine, and "
            "watch, kill and resume them.",
            88,
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="the .alpha source file")
    p.add_argument("--plan", default=None, help="the plan chosen at start")
    p.add_argument("--pairing", default=None, help="the pairing chosen at start")
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=0,
        metavar="N",
        help="rounds between captures, for a system or a plan (default: the plan's own "
        "`checkpoint every`, or a tenth of a system's steps)",
    )
    p.add_argument(
        "--checkpoint-dir",
        default=None,
        metavar="DIR",
        help="where captures are published, a folder run-N per run from the start "
        "(default: a temporary folder, removed on exit)",
    )
    p.add_argument(
        "--port-base",
        type=int,
        default=None,
        metavar="PORT",
        help="role i listens on PORT + i (default: free ports outside the ephemeral range)",
    )
    p.add_argument(
        "--steps",
        type=int,
        default=None,
        metavar="N",
        help="train N steps instead of the system's own (e.g. long enough to kill and resume)",
    )
    p.add_argument(
        "--hosts",
        default=None,
        metavar="FILE",
        help="each role of the plan at its own address, a line `ROLE HOST[:PORT]` per role "
        "(e.g. 127.0.0.2, 127.0.0.3 on this machine); the table shows each role's host",
    )
    p.add_argument(
        "--gpu-shadow",
        action="store_true",
        help="build each GPU role as its host shadow: the same kernels run on the host, a "
        "control that works without a GPU (never used in place of a missing one)",
    )
    p.add_argument("--version", action="version", version=version_line("alpha-tui"))
    return p


def parse(argv: list[str] | None) -> Options:
    a = parser().parse_args(argv)
    return Options(
        a.file,
        a.plan,
        a.pairing,
        a.checkpoint_every,
        a.checkpoint_dir,
        a.port_base,
        a.steps,
        a.hosts,
        a.gpu_shadow,
    )
