"""Random damage to real sources: parsing, checking and choosing a program never raise, every
refusal is registered and lies inside the text, and the piece cache never changes a parse."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alpha_core.diagnostics import Diagnostic
from alpha_core.diagnostics.registry import REGISTRY
from alpha_core.diagnostics.render import render, span_json
from alpha_core.support.span import Span
from alpha_core.syntax import ast
from alpha_core.syntax.parser import clear_memos, parse
from alpha_core.workspace.analysis import Workspace

ROOT = Path(__file__).resolve().parents[1]
# not the `_`-named copies another test writes there for a moment (tests run side by side)
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.alpha") if not p.name.startswith("_"))
SEEDS: list[tuple[str, str]] = [(str(p), p.read_text(encoding="utf-8")) for p in EXAMPLES] + [
    (f"/project/{name}.alpha", r.example) for name, r in sorted(REGISTRY.items()) if r.example
]
# The data files the examples name, read once; anything else is unreadable.
FILES: dict[str, bytes] = {str(p): p.read_bytes() for p in (ROOT / "examples" / "data").glob("*")}

UNSEEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9.]+(?:[eE][-+]?[0-9]+)?|\"[^\"\n]*\"|->|\S")
SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Draw = st.DrawFn
Mutation = Callable[[Draw, str], str]


def _tokens(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in TOKEN.finditer(text)]


def _index(draw: Draw, n: int) -> int:
    return draw(st.integers(0, max(0, n - 1)))


def _delete_token(draw: Draw, text: str) -> str:
    toks = _tokens(text)
    if not toks:
        return text
    a, b = toks[_index(draw, len(toks))]
    return text[:a] + text[b:]


def _duplicate_token(draw: Draw, text: str) -> str:
    toks = _tokens(text)
    if not toks:
        return text
    a, b = toks[_index(draw, len(toks))]
    return text[:b] + " " + text[a:b] + text[b:]


def _swap_tokens(draw: Draw, text: str) -> str:
    toks = _tokens(text)
    if len(toks) < 2:
        return text
    i, j = sorted((_index(draw, len(toks)), _index(draw, len(toks))))
    if i == j:
        return text
    (a, b), (c, d) = toks[i], toks[j]
    return text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]


def _lines_op(kind: str) -> Mutation:
    def mutate(draw: Draw, text: str) -> str:
        lines = text.splitlines(keepends=True)
        if not lines:
            return text
        i = _index(draw, len(lines))
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        else:
            j = _index(draw, len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        return "".join(lines)

    return mutate


# Words to put in a token's place: every token of the seeds, and values at the edges.
VOCABULARY = sorted(
    {m.group() for _, text in SEEDS for m in TOKEN.finditer(text)}
    | {
        "0",
        "-1",
        "1",
        "2",
        "65537",
        "1000000",
        "99999999999999999999",
        "1e999",
        "0.0",
        "-0.5",
        "B",
        "gpu",
        "x",
        "y",
        "model",
        "sum",
        "mean",
        "axis",
        "i64",
        '""',
        '"a"',
        "plan",
        "system",
    }
)


def _replace_token(draw: Draw, text: str) -> str:
    toks = _tokens(text)
    if not toks:
        return text
    a, b = toks[_index(draw, len(toks))]
    return text[:a] + draw(st.sampled_from(VOCABULARY)) + text[b:]


JUNK = st.one_of(
    st.text(min_size=1, max_size=8),  # any characters, of any script
    st.text(alphabet='{}()[]"#:,=@+-*/.\n\t 0123456789eBxyw_', min_size=1, max_size=8),
    st.binary(min_size=1, max_size=16).map(lambda b: b.decode("latin-1")),  # control bytes, NUL
    st.sampled_from(
        [
            "{",
            "}",
            "(",
            ")",
            "[",
            "]",
            '"',
            "{{",
            "}}}",
            "\nsystem ",
            "\nplan p {",
            "\r\n",
            "\x00",
            "\ufeff",
            "->",
            "9" * 400,
            "1e999",
        ]
    ),
)


def _insert(draw: Draw, text: str) -> str:
    at = _index(draw, len(text) + 1)
    return text[:at] + draw(JUNK) + text[at:]


def _truncate(draw: Draw, text: str) -> str:
    return text[: _index(draw, len(text) + 1)]


MUTATIONS: list[Mutation] = [
    _delete_token,
    _duplicate_token,
    _swap_tokens,
    _replace_token,
    _replace_token,
    _lines_op("delete"),
    _lines_op("duplicate"),
    _lines_op("swap"),
    _insert,
    _insert,
    _truncate,
]


@st.composite
def mutants(draw: Draw, seeds: list[tuple[str, str]] = SEEDS) -> tuple[str, str, str]:
    """(path, original, mutated): a seed source after one to four random mutations."""
    path, original = draw(st.sampled_from(seeds))
    text = original
    for _ in range(draw(st.integers(1, 4))):
        text = draw(st.sampled_from(MUTATIONS))(draw, text)
    return path, original, text


def _spans(node: object) -> Iterator[Span]:
    if isinstance(node, Span):
        yield node
    elif isinstance(node, tuple):
        for n in node:
            yield from _spans(n)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            yield from _spans(getattr(node, f.name))


def _assert_diagnostics_sound(diags: list[Diagnostic], text: str) -> None:
    for d in diags:
        assert d.name in REGISTRY
        assert d.message
        for span in [d.span, *(r.span for r in d.related)]:
            if span is not None:
                assert 0 <= span.start <= span.end <= len(text), (d, len(text))
        rendered = render(d, text, "fuzz.alpha")
        assert rendered.startswith(f"{d.severity}[{d.name}]: ")
        # no control character reaches a terminal raw (the JUNK inserts them); a newline only
        # ends a line
        assert not UNSEEN.search(rendered), repr(rendered)
        span_json(d.span, text)


def _assert_names_where_they_are(node: object, text: str) -> None:
    """Every name in the tree is the text its span covers: cached pieces were moved right."""
    if isinstance(node, ast.Name):
        assert text[node.span.start : node.span.end] == node.id
    elif isinstance(node, ast.Call):  # `w.T` is `transpose(w)` spelled at the `T`
        spelled = text[node.func_span.start : node.func_span.end]
        assert spelled == node.func or (spelled, node.func) == ("T", "transpose")
    elif isinstance(node, ast.Kwarg):
        assert text[node.name_span.start : node.name_span.end] == node.name
    elif isinstance(node, ast.Number):
        assert text[node.span.start : node.span.end] == node.text
    elif isinstance(node, ast.ErrorItem):
        assert text[node.span.start : node.span.end] == node.text
    named, name = getattr(node, "name_span", None), getattr(node, "name", None)
    if isinstance(named, Span) and isinstance(name, str) and name:
        assert text[named.start : named.end] == name
    if isinstance(node, tuple):
        for n in node:
            _assert_names_where_they_are(n, text)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            _assert_names_where_they_are(getattr(node, f.name), text)


def test_the_seeds_are_valid() -> None:
    assert len(EXAMPLES) >= 1
    for path, text in SEEDS[: len(EXAMPLES)]:
        analysis = Workspace(read_file=FILES.get).analyze(path, text)
        assert analysis.diagnostics == []
        assert analysis.program()[0] is not None


@SETTINGS
@given(mutants())
def test_damaged_sources_never_break_the_checker(case: tuple[str, str, str]) -> None:
    path, _, text = case
    module, parse_diags = parse(text)
    _assert_diagnostics_sound(parse_diags, text)
    analysis = Workspace(read_file=FILES.get).analyze(path, text)
    _assert_diagnostics_sound(analysis.diagnostics, text)
    for span in [
        *analysis.checked.types,
        *analysis.checked.definitions.values(),
        *analysis.checked.definitions,
        *_spans(module),
    ]:
        assert 0 <= span.start <= span.end <= len(text)
    for name in (None, "tiny", "digits", "nothing"):
        program, diags = analysis.program(name)
        assert (program is None) == bool(diags)
        _assert_diagnostics_sound(diags, text)
    _assert_names_where_they_are(module, text)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400))
def test_binary_files_never_break_the_checker(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")  # as Workspace.analyze_file reads a file
    analysis = Workspace(read_file=FILES.get).analyze("/project/junk.alpha", text)
    _assert_diagnostics_sound(analysis.diagnostics, text)
    _assert_diagnostics_sound(analysis.program()[1], text)


@SETTINGS
@given(mutants())
def test_parse_is_deterministic_and_incremental(case: tuple[str, str, str]) -> None:
    _, original, edited = case
    first = parse(original)
    assert parse(original) == first  # every piece now comes from the cache
    warm = parse(edited)  # the pieces the edit left alone come from the cache
    clear_memos()  # every parsed piece forgotten
    fresh = parse(edited)
    assert warm == fresh
    assert parse(original) == first  # and back: the edit's pieces do not leak into the original
    _assert_names_where_they_are(warm[0], edited)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SEEDS), st.integers(0, 40), st.sampled_from(["", "\n", "   \n", "#c\n"]))
def test_a_piece_moved_keeps_its_text(seed: tuple[str, str], lines: int, filler: str) -> None:
    """The same items at another offset: the cache gives the tree, the spans follow the text."""
    _, text = seed
    moved = "\n" * lines + filler * 3 + text
    module, diags = parse(text)
    moved_module, moved_diags = parse(moved)
    by = len(moved) - len(text)
    assert [s.shifted(by) for s in _spans(module)] == list(_spans(moved_module))
    assert [d.span.shifted(by) if d.span else None for d in diags] == [d.span for d in moved_diags]
    _assert_names_where_they_are(moved_module, moved)
