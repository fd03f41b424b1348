"""Dictionary and triple operations on ids inside one LMDB transaction.

Everything above the store (reasoning, queries) talks to a ``Txn``: it
knows terms as canonical strings (store/terms.py) and triples as id tuples,
and nothing of SPARQL or rules.  Key layouts come from store/keys.py.

The term dictionary is two databases: ``i2t`` (id -> canonical term bytes)
and ``t2i``, keyed by an 8-byte hash of the term (dupsort, the ids of every
term with that hash), which is much smaller than keying by the term itself.
A lookup confirms the candidate id's term in ``i2t``, so hash collisions are
harmless.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Iterable, Iterator

import lmdb
import numpy as np

from .arrays import sort_order
from .keys import (
    ID_BYTES, PAIR_BYTES, PERMUTATIONS, SPO_VALUE_BYTES, SPO_VALUE_DTYPE, Record,
    make_id, pack_id, pack_spo_value, pair_items, spo_value_items, unpack_id, unpack_spo_value,
)
from .terms import kind_of

Triple = tuple[int, int, int]
Pattern = tuple[int | None, int | None, int | None]

_U64 = struct.Struct(">Q")
_PAIR = struct.Struct(">II")
_ID = struct.Struct(">I")


def term_hash(term_bytes: bytes) -> bytes:
    return hashlib.blake2b(term_bytes, digest_size=8).digest()


def choose_index(s: int | None, p: int | None, o: int | None) -> tuple[str, bytes | None, bytes]:
    """(index name, key, duplicate prefix) that answers a pattern in one range.

    The key is the first bound position of the permutation, the prefix the
    packed second one (empty when only one position is bound).
    """
    if s is not None:
        if p is not None:
            return "spo", pack_id(s), pack_id(p)
        if o is not None:
            return "sop", pack_id(s), pack_id(o)
        return "spo", pack_id(s), b""
    if p is not None:
        if o is not None:
            return "pos", pack_id(p), pack_id(o)
        return "pso", pack_id(p), b""
    if o is not None:
        return "osp", pack_id(o), b""
    return "spo", None, b""


def _to_spo(name: str, a: int, b: int, c: int) -> Triple:
    perm = PERMUTATIONS[name]
    out = [0, 0, 0]
    out[perm[0]], out[perm[1]], out[perm[2]] = a, b, c
    return out[0], out[1], out[2]


class Txn:
    """One LMDB transaction (read or write) seen as dictionary + triples."""

    def __init__(self, txn: lmdb.Transaction, dbs: dict, write: bool):
        self.txn = txn
        self.dbs = dbs
        self.write = write
        self._cursors: dict[str, lmdb.Cursor] = {}
        self._term_cache: dict[int, str] = {}
        self._delta_triples = 0
        self._delta_explicit = 0
        self._next_serial: int | None = None

    def cursor(self, name: str) -> lmdb.Cursor:
        c = self._cursors.get(name)
        if c is None:
            c = self._cursors[name] = self.txn.cursor(db=self.dbs[name])
        return c

    # --- meta ------------------------------------------------------------
    def meta(self, key: str) -> bytes | None:
        return self.txn.get(key.encode(), db=self.dbs["meta"])

    def meta_str(self, key: str) -> str | None:
        v = self.meta(key)
        return v.decode() if v is not None else None

    def meta_int(self, key: str) -> int:
        v = self.meta(key)
        return _U64.unpack(v)[0] if v else 0

    def set_meta(self, key: str, value: bytes) -> None:
        self.txn.put(key.encode(), value, db=self.dbs["meta"])

    def n_triples(self) -> int:
        return self.meta_int("n_triples") + self._delta_triples

    def n_explicit(self) -> int:
        return self.meta_int("n_explicit") + self._delta_explicit

    def flush(self) -> None:
        """Write counters kept in memory during a write transaction."""
        if not self.write:
            return
        if self._delta_triples or self._delta_explicit:
            self.set_meta("n_triples", _U64.pack(self.meta_int("n_triples") + self._delta_triples))
            self.set_meta("n_explicit", _U64.pack(self.meta_int("n_explicit") + self._delta_explicit))
            self._delta_triples = self._delta_explicit = 0
        if self._next_serial is not None:
            self.set_meta("next_serial", _U64.pack(self._next_serial))

    # --- dictionary ------------------------------------------------------
    def term_id(self, term: str) -> int | None:
        """The id of a canonical term, or None if the store has never seen it."""
        data = term.encode("utf-8")
        c = self.cursor("t2i")
        if not c.set_key(term_hash(data)):
            return None
        i2t = self.dbs["i2t"]
        for v in c.iternext_dup():
            if self.txn.get(v, db=i2t) == data:
                return unpack_id(v)
        return None

    def term(self, term_id: int) -> str:
        t = self._term_cache.get(term_id)
        if t is None:
            data = self.txn.get(pack_id(term_id), db=self.dbs["i2t"])
            if data is None:
                raise KeyError(f"term id {term_id} is not in the dictionary")
            t = self._term_cache[term_id] = data.decode("utf-8")
        return t

    def put_term(self, term: str, term_id: int) -> None:
        data = term.encode("utf-8")
        self.txn.put(term_hash(data), pack_id(term_id), db=self.dbs["t2i"], dupdata=True)
        self.txn.put(pack_id(term_id), data, db=self.dbs["i2t"])

    def allocate_serials(self, n: int) -> int:
        """Reserve ``n`` consecutive id serials; returns the first."""
        if self._next_serial is None:
            self._next_serial = self.meta_int("next_serial")
        first = self._next_serial
        self._next_serial += n
        return first

    def intern(self, term: str) -> int:
        """The id of a term, adding it to the dictionary if it is new."""
        tid = self.term_id(term)
        if tid is None:
            tid = make_id(self.allocate_serials(1), kind_of(term))
            self.put_term(term, tid)
        return tid

    def intern_all(self, terms: Iterable[str], cache: dict[str, int] | None = None) -> list[int]:
        cache = {} if cache is None else cache
        out = []
        for t in terms:
            tid = cache.get(t)
            if tid is None:
                tid = cache[t] = self.intern(t)
            out.append(tid)
        return out

    # --- triples: reads ----------------------------------------------------
    def record(self, s: int, p: int, o: int) -> Record | None:
        c = self.cursor("spo")
        pair = _PAIR.pack(p, o)
        if c.set_range_dup(_ID.pack(s), pair):
            v = c.value()
            if v[:PAIR_BYTES] == pair:
                return unpack_spo_value(v)[2]
        return None

    def contained(self, s: np.ndarray | int, p: np.ndarray | int, o: np.ndarray | int,
                  explicit_only: bool = False) -> list[int]:
        """Indexes ``i`` of the triples ``(s[i], p[i], o[i])`` that are stored
        (and explicit, with ``explicit_only``); each of s, p, o is an id
        column or one id for every row.  One seek per row to its SPO entry,
        no record decoded; the keys are packed by numpy, so the loop does
        only the seeks."""
        c = self.cursor("spo")
        seek, value = c.set_range_dup, c.value
        flag = 1 if explicit_only else 0  # the explicit flag is the record's first byte
        if isinstance(p, int) and isinstance(o, int) and not isinstance(s, int):
            # (?x :p :o), the common shape: one packed pair for every row
            pair = _PAIR.pack(p, o)
            keys = np.ascontiguousarray(s, dtype=">u4").view("V4").tolist()
            return [i for i, k in enumerate(keys)
                    if seek(k, pair) and (v := value())[:PAIR_BYTES] == pair and v[PAIR_BYTES] >= flag]
        n = max(np.size(x) for x in (s, p, o))
        keys = np.ascontiguousarray(np.broadcast_to(s, n), dtype=">u4").view("V4").tolist()
        po = np.empty((n, 2), dtype=">u4")
        po[:, 0], po[:, 1] = p, o
        pairs = po.view(f"V{PAIR_BYTES}").ravel().tolist()
        return [i for i, (k, pair) in enumerate(zip(keys, pairs))
                if seek(k, pair) and (v := value())[:PAIR_BYTES] == pair and v[PAIR_BYTES] >= flag]

    def scan(self, s: int | None = None, p: int | None = None, o: int | None = None) -> Iterator[Triple]:
        """Every stored triple matching a pattern (None = any), as ids."""
        if s is not None and p is not None and o is not None:
            if self.record(s, p, o) is not None:
                yield (s, p, o)
            return
        name, key, prefix = choose_index(s, p, o)
        c = self.cursor(name)
        perm_name = name
        if key is None:
            for k, v in c.iternext(keys=True, values=True) if c.first() else ():
                a = unpack_id(k)
                b, cc = _PAIR.unpack(v[:PAIR_BYTES])
                yield _to_spo(perm_name, a, b, cc)
            return
        a = unpack_id(key)
        if prefix:
            if not c.set_range_dup(key, prefix):
                return
        elif not c.set_key(key):
            return
        n = len(prefix)
        for v in c.iternext_dup():
            if n and v[:n] != prefix:
                break
            b, cc = _PAIR.unpack(v[:PAIR_BYTES])
            yield _to_spo(perm_name, a, b, cc)

    def scan_records(self, s: int | None = None) -> Iterator[tuple[int, int, int, Record]]:
        """Triples with their records from SPO, all of them or one subject's."""
        c = self.cursor("spo")
        if s is None:
            if not c.first():
                return
            for k, v in c.iternext(keys=True, values=True):
                p, o, r = unpack_spo_value(v)
                yield unpack_id(k), p, o, r
            return
        if not c.set_key(pack_id(s)):
            return
        for v in c.iternext_dup():
            p, o, r = unpack_spo_value(v)
            yield s, p, o, r

    def records_array(self, s: np.ndarray, p: np.ndarray, o: np.ndarray) -> np.ndarray:
        """The records of many triples at once, as a structured array.

        Fields ``found`` (bool), ``explicit`` (bool), ``count`` and ``step``,
        one row per input triple, in input order.  Reads every SPO entry of
        the distinct subjects in one call (MDB_GET_MULTIPLE), so it pays when
        the triples cover a good part of their subjects' entries.
        """
        n = len(s)
        out = np.zeros(n, dtype=[("found", bool), ("explicit", bool), ("count", np.int64), ("step", np.int32)])
        if n == 0:
            return out
        subjects = np.unique(s)
        buf = self.cursor("spo").getmulti([_ID.pack(x) for x in subjects.tolist()], dupdata=True,
                                          dupfixed_bytes=SPO_VALUE_BYTES, keyfixed=True)
        got = np.frombuffer(buf, dtype=[("s", ">u4")] + [(f, SPO_VALUE_DTYPE[f]) for f in SPO_VALUE_DTYPE.names])
        if len(got) == 0:
            return out
        key_dt = np.dtype([("s", ">u4"), ("p", ">u4"), ("o", ">u4")])
        have = np.empty(len(got), dtype=key_dt)  # sorted: subjects ascending, entries in (p, o) order
        have["s"], have["p"], have["o"] = got["s"], got["p"], got["o"]
        want = np.empty(n, dtype=key_dt)
        want["s"], want["p"], want["o"] = s, p, o
        pos = np.minimum(np.searchsorted(have, want), len(have) - 1)
        found = have[pos] == want
        out["found"] = found
        hit = got[pos[found]]
        out["explicit"][found] = hit["explicit"] != 0
        out["count"][found] = hit["count"]
        out["step"][found] = hit["step"]
        return out

    def key_count(self, index: str, key: int) -> int:
        """How many entries an index holds under one key (O(1) in LMDB)."""
        c = self.cursor(index)
        return c.count() if c.set_key(pack_id(key)) else 0

    def count(self, s: int | None = None, p: int | None = None, o: int | None = None) -> int:
        """Exact number of triples matching a pattern, without decoding terms."""
        bound = (s is not None) + (p is not None) + (o is not None)
        if bound == 0:
            return self.n_triples()
        if bound == 3:
            return 1 if self.record(s, p, o) is not None else 0  # type: ignore[arg-type]
        name, key, prefix = choose_index(s, p, o)
        if bound == 1:
            return self.key_count(name, unpack_id(key))  # type: ignore[arg-type]
        return len(self.match_array(s, p, o))

    def match_array(self, s: int | None = None, p: int | None = None, o: int | None = None) -> np.ndarray:
        """Matching triples as an (n, 3) uint32 array in s, p, o columns.

        Rows come in the order of the index that answers the pattern, so the
        free positions are sorted (the basis of merge joins).  Fetches the
        key's duplicates a page at a time (MDB_GET_MULTIPLE) into numpy.
        """
        if s is not None and p is not None and o is not None:
            found = self.record(s, p, o) is not None
            return np.array([[s, p, o]] if found else [], dtype=np.uint32).reshape(-1, 3)
        name, key, prefix = choose_index(s, p, o)
        if key is None:
            return np.array(list(self.scan()), dtype=np.uint32).reshape(-1, 3)
        c = self.cursor(name)
        vbytes = SPO_VALUE_BYTES if name == "spo" else PAIR_BYTES
        buf = c.getmulti([key], dupdata=True, dupfixed_bytes=vbytes, keyfixed=True)
        if name == "spo":
            dt = np.dtype([("k", ">u4"), ("p", ">u4"), ("o", ">u4"), ("r", "V%d" % (vbytes - PAIR_BYTES))])
            arr = np.frombuffer(buf, dtype=dt)
            cols = (arr["k"], arr["p"], arr["o"])
        else:
            arr = np.frombuffer(buf, dtype=">u4").reshape(-1, 3)
            cols = (arr[:, 0], arr[:, 1], arr[:, 2])
        b = cols[1]
        if prefix:
            want = unpack_id(prefix)
            lo, hi = np.searchsorted(b, [want, want + 1])
            cols = tuple(col[lo:hi] for col in cols)
        out = np.empty((len(cols[0]), 3), dtype=np.uint32)
        perm = PERMUTATIONS[name]
        for i in range(3):
            out[:, perm[i]] = cols[i]
        return out

    # --- triples: writes ---------------------------------------------------
    def insert(self, s: int, p: int, o: int, rec: Record) -> None:
        """Store a triple that is not yet stored, in all six indexes."""
        ids = (s, p, o)
        put = self.txn.put
        dbs = self.dbs
        put(_ID.pack(s), pack_spo_value(p, o, rec), db=dbs["spo"], dupdata=True)
        for name in ("sop", "pso", "pos", "osp", "ops"):
            a, b, c = PERMUTATIONS[name]
            put(_ID.pack(ids[a]), _PAIR.pack(ids[b], ids[c]), db=dbs[name], dupdata=True)
        self._delta_triples += 1
        self._delta_explicit += rec.explicit

    def insert_many(self, triples: np.ndarray, explicit: np.ndarray, count: np.ndarray, step: np.ndarray) -> None:
        """``insert`` for many triples (an (n, 3) id array with their records'
        columns): one index at a time, in key order, each in one C-level call.

        None of them may be stored yet, and none may repeat (``KeyError``
        otherwise; the transaction is then not to be committed).
        """
        arr = np.asarray(triples, dtype=np.uint32).reshape(-1, 3)
        n = len(arr)
        if n == 0:
            return
        for name, perm in PERMUTATIONS.items():
            cols = arr[:, list(perm)]
            order = sort_order(cols[:, 0], cols[:, 1], cols[:, 2])
            keys = cols[order, 0].astype(">u4").view("V4").tolist()  # bytes objects, without a Python loop
            if name == "spo":
                values = spo_value_items(cols[order, 1], cols[order, 2], explicit[order], step[order], count[order])
            else:
                values = pair_items(cols[order, 1], cols[order, 2])
            items = zip(keys, values)
            # dupdata=False: LMDB's NODUPDATA, an entry that is already there is refused (and not counted)
            consumed, added = self.cursor(name).putmulti(items, dupdata=False)
            if added != n:
                raise KeyError(f"insert_many: {n - added} of the triples are already stored or repeated")
        self._delta_triples += n
        self._delta_explicit += int(np.count_nonzero(explicit))

    def _take_spo(self, s: int, p: int, o: int) -> Record:
        """Delete a triple's SPO entry; returns the record it held."""
        c = self.cursor("spo")
        pair = _PAIR.pack(p, o)
        if not c.set_range_dup(_ID.pack(s), pair) or c.value()[:PAIR_BYTES] != pair:
            raise KeyError(f"triple {(s, p, o)} is not stored")
        old = unpack_spo_value(c.value())[2]
        c.delete()
        return old

    def set_record(self, s: int, p: int, o: int, rec: Record) -> None:
        """Replace the record of a stored triple."""
        old = self._take_spo(s, p, o)
        self.txn.put(_ID.pack(s), pack_spo_value(p, o, rec), db=self.dbs["spo"], dupdata=True)
        self._delta_explicit += int(rec.explicit) - int(old.explicit)

    def set_records(self, items: Iterable[tuple[Triple, Record]]) -> None:
        """``set_record`` for many triples, in SPO order on one cursor."""
        c = self.cursor("spo")
        delta = 0
        for (s, p, o), rec in sorted(items, key=lambda x: x[0]):
            k, pair = _ID.pack(s), _PAIR.pack(p, o)
            if not c.set_range_dup(k, pair) or c.value()[:PAIR_BYTES] != pair:
                raise KeyError(f"triple {(s, p, o)} is not stored")
            delta += int(rec.explicit) - c.value()[PAIR_BYTES]
            c.delete()
            c.put(k, pack_spo_value(p, o, rec), dupdata=True)
        self._delta_explicit += delta

    def delete(self, s: int, p: int, o: int) -> Record:
        """Remove a stored triple from all six indexes; returns its record."""
        old = self._take_spo(s, p, o)
        ids = (s, p, o)
        for name in ("sop", "pso", "pos", "osp", "ops"):
            a, b, cc = PERMUTATIONS[name]
            self.txn.delete(_ID.pack(ids[a]), _PAIR.pack(ids[b], ids[cc]), db=self.dbs[name])
        self._delta_triples -= 1
        self._delta_explicit -= old.explicit
        return old

    def delete_many(self, triples: Iterable[Triple]) -> None:
        """Remove many stored triples: one index at a time, in key order.

        The same effect as ``delete`` per triple (a triple that is not stored
        raises ``KeyError``), but consecutive deletions land on the same
        pages, and a key all of whose entries go (a subject or an object that
        disappears with the update, the common case when a large part of the
        data is removed) is deleted with one call.
        """
        arr = np.asarray(triples if isinstance(triples, np.ndarray) else list(triples), dtype=np.uint32)
        arr = arr.reshape(-1, 3)
        if len(arr) == 0:
            return
        for name, perm in PERMUTATIONS.items():
            cols = arr[:, list(perm)]
            rows = cols[np.lexsort((cols[:, 2], cols[:, 1], cols[:, 0]))]
            if name == "spo":
                dup = np.flatnonzero((rows[1:] == rows[:-1]).all(axis=1))
                if len(dup):
                    raise KeyError(f"triple {tuple(int(x) for x in rows[dup[0]])} is not stored")
            self._delete_sorted(name, rows)
        self._delta_triples -= len(arr)

    def _delete_sorted(self, name: str, rows: np.ndarray) -> None:
        """Delete the entries ``rows`` (sorted (n, 3) ids in this index's order)."""
        buf = rows.astype(">u4").tobytes()
        bounds = np.flatnonzero(np.diff(rows[:, 0])) + 1
        starts = [0] + bounds.tolist()
        ends = bounds.tolist() + [len(rows)]
        c = self.cursor(name)
        db = self.dbs[name]
        delete = self.txn.delete
        whole: list[tuple[int, int]] = []
        for i, j in zip(starts, ends):
            k = buf[12 * i:12 * i + 4]
            if j - i > 1 and c.set_key(k) and c.count() == j - i:  # (one entry: deleting it is as cheap)
                whole.append((i, j))
                continue
            if name != "spo":
                # Walk the key's entries: after a delete the cursor is on the
                # next entry, often the next one to go (ids of one update
                # tend to be close), which saves a search from the root.
                on = False
                for r in range(i, j):
                    v = buf[12 * r + 4:12 * r + 12]
                    if not (on and c.value() == v and c.key() == k):
                        if not c.set_range_dup(k, v) or c.value() != v:
                            on = False
                            continue
                    on = c.delete()
                continue
            for r in range(i, j):
                pair = buf[12 * r + 4:12 * r + 12]
                if not c.set_range_dup(k, pair) or c.value()[:PAIR_BYTES] != pair:
                    raise KeyError(f"triple {tuple(int(x) for x in rows[r])} is not stored")
                self._delta_explicit -= c.value()[PAIR_BYTES]
                c.delete()
        if not whole:
            return
        if name == "spo":  # the keys' entries must be exactly these triples; their records give the explicit count
            keys = [buf[12 * i:12 * i + 4] for i, _ in whole]
            got = np.frombuffer(c.getmulti(keys, dupdata=True, dupfixed_bytes=SPO_VALUE_BYTES, keyfixed=True),
                                dtype=np.dtype([("s", ">u4"), ("p", ">u4"), ("o", ">u4"), ("e", "u1"),
                                                ("r", "V%d" % (SPO_VALUE_BYTES - PAIR_BYTES - 1))]))
            want = np.concatenate([rows[i:j] for i, j in whole])
            same = (got["s"] == want[:, 0]) & (got["p"] == want[:, 1]) & (got["o"] == want[:, 2])
            if not same.all():
                raise KeyError(f"triple {tuple(int(x) for x in want[np.argmin(same)])} is not stored")
            self._delta_explicit -= int(got["e"].sum())
        for i, _ in whole:
            delete(buf[12 * i:12 * i + 4], db=db)

    # --- namespaces (used by the rdflib plugin and the REPL) ---------------
    # LMDB keys cannot be empty: the default prefix "" is stored as "\x00".
    def namespaces(self) -> Iterator[tuple[str, str]]:
        c = self.cursor("ns")
        if c.first():
            for k, v in c.iternext():
                yield ("" if k == b"\x00" else k.decode()), v.decode()

    def bind(self, prefix: str, namespace: str) -> None:
        self.txn.put(prefix.encode() or b"\x00", namespace.encode(), db=self.dbs["ns"])

    def unbind(self, prefix: str) -> None:
        self.txn.delete(prefix.encode() or b"\x00", db=self.dbs["ns"])


__all__ = ["Txn", "Triple", "Pattern", "choose_index", "term_hash", "SPO_VALUE_DTYPE", "ID_BYTES"]
