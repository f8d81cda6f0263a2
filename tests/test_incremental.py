"""Analysis is incremental per declaration, and an incremental result is a from-scratch one.

What is redone is counted, not timed: `parser.parse_cache_info().misses` counts declarations
and items parsed anew, `Workspace.counts` the systems, plans and pairings checked anew.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alpha_core.syntax import parser
from alpha_core.workspace.analysis import Analysis, CheckCounts, Workspace, clear_memos
from alpha_core.workspace.module_check import CheckedModule, check_module

PATH = "/project/many.alpha"
DATA = "/project/data/rows.csv"


def system(i: int, data: str = "") -> str:
    data = data or f"synthetic(rows: 64, features: 4, classes: 3, seed: {i})"
    return f"""system s{i} {{
  data train: {data}
  batch 8 leaves 4 shuffle(seed: {i})
  param w1: f32[4, 8] = normal(0.0, 0.1, seed: {i})
  param b1: f32[8] = zeros
  param w2: f32[8, 3] = uniform(-0.1, 0.1, seed: {i + 1})
  fn hidden(x: f32[B, 4]) -> f32[B, 8] {{
    let h = x @ w1 + b1
    return relu(h)
  }}
  fn model(x: f32[B, 4]) -> f32[B, 3] {{
    return hidden(x) @ w2
  }}
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps {100 + i}
}}

plan p{i} for s{i} {{
  roles worker[2]
  topology pair
}}

pairing q{i} for p{i} {{
  worker[*]: host x86_64
}}

"""


SYSTEMS = 12
# the last system reads a table; the others draw synthetic data
MANY = "".join(system(i) for i in range(SYSTEMS - 1)) + system(
    SYSTEMS - 1, 'table("data/rows.csv", features: 4, classes: 3)'
)
ROWS = b"".join(b"0.1,0.2,0.3,0.4,%d\n" % (r % 3) for r in range(40))


def reader(files: dict[str, bytes]) -> Callable[[str], bytes | None]:
    return files.get


def from_scratch(text: str, files: dict[str, bytes]) -> tuple[Analysis, CheckedModule]:
    """The same text analysed with every memo emptied (so count before this), and checked by
    `check_module` alone."""
    clear_memos()
    module, _ = parser.parse(text)
    checked = check_module(module, reader(files), os.path.dirname(PATH))
    return Workspace(read_file=reader(files)).analyze(PATH, text), checked


def assert_same(a: Analysis, text: str, files: dict[str, bytes]) -> None:
    fresh, checked = from_scratch(text, files)
    assert a.module == fresh.module
    assert a.diagnostics == fresh.diagnostics
    for ours in (fresh.checked, checked):
        assert a.checked.diagnostics == ours.diagnostics
        # the same entries in the same order (the faces iterate them)
        assert list(a.checked.types.items()) == list(ours.types.items())
        assert list(a.checked.definitions.items()) == list(ours.definitions.items())
        assert a.checked.programs == ours.programs
        assert a.checked.plans == ours.plans
        assert a.checked.pairings == ours.pairings
    assert a.program("s3") == fresh.program("s3")


def edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def counts(ws: Workspace) -> tuple[int, CheckCounts]:
    return parser.parse_cache_info().misses, CheckCounts(**vars(ws.counts))


def redone(ws: Workspace, before: tuple[int, CheckCounts]) -> tuple[int, int, int, int]:
    """(declarations and items parsed, systems, plans, pairings checked) since `before`."""
    misses, checked = before
    return (
        parser.parse_cache_info().misses - misses,
        ws.counts.systems - checked.systems,
        ws.counts.plans - checked.plans,
        ws.counts.pairings - checked.pairings,
    )


def test_the_file_is_valid_and_checks_every_declaration_once() -> None:
    files = {DATA: ROWS}
    ws = Workspace(read_file=reader(files))
    a = ws.analyze(PATH, MANY)
    assert a.diagnostics == []
    assert len(a.checked.programs) == len(a.checked.plans) == len(a.checked.pairings) == SYSTEMS
    assert ws.counts == CheckCounts(SYSTEMS, SYSTEMS, SYSTEMS)


def test_an_edit_inside_one_system_redoes_that_declaration_only() -> None:
    files = {DATA: ROWS}
    ws = Workspace(read_file=reader(files))
    ws.analyze(PATH, MANY)
    # a longer number: every declaration after it moves by one character
    text = edit(MANY, "steps 105", "steps 1005")
    before = counts(ws)
    a = ws.analyze(PATH, text)
    # s5 and its item `steps 1005` parsed; s5 checked, then its plan and that plan's pairing
    assert redone(ws, before) == (2, 1, 1, 1)
    assert a.checked.programs["s5"].steps == 1005
    assert_same(a, text, files)


def test_an_edit_inside_a_plan_rechecks_the_plan_and_its_pairing() -> None:
    files = {DATA: ROWS}
    ws = Workspace(read_file=reader(files))
    ws.analyze(PATH, MANY)
    text = edit(MANY, "plan p7 for s7 {\n  roles worker[2]", "plan p7 for s7 {\n  roles worker[ 2]")
    before = counts(ws)
    a = ws.analyze(PATH, text)
    assert redone(ws, before) == (2, 0, 1, 1)
    assert_same(a, text, files)


def test_moving_every_declaration_reparses_and_rechecks_nothing() -> None:
    files = {DATA: ROWS}
    ws = Workspace(read_file=reader(files))
    ws.analyze(PATH, MANY)
    text = "# a comment above everything\n\n" + MANY
    before = counts(ws)
    a = ws.analyze(PATH, text)
    assert redone(ws, before) == (0, 0, 0, 0)
    assert_same(a, text, files)


def test_a_refusal_moves_with_its_declaration() -> None:
    files = {DATA: ROWS}
    ws = Workspace(read_file=reader(files))
    broken = edit(
        MANY, "learner adam(lr: 0.01)\n  steps 104", "learner adam(lr: -1.0)\n  steps 104"
    )
    first = ws.analyze(PATH, broken)
    [refusal] = first.diagnostics
    moved = "\n\n\n" + broken
    before = counts(ws)
    a = ws.analyze(PATH, moved)
    assert redone(ws, before) == (0, 0, 0, 0)
    [again] = a.diagnostics
    assert again.span is not None and refusal.span is not None
    assert again.span.start == refusal.span.start + 3
    assert_same(a, moved, files)


def test_a_changed_data_file_rechecks_the_system_that_reads_it() -> None:
    files = {DATA: ROWS}
    ws = Workspace(read_file=reader(files))
    first = ws.analyze(PATH, MANY)
    files[DATA] = ROWS + b"0.5,0.6,0.7,0.8,1\n"
    before = counts(ws)
    a = ws.analyze(PATH, MANY)
    last = f"s{SYSTEMS - 1}"
    assert redone(ws, before) == (0, 1, 1, 1)
    assert a.checked.programs[last].data.rows == first.checked.programs[last].data.rows + 1
    assert_same(a, MANY, files)


def test_a_system_renamed_away_refuses_its_plan_and_back_reuses_the_checks() -> None:
    files = {DATA: ROWS}
    ws = Workspace(read_file=reader(files))
    ws.analyze(PATH, MANY)
    renamed = edit(MANY, "system s2 {", "system z2 {")
    a = ws.analyze(PATH, renamed)
    assert [d.name for d in a.diagnostics] == ["unknown-name"]
    assert "p2" not in a.checked.plans and "q2" not in a.checked.pairings
    # named back, below a new first line: a text never analysed, made of declarations that were
    before = counts(ws)
    again = ws.analyze(PATH, "# back\n" + MANY)
    assert redone(ws, before) == (0, 0, 0, 0)
    assert again.diagnostics == []
    assert_same(again, "# back\n" + MANY, files)
    assert_same(a, renamed, files)  # last: a from-scratch analysis empties the memos


# random edits of the many-system file, one after another in one workspace
EDITS = st.lists(
    st.tuples(
        st.integers(0, len(MANY)),
        st.integers(0, 6),
        st.sampled_from(["", "\n", "1", " ", "}", "{", "x", "gpu", "# c\n", "\nsystem t {\n"]),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EDITS)
def test_random_edits_give_the_from_scratch_result(edits: list[tuple[int, int, str]]) -> None:
    files = {DATA: ROWS}
    ws = Workspace(read_file=reader(files))
    text = MANY
    ws.analyze(PATH, text)
    for at, cut, new in edits:
        at = min(at, len(text))
        text = text[:at] + new + text[at + cut :]
        a = ws.analyze(PATH, text)
    assert_same(a, text, files)
