"""Row groups (alpha_core/codegen/row_groups.py): runs of nodes computed a block of rows at a
time, each block through every node of the run before the next. A small decoder block (layer
norm, causal attention, a gelu MLP, residuals) at sizes where its nodes run as tasks forms
groups in its forward and adjoint, and its executable equals the NumPy float32 reference bit for
bit at 1 thread and gives the same SHA-256 at 2 and 3."""

from __future__ import annotations

from pathlib import Path

from conftest import program_of, recorded
from test_exact import assert_exact_on_threads

from alpha_core.codegen import graph_emit
from alpha_core.codegen.row_groups import RowGroup

SOURCE = """system grouped {
  data train: sequences(task: sort, length: 16, rows: 256, seed: 1, holdout: 16)
  batch 16 leaves 1 shuffle(seed: 7)
  param tok: f32[11, 64] = normal(0.0, 0.1, seed: 1)
  param pos: f32[32, 64] = normal(0.0, 0.1, seed: 2)
  param g1: f32[64] = ones
  param g2: f32[64] = ones
  param s1: f32[64] = zeros
  param s2: f32[64] = zeros
  param bo: f32[64] = zeros
  param wq: f32[64, 64] = normal(0.0, 0.125, seed: 3)
  param wk: f32[64, 64] = normal(0.0, 0.125, seed: 4)
  param wv: f32[64, 64] = normal(0.0, 0.125, seed: 5)
  param wo: f32[64, 64] = normal(0.0, 0.125, seed: 6)
  param w1: f32[64, 128] = normal(0.0, 0.125, seed: 8)
  param w2: f32[128, 64] = normal(0.0, 0.088, seed: 9)
  param wout: f32[64, 11] = normal(0.0, 0.125, seed: 10)
  fn norm(h: f32[B, 32, 64], gain: f32[64], shift: f32[64]) -> f32[B, 32, 64] {
    let c = h - mean(h, axis: 2, keepdims: true)
    return c / sqrt(mean(square(c), axis: 2, keepdims: true) + 0.00001) * gain + shift
  }
  fn heads(p: f32[B, 32, 64]) -> f32[B, 2, 32, 32] {
    return transpose(reshape(p, B, 32, 2, 32), 1, 2)
  }
  fn model(x: f32[B, 32]) -> f32[B, 16, 11] {
    let h = embed(tok, x) + pos
    let a = norm(h, g1, s1)
    let s = softmax(causal_mask(heads(a @ wq) @ heads(a @ wk).T * 0.1767767), axis: 3)
    let r = h + reshape(transpose(s @ heads(a @ wv), 1, 2), B, 32, 64) @ wo + bo
    let o = r + gelu(norm(r, g2, s2) @ w1) @ w2
    return slice(o, axis: 1, start: 16, stop: 32) @ wout
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.001, beta1: 0.9, beta2: 0.999, eps: 1e-08)
  steps 4
}
"""


def test_the_block_forms_row_groups(tmp_path: Path) -> None:
    found = recorded("row_groups", program_of(SOURCE, tmp_path / "g.alpha"))
    seen: list[RowGroup] = [group for groups in found for group in groups]
    # the norms, attention's scores and softmax, and their adjoints: runs of several nodes,
    # each run a block of rows that divides the batch
    assert len(seen) >= 6
    assert max(len(g.members) for g in seen) >= 8
    assert all(g.first % g.rows == 0 and g.rows < g.first for g in seen)


def test_row_groups_keep_the_bits(tmp_path: Path) -> None:
    assert_exact_on_threads(SOURCE, tmp_path)


def _groups(
    members: dict[int, tuple[int, tuple[bool, ...], list[int]]],
    nodes: int,
    in_place: dict[int, int] | None = None,
    transparent: frozenset[int] = frozenset(),
) -> list[tuple[int, ...]]:
    """row_groups over `nodes` nodes in order: node i joins with (first extent, cut, sources)
    as given (every node 64 floats a row, so each splits on its own), None otherwise."""
    from alpha_core.ir.graph import Graph, Node

    shapes: dict[int, tuple[int, ...]] = {}
    graph_nodes = []
    for i in range(nodes):
        src = (in_place or {}).get(i)
        graph_nodes.append(Node("reshape" if src is not None else "add", (src or 0,), ()))
        shapes[i] = (members[i][0] if i in members else 16, 4096)

    def member(i: int) -> object:
        if i not in members:
            return None
        first, cut, sources = members[i]
        return first, cut, sources, shapes[i], [shapes[j] for j in sources]

    found = graph_emit.row_groups(
        Graph(tuple(graph_nodes)),
        range(nodes),
        member,  # type: ignore[arg-type]
        lambda i: i in transparent,
        set(in_place or ()),
    )
    return [g.members for g in found]


def test_a_run_joins_only_where_rows_meet_rows() -> None:
    cut, whole = (True,), (False,)
    # 1 reads 0's rows: together; 2 reads 1 whole: the run ends before it
    assert _groups({0: (16, (), []), 1: (16, cut, [0]), 2: (16, whole, [1])}, 3) == [(0, 1)]
    # a tensor from before the run may be read whole (a gain, a mean over the first axis)
    assert _groups({1: (16, cut, [0]), 2: (16, whole, [0])}, 3) == [(1, 2)]
    # another first extent ends the run; a node that cannot join ends it too
    assert _groups({0: (16, (), []), 1: (8, cut, [0]), 2: (8, cut, [1])}, 3) == [(1, 2)]
    assert _groups({0: (16, (), []), 2: (16, cut, [0])}, 3) == []
    # a reshape read in place is its input's rows; a bound node is passed over
    assert _groups({0: (16, (), []), 3: (16, cut, [2])}, 4, {2: 0}, frozenset({1})) == [(0, 3)]
    assert _groups({0: (16, (), []), 3: (16, whole, [2])}, 4, {2: 0}, frozenset({1})) == []
