"""Sort-based set operations on id arrays.

numpy 2.x answers ``np.unique`` (and ``isin``/``union1d``, built on it) with a
hash table, which on millions of distinct 32- or 64-bit ids is 10-20x
slower than sorting (measured: 2.2 s against 0.12 s for 2M uint64).  Bulk
paths use these instead.
"""

from __future__ import annotations

import numpy as np


def first_of_runs(s: np.ndarray) -> np.ndarray:
    """Mask of the first element of each run of equal values in sorted ``s``."""
    first = np.ones(len(s), bool)
    if len(s) > 1:
        np.not_equal(s[1:], s[:-1], out=first[1:])
    return first


def unique(a: np.ndarray) -> np.ndarray:
    """The sorted distinct values of ``a`` (as ``np.unique(a)``)."""
    s = np.sort(a, axis=None)
    return s[first_of_runs(s)]


def unique_counts(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, multiplicities), as ``np.unique(a, return_counts=True)``."""
    s = np.sort(a, axis=None)
    idx = np.flatnonzero(first_of_runs(s))
    return s[idx], np.diff(np.append(idx, len(s)))


def unique_inverse(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, inverse), as ``np.unique(a, return_inverse=True)``."""
    order = np.argsort(a, kind="stable")
    s = a[order]
    first = first_of_runs(s)
    inverse = np.empty(len(a), np.intp)
    inverse[order] = np.cumsum(first) - 1
    return s[first], inverse


def unique_first(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, index of each one's first occurrence), as
    ``np.unique(a, return_index=True)``."""
    order = np.argsort(a, kind="stable")
    first = first_of_runs(a[order])
    return a[order[first]], order[first]


def isin(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mask of the elements of ``a`` found in ``b``, as ``np.isin(a, b)``."""
    sb = np.sort(b)
    if len(sb) == 0:
        return np.zeros(len(a), bool)
    pos = np.minimum(np.searchsorted(sb, a), len(sb) - 1)
    return sb[pos] == a


def union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted distinct values of both, as ``np.union1d(a, b)``."""
    return unique(np.concatenate((a, b)))
