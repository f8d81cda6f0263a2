"""Types of the layer language (issue 13): size variables in signatures bound per call and
refused by name on conflict, element types and `B` compared, scalar parameters, image-shaped
inputs, keepdims, reshape and transpose; `@` mixed with `*` or `/` without parentheses and
`f32[B] + f32[B, 1]` refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import program_of

from alpha_core.workspace.analysis import Workspace

SYSTEM = """system t {
  data train: synthetic(rows: 64, features: 4, classes: 3, seed: 1)
  batch 8 leaves 2
  param w1: f32[4, 6] = normal(0.0, 0.1, seed: 1)
  param b1: f32[6] = zeros
  param w2: f32[6, 3] = normal(0.0, 0.1, seed: 2)
  param b2: f32[3] = zeros
  param s: f32[] = uniform(0.5, 1.5, seed: 3)
  fn dense(a: f32[B, N], w: f32[N, M], b: f32[M]) -> f32[B, M] {
    return a @ w + b
  }
  %(extra)s
  fn model(x: f32[B, 4]) -> f32[B, 3] {
    %(body)s
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 3
}
"""
GENERIC = "return dense(relu(dense(x, w1, b1)), w2, b2) * s"


def refusals(extra: str, body: str, tmp: Path) -> list[tuple[str, str]]:
    path = tmp / "t.alpha"
    path.write_text(SYSTEM % {"extra": extra, "body": body})
    a = Workspace().analyze_file(str(path))
    return [(d.name, d.message) for d in a.diagnostics]


def test_a_generic_layer_is_called_at_two_sizes_and_a_scalar_parameter_scales(
    tmp_path: Path,
) -> None:
    program = program_of(SYSTEM % {"extra": "", "body": GENERIC}, tmp_path / "t.alpha")
    assert [p.shape for p in program.params][-1] == ()
    assert program.n_params == 4 * 6 + 6 + 6 * 3 + 3 + 1


CASES = {
    "size variable given two values": (
        "",
        "return dense(x, w2, b2)",
        ("shape-mismatch", "`N` is 4 from `a` but 6 from `w`"),
    ),
    "size variable given the batch axis": (
        "fn flat(a: f32[N, 4]) -> f32[N, 4] {\n    return a\n  }",
        "return flat(x) @ w1 @ w2",
        ("shape-mismatch", "`N` of `a` is given the batch axis; name it `B`"),
    ),
    "element type of a helper's parameter": (
        "fn ids(a: i32[B, 4]) -> f32[B, 4] {\n    return a\n  }",
        "return ids(x) @ w1 @ w2",
        ("type-mismatch", "`a` is declared `i32`; tensors in a model are `f32`"),
    ),
    "element type of a helper's result": (
        "fn ids(a: f32[B, 4]) -> f64[B, 4] {\n    return a\n  }",
        "return ids(x) @ w1 @ w2",
        ("type-mismatch", "the result of `ids` is declared `f64`; tensors in a model are `f32`"),
    ),
    "B not first": (
        "fn late(a: f32[4, B]) -> f32[B, 4] {\n    return transpose(a)\n  }",
        "return late(transpose(w1 @ w2)) @ w1 @ w2",
        ("shape-mismatch", "`B` is the batch axis, only ever the first dimension"),
    ),
    "declared size differs": (
        "fn four(a: f32[B, 5]) -> f32[B, 5] {\n    return a\n  }",
        "return four(x) @ w1 @ w2",
        ("shape-mismatch", "`a` is declared f32[B, 5] but is given f32[B, 4]"),
    ),
    "per-example vector and column": (
        "",
        "let r = sum(x, axis: 1) + sum(x, axis: 1, keepdims: true)\n    return x @ w1 @ w2",
        ("shape-mismatch", "shapes f32[B] and f32[B, 1] do not broadcast for `+`"),
    ),
    "reshape across examples": (
        "",
        "return reshape(x, 32) @ w1 @ w2",
        ("shape-mismatch", "cannot reshape f32[B, 4] to f32[32]"),
    ),
    "transpose of a per-example matrix": (
        "",
        "return transpose(x) @ w1 @ w2",
        ("shape-mismatch", "cannot transpose f32[B, 4]"),
    ),
    "transpose moving the batch axis": (
        "",
        "return transpose(reshape(x, B, 2, 2), 0, 2) @ w1 @ w2",
        ("shape-mismatch", "`transpose` would move the batch axis of f32[B, 2, 2]"),
    ),
    "transpose of one axis with itself": (
        "",
        "return reshape(transpose(reshape(x, B, 2, 2), 1, 1), B, 4) @ w1 @ w2",
        ("bad-argument", "axes 1 and 1 are not two axes of f32[B, 2, 2]"),
    ),
    "softmax over the batch axis": (
        "",
        "return softmax(x @ w1 @ w2, axis: 0)",
        ("batch-axis-reduced", "`softmax` over axis 0 adds across the examples of a leaf"),
    ),
    "star then matmul without parentheses": (
        "",
        "return 2.0 * x @ w1 @ w2",
        ("syntax-error", "`*` and `@` mixed without parentheses"),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_by_name(case: str, tmp_path: Path) -> None:
    extra, body, want = CASES[case]
    assert want in refusals(extra, body, tmp_path)


def test_parentheses_and_numpy_order_are_accepted(tmp_path: Path) -> None:
    body = (
        "let a = 2.0 * (x @ w1)\n"
        "    let b = (x / 16.0) @ w1\n"
        "    let c = x @ w1 * 2.0\n"
        "    return (a + b + c) @ w2"
    )
    assert refusals("", body, tmp_path) == []


def test_row_normalisation_and_layer_norm_are_written_directly(tmp_path: Path) -> None:
    extra = (
        "fn norm(z: f32[B, K]) -> f32[B, K] {\n"
        "    let c = z - mean(z, axis: 1, keepdims: true)\n"
        "    return c / sqrt(mean(square(c), axis: 1, keepdims: true) + 0.00001)\n"
        "  }"
    )
    body = (
        "let h = norm(x @ w1)\n"
        "    let p = exp(h) / sum(exp(h), axis: 1, keepdims: true)\n"
        "    return reshape(transpose(reshape(p @ w2, B, 3, 1)), B, 3)"
    )
    assert refusals(extra, body, tmp_path) == []


def test_images_and_sequences_take_the_features_in_their_shape(tmp_path: Path) -> None:
    text = (SYSTEM % {"extra": "", "body": "return reshape(x, B, 4) @ w1 @ w2"}).replace(
        "fn model(x: f32[B, 4])", "fn model(x: f32[B, 1, 2, 2])"
    )
    program_of(text, tmp_path / "image.alpha")
    wrong = text.replace("f32[B, 1, 2, 2]", "f32[B, 1, 2, 3]")
    path = tmp_path / "wrong.alpha"
    path.write_text(wrong)
    got = [(d.name, d.message) for d in Workspace().analyze_file(str(path)).diagnostics]
    assert ("shape-mismatch", "the model takes 6 features but the data has 4") in got


def test_a_function_body_sees_no_let_of_its_caller(tmp_path: Path) -> None:
    """A helper's `let a` is its own even when the caller has a `let a` (it was refused as
    `duplicate-name`), and a caller's `let` is not visible inside the helper."""
    extra = "fn twice(h: f32[B, N]) -> f32[B, N] {\n    let a = h + h\n    return a\n  }"
    body = "let a = dense(x, w1, b1)\n    return dense(twice(a), w2, b2)"
    assert refusals(extra, body, tmp_path) == []
    peek = "fn peek(h: f32[B, N]) -> f32[B, N] {\n    return h + a\n  }"
    got = refusals(peek, "let a = dense(x, w1, b1)\n    return dense(peek(a), w2, b2)", tmp_path)
    assert ("unknown-name", "unknown name `a`") in got


def test_dot_t_is_the_transpose(tmp_path: Path) -> None:
    """`w.T` was a syntax error; it is `transpose(w)`, binding tighter than `-` and `@`."""
    same = "return (x @ w1) @ w2.T.T * s - x @ -w1.T.T @ transpose(w2.T)"
    program = program_of(SYSTEM % {"extra": "", "body": "return x @ w1 @ w2"}, tmp_path / "a.alpha")
    dotted = program_of(SYSTEM % {"extra": "", "body": same}, tmp_path / "b.alpha")
    ops = [n.op for n in dotted.model.nodes]
    assert ops.count("transpose") == 4 and program.n_params == dotted.n_params  # shared
    assert ops.count("neg") == 1  # `-w1.T.T` is -(w1.T.T)
    got = refusals("", "return x @ w1 @ w2.U", tmp_path)
    assert (
        "type-mismatch",
        "a tensor has no member `.U`; the only attribute of a tensor is `.T`, the transpose",
    ) in got  # a name after `.` other than `T` reads a block's member (block arrays)
