"""The canonical layout (alpha_core/syntax/format.py): formatting twice gives the text of
formatting once, the formatted file means the same (the same identity of every system, plan
and pairing, the same refusals), comments survive; on every example, on every refusal's
example, and on the damaged sources the checker's fuzz tests make."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz_checker import EXAMPLES, FILES, SEEDS, mutants

from alpha_core.syntax.format import format_text, layout_decl, tokens
from alpha_core.workspace.analysis import Workspace

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
COMMENT = re.compile(r"#[^\n]*")


def meaning(path: str, text: str) -> tuple[object, ...]:
    """What a file means: the identity of each checked declaration and the refusals' names."""
    a = Workspace(read_file=FILES.get).analyze(path, text)
    c = a.checked
    return (
        sorted((n, p.identity()) for n, p in c.programs.items()),
        sorted((n, p.identity()) for n, p in c.plans.items()),
        sorted((n, repr(p.entries)) for n, p in c.pairings.items()),
        sorted(d.name for d in a.diagnostics),
    )


def _comments(text: str) -> list[str]:
    return [m.group().rstrip() for m in COMMENT.finditer(text)]


def _assert_canonical(path: str, text: str) -> str:
    once = format_text(text)
    assert format_text(once) == once
    assert meaning(path, once) == meaning(path, text)
    return once


def test_every_seed_formats_to_itself_or_to_a_fixed_point() -> None:
    for path, text in SEEDS:
        once = _assert_canonical(path, text)
        assert _comments(once) == _comments(text), path
    # the examples are written in the canonical layout already
    for path, text in SEEDS:
        if path.endswith(("digits.alpha", "blobs.alpha")):
            assert format_text(text) == text, path


MESSY = """

# the model
system   s{
      data train : synthetic( rows:64,features :4, classes: 3, seed: 1 )
  batch 8 leaves 4     # aligned comment
  param w1 :f32[ 4,8 ]=normal( 0.0,0.1,seed:1)


  param b1: f32[8] = zeros
  fn model( x :f32[B,4] )->f32[B,3]{

  let h=x@w1+b1*-1.0
      return relu( h )@w2-h
  }
  param w2: f32[8, 3] = zeros
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps 10
}   # after the system
plan p for s {
  roles worker[2]
  topology pair
  leaves worker[0]: 0 .. 2, worker[1]:2..4
}
pairing q for p {
  worker[ * ] :host x86_64,memory 8 gib
}
"""

CANONICAL = """# the model
system s {
  data train: synthetic(rows: 64, features: 4, classes: 3, seed: 1)
  batch 8 leaves 4     # aligned comment
  param w1: f32[4, 8] = normal(0.0, 0.1, seed: 1)

  param b1: f32[8] = zeros
  fn model(x: f32[B, 4]) -> f32[B, 3] {
    let h = x @ w1 + b1 * -1.0
    return relu(h) @ w2 - h
  }
  param w2: f32[8, 3] = zeros
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps 10
} # after the system

plan p for s {
  roles worker[2]
  topology pair
  leaves worker[0]: 0..2, worker[1]: 2..4
}

pairing q for p {
  worker[*]: host x86_64, memory 8 gib
}
"""


def test_a_messy_file_takes_the_canonical_layout() -> None:
    assert format_text(MESSY) == CANONICAL
    assert meaning("/project/messy.alpha", MESSY) == meaning("/project/messy.alpha", CANONICAL)


def test_the_layout_of_ranges_attributes_and_unary_minus() -> None:
    # the layout alone (no parse): `..` and `.` bind tight, a unary minus binds to its operand
    text = "system s {\n  fn f(x: f32[B, 4]) -> f32[B, 4] {\n  return - x . T @ w-(-1.0)\n  }\n}"
    assert layout_decl(text) == (
        "system s {\n  fn f(x: f32[B, 4]) -> f32[B, 4] {\n    return -x.T @ w - (-1.0)\n  }\n}"
    )
    assert layout_decl("plan p for s {\nleaves worker[0] : 0 .. 4\n}") == (
        "plan p for s {\n  leaves worker[0]: 0..4\n}"
    )


def test_a_declaration_that_does_not_parse_is_left_as_it_is() -> None:
    broken = "system s {\n  param w:   f32[4 = zeros\n    steps   3\n}\n"
    text = broken + "\n\n\nplan   p for s {\n  roles worker[2]\n}\n"
    assert format_text(text) == broken + "\nplan p for s {\n  roles worker[2]\n}\n"


@SETTINGS
@given(mutants())
def test_damaged_sources_format_to_a_fixed_point_of_the_same_meaning(
    case: tuple[str, str, str],
) -> None:
    path, _, text = case
    once = _assert_canonical(path, text)
    assert _comments(once) == _comments(text)


@st.composite
def respaced(draw: st.DrawFn) -> tuple[str, str]:
    """(a seed, the same seed with other whitespace): any indentation (a declaration's first
    line aside), spaces added between
    tokens (never inside one, never before a comment), trailing blanks, a blank line made
    several."""
    path, text = draw(st.sampled_from(SEEDS[: len(EXAMPLES)]))
    out = []
    for line in text.split("\n"):
        if not line.strip():  # a blank line may become several
            out += [" " * draw(st.integers(0, 3))] * draw(st.integers(1, 3))
            continue
        toks = tokens(line)
        body = toks[0].text
        for t in toks[1:]:
            if t.kind == "comment":
                body += t.before + t.text
                continue
            extra = " " * draw(st.integers(0, 2))
            body += t.before + extra + t.text
        # a declaration starts at column 0 (elsewhere its keyword would start none)
        indent = 0 if re.match(r"(system|plan|pairing)\s", line) else draw(st.integers(0, 8))
        out.append(" " * indent + body + " " * draw(st.integers(0, 2)))
    return path, "\n".join(out)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(respaced())
def test_whitespace_does_not_change_the_canonical_layout(case: tuple[str, str]) -> None:
    path, text = case
    original = dict(SEEDS)[path]
    assert format_text(text) == format_text(original)
