"""What a check of many systems does once, not once per system (issue 9, item 11): counted.

A 10 MB file of 32,870 small systems took 94 s in `alpha check`; one cause was that every
system naming the same table read (and hashed) the file again. The figures are in
docs/performance.md (bench/check_scale.py); here only the structure: one read per data file
per analysis, and a cold analysis of a one-shot workspace keeps no check.
"""

from __future__ import annotations

from pathlib import Path

from alpha_core.workspace.analysis import Workspace, read_disk


def _source(n: int) -> str:
    return "".join(
        f"""system s{i} {{
  data train: table("rows.csv", features: 2, classes: 2)
  batch 4 leaves 2
  param w: f32[2, 2] = normal(0.0, 0.1, seed: {i})
  fn model(x: f32[B, 2]) -> f32[B, 2] {{
    return x @ w
  }}
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps {10 + i}
}}
"""
        for i in range(n)
    )


def test_a_table_named_by_many_systems_is_read_once(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("".join(f"0.{i},0.5,{i % 2}\n" for i in range(40)))
    reads: list[str] = []

    def counted(path: str) -> bytes | None:  # the real reader, each call written down
        reads.append(path)
        return read_disk(path)

    ws = Workspace(read_file=counted)
    analysis = ws.analyze(str(tmp_path / "many.alpha"), _source(60))
    assert analysis.diagnostics == []
    assert len(analysis.checked.programs) == 60
    assert reads == [str(tmp_path / "rows.csv")]
    # the next analysis re-validates the file once too, and checks nothing anew
    ws.analyze(str(tmp_path / "many.alpha"), _source(60) + "\n")
    assert len(reads) == 2 and ws.counts.systems == 60


def test_a_one_shot_workspace_keeps_no_check(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("0.1,0.5,0\n0.2,0.5,1\n0.3,0.1,0\n0.4,0.2,1\n0.5,0.3,0\n")
    ws = Workspace(one_shot=True)
    analysis = ws.analyze(str(tmp_path / "many.alpha"), _source(20))
    assert len(analysis.checked.programs) == 20
    assert all(s.entries == 0 for s in ws.memo_stats() if s.name != "workspace.digests")
