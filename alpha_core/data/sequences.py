"""The deterministic synthetic sequence source: digit strings and a task on them.

Row i holds `length` digits a (token values 0 … 9), drawn from the counter-based generator of
parameter init, and the task's answer b: `reverse` (a backwards), `sort` (a ascending) or
`copy` (a itself). For a decoder-only model the row is laid out as the text it reads:

    x = a[0], …, a[n-1], SEP, b[0], …, b[n-2]        (2n token values, SEP = 10)
    y = b[0], …, b[n-1]                              (n labels, one per answer position)

so position n - 1 + k (the SEP, then the answer so far) predicts b[k]: its causal prefix holds
every digit of a and b[:k]. The vocabulary is 11 tokens (10 digits and SEP). Nothing here
depends on this machine's random numbers; the build embeds the rows with their SHA-256.
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np

from alpha_core.semantics.rng import numpy_init

TASKS = ("reverse", "sort", "copy")
SEP = 10
VOCABULARY = 11  # the digits and SEP


def _answer(task: str, a: np.ndarray) -> np.ndarray:
    if task == "reverse":
        return a[:, ::-1]
    if task == "sort":
        return np.sort(a, axis=1, kind="stable")
    return a.copy()


@functools.lru_cache(maxsize=32)
def generate(task: str, length: int, rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(x: rows × 2·length token values, y: rows × length labels), both float32."""
    u = numpy_init("uniform", (0.0, 1.0), seed, rows * length).astype(np.float64)
    # u is a multiple of 2^-24 below 1: u * 10 is exact in float64 and its floor is 0 … 9
    a = np.floor(u * 10.0).astype(np.int64).reshape(rows, length)
    b = _answer(task, a)
    sep = np.full((rows, 1), SEP, dtype=np.int64)
    x = np.concatenate([a, sep, b[:, : length - 1]], axis=1)
    return x.astype(np.float32), b.astype(np.float32)


@functools.lru_cache(maxsize=4096)
def digest(task: str, length: int, rows: int, seed: int) -> str:
    """The SHA-256 of the rows as embedded: x's little-endian bytes, then y's."""
    x, y = generate(task, length, rows, seed)
    return hashlib.sha256(x.astype("<f4").tobytes() + y.astype("<f4").tobytes()).hexdigest()


def clear_memos() -> None:
    generate.cache_clear()
    digest.cache_clear()
