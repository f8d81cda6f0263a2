"""Convolution, pooling and embeddings (issue 13): the executable equals the NumPy float32
reference bit for bit, and the gradients agree with float64 finite differences, for several
strides, paddings and window sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import program_of
from layer_sources import CNN_BODIES, EMBED, cnn_source
from test_exact import assert_exact
from test_ops_layers import assert_finite_differences


def source(body: str, steps: int = 15) -> str:
    return cnn_source(body, steps)


@pytest.mark.parametrize("body", sorted(CNN_BODIES))
def test_convolution_and_pooling_are_exact(body: str, tmp_path: Path) -> None:
    assert_exact(source(body), tmp_path)


@pytest.mark.parametrize("body", sorted(CNN_BODIES))
def test_convolution_gradients_match_finite_differences(body: str, tmp_path: Path) -> None:
    assert_finite_differences(program_of(source(body), tmp_path / "g.alpha"), False)


def test_embedding_lookup_is_exact_and_its_gradient_matches(tmp_path: Path) -> None:
    """Token values are truncated toward zero and clamped into the table (x + 2 ranges over
    roughly -2 .. 6, so rows 0 and 4 also collect the out-of-range tokens)."""
    assert_exact(EMBED, tmp_path / "exact")
    assert_finite_differences(program_of(EMBED, tmp_path / "g.alpha"), False)
