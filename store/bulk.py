"""Bulk paths into and out of the store: encoding inputs, building environments.

A bulk load never inserts into B-trees one triple at a time.  Inputs are
parsed and dictionary-encoded into numpy id columns (``encode_files``), the
reasoner closes them, and ``build_environment`` writes a brand-new LMDB
environment in which every database is filled in key order with
``putmulti(append=True)`` (MDB_APPEND / MDB_APPENDDUP: pages are filled
completely and no key comparison is needed).  ``Database.replace`` then
swaps the new environment in.  The same writer takes the Spark job's runs.
"""

from __future__ import annotations

import os
import struct
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import lmdb
import numpy as np

from . import ntriples, ntriples_tasks
from .database import _open_env, init_meta, open_databases
from .keys import PERMUTATIONS, SPO_VALUE_DTYPE, make_id
from .terms import kind_of
from .txn import term_hash
from .vocab import FIRST_FREE_SERIAL, FIXED_IDS

_U64 = struct.Struct(">Q")


@dataclass
class TripleColumns:
    """Triples as parallel numpy columns (ids and records), one row a triple."""

    s: np.ndarray
    p: np.ndarray
    o: np.ndarray
    explicit: np.ndarray
    count: np.ndarray
    step: np.ndarray

    def __len__(self) -> int:
        return len(self.s)

    @classmethod
    def explicit_only(cls, ids: np.ndarray) -> "TripleColumns":
        n = len(ids)
        return cls(ids[:, 0].copy(), ids[:, 1].copy(), ids[:, 2].copy(),
                   np.ones(n, np.uint8), np.ones(n, np.uint32), np.zeros(n, np.uint16))

    def ids(self) -> np.ndarray:
        return np.column_stack((self.s, self.p, self.o)).astype(np.uint32, copy=False)


@dataclass
class Dictionary:
    """An in-memory term dictionary used while encoding a bulk load."""

    ids: dict[str, int] = field(default_factory=lambda: dict(FIXED_IDS))
    next_serial: int = FIRST_FREE_SERIAL
    new_terms: list[tuple[int, str]] = field(default_factory=list)

    def encode(self, term: str) -> int:
        tid = self.ids.get(term)
        if tid is None:
            tid = self.ids[term] = make_id(self.next_serial, kind_of(term))
            self.next_serial += 1
            self.new_terms.append((tid, term))
        return tid


def unique_rows(ids: np.ndarray) -> np.ndarray:
    """The distinct rows of an (n, 3) uint32 array, sorted by s, p, o."""
    if len(ids) == 0:
        return ids.reshape(-1, 3)
    packed = np.empty(len(ids), dtype=[("s", ">u4"), ("p", ">u4"), ("o", ">u4")])
    packed["s"], packed["p"], packed["o"] = ids[:, 0], ids[:, 1], ids[:, 2]
    u = np.unique(packed.view("V12"))
    u = u.view(packed.dtype)
    return np.column_stack((u["s"], u["p"], u["o"])).astype(np.uint32)


# Below this many (estimated uncompressed) input bytes, starting worker
# processes costs more than it saves (a worker starts in about 0.3 s; the
# sequential reader does about 40 MB/s).  A part is at least four chunks.
PARALLEL_MIN_BYTES = 32 << 20
PART_BYTES = 4 * ntriples_tasks.CHUNK_BYTES


def default_workers() -> int:
    """Worker processes for parsing: ``TRINE_WORKERS`` or the usable cores."""
    env = os.environ.get("TRINE_WORKERS")
    if env:
        return max(1, int(env))
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def encode_files(paths: Iterable[str | Path], dictionary: Dictionary, skip_invalid: bool = False,
                 errors: list[ntriples.ParseError] | None = None,
                 progress: Callable[[int], None] | None = None, workers: int | None = None,
                 parallel_min_bytes: int | None = None) -> np.ndarray:
    """Parse N-Triples inputs and encode them: an (n, 3) uint32 id array.

    Large inputs are parsed by ``workers`` processes (default: one per core);
    the ids, the errors and their order are those of a sequential read, so
    the rows may come in another order but the dictionary is the same.
    """
    files = ntriples.expand_inputs(paths)
    workers = default_workers() if workers is None else workers
    threshold = PARALLEL_MIN_BYTES if parallel_min_bytes is None else parallel_min_bytes
    if workers > 1 and "-" not in files and all(os.path.isfile(f) for f in files):
        inputs = [ntriples_tasks.input_file(Path(f), f) for f in files]
        if sum(f.size * (ntriples_tasks.GZIP_RATIO if f.gzip else 1) for f in inputs) >= threshold:
            return _encode_parallel(inputs, dictionary, skip_invalid, errors, progress, workers)
    col = array("I")
    encode = dictionary.encode
    ids = dictionary.ids
    n = 0
    for path in files:
        for s, p, o in ntriples.read_triples(path, skip_invalid=skip_invalid, errors=errors):
            col.append(ids.get(s) or encode(s))
            col.append(ids.get(p) or encode(p))
            col.append(ids.get(o) or encode(o))
            n += 1
            if progress is not None and n % 65536 == 0:
                progress(65536)
    if progress is not None:
        progress(n % 65536)
    return np.frombuffer(col, dtype=np.uint32).reshape(-1, 3) if n else np.zeros((0, 3), np.uint32)


def _encode_parallel(inputs: list[ntriples_tasks.InputFile], dictionary: Dictionary, skip_invalid: bool,
                     errors: list[ntriples.ParseError] | None, progress: Callable[[int], None] | None,
                     workers: int) -> np.ndarray:
    """``encode_files`` over worker processes: each parses a share of the
    chunks with a task-local dictionary; the merge numbers the terms in
    first-occurrence order, as the sequential read would."""
    tasks = ntriples_tasks.plan_tasks(inputs, workers, skip_invalid, part_bytes=PART_BYTES)
    results: list[ntriples_tasks.TaskResult] = []
    for share in ntriples_tasks.run_in_workers(tasks, workers):
        results.extend(share)
        if progress is not None:
            progress(sum(len(r.triples) for r in share))
    results.sort(key=lambda r: r.task)
    bad = sorted(e for r in results for e in r.errors)
    if bad and not skip_invalid:
        raise ntriples_tasks.parse_error(inputs, bad[0])
    if errors is not None:
        errors.extend(ntriples_tasks.parse_error(inputs, e) for e in bad)
    return _merge_tasks(results, dictionary)


def _merge_tasks(results: list[ntriples_tasks.TaskResult], dictionary: Dictionary) -> np.ndarray:
    """Global ids for the tasks' local keys; terms are met in the order of
    their first occurrence over all tasks, so ids are assigned as a
    sequential read assigns them."""
    terms = [t for r in results for t in r.terms]
    if not terms:
        return np.zeros((0, 3), np.uint32)
    order = np.argsort(np.concatenate([r.firsts for r in results]), kind="stable")
    get, encode = dictionary.ids.get, dictionary.encode
    gids = np.empty(len(terms), np.uint32)
    gids[order] = [get(t) or encode(t) for t in map(terms.__getitem__, order.tolist())]
    parts, offset = [], 0
    for r in results:
        parts.append(gids[offset:offset + len(r.terms)][r.triples])
        offset += len(r.terms)
    return np.concatenate(parts)


def _chunks(data: bytes, width: int) -> list[bytes]:
    """``data`` cut into ``width``-byte items (numpy makes the bytes objects
    three times faster than slicing)."""
    return np.frombuffer(data, dtype=f"V{width}").tolist() if data else []


def _append_sorted(txn: lmdb.Transaction, db, keys: bytes, key_width: int, values: bytes, value_width: int) -> int:
    cur = txn.cursor(db=db)
    consumed, added = cur.putmulti(zip(_chunks(keys, key_width), _chunks(values, value_width)), append=True)
    if added != consumed:
        raise RuntimeError(f"append out of order: {consumed - added} of {consumed} entries rejected")
    return added


def write_index(txn: lmdb.Transaction, dbs: dict, name: str, cols: TripleColumns) -> int:
    """Append all triples to one permutation index, sorted in its key order."""
    spo = (cols.s, cols.p, cols.o)
    a_i, b_i, c_i = PERMUTATIONS[name]
    a, b, c = spo[a_i], spo[b_i], spo[c_i]
    order = np.lexsort((c, b, a))
    keys = a[order].astype(">u4").tobytes()
    if name == "spo":
        v = np.empty(len(order), dtype=SPO_VALUE_DTYPE)
        v["p"], v["o"] = b[order], c[order]
        v["explicit"], v["step"], v["count"] = cols.explicit[order], cols.step[order], cols.count[order]
        return _append_sorted(txn, dbs[name], keys, 4, v.tobytes(), SPO_VALUE_DTYPE.itemsize)
    v = np.empty((len(order), 2), dtype=">u4")
    v[:, 0], v[:, 1] = b[order], c[order]
    return _append_sorted(txn, dbs[name], keys, 4, v.tobytes(), 8)


def write_dictionary(txn: lmdb.Transaction, dbs: dict, terms: list[tuple[int, str]]) -> None:
    """Append (id, term) pairs to i2t and t2i, in their key orders."""
    terms = sorted(terms)
    ids = np.fromiter((t[0] for t in terms), dtype=np.uint32, count=len(terms))
    data = [t[1].encode("utf-8") for t in terms]
    id_keys = _chunks(ids.astype(">u4").tobytes(), 4)
    cur = txn.cursor(db=dbs["i2t"])
    consumed, added = cur.putmulti(zip(id_keys, data), append=True)
    if consumed != added:
        raise RuntimeError("dictionary ids are not unique")
    hashes = np.frombuffer(b"".join(term_hash(d) for d in data), dtype=">u8")
    order = np.lexsort((ids, hashes))
    hkeys = hashes[order].astype(">u8").tobytes()
    _append_sorted(txn, dbs["t2i"], hkeys, 8, ids[order].astype(">u4").tobytes(), 4)


def build_environment(path: Path, terms: list[tuple[int, str]], cols: TripleColumns, next_serial: int,
                      namespaces: Iterable[tuple[str, str]] = (), ruleset: str = "rhodf",
                      on_stage: Callable[[str], None] | None = None) -> None:
    """Write a complete store environment into an empty directory.

    ``terms`` must include every id used by ``cols`` (the fixed vocabulary is
    written by ``init_meta`` and may be omitted).
    """
    est = 64 * len(cols) + 3 * sum(len(t) + 24 for _, t in terms) + (64 << 20)
    env = _open_env(path, readonly=False, map_size=max(1 << 30, 2 * est))
    try:
        dbs = open_databases(env, create=True)
        with env.begin(write=True) as txn:
            if on_stage:
                on_stage("dictionary")
            init_meta(txn, dbs, ruleset, with_vocabulary=False)
            fixed = set(FIXED_IDS.values())
            vocabulary = [(tid, term) for term, tid in FIXED_IDS.items()]
            write_dictionary(txn, dbs, vocabulary + [t for t in terms if t[0] not in fixed])
            for name in PERMUTATIONS:
                if on_stage:
                    on_stage(name)
                write_index(txn, dbs, name, cols)
            meta = dbs["meta"]
            txn.put(b"next_serial", _U64.pack(next_serial), db=meta)
            txn.put(b"n_triples", _U64.pack(len(cols)), db=meta)
            txn.put(b"n_explicit", _U64.pack(int(np.count_nonzero(cols.explicit))), db=meta)
            for prefix, ns in namespaces:
                txn.put(prefix.encode(), ns.encode(), db=dbs["ns"])
        env.sync(True)
    finally:
        env.close()


def iter_dictionary(txn: lmdb.Transaction, dbs: dict) -> Iterator[tuple[int, str]]:
    cur = txn.cursor(db=dbs["i2t"])
    if cur.first():
        for k, v in cur.iternext():
            yield struct.unpack(">I", k)[0], bytes(v).decode("utf-8")
