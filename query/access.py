"""Index access for the query engine: triple patterns on ids -> numpy columns.

Everything here works inside one read transaction (a :class:`trine.store.txn.Txn`)
and returns ``(n, 3)`` ``uint32`` arrays in s, p, o column order.  Two kinds
of access:

* :func:`fetch` - every triple matching a pattern with constant positions,
  read with LMDB's ``MDB_GET_MULTIPLE`` (a page of duplicates per call) from
  the permutation index whose key is the *least frequent* bound position
  (``key_count`` is O(1)), then sliced to the second bound position with a
  binary search (duplicates are sorted).  The caller may ask for the rows to be
  sorted by one free position; the index is chosen for that when it can be.
* :func:`fetch_keys` - the triples of *many* keys of one index in a single
  ``getmulti`` call (the vectorised inner side of an index nested-loop join:
  one B-tree descent per distinct key, no Python per key).

``explicit_only`` filtering needs the records, which live in SPO values only:
:func:`explicit_mask` reads them for the distinct subjects of a row set in one
``getmulti`` call and tests membership with numpy.
"""

from __future__ import annotations

import struct

import numpy as np

from trine.store import arrays
from trine.store.keys import PAIR_BYTES, PERMUTATIONS, SPO_VALUE_BYTES
from trine.store.txn import Txn

__all__ = [
    "fetch",
    "fetch_keys",
    "count_pattern",
    "explicit_mask",
    "predicates",
    "key_index",
    "INDEX_FOR_KEY",
]

S, P, O = 0, 1, 2

#: The index to probe when position ``pos`` is the (only) key, by the free
#: position that should come sorted first.  ``INDEX_FOR_KEY[pos]`` is the
#: default choice.
INDEX_FOR_KEY = {S: "spo", P: "pso", O: "osp"}
_INDEX_BY_KEY_AND_NEXT = {
    (S, P): "spo", (S, O): "sop", (P, S): "pso", (P, O): "pos", (O, S): "osp", (O, P): "ops",
}

_EMPTY = np.zeros((0, 3), dtype=np.uint32)
_SPO_REC_DT = np.dtype([("k", ">u4"), ("a", ">u4"), ("b", ">u4"), ("e", "u1"), ("r", "V6")])
_KEYED_PAIR_DT = np.dtype(">u4")


def key_index(key_pos: int, next_pos: int | None = None) -> str:
    if next_pos is None:
        return INDEX_FOR_KEY[key_pos]
    return _INDEX_BY_KEY_AND_NEXT[(key_pos, next_pos)]


def _to_keys(ids: np.ndarray) -> list:
    """Packed big-endian 4-byte keys (bytes objects) for an id array, at C speed."""
    return np.ascontiguousarray(ids, dtype=">u4").view("V4").tolist()


def _decode(name: str, buf, with_explicit: bool = False):
    """(n, 3) s-p-o array (and explicit flags for SPO) from a keyfixed buffer."""
    if name == "spo":
        arr = np.frombuffer(buf, dtype=_SPO_REC_DT)
        out = np.empty((len(arr), 3), dtype=np.uint32)
        out[:, 0] = arr["k"]
        out[:, 1] = arr["a"]
        out[:, 2] = arr["b"]
        return (out, arr["e"].astype(bool)) if with_explicit else (out, None)
    raw = np.frombuffer(buf, dtype=_KEYED_PAIR_DT).reshape(-1, 3)
    out = np.empty(raw.shape, dtype=np.uint32)
    a, b, c = PERMUTATIONS[name]
    out[:, a] = raw[:, 0]
    out[:, b] = raw[:, 1]
    out[:, c] = raw[:, 2]
    return out, None


def _getmulti(txn: Txn, name: str, keys: list) -> object:
    vbytes = SPO_VALUE_BYTES if name == "spo" else PAIR_BYTES
    return txn.cursor(name).getmulti(keys, dupdata=True, dupfixed_bytes=vbytes, keyfixed=True)


def predicates(txn: Txn) -> list[int]:
    """Every predicate id in the store (the keys of PSO)."""
    c = txn.cursor("pso")
    if not c.first():
        return []
    return [int.from_bytes(k, "big") for k in c.iternext_nodup(keys=True, values=False)]


def fetch_keys(txn: Txn, name: str, keys: np.ndarray, explicit: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """All triples stored under ``keys`` (ids, ascending) of index ``name``.

    Returns the (n, 3) s-p-o rows in index order (so grouped by key, in the
    order of ``keys``) and, for the SPO index with ``explicit=True``, the
    explicit flag of each row.
    """
    if len(keys) == 0:
        return _EMPTY, (np.zeros(0, bool) if explicit and name == "spo" else None)
    buf = _getmulti(txn, name, _to_keys(keys))
    return _decode(name, buf, explicit)


#: Ranges up to this many entries are read with a cursor walk in Python (less
#: fixed cost than the numpy path for a handful of rows).
SMALL_RANGE = 64
_ID = struct.Struct(">I")


def _small_range(txn: Txn, name: str, key_id: int, prefix_id: int | None,
                 explicit_only: bool, limit: int | None = None) -> np.ndarray | None:
    """The entries of one key of an index, optionally only those whose second
    component is ``prefix_id``, as (n, 3) s-p-o rows, read by a cursor walk
    (less fixed cost than ``getmulti`` for a handful of entries).  With
    ``limit``, None when there are more entries than that."""
    c = txn.cursor(name)
    key = _ID.pack(key_id)
    if prefix_id is not None:
        pfx = _ID.pack(prefix_id)
        if not c.set_range_dup(key, pfx):
            return _EMPTY
    else:
        pfx = None
        if not c.set_key(key):
            return _EMPTY
    values = []
    for v in c.iternext_dup():
        if pfx is not None and v[:4] != pfx:
            break
        values.append(v)
        if limit is not None and len(values) > limit:
            return None
    spo = name == "spo"
    if spo:
        values = [v[:PAIR_BYTES] for v in values if v[PAIR_BYTES] or not explicit_only]
    if not values:
        return _EMPTY
    pairs = np.frombuffer(b"".join(values), dtype=_KEYED_PAIR_DT).reshape(-1, 2)
    a, b, cc = PERMUTATIONS[name]
    rows = np.empty((len(pairs), 3), dtype=np.uint32)
    rows[:, a] = key_id
    rows[:, b] = pairs[:, 0]
    rows[:, cc] = pairs[:, 1]
    if explicit_only and not spo:
        record = txn.record
        keep = [i for i, (x, y, z) in enumerate(rows.tolist())
                if (r := record(x, y, z)) is not None and r.explicit]
        rows = rows[keep]
    return rows


def fetch(txn: Txn, s: int | None, p: int | None, o: int | None,
          sort_by: int | None = None, explicit_only: bool = False,
          info: dict | None = None) -> tuple[np.ndarray, int | None]:
    """Every stored triple matching a pattern (None = free), as (n, 3) s-p-o ids.

    Returns ``(rows, sorted_pos)``: ``sorted_pos`` is the free position whose
    column is sorted ascending (``None`` if no free position is known sorted).
    ``sort_by`` asks for that free position to be the sorted one when an index
    allows it.  ``info``, if given, receives the name of the index read.
    """
    if info is None:
        info = {}
    bound = [x is not None for x in (s, p, o)]
    nb = sum(bound)
    ids = (s, p, o)
    if nb == 3:
        info["index"] = "spo (lookup)"
        rec = txn.record(s, p, o)  # type: ignore[arg-type]
        if rec is None or (explicit_only and not rec.explicit):
            return _EMPTY, None
        return np.array([[s, p, o]], dtype=np.uint32), None
    if nb == 0:
        info["index"] = "pso (full scan)"
        keys = np.array(predicates(txn), dtype=np.uint32)
        rows, flags = fetch_keys(txn, "pso", keys)
        if explicit_only:
            rows = rows[explicit_mask(txn, rows)]
        return rows, None  # sorted by p, then s
    free = [i for i in range(3) if not bound[i]]
    if nb == 1:
        key_pos = bound.index(True)
        if sort_by in free:
            name = key_index(key_pos, sort_by)
        else:
            name = key_index(key_pos)
        info["index"] = name
        if txn.key_count(name, ids[key_pos]) <= SMALL_RANGE:  # type: ignore[arg-type]
            return _small_range(txn, name, ids[key_pos], None, explicit_only), PERMUTATIONS[name][1]  # type: ignore[return-value]
        rows, flags = fetch_keys(txn, name, np.array([ids[key_pos]], dtype=np.uint32),
                                 explicit=explicit_only)
        second_pos = PERMUTATIONS[name][1]  # s-p-o position of the 2nd key component
        if explicit_only:
            rows = rows[flags] if flags is not None else rows[explicit_mask(txn, rows)]
        return rows, second_pos
    # two bound: key on the rarer of the two, slice on the other
    (a, b), (f,) = [i for i in range(3) if bound[i]], free
    ca = txn.key_count(INDEX_FOR_KEY[a], ids[a])  # type: ignore[arg-type]
    cb = txn.key_count(INDEX_FOR_KEY[b], ids[b])  # type: ignore[arg-type]
    key_pos, second = (a, b) if ca <= cb else (b, a)
    if min(ca, cb) == 0:
        return _EMPTY, None
    name = key_index(key_pos, second)
    info["index"] = name
    if min(ca, cb) <= SMALL_RANGE:
        return _small_range(txn, name, ids[key_pos], ids[second], explicit_only), f  # type: ignore[return-value]
    if SMALL_RANGE:
        # the rarer key may still hold only a few entries with the other one
        # (the staff of one department among all its triples): walk those
        rows = _small_range(txn, name, ids[key_pos], ids[second], explicit_only, limit=SMALL_RANGE)
        if rows is not None:
            return rows, f
    rows, flags = fetch_keys(txn, name, np.array([ids[key_pos]], dtype=np.uint32), explicit=explicit_only)
    col = rows[:, second]
    lo = int(col.searchsorted(ids[second]))
    hi = int(col.searchsorted(ids[second], side="right"))
    rows = rows[lo:hi]
    if explicit_only:
        rows = rows[flags[lo:hi]] if flags is not None else rows[explicit_mask(txn, rows)]
    return rows, f


def count_pattern(txn: Txn, s: int | None, p: int | None, o: int | None,
                  exact_limit: int = 4096, fetcher=None) -> tuple[int, bool]:
    """``(count, exact)`` of the triples matching a pattern.

    One bound position: exact and O(1) (``key_count``).  Two: exact when the
    rarer key holds at most ``exact_limit`` entries (one bulk read, through
    ``fetcher`` so the caller can keep the rows), otherwise that key's count
    as an upper bound (for a class, ``?x rdf:type C``, the entries under C in
    OPS are nearly all type triples, so the bound is tight).
    """
    bound = [x is not None for x in (s, p, o)]
    nb = sum(bound)
    ids = (s, p, o)
    if nb == 0:
        return txn.n_triples(), True
    if nb == 3:
        return (1 if txn.record(s, p, o) is not None else 0), True  # type: ignore[arg-type]
    if nb == 1:
        pos = bound.index(True)
        return txn.key_count(INDEX_FOR_KEY[pos], ids[pos]), True  # type: ignore[arg-type]
    a, b = [i for i in range(3) if bound[i]]
    ca = txn.key_count(INDEX_FOR_KEY[a], ids[a])  # type: ignore[arg-type]
    cb = txn.key_count(INDEX_FOR_KEY[b], ids[b])  # type: ignore[arg-type]
    if min(ca, cb) == 0:
        return 0, True
    if min(ca, cb) > exact_limit:
        return min(ca, cb), False
    rows, _ = (fetcher or (lambda *a: fetch(txn, *a)))(s, p, o)
    return len(rows), True


def explicit_mask(txn: Txn, rows: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows (s, p, o) that are explicit triples.

    Reads the SPO records of the rows' distinct subjects in one ``getmulti``
    call, keeps the explicit ones, and tests the rows for membership with a
    dense (subject rank, (p, o) rank) key.
    """
    if len(rows) == 0:
        return np.zeros(0, dtype=bool)
    subjects = arrays.unique(rows[:, 0])
    table, flags = fetch_keys(txn, "spo", subjects, explicit=True)
    table = table[flags]
    if len(table) == 0:
        return np.zeros(len(rows), dtype=bool)
    po_rows = (rows[:, 1].astype(np.uint64) << np.uint64(32)) | rows[:, 2]
    po_tab = (table[:, 1].astype(np.uint64) << np.uint64(32)) | table[:, 2]
    uniq, inv = arrays.unique_inverse(np.concatenate([po_rows, po_tab]))
    del uniq
    r_rows, r_tab = inv[: len(rows)].astype(np.uint64), inv[len(rows):].astype(np.uint64)
    s_rows = np.searchsorted(subjects, rows[:, 0]).astype(np.uint64)
    s_tab = np.searchsorted(subjects, table[:, 0]).astype(np.uint64)
    k_rows = (s_rows << np.uint64(32)) | r_rows
    k_tab = (s_tab << np.uint64(32)) | r_tab
    return arrays.isin(k_rows, k_tab)
