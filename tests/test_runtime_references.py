"""The pure-Python references of the runtime's batch selection and combine tree."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alpha_core.link.batch_reference import example_rows, permute, splitmix64
from alpha_core.lower.tree import tree_combine, tree_shape, tree_split


def test_splitmix64_matches_the_published_sequence() -> None:
    # The first outputs of splitmix64 seeded with 0 (Vigna's reference implementation).
    assert splitmix64(0) == 0xE220A8397B1DCDAF
    assert splitmix64(0x9E3779B97F4A7C15) == 0x6E789E6AA1B965F4


@pytest.mark.parametrize("n", [*range(1, 70), 127, 128, 129, 1000, 4096, 4097])
def test_permute_is_a_bijection(n: int) -> None:
    for epoch in range(3):
        assert sorted(permute(11, epoch, q, n) for q in range(n)) == list(range(n))


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=3000),
    seed=st.integers(min_value=0, max_value=2**64 - 1),
    epoch=st.integers(min_value=0, max_value=2**40),
)
def test_permute_is_a_bijection_for_any_seed(n: int, seed: int, epoch: int) -> None:
    assert sorted(permute(seed, epoch, q, n) for q in range(n)) == list(range(n))


def test_epochs_and_seeds_give_different_orders() -> None:
    orders = {
        tuple(permute(seed, epoch, q, 100) for q in range(100))
        for seed in (1, 2)
        for epoch in (0, 1)
    }
    assert len(orders) == 4


def test_unshuffled_rows_wrap_around_the_training_rows() -> None:
    fields = {"rows": 12, "holdout": 2, "batch": 6, "leaves": 3, "shuffle": 0, "shuffle_seed": 0}
    assert example_rows(**fields, t=0, leaf=2) == [4, 5]
    assert example_rows(**fields, t=1, leaf=1) == [8, 9]
    assert example_rows(**fields, t=2, leaf=0) == [2, 3]  # positions 12, 13 of 10 rows


def test_each_shuffled_epoch_visits_every_training_row_once() -> None:
    fields = {"rows": 45, "holdout": 5, "batch": 8, "leaves": 4, "shuffle": 1, "shuffle_seed": 3}
    seen = [
        row
        for t in range(10)
        for leaf in range(4)
        for row in example_rows(**fields, t=t, leaf=leaf)
    ]
    assert sorted(seen[:40]) == list(range(40))
    assert sorted(seen[40:]) == list(range(40))
    assert seen[:40] != seen[40:]


def test_example_rows_rejects_inconsistent_programs() -> None:
    with pytest.raises(ValueError):
        example_rows(rows=10, holdout=0, batch=7, leaves=2, shuffle=0, shuffle_seed=0, t=0, leaf=0)
    with pytest.raises(ValueError):
        example_rows(rows=10, holdout=10, batch=2, leaves=2, shuffle=0, shuffle_seed=0, t=0, leaf=0)


def test_tree_split_is_the_largest_smaller_power_of_two() -> None:
    assert [tree_split(n) for n in range(2, 11)] == [1, 2, 2, 4, 4, 4, 4, 8, 8]


def test_tree_shapes() -> None:
    assert tree_shape(1) == 0
    assert tree_shape(3) == ((0, 1), 2)
    assert tree_shape(6) == (((0, 1), (2, 3)), (4, 5))
    assert tree_shape(7) == (((0, 1), (2, 3)), ((4, 5), 6))


@given(st.lists(st.integers(), min_size=1, max_size=40))
def test_tree_combine_keeps_leaf_order(values: list[int]) -> None:
    # With concatenation as the addition, the tree must read the leaves left to right.
    assert tree_combine([[v] for v in values], lambda a, b: a + b) == values
