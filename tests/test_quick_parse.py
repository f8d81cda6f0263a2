"""The quick parser of common pieces (alpha_core/syntax/quick.py) gives lark's tree exactly, or
declines: compared on generated `param` items, edge cases and texts it must leave to lark."""

from __future__ import annotations

import random

from alpha_core.syntax import quick
from alpha_core.syntax.parser import _parser
from alpha_core.syntax.to_ast import Build


def lark_tree(text: str, at: int) -> object:
    return Build(text, at).node(_parser().parse(text, start="system_item"))


def _number(rng: random.Random) -> str:
    sign = rng.choice(["", "", "-", "- "])
    if rng.random() < 0.5:
        return sign + str(rng.randrange(0, 10 ** rng.randrange(1, 6)))
    return sign + f"{rng.randrange(0, 1000)}.{rng.randrange(0, 1000)}"


def _ws(rng: random.Random) -> str:
    return rng.choice(["", "", " ", "  ", "\n  ", "\t"])


def generated(rng: random.Random) -> str:
    shapes = range(rng.randrange(0, 4))
    dims = [rng.choice([str(rng.randrange(1, 5000)), "B", "n_1"]) for _ in shapes]
    dims_text = ("," + _ws(rng)).join(dims)
    if rng.random() < 0.3:
        init = rng.choice(["zeros", "ones", "xavier"])
    else:
        args = [_number(rng) for _ in range(rng.randrange(0, 3))]
        kwargs = [f"{rng.choice(['seed', 'std', 'mean'])}:{_ws(rng)}{_number(rng)}"]
        kwargs = kwargs[: rng.randrange(0, 2)]
        inside = ", ".join(args + kwargs)
        init = f"{rng.choice(['normal', 'uniform'])}({_ws(rng)}{inside}{_ws(rng)})"
    return (
        f"param {rng.choice(['w', 'b1', 'W_2', 'emb'])}{_ws(rng)}:{_ws(rng)}"
        f"{rng.choice(['f32', 'f16'])}{_ws(rng)}[{_ws(rng)}{dims_text}{_ws(rng)}]{_ws(rng)}="
        f"{_ws(rng)}{init}"
    )


def test_quick_param_equals_lark_on_generated_items() -> None:
    rng = random.Random(9)
    taken = 0
    for _ in range(600):
        text, at = generated(rng), rng.randrange(0, 10_000)
        fast = quick.param(text, at)
        if fast is not None:
            taken += 1
            assert fast == lark_tree(text, at), text
    assert taken > 500  # the quick path is the one these shapes take


def test_quick_param_declines_what_it_does_not_read() -> None:
    for text in (
        "param w: f32[4, 3] = normal(0.0, 0.1, seed: 1)  # a comment",
        'param w: f32[4] = load("w.bin")',
        "param w: f32[4] = normal(1e-3)",
        "param w: f32[4] = normal(.5)",
        "param w: f32[4] = normal(seed: 1, 0.1)",  # lark refuses a positional after a keyword
        "param w: f32[4] = normal(--1)",
        "param w: f32[-4] = zeros",
        "param steps: f32[4] = zeros",  # a keyword where a name stands
        "param w: f32[4] = normal(0.1 + 0.2)",
        "param w: f32[1234567890123456789] = zeros",  # long enough for the digit-limit check
        "param w: f32[4] = zeros extra",
        "param w f32[4] = zeros",
    ):
        assert quick.param(text, 0) is None, text
