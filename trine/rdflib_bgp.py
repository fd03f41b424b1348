"""Whole-BGP evaluation on term ids for the rdflib plugin (``trine.rdflib``).

rdflib evaluates a basic graph pattern one ``triples()`` call per partial
solution: a nested loop in Python that decodes every intermediate term.  This
module evaluates the whole BGP inside one LMDB transaction instead:

1. every pattern's constants are looked up in the dictionary once (a constant
   the store has never seen means no solutions);
2. the patterns are ordered greedily: the smallest (by the index range count
   ``Txn.count``) first, then always the smallest pattern that shares a
   variable with what is already bound;
3. each pattern is joined into a table of id columns (numpy ``uint32``), either
   by fetching all its rows with ``Txn.match_array`` and joining on the shared
   variables (sort + ``searchsorted``), or -- when the table has few distinct
   join keys and the pattern many rows -- by one bound lookup per key (an
   index nested-loop join);
4. only the final columns are decoded, each distinct id once.

Blank nodes of the query are variables, as in SPARQL.  The result is the same
multiset of solutions rdflib's own ``evalBGP`` produces over the same store;
tests/rdflib checks this on the W3C suites with and without acceleration.
"""

from __future__ import annotations

from typing import Callable, Hashable, Sequence

import numpy as np

from trine.store.keys import PAIR_BYTES, PERMUTATIONS, SPO_VALUE_BYTES
from trine.store.txn import Txn

Var = Hashable          # an rdflib Variable or BNode of the query
Slot = tuple[bool, object]   # (is_variable, id or variable)

#: One existence check (all three positions bound) costs about this many fetched rows.
CHECK_COST_ROWS = 16
#: Counting one key's triples (to plan a batched lookup) costs about this many fetched rows.
BATCH_COST_ROWS = 4
#: Tables of at most this many rows take pure-Python shortcuts (semi-joins, decoding).
SMALL_TABLE = 32
#: A two-bound pattern is counted exactly (by reading it) when its rarer key has at most this many entries.
EXACT_COUNT_LIMIT = 4096
_EMPTY = np.zeros((0, 3), dtype=np.uint32)


class Rows:
    """Fetches the rows of a pattern (ids or None per position), optionally
    keeping only explicit triples (the ``inferred=False`` view)."""

    def __init__(self, txn: Txn, explicit_only: bool):
        self.txn = txn
        self.explicit_only = explicit_only
        self._cache: dict[tuple, np.ndarray] = {}

    def count(self, s: int | None, p: int | None, o: int | None) -> int:
        """Rows matching a pattern: exact, or an upper bound when exactness costs a big read.

        (Counts are of the full view, so an upper bound of the explicit one;
        0 is always exact.)
        """
        vals = (s, p, o)
        bound = [i for i in range(3) if vals[i] is not None]
        if len(bound) == 2:
            i, j = bound
            key_count = self.txn.key_count
            m = min(key_count(_BY_ONE[i], vals[i]), key_count(_BY_ONE[j], vals[j]))  # type: ignore[arg-type]
            if m == 0:
                return 0
            return len(self.fetch(s, p, o)) if m <= EXACT_COUNT_LIMIT else m
        if len(bound) == 3:
            return self.exists(s, p, o)  # type: ignore[arg-type]
        if not bound and self.explicit_only:
            return self.txn.n_explicit()
        return self.txn.count(s, p, o)

    def fetch_keys(self, index: str, keys: np.ndarray, consts: tuple) -> np.ndarray:
        """Triples under several keys of one index that match the pattern's constants."""
        arr = read_keys(self.txn, index, keys)
        mask = None
        for i, c in enumerate(consts):
            if c is not None:
                m = arr[:, i] == c
                mask = m if mask is None else (mask & m)
        if mask is not None:
            arr = arr[mask]
        if self.explicit_only and len(arr):
            record = self.txn.record
            keep = np.fromiter((record(a, b, c).explicit for a, b, c in arr.tolist()), dtype=bool, count=len(arr))
            arr = arr[keep]
        return arr

    def exists(self, s: int, p: int, o: int) -> int:
        rec = self.txn.record(s, p, o)
        return int(rec is not None and (rec.explicit or not self.explicit_only))

    def fetch(self, s: int | None, p: int | None, o: int | None) -> np.ndarray:
        key = (s, p, o)
        arr = self._cache.get(key)
        if arr is None:
            arr = self._cache[key] = match_rows(self.txn, s, p, o, self.explicit_only)
        return arr


def match_rows(txn: Txn, s: int | None, p: int | None, o: int | None, explicit_only: bool) -> np.ndarray:
    """Triples matching a pattern as an (n, 3) uint32 array."""
    if s is None and p is None and o is None:
        return explicit_all(txn) if explicit_only else all_rows(txn)
    if not explicit_only:
        return fetch(txn, s, p, o)
    if s is not None:
        arr = spo_with_records(txn, [s])
        keep = arr["explicit"] != 0
        if p is not None:
            keep &= arr["p"] == p
        if o is not None:
            keep &= arr["o"] == o
        return _spo_cols(arr[keep])
    arr = fetch(txn, s, p, o)
    if len(arr) == 0:
        return arr
    record = txn.record
    mask = np.fromiter((record(a, b, c).explicit for a, b, c in arr.tolist()), dtype=bool, count=len(arr))
    return arr[mask]


# The index whose key is position i and whose duplicates are sorted by position j.
_BY_PAIR = {perm[:2]: name for name, perm in PERMUTATIONS.items()}
# The index read for a pattern with only position i bound (8-byte duplicates, no records).
_BY_ONE = {0: "sop", 1: "pso", 2: "osp"}
_SPO_DUP = np.dtype([("k", ">u4"), ("b", ">u4"), ("c", ">u4"), ("r", "V%d" % (SPO_VALUE_BYTES - PAIR_BYTES))])


def fetch(txn: Txn, s: int | None, p: int | None, o: int | None) -> np.ndarray:
    """Stored triples matching a pattern, as an (n, 3) uint32 array in s, p, o columns.

    Like ``Txn.match_array``, but with two positions bound it reads the index
    keyed by the *rarer* of the two terms (LMDB counts a key's duplicates in
    O(1)): ``?x rdf:type ub:Dean`` reads the few duplicates under ``ub:Dean``
    in OPS, not every ``rdf:type`` triple in POS.
    """
    vals = (s, p, o)
    bound = [i for i in range(3) if vals[i] is not None]
    if not bound:
        return all_rows(txn)
    if len(bound) == 3:
        found = txn.record(s, p, o) is not None  # type: ignore[arg-type]
        return np.array([[s, p, o]] if found else [], dtype=np.uint32).reshape(-1, 3)
    if len(bound) == 1:
        i = bound[0]
        return _read_key(txn, _BY_ONE[i], vals[i], None)  # type: ignore[arg-type]
    i, j = bound
    if txn.key_count(_BY_ONE[j], vals[j]) < txn.key_count(_BY_ONE[i], vals[i]):  # type: ignore[arg-type]
        i, j = j, i
    return _read_key(txn, _BY_PAIR[(i, j)], vals[i], vals[j])  # type: ignore[arg-type]


def _read_key(txn: Txn, name: str, key: int, second: int | None) -> np.ndarray:
    """The duplicates of one key (optionally only those whose next id is ``second``)."""
    c = txn.cursor(name)
    packed = int(key).to_bytes(4, "big")
    if not c.set_key(packed):
        return _EMPTY
    if name == "spo":
        buf = c.getmulti([packed], dupdata=True, dupfixed_bytes=SPO_VALUE_BYTES, keyfixed=True)
        arr = np.frombuffer(buf, dtype=_SPO_DUP)
        cols = [arr["k"], arr["b"], arr["c"]]
    else:
        buf = c.getmulti([packed], dupdata=True, dupfixed_bytes=PAIR_BYTES, keyfixed=True)
        arr = np.frombuffer(buf, dtype=">u4").reshape(-1, 3)
        cols = [arr[:, 0], arr[:, 1], arr[:, 2]]
    if second is not None:
        lo, hi = np.searchsorted(cols[1], [second, second + 1])
        cols = [x[lo:hi] for x in cols]
    out = np.empty((len(cols[0]), 3), dtype=np.uint32)
    perm = PERMUTATIONS[name]
    for k in range(3):
        out[:, perm[k]] = cols[k]
    return out


def read_keys(txn: Txn, name: str, keys: np.ndarray) -> np.ndarray:
    """Every triple under some keys of an 8-byte-duplicate index, (n, 3) in s, p, o columns."""
    if len(keys) == 0:
        return _EMPTY
    c = txn.cursor(name)
    packed = np.asarray(keys, dtype=">u4").view("V4").tolist()
    buf = c.getmulti(packed, dupdata=True, dupfixed_bytes=PAIR_BYTES, keyfixed=True)
    arr = np.frombuffer(buf, dtype=">u4").reshape(-1, 3)
    out = np.empty((len(arr), 3), dtype=np.uint32)
    perm = PERMUTATIONS[name]
    for k in range(3):
        out[:, perm[k]] = arr[:, k]
    return out


def all_rows(txn: Txn) -> np.ndarray:
    """Every stored triple, read a predicate at a time from PSO (MDB_GET_MULTIPLE)."""
    c = txn.cursor("pso")
    keys = list(c.iternext_nodup(keys=True, values=False)) if c.first() else []
    if not keys:
        return _EMPTY
    buf = c.getmulti(keys, dupdata=True, dupfixed_bytes=8, keyfixed=True)
    arr = np.frombuffer(buf, dtype=">u4").reshape(-1, 3)
    out = np.empty((len(arr), 3), dtype=np.uint32)
    out[:, 1], out[:, 0], out[:, 2] = arr[:, 0], arr[:, 1], arr[:, 2]
    return out


_SPO_REC = np.dtype([("s", ">u4"), ("p", ">u4"), ("o", ">u4"), ("explicit", "u1"), ("step", ">u2"), ("count", ">u4")])


def spo_with_records(txn: Txn, subjects: Sequence[int] | None) -> np.ndarray:
    """SPO entries (with their records) of some subjects, or of all of them."""
    c = txn.cursor("spo")
    if subjects is None:
        keys = list(c.iternext_nodup(keys=True, values=False)) if c.first() else []
    else:
        keys = [int(x).to_bytes(4, "big") for x in subjects]
    if not keys:
        return np.zeros(0, dtype=_SPO_REC)
    buf = c.getmulti(keys, dupdata=True, dupfixed_bytes=_SPO_REC.itemsize - 4, keyfixed=True)
    return np.frombuffer(buf, dtype=_SPO_REC)


def explicit_all(txn: Txn) -> np.ndarray:
    arr = spo_with_records(txn, None)
    return _spo_cols(arr[arr["explicit"] != 0])


def _spo_cols(arr: np.ndarray) -> np.ndarray:
    out = np.empty((len(arr), 3), dtype=np.uint32)
    out[:, 0], out[:, 1], out[:, 2] = arr["s"], arr["p"], arr["o"]
    return out


# --- the join ------------------------------------------------------------------

class Table:
    """Partial solutions: one uint32 id column per bound variable."""

    def __init__(self) -> None:
        self.cols: dict[Var, np.ndarray] = {}
        self.n = 1          # the empty solution

    def empty(self) -> bool:
        return self.n == 0


def _pattern_vars(pat: Sequence[Slot]) -> list[Var]:
    out: list[Var] = []
    for is_var, x in pat:
        if is_var and x not in out:
            out.append(x)
    return out


def _consts(pat: Sequence[Slot], subst: dict[Var, int] | None = None) -> tuple:
    out = []
    for is_var, x in pat:
        if not is_var:
            out.append(x)
        elif subst is not None and x in subst:
            out.append(subst[x])
        else:
            out.append(None)
    return tuple(out)


def _self_join_filter(pat: Sequence[Slot], arr: np.ndarray, skip: set[Var] = frozenset()) -> np.ndarray:
    """Keep rows where a variable repeated inside one pattern has one value."""
    first: dict[Var, int] = {}
    mask = None
    for i, (is_var, x) in enumerate(pat):
        if not is_var or x in skip:
            continue
        if x in first:
            m = arr[:, first[x]] == arr[:, i]
            mask = m if mask is None else (mask & m)
        else:
            first[x] = i
    return arr if mask is None else arr[mask]


def _var_positions(pat: Sequence[Slot]) -> dict[Var, int]:
    pos: dict[Var, int] = {}
    for i, (is_var, x) in enumerate(pat):
        if is_var and x not in pos:
            pos[x] = i
    return pos


def _key(cols: list[np.ndarray]) -> np.ndarray:
    """A uint64 join key from one or two id columns."""
    k = cols[0].astype(np.uint64)
    if len(cols) > 1:
        k = (k << np.uint64(32)) | cols[1].astype(np.uint64)
    return k


def join_indexes(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j) with left[i] == right[j] (sort-merge on the right side)."""
    order = np.argsort(right, kind="stable")
    rs = right[order]
    lo = np.searchsorted(rs, left, "left")
    hi = np.searchsorted(rs, left, "right")
    cnt = hi - lo
    total = int(cnt.sum())
    li = np.repeat(np.arange(len(left)), cnt)
    if total == 0:
        return li, np.zeros(0, dtype=np.int64)
    starts = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt)
    ri = order[starts + np.arange(total)]
    return li, ri


def _extend(table: Table, pat: Sequence[Slot], arr: np.ndarray, li: np.ndarray | None, ri: np.ndarray | None) -> None:
    """New table = table rows li combined with pattern rows ri (None = cross product)."""
    if li is None and table.n == 1:
        cols = {v: c.repeat(len(arr)) for v, c in table.cols.items()}
        for v, i in _var_positions(pat).items():
            cols[v] = arr[:, i]
        table.cols = cols
        table.n = len(arr)
        return
    if li is None:
        n, m = table.n, len(arr)
        li = np.repeat(np.arange(n), m)
        ri = np.tile(np.arange(m), n)
    cols = {v: c[li] for v, c in table.cols.items()}
    for v, i in _var_positions(pat).items():
        if v not in cols:
            cols[v] = arr[ri, i]
    table.cols = cols
    table.n = len(li)


def join_pattern(table: Table, pat: Sequence[Slot], rows: Rows) -> None:
    """Join one pattern into the table (in place).

    Three ways, whichever reads least: an existence check per distinct key
    when the table binds every variable of the pattern (a semi-join); a
    batched index lookup -- all triples under the distinct values of a shared
    variable, read with one MDB_GET_MULTIPLE call, then filtered and joined
    -- when those keys hold fewer triples than the pattern matches; else
    the whole pattern is read and joined on its shared variables.
    """
    pvars = _pattern_vars(pat)
    shared = [v for v in pvars if v in table.cols]
    if not shared:
        arr = _self_join_filter(pat, rows.fetch(*_consts(pat)))
        _extend(table, pat, arr, None, None)
        return
    full = rows.count(*_consts(pat))
    if len(shared) == len(pvars) and table.n <= SMALL_TABLE:
        # semi-join on a few rows, in Python (numpy's per-call cost dominates here)
        cols = [table.cols[v].tolist() for v in shared]
        keys = list(zip(*cols))
        seen: dict[tuple, int] = {}
        for k in keys:
            if k not in seen:
                seen[k] = rows.exists(*_consts(pat, dict(zip(shared, k))))  # type: ignore[misc]
        keep = np.fromiter((seen[k] for k in keys), dtype=bool, count=len(keys))
        table.cols = {v: c[keep] for v, c in table.cols.items()}
        table.n = int(keep.sum())
        return
    if len(shared) == len(pvars):
        key_cols = [table.cols[v] for v in shared]
        if len(shared) <= 2:
            uniq, inverse = np.unique(_key(key_cols), return_inverse=True)
            keys = [[int(k)] if len(shared) == 1 else [int(k) >> 32, int(k) & 0xFFFFFFFF] for k in uniq.tolist()]
        else:
            uniq_rows, inverse = np.unique(np.stack(key_cols, axis=1), axis=0, return_inverse=True)
            keys = uniq_rows.tolist()
        if len(keys) * CHECK_COST_ROWS < full:
            ok = np.fromiter((rows.exists(*_consts(pat, dict(zip(shared, k)))) for k in keys),  # type: ignore[misc]
                             dtype=bool, count=len(keys))
            keep = ok[inverse.reshape(-1)]
            table.cols = {v: c[keep] for v, c in table.cols.items()}
            table.n = int(keep.sum())
            return
    pos = _var_positions(pat)
    v0 = shared[0]
    i0 = pos[v0]
    arr = None
    values = np.unique(table.cols[v0])
    if len(values) * BATCH_COST_ROWS < full:
        index = _BY_ONE[i0]
        total = 0
        key_count = rows.txn.key_count
        for k in values.tolist():
            total += key_count(index, k)
            if total >= full:
                break
        if total < full:
            arr = rows.fetch_keys(index, values, _consts(pat))
    if arr is None:
        arr = rows.fetch(*_consts(pat))
    arr = _self_join_filter(pat, arr)
    key_cols = [table.cols[v] for v in shared]
    rcols = [arr[:, pos[v]] for v in shared]
    li, ri = join_indexes(_key(key_cols[:2]), _key(rcols[:2]))
    if len(shared) > 2:
        keep = key_cols[2][li] == rcols[2][ri]
        li, ri = li[keep], ri[keep]
    _extend(table, pat, arr, li, ri)


def order_patterns(patterns: list[list[Slot]], sizes: list[int]) -> list[list[Slot]]:
    """Greedy join order: smallest first, then the smallest connected pattern."""
    pvars = [set(_pattern_vars(p)) for p in patterns]
    remaining = list(range(len(patterns)))
    bound: set[Var] = set()
    order: list[list[Slot]] = []
    while remaining:
        connected = [i for i in remaining if bound & pvars[i]]
        pick = min(connected or remaining, key=lambda i: (sizes[i], i))
        remaining.remove(pick)
        order.append(patterns[pick])
        bound |= pvars[pick]
    return order


def solve(txn: Txn, patterns: list[list[Slot]], explicit_only: bool) -> Table:
    """Evaluate patterns whose constants are ids: a table of id columns."""
    rows = Rows(txn, explicit_only)
    table = Table()
    todo = []
    for pat in patterns:
        if all(not is_var for is_var, _ in pat):
            if not rows.exists(*_consts(pat)):  # type: ignore[misc]
                table.n = 0
                return table
        else:
            todo.append(pat)
    sizes = [rows.count(*_consts(p)) for p in todo]
    if 0 in sizes:
        table.n = 0
        return table
    for pat in order_patterns(todo, sizes):
        join_pattern(table, pat, rows)
        if table.empty():
            break
    if table.empty():
        table.cols = {v: np.zeros(0, np.uint32) for v in table.cols}
    return table


def project(table: Table, keep: list[Var], distinct: bool) -> None:
    """Keep some columns (in order); with ``distinct``, only distinct rows of them."""
    table.cols = {v: table.cols[v] for v in keep}
    if not distinct or table.n <= 1:
        return
    if not keep:
        table.n = 1
        return
    stacked = np.stack([table.cols[v] for v in keep], axis=1)
    _, first = np.unique(stacked, axis=0, return_index=True)
    first.sort()                     # keep the first occurrences, in solution order
    table.cols = {v: c[first] for v, c in table.cols.items()}
    table.n = len(first)


def decode_columns(table: Table, decode: Callable[[int], object]) -> dict[Var, list]:
    """Each column as a list of decoded terms, every distinct id decoded once."""
    out: dict[Var, list] = {}
    for v, col in table.cols.items():
        if len(col) <= SMALL_TABLE:
            out[v] = [decode(x) for x in col.tolist()]
            continue
        uniq, inv = np.unique(col, return_inverse=True)
        terms = np.empty(len(uniq), dtype=object)
        terms[:] = [decode(int(x)) for x in uniq.tolist()]
        out[v] = terms[inv.reshape(-1)].tolist()
    return out
