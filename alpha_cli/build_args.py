"""The arguments of `alpha build` and `alpha run`: the choice, the target and the deployment
inputs (compile-time arguments, never part of what is computed)."""

from __future__ import annotations

import argparse


def add_build_arguments(b: argparse.ArgumentParser, name: str) -> None:
    """`name` is `build` or `run`."""
    b.add_argument("file")
    b.add_argument("-o", "--output", default="build" if name == "build" else None)
    b.add_argument("--system", default=None, help="the system to build (without --plan)")
    b.add_argument("--plan", default=None, help="build one executable per role of PLAN")
    b.add_argument("--pairing", default=None, help="the pairing of the plan to build")
    b.add_argument(
        "--resume",
        default=None,
        help="every role continues from this checkpoint folder (its newest published "
        "capture) or capture folder (deployment input)",
    )
    b.add_argument(
        "--checkpoint-keep",
        type=int,
        default=None,
        metavar="N",
        help="keep the N newest published captures, removing older ones (default: all; "
        "deployment input)",
    )
    if name == "build":
        b.add_argument("--role", default=None, help="build only this role")
        b.add_argument(
            "--secret-file",
            default=None,
            metavar="PATH",
            help="where every role reads the launch secret (32 bytes, mode 0600); the path "
            "is compiled in, never the secret (deployment input; alpha run gives one)",
        )
    if name == "run":
        b.add_argument(
            "--eval-every",
            type=int,
            default=0,
            metavar="N",
            help="the held-out metric every N rounds too, kept in the run's holdout.csv (a run "
            "without a plan; the training's bits are the same)",
        )
    b.add_argument("--target", default="x86_64", choices=["x86_64", "aarch64"])
    b.add_argument(
        "--gpu-shadow",
        action="store_true",
        help="build GPU roles as their host shadow: the same kernels and launch geometry "
        "run on the host, named as shadow everywhere (a control, never a fallback)",
    )
    b.add_argument(
        "--gpu-uuid", default=None, help="the GPU every GPU role opens (deployment input)"
    )
    b.add_argument(
        "--gpu-index", type=int, default=None, help="else the driver's index of it (default 0)"
    )
    b.add_argument(
        "--cpu",
        default=None,
        help="CPU level to generate for, e.g. x86-64-v3 (default: x86-64-v2); "
        "vector width changes speed, never bits",
    )
    b.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="threads each role runs its matrix products on (default: its pairing's "
        "`cores`, else the cores it may use); any count gives the same bits "
        "(deployment input)",
    )
    b.add_argument("--data", default=None, help="data path compiled in (deployment input)")
    b.add_argument(
        "--port-base",
        type=int,
        default=None,
        help="role i listens on PORT_BASE + i (default: free ports)",
    )
    b.add_argument("--host", default="127.0.0.1", help="address of the peers")
    b.add_argument(
        "--hosts",
        default=None,
        metavar="FILE",
        help="each role's own address, a line `ROLE HOST[:PORT]` per role (deployment "
        "input; with --plan)",
    )
    b.add_argument(
        "--timeout-ms", type=int, default=10_000, help="deadline for connections and frames"
    )
    b.add_argument(
        "--checkpoint-dir", default=None, help="where captures are published (deployment input)"
    )
    b.add_argument(
        "--steps",
        type=int,
        default=None,
        metavar="N",
        help="train N steps instead of the system's `steps` (part of the identity: resume "
        "with the same N)",
    )
    b.add_argument(
        "--checkpoint-every",
        type=int,
        default=0,
        help="rounds between captures; with --plan instead of the plan's `checkpoint "
        "every` (a plan's identity includes it: resume with the same interval)",
    )
    b.add_argument("--json", action="store_true")
