"""The deterministic synthetic data source: a pure function of its arguments.

The build evaluates it once and embeds the rows in the executable (with their SHA-256), so the
run never depends on how this machine's NumPy draws random numbers: only the counter-based
generator of parameter init and float32 operations in a fixed order are used here.
"""

from __future__ import annotations

import functools
import hashlib
from typing import TYPE_CHECKING

import numpy as np

from alpha_core.data import sequences
from alpha_core.semantics.rng import numpy_init

if TYPE_CHECKING:
    from alpha_core.data.spec import DataSpec


def _normal(seed: int, stream: int, count: int) -> np.ndarray:
    """Standard normals (Irwin–Hall, as parameter init draws them) for one stream of a seed."""
    return numpy_init("normal", (0.0, 1.0), seed * 64 + stream, count)


@functools.lru_cache(maxsize=32)
def _generate(
    rows: int, features: int, label_kind: str, outputs: int, seed: int, noise_hex: str
) -> tuple[np.ndarray, np.ndarray]:
    # `noise` arrives as float.hex(): a cache key that tells -0.0 from 0.0, which may draw
    # different bits (a regression's noise term is multiplied by it)
    noise = float.fromhex(noise_hex)
    f32 = np.float32
    x: np.ndarray
    y: np.ndarray
    if label_kind == "class":
        # Gaussian blobs: row i belongs to class i mod classes, around that class's centre.
        centres = _normal(seed, 1, outputs * features).reshape(outputs, features) * f32(2.0)
        labels = np.arange(rows) % outputs
        x = centres[labels] + _normal(seed, 2, rows * features).reshape(rows, features) * f32(
            max(noise, 0.0) * 5 + 0.5
        )
        y = labels.astype(np.float32).reshape(rows, 1)
    else:
        # A linear map with noise; the matrix product adds over features in index order.
        w = _normal(seed, 3, features * outputs).reshape(features, outputs)
        x = _normal(seed, 4, rows * features).reshape(rows, features)
        y = np.zeros((rows, outputs), dtype=np.float32)
        for k in range(features):
            y = y + x[:, k : k + 1] * w[k : k + 1, :]
        y = y + _normal(seed, 5, rows * outputs).reshape(rows, outputs) * f32(noise)
    return x.astype(np.float32), y.astype(np.float32)


def _key(spec: DataSpec) -> tuple[int, int, str, int, int, str]:
    return (spec.rows, spec.features, spec.label_kind, spec.outputs, spec.seed, spec.noise.hex())


def generate(spec: DataSpec) -> tuple[np.ndarray, np.ndarray]:
    """(x: rows × features, y: rows × 1 class index or rows × targets, or rows × positions
    labels of a sequence task), both float32."""
    if spec.task:
        return sequences.generate(spec.task, spec.positions, spec.rows, spec.seed)
    return _generate(*_key(spec))


@functools.lru_cache(maxsize=65536)
def _digest(
    rows: int, features: int, label_kind: str, outputs: int, seed: int, noise_hex: str
) -> str:
    x, y = _generate(rows, features, label_kind, outputs, seed, noise_hex)
    return hashlib.sha256(x.tobytes() + y.tobytes()).hexdigest()


def digest(spec: DataSpec) -> str:
    """The SHA-256 of the rows as embedded (x's bytes, then y's): what the checker records as
    the data's identity. Memoized by the spec (a digest is 64 characters; the rows, up to 64 MiB
    a set, are kept only in `generate`'s small cache), so rechecking a system whose data did
    not change never generates it again."""
    if spec.task:
        return sequences.digest(spec.task, spec.positions, spec.rows, spec.seed)
    return _digest(*_key(spec))


def clear_memos() -> None:
    """Forget the generated data sets and their digests."""
    _generate.cache_clear()
    _digest.cache_clear()
    sequences.clear_memos()
