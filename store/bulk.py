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

import concurrent.futures
import itertools
import os
import struct
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import lmdb
import numpy as np

from . import ntriples, ntriples_tasks
from .arrays import sort_order, sort_triples
from .database import _open_env, init_meta, open_databases
from .keys import MAX_COUNT, MAX_STEP, PERMUTATIONS, make_id, pair_items, spo_value_items
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
    return np.column_stack(sort_triples(ids[:, 0], ids[:, 1], ids[:, 2], unique=True)).astype(np.uint32)


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


def _grouped_keys(first: np.ndarray) -> Iterator[bytes]:
    """One 4-byte key object per entry, shared by runs of equal keys."""
    n = len(first)
    if n == 0:
        return iter(())
    starts = np.flatnonzero(np.r_[True, first[1:] != first[:-1]])
    counts = np.diff(np.r_[starts, n])
    uk = np.frombuffer(first[starts].astype(">u4").tobytes(), "V4").tolist()
    return itertools.chain.from_iterable(map(itertools.repeat, uk, counts.tolist()))


def _check_ids(*cols: np.ndarray) -> None:
    for c in cols:
        if len(c) and (c.min() < 0 or c.max() > 0xFFFFFFFF):
            raise OverflowError("a term id does not fit in 32 bits")


def append_index(txn, db, name: str, chunk: dict[str, np.ndarray]) -> int:
    """Append one sorted run chunk (columns a, b, c in the index's order, and
    SPO's records) to index ``name``."""
    a, b, c = chunk["a"], chunk["b"], chunk["c"]
    n = len(a)
    if n == 0:
        return 0
    if name == "spo":
        count, step = chunk["count"], chunk["step"]
        if count.max() > MAX_COUNT or count.min() < 1:
            raise OverflowError("a derivation count exceeds 2**32 - 1")
        if step.max() > MAX_STEP:
            raise OverflowError(f"materialisation needs more than {MAX_STEP} stages")
        values = spo_value_items(b, c, chunk["explicit"], step, count)
    else:
        values = pair_items(b, c)
    cur = txn.cursor(db=db)
    consumed, added = cur.putmulti(zip(_grouped_keys(a), values), append=True)
    if consumed != added or consumed != n:
        raise RuntimeError(f"{name}: append out of order: {consumed - added} of {consumed} entries rejected")
    return added


DictionaryChunks = Iterable[tuple[np.ndarray, list[bytes], "np.ndarray | None"]]
Runs = Callable[[str], Iterable[dict[str, np.ndarray]]]


def build_environment_from_runs(path: Path, dictionary: DictionaryChunks,
                                runs: Runs | Callable[[], tuple[Runs, int]], next_serial: int,
                                n_triples: int | None, map_size: int,
                                namespaces: Iterable[tuple[str, str]] = (), ruleset: str = "rhodf",
                                on_stage: Callable[[str, int], None] | None = None,
                                index_order: Sequence[str] = tuple(PERMUTATIONS),
                                timings: dict[str, float] | None = None) -> dict[str, int]:
    """Write a complete store environment into the empty directory ``path``.

    ``dictionary`` yields (ids, utf-8 terms, term hashes or None) chunks in
    increasing id order (the fixed vocabulary is written here and must not
    be included; a hash is ``trine.store.txn.term_hash`` as a signed
    big-endian int64, computed here when None); ``runs(name)`` yields the
    row groups of one permutation's run in key order (SPO's with explicit,
    count and step).  The indexes are filled in ``index_order``, and a run is
    asked for only when its turn comes, so a late run may still be in the
    making.  Every database is filled with ``putmulti(append=True)`` in one
    write transaction.  Returns the number of entries per database
    (and ``n_explicit``); ``timings["append"]`` gets the seconds spent
    writing (not waiting for chunks or runs).
    """
    if sorted(index_order) != sorted(PERMUTATIONS):
        raise ValueError(f"index_order must name each of {', '.join(PERMUTATIONS)} once")
    env = _open_env(path, readonly=False, map_size=map_size)
    written: dict[str, int] = {}
    try:
        dbs = open_databases(env, create=True)
        with env.begin(write=True) as txn:
            init_meta(txn, dbs, ruleset, with_vocabulary=False)
            # i2t in id order as it streams; t2i needs all hashes sorted.
            cur = txn.cursor(db=dbs["i2t"])
            all_ids, all_hashes = [], []
            fixed = sorted((tid, term.encode("utf-8")) for term, tid in FIXED_IDS.items())
            chunks = itertools.chain([(np.array([t for t, _ in fixed], np.int64), [d for _, d in fixed], None)],
                                     dictionary)
            n_terms = 0
            last = -1
            busy = 0.0
            for ids, terms, hashes in chunks:
                t0 = time.perf_counter()
                if len(ids) == 0:
                    continue
                _check_ids(ids)
                if ids[0] <= last:
                    raise RuntimeError("dictionary chunks are not in id order")
                last = int(ids[-1])
                keys = np.frombuffer(ids.astype(">u4").tobytes(), "V4").tolist()
                consumed, added = cur.putmulti(zip(keys, terms), append=True)
                if consumed != added or added != len(ids):
                    raise RuntimeError("dictionary ids are not unique or not sorted")
                all_ids.append(ids.astype(np.uint32))
                if hashes is None:
                    hashes = np.frombuffer(b"".join(map(term_hash, terms)), dtype=">u8")
                all_hashes.append(np.asarray(hashes).astype(">i8").view(">u8").astype(np.uint64))
                n_terms += added
                busy += time.perf_counter() - t0
            written["i2t"] = n_terms
            t0 = time.perf_counter()
            ids = np.concatenate(all_ids)
            hashes = np.concatenate(all_hashes)
            order = np.lexsort((ids, hashes))
            hkeys = np.frombuffer(hashes[order].astype(">u8").tobytes(), "V8").tolist()
            hvals = np.frombuffer(ids[order].astype(">u4").tobytes(), "V4").tolist()
            del ids, hashes, order, all_ids, all_hashes
            consumed, added = txn.cursor(db=dbs["t2i"]).putmulti(zip(hkeys, hvals), append=True)
            if consumed != added:
                raise RuntimeError("t2i: append out of order")
            written["t2i"] = added
            del hkeys, hvals
            busy += time.perf_counter() - t0
            if on_stage:
                on_stage("dictionary", n_terms)
            if n_triples is None:
                runs, n_triples = runs()
            n_explicit = 0
            for name in index_order:
                n = 0
                for chunk in runs(name):
                    t0 = time.perf_counter()
                    _check_ids(chunk["a"], chunk["b"], chunk["c"])
                    n += append_index(txn, dbs[name], name, chunk)
                    busy += time.perf_counter() - t0
                    if name == "spo":
                        n_explicit += int(np.count_nonzero(chunk["explicit"]))
                if n != n_triples:
                    raise RuntimeError(f"run {name} holds {n} triples, the closure {n_triples}")
                written[name] = n
                if on_stage:
                    on_stage(name, n)
            meta = dbs["meta"]
            txn.put(b"next_serial", _U64.pack(next_serial), db=meta)
            txn.put(b"n_triples", _U64.pack(n_triples), db=meta)
            txn.put(b"n_explicit", _U64.pack(n_explicit), db=meta)
            if timings is not None:
                timings["append"] = busy
            for prefix, ns in namespaces:
                txn.put(prefix.encode(), ns.encode(), db=dbs["ns"])
        env.sync(True)
    finally:
        env.close()
    written["n_explicit"] = n_explicit
    return written


def permutation_runs(cols: TripleColumns, spo_sorted: bool = False, chunk_rows: int = 1 << 20) -> Runs:
    """``runs(name)`` for ``build_environment_from_runs`` from in-memory
    columns: SPO (with the records) from ``cols``, every other order one
    sort of packed keys (``OtherOrders``)."""
    if not spo_sorted:
        order = sort_order(cols.s, cols.p, cols.o)
        cols = TripleColumns(*(x[order] for x in (cols.s, cols.p, cols.o, cols.explicit, cols.count, cols.step)))
    others = OtherOrders(cols.s, cols.p, cols.o, chunk_rows)

    def runs(name: str) -> Iterator[dict[str, np.ndarray]]:
        if name != "spo":
            return others(name)
        others.sort_ahead(OTHER_ORDERS[0])
        return _slices(chunk_rows, a=cols.s, b=cols.p, c=cols.o, explicit=cols.explicit,
                       count=cols.count, step=cols.step)

    return runs


OTHER_ORDERS = tuple(name for name in PERMUTATIONS if name != "spo")


class OtherOrders:
    """``runs(name)`` for the five orders other than SPO, from the columns of
    a set of triples in any order (each order is one ``sort_triples``).

    Asked for in ``OTHER_ORDERS`` order, the next order is sorted in a
    helper thread while the current one is appended (numpy sorts, and
    py-lmdb's puts, run without the GIL: on LUBM(50) this hides 4 of the 17
    seconds of a load's writes), so at most two sorted copies are held."""

    def __init__(self, s: np.ndarray, p: np.ndarray, o: np.ndarray, chunk_rows: int = 1 << 20):
        self.spo = (s, p, o)
        self.chunk_rows = chunk_rows
        self.pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="trine-sort")
        self.ahead: dict[str, concurrent.futures.Future] = {}

    def sort_ahead(self, name: str) -> None:
        if name not in self.ahead:
            self.ahead[name] = self.pool.submit(_sorted_permutation, self.spo, name)

    def __call__(self, name: str) -> Iterator[dict[str, np.ndarray]]:
        self.sort_ahead(name)
        future = self.ahead.pop(name)
        i = OTHER_ORDERS.index(name)
        if i + 1 < len(OTHER_ORDERS):
            self.sort_ahead(OTHER_ORDERS[i + 1])
        else:
            self.pool.shutdown(wait=False)   # the last order: the thread ends once it is sorted
        a, b, c = future.result()
        return _slices(self.chunk_rows, a=a, b=b, c=c)


def _sorted_permutation(spo: tuple[np.ndarray, ...], name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return sort_triples(*(spo[i] for i in PERMUTATIONS[name]))


def _slices(rows: int, **cols: np.ndarray) -> Iterator[dict[str, np.ndarray]]:
    n = len(next(iter(cols.values())))
    for i in range(0, n, rows):
        yield {k: v[i:i + rows] for k, v in cols.items()}


def build_environment(path: Path, terms: list[tuple[int, str]], cols: TripleColumns, next_serial: int,
                      namespaces: Iterable[tuple[str, str]] = (), ruleset: str = "rhodf",
                      on_stage: Callable[[str, int], None] | None = None) -> dict[str, int]:
    """Write a complete store environment for in-memory columns into an
    empty directory.  ``terms`` must include every id used by ``cols`` (the
    fixed vocabulary is written anyway and may be omitted)."""
    fixed = set(FIXED_IDS.values())
    terms = sorted(t for t in terms if t[0] not in fixed)
    dictionary = [(np.array([t[0] for t in terms], np.int64), [t[1].encode("utf-8") for t in terms], None)]
    est = 64 * len(cols) + 3 * sum(len(t) + 24 for _, t in terms) + (64 << 20)
    return build_environment_from_runs(path, dictionary, permutation_runs(cols), next_serial, len(cols),
                                       max(1 << 30, 2 * est), namespaces, ruleset, on_stage)


def iter_dictionary(txn: lmdb.Transaction, dbs: dict) -> Iterator[tuple[int, str]]:
    cur = txn.cursor(db=dbs["i2t"])
    if cur.first():
        for k, v in cur.iternext():
            yield struct.unpack(">I", k)[0], bytes(v).decode("utf-8")
