"""Memo tables stay bounded over a long editing session (issue 9, item 10): counted, not timed.

A 1 MB document cost the language server ~58 MB per edit up to 3.8 GB: the workspace kept 64
whole analyses of it, and every table grew by entries alone. Now each table is bounded by
entries and by the characters of source its entries were computed from; after many edits of a
large document the live entries and their weight are within the bounds, a table that lost
entries still gives the analysis a fresh workspace gives, and an edit after evictions still
re-checks only what it must.
"""

from __future__ import annotations

from alpha_core.support.memo import Lru, live_tables
from alpha_core.workspace.analysis import Workspace


def _system(i: int) -> str:
    return f"""system s{i} {{
  data train: synthetic(rows: 16, features: 2, classes: 2, seed: {i})
  batch 4 leaves 2
  param w: f32[2, 2] = normal(0.0, 0.1, seed: {i})
  fn model(x: f32[B, 2]) -> f32[B, 2] {{
    return x @ w
  }}
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps {10 + i}
}}

plan p{i} for s{i} {{
  roles worker[2]
  topology pair
}}

"""


TEXT = "".join(_system(i) for i in range(400))  # about 150 KB
MIDDLE = TEXT.index("steps 210")  # the middle system's count: every later declaration moves


def _edited(k: int) -> str:
    # a new count each time, of 3 to 6 digits: no text repeats and the length changes
    return TEXT[:MIDDLE] + f"steps {10 ** (3 + k % 4) + k}" + TEXT[MIDDLE + len("steps 210") :]


def test_a_long_session_keeps_every_table_within_its_bounds() -> None:
    budget = 400_000  # characters: two versions of the document, not 64
    ws = Workspace(text_budget=budget)
    ws.analyze("/tmp/big.alpha", TEXT)
    for k in range(60):
        analysis = ws.analyze("/tmp/big.alpha", _edited(k))
    stats = {s.name: s for s in ws.memo_stats()}
    analyses = stats["workspace.analyses"]
    assert analyses.entries == budget // len(TEXT)  # 2 of the 61 analyses are live
    assert analyses.weight <= budget
    for s in ws.memo_stats() + live_tables():
        assert s.entries <= s.max_entries, s
        assert s.weight <= s.max_weight, s
    # what was kept still gives what a fresh workspace computes
    fresh = Workspace().analyze("/tmp/big.alpha", _edited(59))
    assert analysis.diagnostics == fresh.diagnostics
    assert sorted(analysis.checked.programs) == sorted(fresh.checked.programs)
    assert analysis.checked.plans.keys() == fresh.checked.plans.keys()


def test_an_edit_after_evictions_rechecks_only_its_system() -> None:
    ws = Workspace(text_budget=400_000)
    for k in range(30):
        ws.analyze("/tmp/big.alpha", _edited(k))
    before = ws.counts.systems, ws.counts.plans
    ws.analyze("/tmp/big.alpha", _edited(1000))
    assert (ws.counts.systems - before[0], ws.counts.plans - before[1]) == (1, 1)


def test_the_parse_memo_grows_by_what_an_edit_adds() -> None:
    from alpha_core.syntax import parser

    parser.clear_memos()
    parser.parse_file(TEXT)
    (first,) = [s for s in live_tables() if s.name == "parser.pieces"]
    for k in range(40):
        parser.parse_file(_edited(k))
    (pieces,) = [s for s in live_tables() if s.name == "parser.pieces"]
    # an edit adds the edited declaration and its edited item, nothing else
    assert pieces.entries == first.entries + 2 * 40
    assert pieces.weight <= pieces.max_weight


def test_lru_bounds_by_entries_and_by_weight() -> None:
    t: Lru[str, int] = Lru("test", 3, 10)
    for k, w in (("a", 4), ("b", 4), ("c", 1)):
        t.put(k, 0, w)
    assert len(t) == 3 and t.weight == 9
    assert t.get("a") == 0  # a is now the most recent
    t.put("d", 0, 4)  # 13 > 10: the least recent (b) goes
    assert t.get("b") is None and len(t) == 3 and t.weight == 9
    t.put("e", 0, 1)  # four entries > 3: c goes
    assert t.get("c") is None
    t.put("huge", 0, 11)  # heavier than the whole budget: not kept, nothing evicted for it
    assert t.get("huge") is None and len(t) == 3
