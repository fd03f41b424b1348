"""Sorting id columns for the index runs: packed keys must give lexsort's order."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from trine.store import arrays
from trine.store.arrays import sort_order, sort_triples
from trine.store.bulk import unique_rows

ids = st.integers(min_value=0, max_value=2**32 - 1)


def columns(rows):
    arr = np.array(sorted(set(rows)), dtype=np.uint32).reshape(-1, 3)
    rng = np.random.default_rng(len(arr))
    arr = arr[rng.permutation(len(arr))]
    return arr[:, 0].copy(), arr[:, 1].copy(), arr[:, 2].copy()


@given(st.lists(st.tuples(st.integers(0, 2**21), st.integers(0, 300), st.integers(0, 2**21)), max_size=200)
       | st.lists(st.tuples(ids, ids, ids), max_size=200))
def test_packed_sort_matches_lexsort(rows):
    a, b, c = columns(rows)
    expected = np.lexsort((c, b, a))
    got = sort_triples(a, b, c)
    for col, want in zip(got, (a, b, c)):
        assert np.array_equal(col, want[expected])
    order = sort_order(a, b, c)
    assert np.array_equal(order, expected)


@given(st.lists(st.tuples(st.integers(0, 2**21), st.integers(0, 300), st.integers(0, 2**21)), max_size=200)
       | st.lists(st.tuples(ids, ids, ids), max_size=200))
def test_unique_rows_are_the_sorted_distinct_rows(rows):
    arr = np.array(rows + rows[: len(rows) // 2], dtype=np.uint32).reshape(-1, 3)
    got = unique_rows(arr)
    assert got.dtype == np.uint32
    assert [tuple(r) for r in got.tolist()] == sorted(set(rows))


@given(st.lists(st.integers(0, 2**64 - 1), max_size=300), st.sampled_from([np.uint32, np.uint64, np.int64]))
def test_sort_based_unique_matches_numpy(values, dtype):
    info = np.iinfo(dtype)
    a = np.array([v % (int(info.max) + 1) for v in values], dtype=np.uint64).astype(dtype)
    assert np.array_equal(arrays.unique(a), np.unique(a))
    got, counts = arrays.unique_counts(a)
    want, want_counts = np.unique(a, return_counts=True)
    assert np.array_equal(got, want) and np.array_equal(counts, want_counts)


@given(st.lists(st.integers(0, 50), max_size=100), st.lists(st.integers(0, 50), max_size=100))
def test_sort_based_set_operations_match_numpy(xs, ys):
    a, b = np.array(xs, dtype=np.uint64), np.array(ys, dtype=np.uint64)
    u, inv = arrays.unique_inverse(a)
    want_u, want_inv = np.unique(a, return_inverse=True)
    assert np.array_equal(u, want_u) and np.array_equal(inv, want_inv.ravel())
    u, first = arrays.unique_first(a)
    want_u, want_first = np.unique(a, return_index=True)
    assert np.array_equal(u, want_u) and np.array_equal(first, want_first)
    assert np.array_equal(arrays.isin(a, b), np.isin(a, b))
    assert np.array_equal(arrays.union(a, b), np.union1d(a, b))
