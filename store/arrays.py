"""Sorting and sort-based set operations on id arrays.

numpy 2.x answers ``np.unique`` (and ``isin``/``union1d``, built on it) with a
hash table, which on millions of distinct 32- or 64-bit ids is 10-20x
slower than sorting (measured: 2.2 s against 0.12 s for 2M uint64).  Bulk
paths use these instead.  Triples are sorted as one packed uint64 key
where the ids fit (``sort_triples``, ``sort_order``): a third of the cost
of ``lexsort`` and a gather.
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


def _packed(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, int, int] | None:
    """(a, b, c) packed into one uint64 per row, ordered like the triple,
    with the bit widths of b and c; None when the ids need more than 64 bits
    together (predicates are early, small ids, so big stores usually fit)."""
    if len(a) == 0:
        return None
    wa, wb, wc = (int(x.max()).bit_length() for x in (a, b, c))
    if wa + wb + wc > 64:
        return None
    u = np.uint64
    key = (a.astype(u) << u(wb + wc)) | (b.astype(u) << u(wc)) | c.astype(u)
    return key, wb, wc


def sort_order(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The permutation that sorts rows by (a, b, c)."""
    packed = _packed(a, b, c)
    if packed is None:
        return np.lexsort((c, b, a))
    return np.argsort(packed[0])  # keys are distinct, so stability does not matter


def sort_triples(a: np.ndarray, b: np.ndarray, c: np.ndarray,
                 unique: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The columns sorted by (a, b, c) (and without repeated rows if
    ``unique``): one sort of packed keys, three times faster than
    ``lexsort`` and a gather."""
    packed = _packed(a, b, c)
    if packed is None:
        if unique:
            rows = np.empty(len(a), dtype=[("a", ">u4"), ("b", ">u4"), ("c", ">u4")])
            rows["a"], rows["b"], rows["c"] = a, b, c
            u = np.unique(rows.view("V12")).view(rows.dtype)  # big-endian bytes sort like the numbers
            return u["a"].astype(np.uint32), u["b"].astype(np.uint32), u["c"].astype(np.uint32)
        order = np.lexsort((c, b, a))
        return a[order], b[order], c[order]
    key, wb, wc = packed
    key.sort()
    if unique and len(key) > 1:
        key = key[first_of_runs(key)]
    u = np.uint64
    return ((key >> u(wb + wc)).astype(np.uint32), ((key >> u(wc)) & u((1 << wb) - 1)).astype(np.uint32),
            (key & u((1 << wc) - 1)).astype(np.uint32))
