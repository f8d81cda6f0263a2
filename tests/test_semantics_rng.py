"""The counter-based initialiser: its specification, known answers and statistics.

``hash_py`` is a pure-Python-int transcription of the specification in ``rng.py``'s
docstring; the NumPy recipe (and, through test_semantics_bits, the compiled one) must
agree with it.  The pinned values guard the specification itself against drift: changing
them changes every Alpha program's initial parameters.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llvmlite import ir

from alpha_core.semantics import rng, rng_llvm
from alpha_core.semantics.numpy_arith import NumpyArith


def test_mix_is_splitmix64() -> None:
    # The first output of the reference splitmix64 generator seeded with 0.
    assert rng.mix_py(rng.GAMMA) == 0xE220A8397B1DCDAF
    # ... and the next two outputs of the same generator.
    assert rng.mix_py(2 * rng.GAMMA) == 0x6E789E6AA1B965F4
    assert rng.mix_py(3 * rng.GAMMA) == 0x06C45D188009454F


def test_pinned_hashes() -> None:
    assert rng.hash_py(0, 0, 0) == 0x238275BC38FCBE91
    assert rng.hash_py(42, 7, 3) == 0xE9B758B15AA0D753
    assert rng.hash_py(2**64 - 1, 2**40, 11) == 0x1E255EED4400E132


def test_pinned_initial_values() -> None:
    u = rng.numpy_init("uniform", (-1.0, 1.0), 42, 4).view(np.uint32)
    assert [hex(v) for v in u] == ["0xbe677a08", "0x3e1df420", "0xbf72f6ae", "0xbf263fa8"]
    z = rng.numpy_init("normal", (0.0, 1.0), 42, 4).view(np.uint32)
    assert [hex(v) for v in z] == ["0xbf3cd780", "0x3daf99c0", "0xbfac1770", "0xbda2b080"]


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**64 - 1),
    index=st.integers(0, 2**64 - 1),
    k=st.integers(0, 20),
)
def test_numpy_hash_matches_spec(seed: int, index: int, k: int) -> None:
    A = NumpyArith()
    key = rng.seed_key(A, A.u64const(seed))
    st_ = rng.stream(A, key, A.u64const(index))
    h = rng.mix(A, A.u64add(st_, A.u64const((k + 1) * rng.GAMMA)))
    assert int(h) == rng.hash_py(seed, index, k)
    u = rng.numpy_uniform01(seed, np.array([index], dtype=np.uint64), k)
    assert u.dtype == np.float32
    assert float(u[0]) == (rng.hash_py(seed, index, k) >> 40) * 2.0**-24


def test_uniform_spec_order_of_operations() -> None:
    lo, hi = np.float32(-0.3), np.float32(0.7)
    got = rng.numpy_init("uniform", (-0.3, 0.7), 9, 1000)
    u = np.array([(rng.hash_py(9, i, 0) >> 40) * 2.0**-24 for i in range(1000)], np.float32)
    want = lo + (hi - lo) * u  # float32 throughout
    assert want.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_normal_spec_order_of_operations() -> None:
    got = rng.numpy_init("normal", (0.1, 0.5), 3, 200)
    want = []
    for i in range(200):
        acc = np.float32(0.0)
        for k in range(12):
            u = np.float32((rng.hash_py(3, i, k) >> 40) * 2.0**-24)
            acc = u if k == 0 else np.float32(acc + u)
        z = np.float32(acc - np.float32(6.0))
        want.append(np.float32(np.float32(0.1) + np.float32(np.float32(0.5) * z)))
    assert np.array_equal(got.view(np.uint32), np.array(want, np.float32).view(np.uint32))


def test_uniform01_grid_and_range() -> None:
    u = rng.numpy_uniform01(1, np.arange(200_000, dtype=np.uint64), 0)
    assert u.dtype == np.float32
    assert u.min() >= 0.0 and u.max() < 1.0
    assert np.array_equal(u * np.float32(2**24), np.floor(u * np.float32(2**24)))
    assert abs(float(u.mean()) - 0.5) < 0.005
    assert abs(float(u.var()) - 1 / 12) < 0.002


def test_statistics() -> None:
    n = 400_000
    z = rng.numpy_init("normal", (0.0, 1.0), 123, n).astype(np.float64)
    assert abs(z.mean()) < 0.01 and abs(z.var() - 1.0) < 0.01
    assert z.min() >= -6.0 and z.max() < 6.0
    assert abs(np.mean(z**4) - 2.9) < 0.1  # Irwin-Hall(12) kurtosis 2.9 (Gaussian: 3)
    w = rng.numpy_init("normal", (2.0, 0.1), 124, n).astype(np.float64)
    assert abs(w.mean() - 2.0) < 0.002 and abs(w.std() - 0.1) < 0.002
    u = rng.numpy_init("uniform", (-3.0, 5.0), 125, n).astype(np.float64)
    assert u.min() >= -3.0 and u.max() < 5.0 and abs(u.mean() - 1.0) < 0.05
    # neighbouring indices, draws and seeds are uncorrelated
    assert abs(np.corrcoef(z[:-1], z[1:])[0, 1]) < 0.01
    z2 = rng.numpy_init("normal", (0.0, 1.0), 124, n).astype(np.float64)
    assert abs(np.corrcoef(z, z2)[0, 1]) < 0.01
    a = rng.numpy_uniform01(5, np.arange(n, dtype=np.uint64), 0).astype(np.float64)
    b = rng.numpy_uniform01(5, np.arange(n, dtype=np.uint64), 1).astype(np.float64)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.01


def test_slices_compose() -> None:
    whole = rng.numpy_init("normal", (0.0, 1.0), 77, 1000)
    parts = [
        rng.numpy_init("normal", (0.0, 1.0), 77, 250, first_index=s) for s in range(0, 1000, 250)
    ]
    assert np.array_equal(np.concatenate(parts).view(np.uint32), whole.view(np.uint32))


def test_constant_and_empty() -> None:
    c = rng.numpy_init("constant", (0.1,), 0, 5)
    assert c.dtype == np.float32 and (c == np.float32(0.1)).all()
    assert rng.numpy_init("normal", (0.0, 1.0), 0, 0).shape == (0,)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        rng.numpy_init("gaussian", (0.0, 1.0), 0, 3)
    with pytest.raises(ValueError):
        rng.numpy_init("uniform", (0.0,), 0, 3)
    module = ir.Module()
    with pytest.raises(ValueError):
        rng_llvm.emit_init_function(module, "f", "normal", (1.0,), 0)


def test_emitted_ir_uses_64_bit_integer_ops() -> None:
    module = ir.Module()
    rng_llvm.emit_init_function(module, "init", "normal", (0.0, 1.0), 5)
    text = str(module)
    for op in ("mul i64", "xor i64", "lshr i64", "trunc i64", "sitofp i32"):
        assert op in text, op
    assert "fast" not in text and "contract" not in text
