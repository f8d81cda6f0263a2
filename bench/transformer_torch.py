"""A d-128 decoder-only transformer per training step: Alpha against PyTorch eager, float32.

Issue 25's model: token and position embeddings (d_model 128), 4 pre-norm blocks (layer norm,
causal self-attention with 4 heads of 32, residual; layer norm, a 4x MLP with the tanh gelu,
residual), a final layer norm and an untied output projection; T 64 (the text of
`sequences(task: sort, length: 32, ...)`: 32 digits, a separator and 31 answer digits; the
loss is the cross-entropy of the 32 answer positions), batch 16 in one leaf, Adam.

The system is generated text (`alpha_source`): each block's 16 parameters declared once in a
block array `param blocks[4] { ... }`, members of one type and initialiser on one line: 39 lines
whatever the number of blocks (105 at 4 blocks when they were written out per block).
PyTorch runs an idiomatic eager module (nn.Embedding, nn.LayerNorm,
nn.Linear, nn.GELU(approximate="tanh"), softmax attention with a causal mask) holding a copy
of Alpha's initial parameters (alpha_core.semantics.rng, as bench/ops_torch.py takes them) and
trained on the same batches (the runtime's batch selection) with torch.optim.Adam.

Timed per training step, the systems sampled in interleaved rounds so that a change in the
machine's load falls on all alike; each keeps its best sample:

- PyTorch at 1 and 2 threads (torch.set_num_threads): N steps after warm-up, wall clock / N.
- Alpha built with default flags (run with `--threads 1` and `--threads 2`) and with
  `--cpu x86-64-v4` (`--threads 1`; where the CPU has AVX-512): differential,
  (t(S + N steps) - t(S steps)) / N over whole runs, which removes start-up and data.

Printed: the machine (bench/machine.py), the 1-minute load before and after, the generated
source's line count, the first-step losses of both, ms per step, the ratios Alpha / PyTorch,
and the parameter SHA-256 of every Alpha run of S + N steps (each thread count, each build,
and the default build forced to x86-64-v2, v3 and v4 with ALPHA_CPU_LEVEL): all one value.

`--perf` instead builds the default system unstripped (the link's `-s` dropped in this
process only), records one run (`--threads T`, default 1) with `perf record` and prints
`perf report`'s top symbols, each node function with the shapes of the graph node it was made
for, the shares by kind (GEMM, attention, layer norm, gelu, ...) and, at T > 1, by thread:
where Alpha's step time goes.

`--deep N` instead prints the N-block model's line count and its warm build time (issue 25:
12 blocks in under 40 lines, built warm in under 20 s).

Usage: .venv-bench/bin/python bench/transformer_torch.py [--quick] [--steps N] [--rounds R]
    [--json OUT] | --perf [--steps N] [--threads T] | --deep N
This is a benchmark, never a test: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from alpha_timing import AlphaBuild, has_avx512  # noqa: E402
from learners_torch import initial_params, round_rows  # noqa: E402
from machine import machine  # noqa: E402
from scale_models import fused_source  # noqa: E402
from torch_models import (  # noqa: E402
    ANSWER,
    BATCH,
    BETA1,
    BETA2,
    BLOCK_PARAMS,
    BLOCKS,
    DH,
    EPS,
    HEADS,
    HIDDEN,
    LR,
    ROWS,
    SCALE,
    VOCAB,
    D,
    T,
    load_named,
    torch_module,
)

from alpha_core.build.executables import build_program  # noqa: E402
from alpha_core.data import synthetic  # noqa: E402
from alpha_core.link.toolchain import LinkError  # noqa: E402
from alpha_core.workspace.analysis import Workspace  # noqa: E402

W_STD, W2_STD, EMBED_STD = 1.0 / math.sqrt(D), 1.0 / math.sqrt(HIDDEN), 0.1


def alpha_source(steps: int, blocks: int = BLOCKS) -> str:
    """The system as Alpha text: each block's 16 parameters declared once, in a block array
    (docs/language.md, "Block arrays"), members of one type and initialiser on one line;
    `blocks` blocks (the benchmark's 4, or more for `--deep`)."""
    seeds = iter(range(1, 100))

    def init(kind: str, names: int = 1) -> str:
        if kind in ("ones", "zeros"):
            return kind
        std = {"w": W_STD, "w2": W2_STD, "embed": EMBED_STD}[kind]
        seed = next(seeds)
        for _ in range(names - 1):  # the k-th name of a member declaration takes seed + k
            next(seeds)
        return f"normal(0.0, {std:.9g}, seed: {seed})"

    def typed(shape: tuple[int, ...]) -> str:
        return f"f32[{', '.join(map(str, shape))}]"

    embeddings = init("embed"), init("embed")  # seeds 1 and 2, then the members', then wout's
    groups: dict[tuple[tuple[int, ...], str], list[str]] = {}
    for name, shape, kind in BLOCK_PARAMS:
        groups.setdefault((shape, kind), []).append(name)
    members = [
        f"    {', '.join(names)}: {typed(shape)} = {init(kind, len(names))}\n"
        for (shape, kind), names in groups.items()
    ]
    h, v = f"f32[B, {T}, {D}]", f"f32[{D}]"
    return "".join(
        [
            "system gpt {\n",
            f"  data train: sequences(task: sort, length: {T // 2}, rows: {ROWS}, seed: 1, "
            "holdout: 16)\n",
            f"  batch {BATCH} leaves 1 shuffle(seed: 7)\n",
            f"  param tok: {typed((VOCAB, D))} = {embeddings[0]}\n",
            f"  param pos: {typed((T, D))} = {embeddings[1]}\n",
            f"  param blocks[{blocks}] {{\n",
            *members,
            "  }\n",
            f"  param lnfg: {v} = ones\n",
            f"  param lnfb: {v} = zeros\n",
            f"  param wout: {typed((D, VOCAB))} = {init('w')}\n",
            f"  param bout: {typed((VOCAB,))} = zeros\n",
            f"  fn norm(h: {h}, gain: {v}, shift: {v}) -> {h} {{\n",
            "    let c = h - mean(h, axis: 2, keepdims: true)\n",
            "    return c / sqrt(mean(square(c), axis: 2, keepdims: true) + 0.00001) * gain"
            " + shift\n",
            "  }\n",
            f"  fn heads(p: {h}) -> f32[B, {HEADS}, {T}, {DH}] {{\n",
            f"    return transpose(reshape(p, B, {T}, {HEADS}, {DH}), 1, 2)\n",
            "  }\n",
            f"  fn block(h: {h}, p: blocks) -> {h} {{\n",
            "    let a = norm(h, p.ln1g, p.ln1b)\n",
            "    let s = softmax(causal_mask(heads(a @ p.wq + p.bq) @ heads(a @ p.wk + p.bk).T * "
            f"{SCALE!r}), axis: 3)\n",
            f"    let r = h + reshape(transpose(s @ heads(a @ p.wv + p.bv), 1, 2), B, {T}, {D}) "
            "@ p.wo + p.bo\n",
            "    return r + gelu(norm(r, p.ln2g, p.ln2b) @ p.w1 + p.b1) @ p.w2 + p.b2\n",
            "  }\n",
            f"  fn model(x: f32[B, {T}]) -> f32[B, {ANSWER}, {VOCAB}] {{\n",
            "    let h = embed(tok, x) + pos\n",
            f"    for i in 0..{blocks} {{ h = block(h, blocks[i]) }}\n",
            f"    return slice(norm(h, lnfg, lnfb), axis: 1, start: {T - ANSWER}, stop: {T}) "
            "@ wout + bout\n",
            "  }\n",
            "  loss softmax_cross_entropy(model(x), y)\n",
            f"  learner adam(lr: {LR}, beta1: {BETA1}, beta2: {BETA2}, eps: {EPS})\n",
            f"  steps {steps}\n",
            "}\n",
        ]
    )


def program_only(steps: int, folder: Path) -> Any:
    return program_of(steps, folder)[0]


def fused_program(steps: int, folder: Path) -> Any:
    """The system in `arithmetic fused` (docs/language.md)."""
    path = folder / f"gpt{steps}-fused.alpha"
    path.write_text(fused_source(alpha_source(steps)))
    program, diags = Workspace().analyze_file(str(path)).program()
    assert program is not None and program.fused, [(d.name, d.message) for d in diags]
    return program


def program_of(steps: int, folder: Path) -> tuple[Any, int]:
    """The checked program of the system at `steps`, and its source's line count."""
    path = folder / f"gpt{steps}.alpha"
    text = alpha_source(steps)
    path.write_text(text)
    program, diags = Workspace().analyze_file(str(path)).program()
    assert program is not None, [(d.name, d.message) for d in diags]
    return program, text.count("\n")


def load_alpha_params(model: Any, program: Any) -> None:
    """Copies Alpha's initial values into the module, on the module's device."""
    tensors = initial_params(program)
    values = {spec.name: t.detach() for spec, t in zip(program.params, tensors, strict=True)}
    load_named(model, values)


class TorchRun:
    """The module trained on the system's batches; each sample starts from the initial
    values again (a fresh copy and a fresh Adam) and times `steps` steps after 2 warm-up."""

    def __init__(self, program: Any, device: str = "cpu", train: bool = True) -> None:
        import torch

        self.torch = torch
        self.program = program
        self.device = device  # "cuda": the peer of a GPU role (bench/gpu_models.py)
        x, y = synthetic.generate(program.data)
        self.X = torch.from_numpy(x.astype(np.int64)).to(device)
        self.Y = torch.from_numpy(y.astype(np.int64)).to(device)
        self.best: dict[int, float] = {}
        torch.set_num_threads(1)
        self.losses = self.train(program.steps) if train else []

    def train(self, steps: int, warmup: int = 0) -> list[float]:
        torch = self.torch
        model = torch_module().to(self.device)
        load_alpha_params(model, self.program)
        opt = torch.optim.Adam(model.parameters(), lr=LR, betas=(BETA1, BETA2), eps=EPS)
        batches = []
        for t in range(warmup + steps):
            rows = torch.from_numpy(round_rows(self.program, t % self.program.steps))
            rows = rows.to(self.device)
            batches.append((self.X[rows], self.Y[rows]))
        losses = []
        t0 = 0.0
        for t, (x, y) in enumerate(batches):
            if t == warmup:
                if self.device != "cpu":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = model(x, y)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        if self.device != "cpu":
            torch.cuda.synchronize()
        self.seconds = time.perf_counter() - t0
        return [float(v) for v in losses]

    def sample(self, threads: int, steps: int) -> None:
        self.torch.set_num_threads(threads)
        self.train(steps, warmup=2)
        ms = 1e3 * self.seconds / steps
        self.best[threads] = min(self.best.get(threads, float("inf")), ms)


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-30)


def node_functions(program: Any) -> dict[str, str]:
    """What each of the kernels' node functions (`alpha.node.K.op`) computes: its op and
    output and input shapes, for the first graph node it was made for (nodes of the same
    kind, shape and constants share one, e.g. the 4 blocks'). The kernels are emitted once
    more in this process with GraphEmitter._node_function wrapped (no compiler change)."""
    from alpha_core.autodiff.reverse import training_step
    from alpha_core.codegen import graph_emit
    from alpha_core.codegen.kernels import build_kernels
    from alpha_core.codegen.target import TARGETS

    seen: dict[str, str] = {}
    original = graph_emit.GraphEmitter._node_function

    def recording(self: Any, name: str, i: int, node: Any, *rest: Any) -> Any:
        ins = " ".join(str(list(self.shape(j))) for j in node.inputs)
        seen.setdefault(name.removesuffix(".rows"), f"{list(self.shape(i))} <- {ins}")
        return original(self, name, i, node, *rest)

    host = TARGETS["x86_64"]
    graph_emit.GraphEmitter._node_function = recording  # type: ignore[method-assign]
    try:
        build_kernels(program, training_step(program), host.triple, host.cpu, host.features)
    finally:
        graph_emit.GraphEmitter._node_function = original  # type: ignore[method-assign]
    return seen


def category(symbol: str, shapes: str) -> str:
    """A coarse bucket of a profiled symbol, from its name and its node's shapes."""
    if symbol.startswith("alpha.gemm"):
        return "GEMM (the linear layers' products: forward, dx, dw)"
    if symbol.startswith("alpha.apply"):
        return "Adam (alpha.apply)"
    if not symbol.startswith("alpha.node."):
        return "outside the node functions (thread pool, kernel, start-up, init, libc)"
    op = symbol.rsplit(".", 1)[1]
    if op in ("gelu", "gelu_grad"):
        return "gelu and its adjoint"
    if op == "bmatmul":
        return "attention: batched products (q k^T, p v and their adjoints)"
    rank4 = f"{HEADS}, {T}" in shapes or f"{T}, {HEADS}" in shapes
    if op in ("swap_axes", "transpose") and rank4:
        return "attention: head split/merge and transposes (swap_axes, transpose)"
    if rank4 or op in ("softmax", "causal_mask"):
        return "attention: softmax, mask, scale and their adjoints"
    if op == "reduce_to":
        return "bias gradients (reduce_to over B, T)"
    return "layer norm, residual and bias adds, other element-wise"


def perf_profile(steps: int, threads: int, fused: bool = False) -> int:
    """Where the step goes: a default build linked without `-s`, perf record of one run
    (of the system in `arithmetic fused` with `fused`)."""
    import alpha_core.link.link as link

    link.LINK_FLAGS = tuple(f for f in link.LINK_FLAGS if f != "-s")  # type: ignore[assignment]
    with tempfile.TemporaryDirectory(prefix="transformer_perf.") as tmp:
        work = Path(tmp)
        program = fused_program(steps, work) if fused else program_of(steps, work)[0]
        exe = build_program(program, work / "build").executables[0].path
        data = work / "perf.data"
        cmd = [exe, "--threads", str(threads), "--quiet", "--params-out", str(work / "p")]
        rec = ["perf", "record", "-F", "2000", "-o", str(data), "--", *cmd]
        subprocess.run(rec, check=True, capture_output=True)
        report = subprocess.run(
            ["perf", "report", "-i", str(data), "--stdio", "--sort", "pid,symbol"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    nodes = node_functions(program)
    buckets: dict[str, float] = {}
    per_thread: dict[str, list[float]] = {}  # pid: [all samples, GEMM samples] in %
    print(
        f"perf record, {steps} steps, default build unstripped{' (fused)' if fused else ''}, "
        f"--threads {threads} "
        "(symbols >= 0.3% of all samples):"
    )
    for line in report.splitlines():
        parts = line.split()
        if line.startswith("#") or len(parts) < 4 or not parts[0].endswith("%"):
            continue
        share, pid, symbol = float(parts[0][:-1]), parts[1], parts[3]
        # a node run as tasks (codegen/outer_split.py): its block function, `….rows`
        symbol = symbol.removesuffix(".rows")
        shapes = nodes.get(symbol, "")
        bucket = category(symbol, shapes)
        buckets[bucket] = buckets.get(bucket, 0.0) + share
        mine = per_thread.setdefault(pid, [0.0, 0.0])
        mine[0] += share
        mine[1] += share if symbol.startswith("alpha.gemm") else 0.0
        if share >= 0.3:
            where = f" {pid}" if threads > 1 else ""
            print(f"  {share:6.2f}%  {symbol:<34}{where} {shapes}")
    print("by kind:")
    for bucket, share in sorted(buckets.items(), key=lambda kv: -kv[1]):
        print(f"  {share:6.2f}%  {bucket}")
    if threads > 1:
        print("by thread:")
        for pid, (total, gemm) in sorted(per_thread.items(), key=lambda kv: -kv[1][0]):
            print(f"  {pid}: {total:6.2f}% of the samples, {gemm:6.2f}% in the GEMM")
    return 0


def deep_build(blocks: int) -> int:
    """The d-128 model with `blocks` blocks: its source's line count, then its check and
    build warm as bench/build_time.py means it (zig's musl and the runtime's objects cached,
    this system's program part and kernels made anew), and the same build again (all cached)."""
    from build_time import fresh_shared, warm_toolchain

    with tempfile.TemporaryDirectory(prefix="transformer_deep.") as tmp:
        work = Path(tmp)
        text = alpha_source(20, blocks)
        path = work / "deep.alpha"
        path.write_text(text)
        warm_toolchain(work)
        print(f"{blocks}-block d-{D} transformer: {text.count(chr(10))} lines, load {load()}")
        with fresh_shared():
            for label in ("warm", "again"):
                start = time.perf_counter()
                program, diags = Workspace().analyze_file(str(path)).program()
                assert program is not None, [(d.name, d.message) for d in diags]
                checked = time.perf_counter() - start
                try:
                    build_program(program, work / label)
                except LinkError as refused:  # a refusal by name, its first line
                    took = time.perf_counter() - start
                    print(f"  {label}: refused after {took:.2f} s: {str(refused)[:300]}")
                    return 1
                took = time.perf_counter() - start
                print(
                    f"  {label}: check {checked:.2f} s, check and build {took:.2f} s "
                    f"({len(program.params)} tensors, {program.n_params:,} parameters)"
                )
    return 0


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20, help="steps timed per sample")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved samples of each")
    ap.add_argument("--quick", action="store_true", help="4 steps, 2 rounds")
    ap.add_argument("--perf", action="store_true", help="profile Alpha's step instead")
    ap.add_argument("--threads", type=int, default=1, help="with --perf: the run's threads")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--fused", action="store_true", help="also the system in arithmetic fused")
    ap.add_argument(
        "--deep", type=int, default=0, metavar="N", help="the N-block model's lines and build"
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.steps, args.rounds = 4, 2
    if args.perf:
        return perf_profile(args.steps, args.threads, args.fused)
    if args.deep:
        return deep_build(args.deep)
    info = machine()
    load_before = os.getloadavg()[0]
    short, long = 2, 2 + args.steps
    with tempfile.TemporaryDirectory(prefix="transformer_torch.") as tmp:
        work = Path(tmp)
        program, lines = program_of(long, work)
        print(
            f"generated Alpha source: {lines} lines, {len(program.params)} parameter tensors, "
            f"{sum(s.count for s in program.params):,} parameters"
        )
        builds = [AlphaBuild("default", None, work, short, long, program_only)]
        if has_avx512():
            builds.append(AlphaBuild("x86-64-v4", "x86-64-v4", work, short, long, program_only))
        if args.fused:
            builds.append(AlphaBuild("fused", None, work, short, long, fused_program))
        for build in builds:
            print(
                f"build {build.label}: {max(build.build_s.values()):.1f} s "
                f"(kernels at {build.level})",
                flush=True,
            )
        torch_run = TorchRun(program)
        plan = [(builds[0], 1), (builds[0], 2)] + [(b, 1) for b in builds[1:]]
        plan += [(b, 2) for b in builds if b.label == "fused"]
        for _ in range(args.rounds):
            for t in (1, 2):
                torch_run.sample(t, args.steps)
            for build, t in plan:
                build.sample(t)
        for level in ("x86-64-v2", "x86-64-v3", "x86-64-v4"):
            if level != "x86-64-v4" or has_avx512():
                builds[0].run(long, 1, level)
                for b in builds:
                    if b.label == "fused" and level != "x86-64-v2":  # no v2 copy: no FMA there
                        b.run(long, 1, level)
        load_after = os.getloadavg()[0]
        print(f"PyTorch {torch_run.torch.__version__}")
        print(f"CPU: {info['cpu']} ({info.get('CPU(s)', info['cores'])} CPUs, {info.get('simd')})")
        print(
            f"1-minute load {load_before:.2f} before, {load_after:.2f} after; "
            f"best of {args.rounds} interleaved samples, {args.steps} steps each"
        )
        a_losses, t_losses = builds[0].losses, torch_run.losses
        print(
            f"first-step loss: Alpha {a_losses[0]!r} PyTorch {t_losses[0]!r} "
            f"(relative difference {rel(a_losses[0], t_losses[0]):.1e})"
        )
        print(
            f"step {long} loss: Alpha {a_losses[-1]!r} PyTorch {t_losses[-1]!r} "
            f"(largest relative difference over {long} steps "
            f"{max(map(rel, a_losses, t_losses)):.1e})"
        )
        rows = [(f"PyTorch eager, {t} thread{'s' * (t > 1)}", torch_run.best[t]) for t in (1, 2)]
        rows += [(f"Alpha {b.label}, --threads {t}", b.ms_per_step(t)) for b, t in plan]
        print(f"{'system':<34} {'ms/step':>9} {'/ torch 1t':>11} {'/ torch 2t':>11}")
        for name, ms in rows:
            print(
                f"{name:<34} {ms:9.2f} {ms / torch_run.best[1]:11.2f} "
                f"{ms / torch_run.best[2]:11.2f}"
            )
        shas = {f"{b.label} {k}": sha for b in builds for k, sha in b.sha.items()}
        for name, sha in shas.items():
            print(f"params SHA-256 {name}: {sha}")
        unfused = {v for k, v in shas.items() if not k.startswith("fused ")}
        fused_shas = {v for k, v in shas.items() if k.startswith("fused ")}
        same = len(unfused) == 1 and len(fused_shas) <= 1
        print("SHA-256 equal at every cpu level and thread count (per arithmetic):", same)
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "machine": info,
                        "load": [load_before, load_after],
                        "source_lines": lines,
                        "steps": [short, long],
                        "rounds": args.rounds,
                        "ms_per_step": dict(rows),
                        "first_loss": {"alpha": a_losses[0], "torch": t_losses[0]},
                        "sha256": shas,
                        "build_s": {b.label: b.build_s for b in builds},
                    },
                    indent=2,
                )
                + "\n"
            )
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
