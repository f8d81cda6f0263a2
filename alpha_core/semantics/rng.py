"""Counter-based parameter initialisation with one exact specification.

Initial parameters are part of a program's result, so they must be the same bits whether
they are produced by compiled code (on any target, split across any number of workers) or
by the NumPy reference.  A stateful generator would tie the values to the order in which
they are drawn; a *counter-based* one makes every value a pure function of
``(seed, index, k)``, so any worker can produce any slice independently and the result
does not depend on how the work is divided.

Specification (all integer arithmetic on unsigned 64-bit values, modulo 2**64)::

    GAMMA  = 0x9E3779B97F4A7C15
    mix(z):                                   # the splitmix64 finaliser
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB
        return z ^ (z >> 31)
    key(seed)           = mix(seed + GAMMA)                      # seed taken mod 2**64
    stream(seed, index) = mix((key(seed) ^ index) + GAMMA)
    hash(seed, index, k) = mix(stream(seed, index) + (k + 1) * GAMMA)

``hash(seed, index, k)`` for k = 0, 1, 2, ... is exactly the output sequence of a splitmix64
generator whose state starts at ``stream(seed, index)``: each element has its own stream.

    uniform01(seed, index, k) = float32(hash >> 40) * 2**-24

i.e. the top 24 bits as an integer u24, converted exactly and scaled exactly: a float32 in
[0, 1) on the grid of multiples of 2**-24 (every value equally likely).  Then, with every
float operation a single float32 operation in the order written (u_k = uniform01(seed,
index, k)):

* ``uniform(lo, hi)``:  ``lo + (hi - lo) * u_0``  (lo, hi rounded to float32 first);
* ``normal(mean, std)``: ``mean + std * z`` with the Irwin-Hall sum
  ``z = ((((u_0 + u_1) + u_2) + ... ) + u_11) - 6`` accumulated left to right.  z has mean
  0 (up to the 2**-25 offset of the discrete u) and variance 1, but it is *not* Gaussian:
  it is bounded to [-6, 6) and its tails are lighter.  It is a cheap, exactly
  reproducible approximation that is fine for initialising weights;
* ``constant(value)``: ``value`` rounded to float32.

Element ``i`` of a parameter initialised with ``first_index = f`` uses ``index = f + i``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from alpha_core.semantics.arith import Arith, Arith64, to_uint64
from alpha_core.semantics.numpy_arith import NumpyArith

F = TypeVar("F")
I = TypeVar("I")  # noqa: E741
M = TypeVar("M")
U = TypeVar("U")

GAMMA = 0x9E3779B97F4A7C15
MIX_MUL1 = 0xBF58476D1CE4E5B9
MIX_MUL2 = 0x94D049BB133111EB
TWO_POW_M24 = float.fromhex("0x1p-24")
IRWIN_HALL_TERMS = 12

#: Initialiser kinds and the names of their parameters, in order.
KINDS: dict[str, tuple[str, ...]] = {
    "uniform": ("lo", "hi"),
    "normal": ("mean", "std"),
    "constant": ("value",),
}


class RngArith(Arith[F, I, M], Arith64[U, I], Protocol[F, I, M, U]):
    """What the generator needs: float32/int32 primitives plus uint64 ones."""


# -- scalar Python reference of the integer part (for documentation and known answers) ---
def mix_py(z: int) -> int:
    """The splitmix64 finaliser on a Python int (mod 2**64)."""
    z = to_uint64(z)
    z = to_uint64((z ^ (z >> 30)) * MIX_MUL1)
    z = to_uint64((z ^ (z >> 27)) * MIX_MUL2)
    return z ^ (z >> 31)


def hash_py(seed: int, index: int, k: int) -> int:
    """``hash(seed, index, k)`` of the specification, on Python ints."""
    key = mix_py(seed + GAMMA)
    stream = mix_py((key ^ to_uint64(index)) + GAMMA)
    return mix_py(stream + (k + 1) * GAMMA)


# -- the recipe, written once against RngArith ----------------------------------------------
def mix(A: RngArith[F, I, M, U], z: U) -> U:
    """The splitmix64 finaliser."""
    z = A.u64mul(A.u64xor(z, A.u64shr(z, 30)), A.u64const(MIX_MUL1))
    z = A.u64mul(A.u64xor(z, A.u64shr(z, 27)), A.u64const(MIX_MUL2))
    return A.u64xor(z, A.u64shr(z, 31))


def seed_key(A: RngArith[F, I, M, U], seed: U) -> U:
    """``key(seed)``; loop-invariant, so emitters compute it once."""
    return mix(A, A.u64add(seed, A.u64const(GAMMA)))


def stream(A: RngArith[F, I, M, U], key: U, index: U) -> U:
    """``stream(seed, index)`` from ``key = seed_key(seed)``."""
    return mix(A, A.u64add(A.u64xor(key, index), A.u64const(GAMMA)))


def uniform01_from_stream(A: RngArith[F, I, M, U], st: U, k: int) -> F:
    """``uniform01`` for draw ``k`` of an element whose stream state is ``st``."""
    h = mix(A, A.u64add(st, A.u64const((k + 1) * GAMMA)))
    u24 = A.u64_low32(A.u64shr(h, 40))
    return A.mul(A.itof(u24), A.const(TWO_POW_M24))


def uniform01(A: RngArith[F, I, M, U], seed: U, index: U, k: int) -> F:
    """float32 in [0, 1): the top 24 bits of ``hash(seed, index, k)`` times 2**-24."""
    return uniform01_from_stream(A, stream(A, seed_key(A, seed), index), k)


def init_params(kind: str, params: Sequence[float]) -> tuple[float, ...]:
    names = KINDS.get(kind)
    if names is None:
        raise ValueError(f"unknown initialiser kind {kind!r}; expected one of {sorted(KINDS)}")
    if len(params) != len(names):
        raise ValueError(f"{kind} takes {len(names)} parameters {names}, got {len(params)}")
    return tuple(float(p) for p in params)


def init_value(A: RngArith[F, I, M, U], kind: str, params: Sequence[float], key: U, index: U) -> F:
    """The initial value of element ``index`` for ``kind`` (see the module docstring)."""
    p = init_params(kind, params)
    if kind == "constant":
        return A.const(p[0])
    st = stream(A, key, index)
    if kind == "uniform":
        lo, hi = A.const(p[0]), A.const(p[1])
        return A.add(lo, A.mul(A.sub(hi, lo), uniform01_from_stream(A, st, 0)))
    acc = uniform01_from_stream(A, st, 0)
    for k in range(1, IRWIN_HALL_TERMS):
        acc = A.add(acc, uniform01_from_stream(A, st, k))
    z = A.sub(acc, A.const(IRWIN_HALL_TERMS / 2))
    return A.add(A.const(p[0]), A.mul(A.const(p[1]), z))


# -- NumPy reference ----------------------------------------------------------------------
def numpy_uniform01(seed: int, index: Any, k: int) -> Any:
    """Reference ``uniform01`` for an array of indices (any shape)."""
    A = NumpyArith()
    idx = np.asarray(index, dtype=np.uint64)
    return uniform01(A, A.u64const(seed), idx, k)


def numpy_init(
    kind: str, params: Sequence[float], seed: int, count: int, first_index: int = 0
) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Reference values of elements ``first_index .. first_index + count - 1``."""
    A = NumpyArith()
    idx = np.arange(count, dtype=np.uint64) + np.uint64(to_uint64(first_index))
    values = init_value(A, kind, params, seed_key(A, A.u64const(seed)), idx)
    out: np.ndarray[Any, np.dtype[np.float32]] = np.ascontiguousarray(
        np.broadcast_to(values, (count,)), dtype=np.float32
    )
    return out
