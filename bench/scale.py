"""MLP training steps from 2,410 to 8.39 M parameters: Alpha against PyTorch and NumPy.

    python bench/scale.py [--models digits,784-1024-1024-10] [--repeats R] [--scale F]
        [--cpu CPU] [--threads 1,2] [--json OUT] [--no-torch] [--no-numpy] [--no-alpha]

The models (bench/scale_models.py), each trained with Adam on batches cut into 8 leaves, in one
process (no plan), float32:

- digits: examples/digits.alpha as it is (64-32-10, batch 64, Adam(0.01), its CSV);
- 64-32-10 batch 64, 256-256-10 batch 128, 784-1024-1024-10 batch 256: ReLU hidden layers,
  softmax cross-entropy over the last width, Adam(0.001, 0.9, 0.999, 1e-8);
- 1024-4096-1024 batch 256: the same with 1024 classes (softmax cross-entropy, not a
  regression).

The synthetic models train on `synthetic(rows: 2B, features: d0, classes: dL, seed: 1,
holdout: 0)`, weights normal(0, 0.05, seed: i), biases zeros. The peers train the same shapes
on random rows of their own (bench/scale_peers.py).

Systems, per model, measured side by side in one run:

- Alpha: `alpha build FILE -o DIR --json --cpu CPU` twice, with `steps S1` and `steps S2`; each
  executable runs with `--quiet --params-out TMP`, timed by wall clock, and the per-step time is
  (best t(S2) - best t(S1)) / (S2 - S1): process start, data, initialisation and writing the
  parameters cancel. At each thread count of --threads where the build supports threads: an
  executable whose `--help` names `--threads` gets `--threads N` when it runs; otherwise, when
  `alpha build --help` names `--threads`, one build per count; otherwise one thread only.
- PyTorch eager (CPU, torch.optim.Adam, one batch of B per step) at each count of --threads
  (torch.set_num_threads), N timed steps after W untimed ones, in a fresh process per sample.
- NumPy float32, vectorised over the batch, Adam by hand, OPENBLAS_NUM_THREADS=1.

Rounds interleave everything (one sample of every system of every model per round), so that a
change in the machine's load falls on all of them alike; each system keeps its best sample.
Every process runs with OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and MKL_NUM_THREADS set to its
thread count (1 but for the 2-thread PyTorch); NumPy's with OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE unset (see bench/machine.py).

GFLOP/s counts 6 flops per weight per example: 2 in the forward product (a multiply and an
add), 4 in the backward (the weight gradient and the input gradient, 2 each), i.e.
6 x (sum over layers of in x out) x B per step. Biases, activations, the loss and Adam are not
counted; the first layer's input gradient, which nobody needs, is counted anyway.

This is a benchmark, never a test: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from machine import machine, single_thread_env
from scale_models import DIGITS_DATA, MODELS, Model
from scale_systems import AlphaSystem, PeerSystem, System, alpha_cli, thread_support

# Every subprocess gets at most this long; a run past it is reported, never waited on forever.
DEFAULT_TIMEOUT_S = 900.0


def parse_overrides(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or name not in MODELS:
            raise SystemExit(
                f"error: {what} {item!r}: expected MODEL=VALUE, MODEL one of {', '.join(MODELS)}"
            )
        out[name] = value
    return out


def chosen_models(args: argparse.Namespace) -> list[Model]:
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown or not names:
        raise SystemExit(
            f"error: unknown model {', '.join(unknown) or '(none)'}; known: {', '.join(MODELS)}"
        )
    alpha_steps = parse_overrides(args.alpha_steps, "--alpha-steps")
    peer_steps = parse_overrides(args.peer_steps, "--peer-steps")
    models = []
    for name in names:
        m = MODELS[name]
        s1, s2 = m.alpha_steps
        s2 = s1 + max(1, round((s2 - s1) * args.scale))
        if name in alpha_steps:
            try:
                s1, s2 = (int(v) for v in alpha_steps[name].split(":"))
            except ValueError:
                raise SystemExit(f"error: --alpha-steps {name}=S1:S2 needs two integers") from None
            if not 1 <= s1 < s2:
                raise SystemExit(f"error: --alpha-steps {name}: need 1 <= S1 < S2")
        n = max(1, round(m.peer_steps * args.scale))
        if name in peer_steps:
            try:
                n = int(peer_steps[name])
            except ValueError:
                raise SystemExit(f"error: --peer-steps {name}=N needs an integer") from None
            if n < 1:
                raise SystemExit(f"error: --peer-steps {name}: need N >= 1")
        models.append(replace(m, alpha_steps=(s1, s2), peer_steps=n))
    return models


def cpu_flags() -> list[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return line.partition(":")[2].split()
    except OSError:
        pass
    return []


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def div(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def summarise(model: Model, systems: dict[str, System], threads: list[int]) -> dict[str, Any]:
    us = {key: s.result.us_per_step for key, s in systems.items()}
    gflops = {key: div(model.flops_per_step / 1e3, v) for key, v in us.items()}
    return {
        "model": model.name,
        "dims": list(model.dims),
        "batch": model.batch,
        "params": model.params,
        "flops_per_step": model.flops_per_step,
        "alpha_steps": list(model.alpha_steps),
        "peer_steps": model.peer_steps,
        "us_per_step": us,
        "gflops": gflops,
        "ratios": {
            f"torch1T/{kind}{t}T": div(us.get("torch-1"), us.get(f"{kind}-{t}"))
            for t in threads
            for kind in ("alpha", "fused")
            if f"{kind}-{t}" in us
        },
        "systems": {key: s.result.as_dict() for key, s in systems.items()},
    }


def same_bits(systems: dict[str, dict[str, Any]], kind: str = "alpha") -> str:
    """Whether Alpha's parameters after each run agree across thread counts (they must);
    `kind`: the unfused systems (alpha-N) or the fused ones (fused-N)."""
    digests = {
        key: tuple(sorted((k, v) for k, v in res["extra"].items() if k.startswith("params_sha")))
        for key, res in systems.items()
        if key.startswith(f"{kind}-") and res["extra"]
    }
    if not digests:
        return "Alpha not measured"
    if len(digests) < 2:
        return "Alpha at one thread count only; nothing to compare"
    agree = len(set(digests.values())) == 1
    return f"Alpha's parameters at {', '.join(digests)}: " + (
        "the same SHA-256" if agree else "DIFFERENT SHA-256s"
    )


def print_table(rows: list[dict[str, Any]], threads: list[int]) -> None:
    fused = any(f"fused-{t}" in r["us_per_step"] for r in rows for t in threads)
    head = ["model", "params"]
    head += [f"Alpha {t}T µs" for t in threads] + [f"torch {t}T µs" for t in threads]
    head += ["NumPy µs"] + [f"torch1T/Alpha{t}T" for t in threads]
    if fused:
        head += [f"fused {t}T µs" for t in threads] + [f"torch1T/fused{t}T" for t in threads]
    head += [f"Alpha {t}T GFLOP/s" for t in threads] + [f"torch {t}T GFLOP/s" for t in threads]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
    for r in rows:
        us, gf = r["us_per_step"], r["gflops"]
        cells = [r["model"] + f", b{r['batch']}", f"{r['params']:,}"]
        cells += [fmt(us.get(f"alpha-{t}"), ",.0f") for t in threads]
        cells += [fmt(us.get(f"torch-{t}"), ",.0f") for t in threads]
        cells += [fmt(us.get("numpy-1"), ",.0f")]
        cells += [fmt(r["ratios"].get(f"torch1T/alpha{t}T"), ".2f") for t in threads]
        if fused:
            cells += [fmt(us.get(f"fused-{t}"), ",.0f") for t in threads]
            cells += [fmt(r["ratios"].get(f"torch1T/fused{t}T"), ".2f") for t in threads]
        cells += [fmt(gf.get(f"alpha-{t}"), ".1f") for t in threads]
        cells += [fmt(gf.get(f"torch-{t}"), ".1f") for t in threads]
        print("| " + " | ".join(cells) + " |")


def warn_load(when: str, load: list[float]) -> None:
    print(f"load average {when}: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if load[0] > 0.5:
        print(
            f"warning: 1-minute load average {load[0]:.2f} > 0.5 {when}; the figures will "
            "be slower and noisier than on an idle machine"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS), help=f"of: {', '.join(MODELS)}")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds; best kept")
    ap.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply Alpha's S2 - S1 and the peers' timed steps (default 1)",
    )
    ap.add_argument(
        "--alpha-steps",
        action="append",
        default=[],
        metavar="MODEL=S1:S2",
        help="Alpha's two step counts for MODEL (overrides --scale)",
    )
    ap.add_argument(
        "--peer-steps",
        action="append",
        default=[],
        metavar="MODEL=N",
        help="the peers' timed steps for MODEL (overrides --scale)",
    )
    ap.add_argument(
        "--cpu",
        default="x86-64-v3",
        help="alpha build --cpu (default x86-64-v3); `default`: no --cpu, as a user builds",
    )
    ap.add_argument("--threads", default="1,2", help="thread counts for Alpha and PyTorch")
    ap.add_argument(
        "--fused",
        action="store_true",
        help="also each model in `arithmetic fused` (systems fused-N beside alpha-N)",
    )
    ap.add_argument("--alpha-cli", help="the alpha command (default: the venv's `alpha`)")
    ap.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help="seconds any one build or run may take",
    )
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    ap.add_argument("--no-alpha", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-numpy", action="store_true")
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.scale <= 0 or args.timeout <= 0:
        ap.error("--repeats, --scale and --timeout must be positive")
    try:
        threads = sorted({int(t) for t in args.threads.split(",")})
    except ValueError:
        ap.error(f"--threads must be comma-separated integers, got {args.threads!r}")
    if not threads or threads[0] < 1:
        ap.error("--threads must be positive")
    models = chosen_models(args)
    started = time.perf_counter()

    info = machine()
    info["flags"] = cpu_flags()
    print(f"machine: {info['cpu']}, {info['cores']} cores ({info.get('simd', '')})")
    print(f"python {info['python']}, {info['os']}")
    info["load_at_start"] = load_average()
    warn_load("at start", info["load_at_start"])

    cli = shlex.split(args.alpha_cli) if args.alpha_cli else alpha_cli()
    support = thread_support(cli, timeout=args.timeout) if cli and not args.no_alpha else "none"
    alpha_threads = threads if support != "none" else [1]
    if not args.no_alpha:
        print(
            f"alpha: {shlex.join(cli) if cli else 'not found'}, --cpu {args.cpu}, threads: "
            + {
                "run": "--threads N when the executable runs",
                "build": "alpha build --threads N, one build per count",
                "none": "not supported by this alpha (1 thread only)",
            }[support]
        )

    per_model: dict[str, dict[str, System]] = {}
    with tempfile.TemporaryDirectory(prefix="alpha-scale-") as tmp:
        work = Path(tmp)
        for model in models:
            systems: dict[str, System] = {}
            if not args.no_alpha:
                for t in alpha_threads:
                    systems[f"alpha-{t}"] = AlphaSystem(
                        model, t, support, cli, args.cpu, args.timeout
                    )
                    if args.fused:
                        systems[f"fused-{t}"] = AlphaSystem(
                            model, t, support, cli, args.cpu, args.timeout, fused=True
                        )
            if not args.no_torch:
                for t in threads:
                    systems[f"torch-{t}"] = PeerSystem(model, "torch", t, args.timeout)
            if not args.no_numpy:
                systems["numpy-1"] = PeerSystem(model, "numpy", 1, args.timeout)
            per_model[model.name] = systems
            build_start = time.perf_counter()
            for system in systems.values():
                system.prepare(work)
            print(
                f"{model.name}: prepared in {time.perf_counter() - build_start:.1f} s"
                f" (Alpha steps {model.alpha_steps[0]}/{model.alpha_steps[1]}, "
                f"peers {model.peer_steps})"
            )
            for key, system in systems.items():
                if not system.ready:
                    print(f"  {key}: {system.result.note}")
        for r in range(args.repeats):
            round_start = time.perf_counter()
            for systems in per_model.values():
                for system in systems.values():
                    if system.ready:
                        system.sample()
            print(
                f"round {r + 1}/{args.repeats}: {time.perf_counter() - round_start:.1f} s, "
                f"load {load_average()[0]:.2f}"
            )
    info["load_at_end"] = load_average()
    rows = [summarise(m, per_model[m.name], threads) for m in models]
    print()
    print_table(rows, threads)
    print()
    for row in rows:
        for key, res in row["systems"].items():
            if res["note"]:
                print(f"{row['model']} {key}: {res['note']}")
    for row in rows:
        print(f"{row['model']}: {same_bits(row['systems'])}")
        if args.fused:
            print(f"{row['model']} fused: {same_bits(row['systems'], 'fused')}")
    warn_load("at end", info["load_at_end"])
    seconds = time.perf_counter() - started
    print(f"whole run: {seconds:.0f} s")

    if args.json:
        payload = {
            "machine": info,
            "options": {
                "cpu": args.cpu,
                "threads": threads,
                "alpha_threads": alpha_threads,
                "alpha_thread_support": support,
                "repeats": args.repeats,
                "scale": args.scale,
                "digits_data": str(DIGITS_DATA),
            },
            "env": {k: v for k, v in single_thread_env().items() if k.endswith("_THREADS")},
            "seconds": seconds,
            "models": rows,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.TimeoutExpired as exc:
        print(f"error: `{exc.cmd}` ran past {exc.timeout} s", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
