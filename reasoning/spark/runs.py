"""Sorted runs: Spark writes them, the driver appends them into LMDB.

For each of the six permutations Spark range-partitions the closure on the
permutation's three ids and sorts within partitions, then writes Parquet:
part file i holds the i-th key range, so reading the part files in order
yields the whole index in key order.  SPO carries the records.  The
dictionary of new terms is a run sorted by id (encode.py).

``build_environment_from_runs`` writes a complete environment from these
runs with ``putmulti(append=True)`` (MDB_APPEND / MDB_APPENDDUP), streaming
one Parquet row group at a time: the driver never holds the closure.  It is
the runs counterpart of ``trine.store.bulk.build_environment`` (same layout,
same meta), built from that module's primitives.
"""

from __future__ import annotations

import itertools
import re
import struct
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from trine.store.database import _open_env, init_meta, open_databases
from trine.store.keys import MAX_COUNT, MAX_STEP, PERMUTATIONS, SPO_VALUE_DTYPE
from trine.store.txn import term_hash
from trine.store.vocab import FIXED_IDS

_U64 = struct.Struct(">Q")
_PART = re.compile(r"part-(\d+)")
COLS = ("s", "p", "o")


def write_runs(spark, closure, work: Path, mode: str = "six", rows_per_part: int = 2_000_000) -> Path:
    """Write the sorted runs of a ``closure.ClosureResult`` under ``work/runs``.

    The SPO run (with the records) comes straight out of the closure's final
    aggregation: its rows are range-partitioned on (s, p, o) before they are
    aggregated, so one shuffle both counts and sorts.  ``mode="six"``: a
    second job range-partitions the union of the other five permutations on
    (perm, a, b, c) and writes ``runs/other/perm=<i>/part-*`` (``i`` indexes
    ``PERMUTATIONS``).  ``mode="spo"``: only the SPO run; the driver derives
    the other five orders from it (``spo_orders``).  In every directory the
    part files, in partition order, hold the run in key order.
    """
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    n = closure.n_triples
    out = work / "runs"
    sc.setJobDescription("trine: closure counts and the SPO run")
    par = max(1, sc.defaultParallelism)
    parts = max(min(par, -(-n // 50_000)), min(1024, -(-n // rows_per_part)), 1)
    spo = closure.aggregate(parts).sortWithinPartitions("s", "p", "o") \
        .select(F.col("s").alias("a"), F.col("p").alias("b"), F.col("o").alias("c"), "explicit", "count", "step")
    spo.write.mode("overwrite").option("compression", "snappy").parquet(str(out / "spo"))
    if mode == "spo":
        return out
    sc.setJobDescription("trine: sorted runs")
    base = spark.read.schema(RUN_SCHEMA).parquet(str(out / "spo"))
    cols = {"s": F.col("a"), "p": F.col("b"), "o": F.col("c")}
    union = None
    for idx, name in enumerate(PERMUTATIONS):
        if name == "spo":
            continue
        a, b, c = (COLS[i] for i in PERMUTATIONS[name])
        df = base.select(F.lit(idx).alias("perm"), cols[a].alias("a"), cols[b].alias("b"), cols[c].alias("c"))
        union = df if union is None else union.unionByName(df)
    key = ["perm", "a", "b", "c"]
    parts = max(min(par, -(-n // 10_000)), min(1024, -(-n * 5 // rows_per_part)), 1)
    union.repartitionByRange(parts, *key).sortWithinPartitions(*key) \
        .write.mode("overwrite").partitionBy("perm").option("compression", "snappy").parquet(str(out / "other"))
    return out


RUN_SCHEMA = "a long, b long, c long, explicit byte, count long, step int"


def run_dir(runs: Path, name: str) -> Path:
    if name == "spo":
        return runs / "spo"
    return runs / "other" / f"perm={list(PERMUTATIONS).index(name)}"


def part_files(path: Path) -> list[Path]:
    """The Parquet part files of a Spark output directory, in partition order."""
    files = []
    if not Path(path).is_dir():
        return []
    for f in Path(path).iterdir():
        m = _PART.match(f.name)
        if m and f.name.endswith(".parquet"):
            files.append((int(m.group(1)), f.name, f))
    return [f for _, _, f in sorted(files)]


def read_run(path: Path, columns: list[str] | None = None) -> Iterator[dict[str, np.ndarray]]:
    """Row groups of a run in order, as numpy columns."""
    import pyarrow.parquet as pq

    for f in part_files(path):
        pf = pq.ParquetFile(f)
        for i in range(pf.num_row_groups):
            t = pf.read_row_group(i, columns=columns)
            yield {name: t.column(name).to_numpy() for name in t.column_names}


def spo_orders(run: Path) -> Callable[[str], Iterable[dict[str, np.ndarray]]]:
    """``runs(name)`` for ``build_environment_from_runs`` from the SPO run
    alone: it is read into memory once and every other order is one stable
    sort of a 64-bit key (the first two ids), since SPO order already breaks
    the ties in the third id's order.  The next order is sorted in a helper
    thread (numpy releases the GIL) while the current one is appended."""
    from concurrent.futures import ThreadPoolExecutor

    chunks = list(read_run(run))
    cols = {k: (np.concatenate([c[k] for c in chunks]) if chunks else np.zeros(0, np.int64))
            for k in ("a", "b", "c", "explicit", "count", "step")}
    del chunks
    s, p, o = (cols[k].astype(np.uint32) for k in ("a", "b", "c"))
    spo = (s, p, o)
    step = 1 << 20
    names = [n for n in PERMUTATIONS if n != "spo"]

    def order(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ia, ib, ic = PERMUTATIONS[name]
        key = (spo[ia].astype(np.uint64) << np.uint64(32)) | spo[ib].astype(np.uint64)
        idx = np.argsort(key, kind="stable")
        del key
        return spo[ia][idx], spo[ib][idx], spo[ic][idx]

    pool = ThreadPoolExecutor(1, thread_name_prefix="trine-sort")
    pending = {names[0]: pool.submit(order, names[0])}

    def runs(name: str) -> Iterator[dict[str, np.ndarray]]:
        if name == "spo":
            for i in range(0, len(s), step):
                yield {"a": s[i:i + step], "b": p[i:i + step], "c": o[i:i + step],
                       "explicit": cols["explicit"][i:i + step], "count": cols["count"][i:i + step],
                       "step": cols["step"][i:i + step]}
            return
        fut = pending.pop(name, None) or pool.submit(order, name)
        a, b, c = fut.result()
        k = names.index(name)
        if k + 1 < len(names) and names[k + 1] not in pending:
            pending[names[k + 1]] = pool.submit(order, names[k + 1])
        elif k + 1 == len(names):
            pool.shutdown(wait=False)
        for i in range(0, len(a), step):
            yield {"a": a[i:i + step], "b": b[i:i + step], "c": c[i:i + step]}

    return runs


# --- appending ---------------------------------------------------------------------

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
        v = np.empty(n, dtype=SPO_VALUE_DTYPE)
        v["p"], v["o"] = b, c
        v["explicit"], v["step"], v["count"] = chunk["explicit"], step, count
        values = v.view(np.dtype((np.void, SPO_VALUE_DTYPE.itemsize))).tolist()
    else:
        v = np.empty((n, 2), dtype=">u4")
        v[:, 0], v[:, 1] = b, c
        values = v.view("V8").ravel().tolist()
    cur = txn.cursor(db=db)
    consumed, added = cur.putmulti(zip(_grouped_keys(a), values), append=True)
    if consumed != added or consumed != n:
        raise RuntimeError(f"{name}: append out of order: {consumed - added} of {consumed} entries rejected")
    return added


Dictionary = Iterable[tuple[np.ndarray, list[bytes], "np.ndarray | None"]]


Runs = Callable[[str], Iterable[dict[str, np.ndarray]]]


def build_environment_from_runs(path: Path, dictionary: Dictionary,
                                runs: Runs | Callable[[], tuple[Runs, int]], next_serial: int,
                                n_triples: int | None, map_size: int,
                                namespaces: Iterable[tuple[str, str]] = (), ruleset: str = "rhodf",
                                on_stage: Callable[[str, int], None] | None = None) -> dict[str, int]:
    """Write a complete store environment into the empty directory ``path``.

    ``dictionary`` yields (ids, utf-8 terms, term hashes or None) chunks in
    increasing id order (the fixed vocabulary is written here and must not
    be included; a hash is ``trine.store.txn.term_hash`` as a signed
    big-endian int64, computed here when None); ``runs(name)`` yields the
    row groups of one permutation's run in key order (SPO's with explicit,
    count and step).  Every database is filled with ``putmulti(append=True)``
    in one write transaction.  Returns the number of entries per database
    (and ``n_explicit``).
    """
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
            for ids, terms, hashes in chunks:
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
            written["i2t"] = n_terms
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
            if on_stage:
                on_stage("dictionary", n_terms)
            if n_triples is None:
                runs, n_triples = runs()
            n_explicit = 0
            for name in PERMUTATIONS:
                n = 0
                for chunk in runs(name):
                    _check_ids(chunk["a"], chunk["b"], chunk["c"])
                    n += append_index(txn, dbs[name], name, chunk)
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
            for prefix, ns in namespaces:
                txn.put(prefix.encode(), ns.encode(), db=dbs["ns"])
        env.sync(True)
    finally:
        env.close()
    written["n_explicit"] = n_explicit
    return written
