"""Refusals as a user meets them: the registry's examples really trigger their refusal at the
span a human would point at, the generated docs are current, `alpha explain` and
`alpha check --json` behave, and the rendered text matches the golden files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from alpha_cli.main import main as alpha
from alpha_core.diagnostics import Diagnostic
from alpha_core.diagnostics.registry import COMPILE, REGISTRY
from alpha_core.diagnostics.render import render
from alpha_core.query import refusal_docs
from alpha_core.support.span import LineIndex, Span
from alpha_core.workspace.analysis import Workspace

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden" / "refusals"

# For each registry example: the text its refusal's primary span covers and the (1-based) line
# it is on, or None where the refusal has no place in the text.
EXAMPLE_SPANS: dict[str, tuple[str, int] | None] = {
    "syntax-error": ("}", 8),  # the token the incomplete `x @ w +` ran into
    "unknown-name": ("bias", 7),
    "duplicate-name": ("b", 6),  # the second declaration, not the first
    "shape-mismatch": ("@", 7),
    "type-mismatch": ("i64", 4),
    "device-in-semantics": ("rank", 2),
    "block-index-out-of-range": ("i + 1", 12),
    "block-index-not-constant": ("b", 10),
    "block-shape-mismatch": ("other[0]", 16),
    "seed-collision": ("w: f32[3, 3] = normal(0.0, 0.1, seed: 1)", 7),
    "missing-item": ("tiny", 1),  # the system that lacks it
    "bad-argument": ("rate", 10),
    "batch-not-divisible": ("3", 3),  # the leaf count
    "batch-axis-reduced": ("0", 7),  # the axis
    "system-too-large": ("model", 21),  # the model whose operations passed the limit
    "data-unreadable": ('"no/such/file.csv"', 2),
    "load-unreadable": ('"no/such/run.npz"', 4),
    "no-system": None,
    # plans and pairings
    "topology-mismatch": ("pair", 15),
    "fanout-exceeded": ("1000", 15),
    "combine-order-changed": ("arrival", 18),
    "leaves-uncovered": ("worker[1]: 2..4", 21),  # the assignment after the gap
    "leaves-overlap": ("worker[1]: 2..4", 21),  # the second of the two
    "role-without-leaves": ("roles worker[4]", 14),
    "pairing-incomplete": ("lab", 23),
    "pairing-overlap": ("worker[1]: host aarch64", 25),  # the second pairing of the role
    "unsupported-on-target": ("worker[*]: host aarch64, gpu h200", 24),
    "not-built-yet": ("contract approximate(tolerance: 0.001)", 21),
    "memory-admission": ("worker[*]: host x86_64, memory 1 mib", 24),
    "second-authority": ("params partitioned over worker", 21),
    "unowned-state": ("optimizer partitioned", 21),
    "partition-coverage": ("optimizer partitioned over worker", 21),
}


def _no_file(path: str) -> bytes | None:
    return None


def _diagnostics(
    source: str, path: str = "/project/tiny.alpha", files: dict[str, bytes] | None = None
) -> list[Diagnostic]:
    """The file's refusals, or if it has none, those of choosing a system to build."""
    ws = Workspace(read_file=(files or {}).get)
    analysis = ws.analyze(path, source)
    return analysis.diagnostics or analysis.program()[1]


def _where(source: str, span: Span) -> tuple[str, int]:
    return source[span.start : span.end], LineIndex(source).position(span.start).line + 1


# ---- (a) every registry example triggers its refusal, at the expected span --------------------


def test_every_example_has_an_expected_span() -> None:
    with_example = {name for name, r in REGISTRY.items() if r.example is not None}
    unexpected = sorted(with_example - set(EXAMPLE_SPANS))
    assert unexpected == [], "add the span each should point at to EXAMPLE_SPANS"
    assert sorted(set(EXAMPLE_SPANS) - with_example) == [], "these have no example any more"


def test_compile_time_refusals_have_examples() -> None:
    # link-failed comes from the native toolchain; no source text can be shown to trigger it
    without = {n for n, r in REGISTRY.items() if r.moment == COMPILE and r.example is None}
    assert without == {"link-failed"}
    assert all(r.example is None for r in REGISTRY.values() if r.moment != COMPILE)


@pytest.mark.parametrize("name", sorted(EXAMPLE_SPANS))
def test_example_triggers_its_refusal(name: str, tmp_path: Path) -> None:
    source = REGISTRY[name].example
    assert source is not None
    analysis = Workspace().analyze(str(tmp_path / "tiny.alpha"), source)
    if name == "no-system":
        assert analysis.diagnostics == []
        program, diags = analysis.program()
        assert program is None
    else:
        diags = analysis.diagnostics
    ours = [d for d in diags if d.name == name]
    assert ours, f"{name}: got {[d.name for d in diags]}"
    d = ours[0]
    expected = EXAMPLE_SPANS[name]
    if expected is None:
        assert d.span is None
    else:
        assert d.span is not None
        assert _where(source, d.span) == expected
    assert d.message and not d.message[0].isupper() and not d.message.endswith(".")


# More refusals, one per way the checker and parser refuse, each with the span a human would
# point at. Edits are applied to a small valid system.
TINY = """system tiny {
  data train: synthetic(rows: 64, features: 4, classes: 3, seed: 1)
  batch 8 leaves 2
  param w: f32[4, 3] = normal(0.0, 0.1, seed: 1)
  param b: f32[3] = zeros
  fn model(x: f32[B, 4]) -> f32[B, 3] {
    return x @ w + b
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 10
}
"""
HELPER = "  fn twice(a: f32[B, 3]) -> f32[B, 3] {\n    return a + a\n  }\n"


def _edit(*pairs: tuple[str, str]) -> str:
    text = TINY
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


RET = "return x @ w + b"
# fmt: off
CASES: list[tuple[str, str, str, str, int]] = [
    # (id, source, refusal, span text, line)
    ("positional-for-named", _edit(("sgd(lr: 0.1)", "sgd(0.1)")), "bad-argument", "0.1", 10),
    ("given-twice", _edit(("0.1, seed: 1)", "0.1, mean: 0.0, seed: 1)")), "bad-argument",
     "mean", 4),
    ("required-missing", _edit(("sgd(lr: 0.1)", "sgd()")), "bad-argument", "sgd()", 10),
    ("not-a-literal", _edit(("lr: 0.1", "lr: x")), "bad-argument", "x", 10),
    ("out-of-range", _edit(("lr: 0.1", "lr: -0.1")), "bad-argument", "-0.1", 10),
    ("string-in-model", _edit((RET, 'return x @ w + "b"')), "type-mismatch", '"b"', 7),
    ("no-broadcast", _edit((RET, "return x @ w + w")), "shape-mismatch", "+", 7),
    ("unary-arity", _edit((RET, "return relu(x @ w, b)")), "bad-argument",
     "relu(x @ w, b)", 7),
    ("unknown-function", _edit((RET, "return rleu(x @ w + b)")), "unknown-name", "rleu", 7),
    ("reduce-kwarg", _edit((RET, "return x @ w + b - sum(x @ w, dim: 1)")), "bad-argument",
     "sum(x @ w, dim: 1)", 7),
    ("reduce-everything", _edit((RET, "return x @ w + b - sum(x @ w)")),
     "batch-axis-reduced", "sum(x @ w)", 7),
    ("axis-not-int", _edit((RET, "return x @ w + b - sum(x @ w, axis: 1.0)")),
     "bad-argument", "1.0", 7),
    ("axis-out-of-range", _edit((RET, "return x @ w + b - sum(x @ w, axis: 5)")),
     "bad-argument", "5", 7),
    ("recursion", _edit((RET, "return model(x)")), "bad-argument", "model(x)", 7),
    ("fn-arity", _edit(("  fn model", HELPER + "  fn model"), (RET, "return twice(x @ w, b)")),
     "bad-argument", "twice(x @ w, b)", 10),
    ("fn-argument-shape", _edit(("  fn model", HELPER + "  fn model"), (RET, "return twice(x)")),
     "shape-mismatch", "x", 10),
    ("after-return", _edit((RET, RET + "\n    let z = x")), "syntax-error", "let z = x", 8),
    ("let-shadows", _edit((RET, "let x = x @ w\n    " + RET)), "duplicate-name", "x", 7),
    ("no-return", _edit((RET, "let h = x @ w")), "missing-item", "model", 6),
    ("wrong-result-shape", _edit((RET, "return x")), "shape-mismatch", "x", 7),
    ("second-system", TINY + TINY, "duplicate-name", "tiny", 13),
    ("second-steps", _edit(("  steps 10\n", "  steps 10\n  steps 5\n")), "duplicate-name",
     "steps 5", 12),
    ("zero-steps", _edit(("steps 10", "steps 0")), "bad-argument", "0", 11),
    ("no-data", _edit(("  data train: synthetic(rows: 64, features: 4, classes: 3, seed: 1)\n",
                       "")), "missing-item", "tiny", 1),
    ("device-param", _edit(("param b:", "param gpu:"), ("+ b", "+ gpu")),
     "device-in-semantics", "gpu", 5),
    ("holdout-too-big", _edit(("seed: 1)\n", "seed: 1, holdout: 64)\n")), "bad-argument",
     "synthetic(rows: 64, features: 4, classes: 3, seed: 1, holdout: 64)", 2),
    ("classes-and-targets", _edit(("classes: 3", "classes: 3, targets: 2")), "bad-argument",
     "synthetic(rows: 64, features: 4, classes: 3, targets: 2, seed: 1)", 2),
    ("synthetic-too-large", _edit(("rows: 64, features: 4", "rows: 1000000, features: 20")),
     "bad-argument", "synthetic(rows: 1000000, features: 20, classes: 3, seed: 1)", 2),
    ("unknown-source", _edit(("synthetic(rows: 64, features: 4, classes: 3, seed: 1)",
                              'csv("d.csv")')), "unknown-name", "csv", 2),
    ("table-label", _edit(("synthetic(rows: 64, features: 4, classes: 3, seed: 1)",
                           'table("d.csv", features: 4, label: kind, classes: 3)')),
     "bad-argument", 'table("d.csv", features: 4, label: kind, classes: 3)', 2),
    ("leaves-zero", _edit(("leaves 2", "leaves 0")), "bad-argument", "batch 8 leaves 0", 3),
    ("shuffle-seed", _edit(("leaves 2", "leaves 2 shuffle(seed: -1)")), "bad-argument", "-1", 3),
    ("param-too-large", _edit(("f32[3]", "f32[3, 99999999999, 99999999999]")),
     "shape-mismatch", "f32[3, 99999999999, 99999999999]", 5),
    ("batch-in-param", _edit(("f32[4, 3]", "f32[B, 3]")), "shape-mismatch", "f32[B, 3]", 4),
    ("unknown-init-name", _edit(("= zeros", "= onez")), "unknown-name", "onez", 5),
    ("unknown-init-call", _edit(("= normal(", "= glorot(")), "unknown-name", "glorot", 4),
    ("unknown-learner", _edit(("sgd(", "sgdd(")), "unknown-name", "sgdd", 10),
    ("model-arity", _edit(("model(x: f32[B, 4])", "model(x: f32[B, 4], z: f32[B, 4])")),
     "bad-argument", "model", 6),
    ("model-input-type", _edit(("model(x: f32[B, 4])", "model(x: f32[4, 4])")),
     "shape-mismatch", "f32[4, 4]", 6),
    ("model-features", _edit(("model(x: f32[B, 4])", "model(x: f32[B, 5])")),
     "shape-mismatch", "5", 6),
    ("unknown-loss", _edit(("loss softmax_cross_entropy", "loss cross_entropy")),
     "unknown-name", "cross_entropy", 9),
    ("loss-arity", _edit(("(model(x), y)", "(model(x))")), "bad-argument",
     "softmax_cross_entropy(model(x))", 9),
    ("loss-labels", _edit(("(model(x), y)", "(model(x), x)")), "bad-argument", "x", 9),
    ("loss-of-model", _edit(("(model(x), y)", "(x, y)")), "bad-argument", "x", 9),
    ("loss-kind", _edit(("loss softmax_cross_entropy", "loss mse")), "type-mismatch", "mse", 9),
    ("output-classes", _edit(("classes: 3", "classes: 5")), "shape-mismatch", "model(x)", 9),
    ("stray-text", "hello world\n" + TINY, "syntax-error", "hello", 1),
    ("missing-open", _edit(("system tiny {", "system tiny")), "syntax-error", "\n", 1),
    ("unclosed", TINY.rstrip().removesuffix("}"), "syntax-error", "{", 1),
    ("positional-after-keyword", _edit(("seed: 1)\n", "seed: 1, 5)\n")), "syntax-error", "5", 2),
    ("bad-character", _edit(("x @ w", "x $ w")), "syntax-error", "$", 7),
    ("expected-tokens", _edit(("leaves 2", "leaves 2 3")), "syntax-error", "3", 3),
    ("integer-too-long", _edit(("steps 10", "steps " + "9" * 5000)), "syntax-error",
     "9" * 5000, 11),
    ("bad-header", _edit(("system tiny", "system 7tiny")), "syntax-error", "7", 1),
]
# fmt: on


@pytest.mark.parametrize(
    ("source", "name", "text", "line"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_refusal_span(source: str, name: str, text: str, line: int) -> None:
    diags = _diagnostics(source)
    ours = [d for d in diags if d.name == name]
    assert ours, f"expected {name}, got {[(d.name, d.message) for d in diags]}"
    assert ours[0].span is not None
    assert _where(source, ours[0].span) == (text, line), ours[0].message


def test_table_data_refusals() -> None:
    head = 'table("d.csv", features: 4, label: last, classes: 3, holdout: 2)'
    source = _edit(("synthetic(rows: 64, features: 4, classes: 3, seed: 1)", head))
    rows = b"".join(b"0.1,0.2,0.3,0.4,%d\n" % (i % 3) for i in range(12))
    assert _diagnostics(source, files={"/project/d.csv": rows}) == []
    for content, name, fact in [
        (b"\n\n", "data-unreadable", "no rows"),
        (b"1,2,3\n", "data-malformed", "/project/d.csv line 1: 3 columns, expected 5"),
        (rows[:18], "bad-argument", "`holdout` is 2 of only 1 rows"),
    ]:
        diags = _diagnostics(source, files={"/project/d.csv": content})
        assert [d.name for d in diags] == [name]
        assert fact in diags[0].message
        assert diags[0].span is not None
        assert source[diags[0].span.start : diags[0].span.end] in ('"d.csv"', head)


# ---- (b) only registered names can be emitted --------------------------------------------------


def test_unregistered_name_is_refused_by_the_constructor() -> None:
    with pytest.raises(ValueError, match="not registered"):
        Diagnostic("no-such-refusal", "never shown", None)
    for name in REGISTRY:
        assert Diagnostic(name, "a message", None).name == name


def test_the_checker_emits_only_registered_names() -> None:
    # Every case above constructed its diagnostics through the checking constructor; this also
    # checks the names it reported against the registry directly, as the faces will look them up.
    seen = {d.name for _, source, *_ in CASES for d in _diagnostics(source)}
    assert seen <= set(REGISTRY)
    assert len(seen) >= 8


# ---- (c) docs/refusals.md is generated and current ---------------------------------------------


def test_refusals_doc_is_current() -> None:
    current = (ROOT / "docs" / "refusals.md").read_text(encoding="utf-8")
    assert current == refusal_docs.refusals_markdown(), (
        "docs/refusals.md is stale: run `python -m alpha_core.query.refusal_docs`"
    )
    assert refusal_docs.main(["--check"]) == 0


def test_refusals_doc_shows_every_refusal_and_real_output() -> None:
    text = refusal_docs.refusals_markdown()
    for name, r in REGISTRY.items():
        assert f"### `{name}`" in text
        assert r.explanation in text
        if r.example is not None:
            assert "```alphadsl\n" + r.example in text
            assert f"error[{name}]" in refusal_docs.example_output(r)
            assert refusal_docs.example_output(r) in text


def test_docs_check_detects_a_stale_file(tmp_path: Path) -> None:
    path = tmp_path / "refusals.md"
    assert refusal_docs.main(["--check", "--path", str(path)]) == 1  # missing
    path.write_text("# Refusals\n", encoding="utf-8")
    assert refusal_docs.main(["--check", "--path", str(path)]) == 1  # stale
    assert refusal_docs.main(["--path", str(path)]) == 0
    assert refusal_docs.main(["--check", "--path", str(path)]) == 0


def test_docs_module_runs_as_a_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "alpha_core.query.refusal_docs", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


# ---- (d) alpha explain --------------------------------------------------------------------------


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_explain_every_name(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert alpha(["explain", name]) == 0
    out = _words(capsys.readouterr().out)
    r = REGISTRY[name]
    assert out.startswith(f"{name} ({r.moment}): {r.summary}")
    assert _words(r.explanation) in out
    if r.example is not None:
        assert _words(r.example) in out


def test_explain_unknown_name_suggests(capsys: pytest.CaptureFixture[str]) -> None:
    assert alpha(["explain", "unknown-nam"]) == 2
    err = _words(capsys.readouterr().err)
    assert "error[usage]" in err
    assert "no refusal named `unknown-nam`" in err
    assert "did you mean `unknown-name`?" in err


def test_explain_far_off_name_has_no_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert alpha(["explain", "zzzzzzzz"]) == 2
    err = capsys.readouterr().err
    assert "no refusal named `zzzzzzzz`" in err and "did you mean" not in err


# ---- (e) golden files of rendered refusals ------------------------------------------------------


def _rendered(source: str, filename: str) -> str:
    return "\n\n".join(render(d, source, filename) for d in _diagnostics(source)) + "\n"


def _golden_cases() -> list[Path]:
    return sorted(GOLDEN.glob("*.alpha"))


def test_golden_cases_exist() -> None:
    assert len(_golden_cases()) >= 5


@pytest.mark.parametrize("case", _golden_cases(), ids=lambda p: p.stem)
def test_golden_rendering(case: Path) -> None:
    source = case.read_bytes().decode("utf-8")  # bytes: keep CRLF files as they are
    actual = _rendered(source, case.name)
    expected_path = case.with_suffix(".txt")
    if os.environ.get("ALPHA_UPDATE_GOLDEN") == "1":
        expected_path.write_text(actual, encoding="utf-8", newline="\n")
    assert expected_path.read_text(encoding="utf-8") == actual


def test_crlf_renders_like_lf() -> None:
    source = REGISTRY["unknown-name"].example
    assert source is not None
    crlf = source.replace("\n", "\r\n")
    assert _rendered(crlf, "x.alpha") == _rendered(source, "x.alpha")


# ---- (f) alpha check --json --------------------------------------------------------------------


SEVERAL = _edit(("leaves 2", "leaves 3"), (RET, "return x @ w + bias"), ("lr: 0.1", "rate: 0.1"))


def test_check_json_reports_every_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "several.alpha"
    path.write_text(SEVERAL, encoding="utf-8")
    assert alpha(["check", str(path), "--json"]) == 1
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is False and body["file"] == str(path)
    got = [(r["name"], r["span"]["line"], r["span"]["column"]) for r in body["refusals"]]
    assert sorted(got) == sorted(
        [("batch-not-divisible", 3, 18), ("unknown-name", 7, 20), ("bad-argument", 10, 15)]
    )
    for r in body["refusals"]:
        line = SEVERAL.splitlines()[r["span"]["line"] - 1]
        column = r["span"]["column"] - 1
        assert line[column:].startswith(SEVERAL[r["span"]["start"] : r["span"]["end"]])
        assert r["message"]


def test_check_json_accepts_the_digits_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert alpha(["check", str(ROOT / "examples" / "digits.alpha"), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["file"] == str(ROOT / "examples" / "digits.alpha")
    assert body["ok"] is True and body["refusals"] == []
    assert body["systems"] == ["digits"]


def test_check_json_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert alpha(["check", str(tmp_path / "absent.alpha"), "--json"]) == 1
    [refusal] = json.loads(capsys.readouterr().out)["refusals"]
    assert refusal["name"] == "source-unreadable"
    assert "no such file" in refusal["message"]
