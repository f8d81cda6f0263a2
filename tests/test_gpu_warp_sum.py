"""A long reduction on the GPU by a warp keeps the declared order (alpha_core/codegen/gpu_warp_sum).

The host shadow runs the one-thread loop, so the order of the warp's additions is checked in
the PTX itself: every term is one `add.rn.f32` whose second operand is a `shfl.sync.idx` of lane
j, lanes 0..31 in turn within each chunk of 32 (0..tail-1 in the last), each addition's first
operand the previous one's result; the adds number the terms a GROUP of chunks, the leftover
chunks and the tail hold. On a card, scripts/qualify-gpu checks the digests (docs/performance.md:
every model's the host's).
"""

from __future__ import annotations

import re
from pathlib import Path

from conftest import program_of

from alpha_core.autodiff.reverse import training_step
from alpha_core.codegen.gpu_kernels import build_gpu_kernels
from alpha_core.codegen.gpu_warp_sum import GROUP, WARP, WARP_SUM_MIN
from alpha_core.codegen.ptx import emit_ptx, lint_ptx

ROWS = 300  # one leaf of 300 rows: the bias gradients sum 300 terms (9 chunks and 12)
SOURCE = f"""
system wide {{
  data train: synthetic(rows: 600, features: 4, classes: 3, seed: 5, noise: 0.3, holdout: 60)
  batch {ROWS} leaves 1
  param w1: f32[4, 12] = normal(0.0, 0.3, seed: 8)
  param b1: f32[12] = zeros
  param w2: f32[12, 3] = uniform(-0.2, 0.2, seed: 9)
  param b2: f32[3] = zeros
  fn model(x: f32[B, 4]) -> f32[B, 3] {{
    return tanh(x @ w1 + b1) @ w2 + b2
  }}
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 4
}}
"""
_SHFL = re.compile(r"shfl\.sync\.idx\.b32\s+(%r\d+),\s*%r\d+,\s*(\d+),\s*31,\s*-1;")
_ADD = re.compile(r"add\.rn\.f32\s+(%r\d+),\s*(%r\d+|0f[0-9A-F]{8}),\s*(%r\d+|0f[0-9A-F]{8});")
ZERO = "0f00000000"  # +0.0, where the sum starts


def _kernels(ptx: str) -> dict[str, str]:
    parts = re.split(r"^\.visible \.entry (\w+)\(", ptx, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_a_warp_adds_each_term_in_order(tmp_path: Path) -> None:
    program = program_of(SOURCE, tmp_path / "wide.alpha")
    module, layout = build_gpu_kernels(program, training_step(program), "ptx")
    ptx = emit_ptx(module)
    assert lint_ptx(ptx) == [], lint_ptx(ptx)[:5]
    warped = {name: body for name, body in _kernels(ptx).items() if "shfl.sync.idx" in body}
    assert warped, "no reduction took a warp"
    chunks, tail = divmod(ROWS, WARP)
    groups, left = divmod(chunks, GROUP)
    assert ROWS >= WARP_SUM_MIN and groups >= 1 and left and tail  # every path of warp_sum
    for name, body in warped.items():
        lanes: dict[str, int] = {}  # a shuffle's result register: its lane
        order: list[int] = []
        previous: str | None = None
        for line in body.splitlines():
            if m := _SHFL.search(line):
                lanes[m.group(1)] = int(m.group(2))
            elif (m := _ADD.search(line)) and (m.group(2) in lanes or m.group(3) in lanes):
                # a + b is b + a exactly: LLVM may put the term first
                term, acc = (3, 2) if m.group(3) in lanes else (2, 3)
                order.append(lanes[m.group(term)])
                if previous is None:
                    assert m.group(acc) == ZERO, (name, line)  # the first term: +0.0 + term
                elif order[-1] != 0:  # within a chunk: straight-line, the previous sum
                    assert m.group(acc) == previous, (name, line)
                previous = m.group(1)
        # the loop's body once (GROUP chunks), the leftover chunks, the tail: lanes in turn
        expected = list(range(WARP)) * (GROUP + left) + list(range(tail))
        assert order == expected, (name, order)
    # each warped node runs 32 threads an output
    names = {layout.kernels[launch.kernel]: launch.threads for launch in layout.leaf}
    for name in warped:
        assert names[name] % WARP == 0, (name, names[name])
