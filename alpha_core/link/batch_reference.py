"""Pure-Python reference of the runtime's batch selection (runtime/batch.c, docs/runtime.md):
which training rows form leaf `leaf` of round t. Tests and NumPy references use it to
reproduce a run exactly."""

from __future__ import annotations

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(z: int) -> int:
    """The splitmix64 output for state z (all arithmetic modulo 2^64)."""
    z = (z + _GOLDEN) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _feistel(x: int, key: int, half_bits: int) -> int:
    mask = (1 << half_bits) - 1
    left, right = x >> half_bits, x & mask
    for r in range(4):
        left, right = right, left ^ (splitmix64(key ^ (r << 32) ^ right) & mask)
    return (left << half_bits) | right


def permute(seed: int, epoch: int, q: int, n: int) -> int:
    """Row of position q in epoch `epoch`: a bijection on [0, n) (cycle walking over a 4-round
    balanced Feistel network on the smallest 2^k >= n, k rounded up to even)."""
    if not 0 <= q < n:
        raise ValueError(f"position {q} outside [0, {n})")
    k = max(n - 1, 0).bit_length()
    k += k & 1
    key = splitmix64(splitmix64(seed & _MASK64) ^ (epoch & _MASK64))
    x = _feistel(q, key, k // 2)
    while x >= n:
        x = _feistel(x, key, k // 2)
    return x


def example_row(
    *,
    train_rows: int,
    batch: int,
    leaf_size: int,
    shuffle: int,
    seed: int,
    t: int,
    leaf: int,
    i: int,
) -> int:
    """Training row of example i of leaf `leaf` in round t (0-based)."""
    g = t * batch + leaf * leaf_size + i
    if not shuffle:
        return g % train_rows
    return permute(seed, g // train_rows, g % train_rows, train_rows)


def example_rows(
    *,
    rows: int,
    holdout: int,
    batch: int,
    leaves: int,
    shuffle: int,
    shuffle_seed: int,
    t: int,
    leaf: int,
) -> list[int]:
    """The training rows of leaf `leaf` in round t, in example order; the keyword names are the
    fields of ALPHA_PROGRAM."""
    if leaves <= 0 or batch % leaves:
        raise ValueError(f"batch {batch} is not a multiple of leaves {leaves}")
    if not 0 <= holdout < rows:
        raise ValueError(f"holdout {holdout} leaves no training rows out of {rows}")
    leaf_size = batch // leaves
    return [
        example_row(
            train_rows=rows - holdout,
            batch=batch,
            leaf_size=leaf_size,
            shuffle=shuffle,
            seed=shuffle_seed,
            t=t,
            leaf=leaf,
            i=i,
        )
        for i in range(leaf_size)
    ]
