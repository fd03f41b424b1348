"""The Spark bulk path: ``load_spark`` (``trine load --engine spark``) and
``materialise_files`` (``trine materialise``).

A Spark load is the in-process load (reasoning/load.py) with every heavy
step done by Spark, and produces the same store, byte for byte in its
annotated dump (and, since new terms are numbered in first-occurrence order
from the same ``next_serial``, the same ids):

1. existing state: the store's dictionary and explicit triples (when it is
   not empty) are written to the work dir as Parquet for Spark to join with;
2. encode (encode.py): Python workers parse with trine's own parser, Spark
   numbers the new terms and encodes the triples;
3. closure (closure.py): two passes when the data cannot change the schema
   (fixed_schema.py), else semi-naive rounds with the schema broadcast;
   counts from one aggregation over the rule instances;
4. runs (runs.py): globally sorted runs (SPO with the records, the five
   other orders by Spark or the driver) plus the dictionary run;
5. append: a driver thread streams the runs into a fresh LMDB environment
   with ``putmulti(append=True)``, each as soon as it is ready (the
   dictionary during the closure, five orders while Spark counts), and
   ``Database.replace`` swaps it in only when it is complete.  Any failure
   before the swap leaves the store as it was.

The work dir (``work_dir=``, default a temporary directory inside the store
directory) must be reachable by every executor when the master is not
local: put it on shared storage.  Input files must be reachable by the
executors at the same (absolute) paths.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from trine.reasoning.load import LoadReport
from trine.reasoning.rules import RULESET_NAME
from trine.store.arrays import unique
from trine.store.bulk import OTHER_ORDERS, build_environment_from_runs
from trine.store.database import Database, StoreError
from trine.store.vocab import FIRST_FREE_SERIAL, FIXED_IDS

from . import parse, session
from .session import SparkUnavailable, check_spark, get_session

__all__ = ["load_spark", "materialise_files", "SparkUnavailable", "SparkLoadReport"]

Progress = Callable[[str, int], None]
# Up to this many triples the driver sorts five of the six orders in memory
# (about 40 bytes a triple), while Spark counts, instead of Spark sorting them.
SPO_RUNS_MAX = 50_000_000


@dataclass
class SparkLoadReport(LoadReport):
    """A LoadReport with the Spark job's details."""

    rounds: int = 0
    new_per_round: list[int] = field(default_factory=list)
    closure: str = ""                  # "fixed schema" or "rounds" (closure.close)
    new_terms: int = 0
    entries_appended: int = 0
    append_seconds: float = 0.0        # spent writing LMDB (partly while Spark still works)
    master: str = ""
    runs: str = ""
    exact_dictionary: bool = False
    jvm_class_archive: str = ""        # see session.class_archive_options


@dataclass
class _Existing:
    next_serial: int
    n_triples: int
    namespaces: list[tuple[str, str]]
    dictionary: Path | None = None     # parquet (id, h, h2, term): non-fixed terms in id order
    n_terms: int = 0
    duplicate_hashes: bool = False     # two stored terms share a 64-bit hash
    explicit: Path | None = None       # parquet (s, p, o)
    env_bytes: int = 0


def _work_dir(db_path: Path | None, work_dir: str | os.PathLike | None) -> Path:
    if work_dir is not None:
        base = Path(work_dir)
        base.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix="trine-spark-", dir=base)).resolve()
    assert db_path is not None
    return Path(tempfile.mkdtemp(prefix=".spark-work-", dir=db_path)).resolve()


def _read_existing(db: Database, work: Path) -> _Existing:
    """What a merge needs of the current store (mirrors load.existing_state:
    an empty store keeps only its next_serial)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trine.store.bulk import iter_dictionary
    from trine.store.check import index_rows

    with db.read() as t:
        n = t.n_triples()
        ex = _Existing(t.meta_int("next_serial"), n, list(t.namespaces()))
        if n == 0:
            return ex
        fixed = set(FIXED_IDS.values())
        ex.dictionary = work / "old" / "dictionary.parquet"
        ex.dictionary.parent.mkdir(parents=True, exist_ok=True)
        schema = pa.schema([("id", pa.int64()), ("h", pa.int64()), ("h2", pa.int64()), ("term", pa.string())])
        all_h = []
        with pq.ParquetWriter(ex.dictionary, schema, compression="snappy") as w:
            ids: list[int] = []
            terms: list[str] = []

            def flush() -> None:
                h, h2, _ = parse.term_hashes(terms)
                all_h.append(np.array(h, np.int64))
                w.write_table(pa.table([pa.array(ids, pa.int64()), pa.array(h, pa.int64()),
                                        pa.array(h2, pa.int64()), pa.array(terms, pa.string())], schema=schema))

            for tid, term in iter_dictionary(t.txn, t.dbs):
                if tid in fixed:
                    continue
                ids.append(tid)
                terms.append(term)
                if len(ids) >= 1 << 20:
                    flush()
                    ids, terms = [], []
            flush()
        hs = np.concatenate(all_h + [np.array([h for _, h, _, _, _ in _vocabulary()], np.int64)])
        ex.n_terms = len(hs)
        ex.duplicate_hashes = len(unique(hs)) != len(hs)
        rows, rec = index_rows(t, "spo")
        rows = rows[rec["explicit"] == 1].astype(np.int64)
        ex.explicit = work / "old" / "explicit.parquet"
        pq.write_table(pa.table({"s": rows[:, 0], "p": rows[:, 1], "o": rows[:, 2]}), ex.explicit,
                       compression="snappy")
    ex.env_bytes = db.size_on_disk()
    return ex


def _vocabulary():
    from .encode import vocabulary_rows
    return vocabulary_rows()


def _old_dictionary_chunks(path: Path | None) -> Iterator[tuple[np.ndarray, list[bytes], np.ndarray]]:
    if path is None:
        return
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    for i in range(pf.num_row_groups):
        t = pf.read_row_group(i, columns=["id", "h", "term"])
        yield (t.column("id").to_numpy(), [x.encode("utf-8") for x in t.column("term").to_pylist()],
               t.column("h").to_numpy())


def _timer() -> Callable[[], float]:
    t = [time.perf_counter()]

    def lap() -> float:
        now = time.perf_counter()
        dt, t[0] = now - t[0], now
        return dt
    return lap


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def load_spark(db: Database, paths: Sequence[str | os.PathLike], skip_invalid: bool = False,
               progress: Progress | None = None, *, master: str | None = None,
               conf: Mapping[str, Any] | Iterable[str] | str | None = None,
               work_dir: str | os.PathLike | None = None, keep_work_dir: bool = False,
               runs: str = "auto", exact: bool = False, **unknown: Any) -> SparkLoadReport:
    """Bulk load N-Triples files into ``db`` with Spark and materialise.

    ``master``: Spark master URL (default ``$TRINE_SPARK_MASTER`` or
    ``local[*]``); ``conf``: extra Spark settings (mapping or ``k=v``
    strings, after ``$TRINE_SPARK_CONF``); ``work_dir``: where intermediate
    files go (shared storage for a cluster; default a temporary directory in
    the store directory, always removed unless ``keep_work_dir``); ``runs``:
    ``"six"`` (Spark sorts all six permutations; the driver streams them with
    bounded memory), ``"spo"`` (Spark sorts SPO; the driver sorts the other
    orders in memory and appends them while Spark counts: faster on a
    small machine) or ``"auto"`` (``"spo"`` up to SPO_RUNS_MAX triples);
    ``exact``: group terms on their strings rather than their 64-bit
    hashes (done anyway when a hash collision shows).
    Raises SparkUnavailable without Java/pyspark, ParseError on a bad line
    (unless ``skip_invalid``); the store is unchanged on any error.
    """
    if runs not in ("auto", "six", "spo"):
        raise ValueError(f"runs must be auto, six or spo, not {runs!r}")
    if unknown:
        raise TypeError(f"load_spark() got unexpected options: {', '.join(sorted(unknown))}")
    check_spark()
    from .closure import close
    from .encode import encode, new_dictionary
    from .runs import DriverOrders, read_run, run_dir, write_runs, write_triples

    rep = SparkLoadReport(engine="spark")
    lap = _timer()
    t_all = time.perf_counter()
    work = _work_dir(db.path, work_dir)
    try:
        spark = get_session(master, conf)
        rep.master = spark.sparkContext.master
        rep.jvm_class_archive = session.jvm_class_archive
        rep.seconds["start"] = lap()
        ex = _read_existing(db, work)
        files = parse.expand_inputs(paths, work / "stdin")
        enc = encode(spark, files, work, ex.next_serial, ex.dictionary, ex.n_terms, ex.explicit, skip_invalid,
                     progress, exact=exact or ex.duplicate_hashes)
        rep.input_triples, rep.skipped, rep.new_terms = enc.input_triples, enc.skipped, enc.new_terms
        rep.exact_dictionary = enc.exact
        rep.seconds["encode"] = lap()
        # The new environment is built in a thread from here on: the dictionary
        # is appended while Spark computes the closure, the indexes once their
        # runs are written (``runs_ready``; with runs="spo" the five orders
        # other than SPO while Spark still counts, SPO after ``spo_ready``).
        # A Spark failure aborts the build.
        runs_ready: Future = Future()
        spo_ready: Future = Future()
        written: dict[str, int] = {}
        timings: dict[str, float] = {}
        map_size = max(1 << 30, 2 * (4000 * (enc.input_triples + ex.n_triples) + 2 * ex.env_bytes
                                     + 4 * _dir_bytes(enc.parsed_dir / "terms") + (64 << 20)))

        def build(path: Path) -> None:
            written.update(build_environment_from_runs(
                path,
                dictionary=_chain(_old_dictionary_chunks(ex.dictionary),
                                  new_dictionary(enc.parsed_dir, enc.new_ids_dir)),
                runs=lambda: runs_ready.result()[:2], next_serial=enc.next_serial, n_triples=None,
                map_size=map_size, namespaces=ex.namespaces, ruleset=RULESET_NAME,
                on_stage=(lambda stage, n: progress("append", n)) if progress else None,
                index_order=OTHER_ORDERS + ("spo",), timings=timings))
            expected = runs_ready.result()[2]
            if written["n_explicit"] != expected:
                raise RuntimeError(f"the SPO run holds {written['n_explicit']} explicit triples, "
                                   f"the closure {expected}")

        builder = _Thread(db.replace, build)
        try:
            if progress:
                progress("closure", 0)
            cl = close(spark, enc.explicit, enc.schema_rows, work, progress)
            rep.explicit, rep.triples = cl.n_explicit, cl.n_triples
            rep.rounds, rep.new_per_round, rep.closure = cl.rounds, cl.new_per_round, cl.method
            rep.seconds["closure"] = lap()
            mode = runs if runs != "auto" else ("spo" if cl.n_triples <= SPO_RUNS_MAX else "six")
            if mode == "spo":
                orders = DriverOrders(write_triples(spark, cl, work), spo_ready.result)
                runs_ready.set_result((orders, cl.n_triples, cl.n_explicit))
            runs_dir = write_runs(spark, cl, work, mode=mode)
            spo_ready.set_result(runs_dir)
            if progress:
                progress("runs", cl.n_triples)
            rep.runs = mode
            rep.seconds["runs"] = lap()
            if mode == "six":
                runs_ready.set_result((lambda name: read_run(run_dir(runs_dir, name)), cl.n_triples, cl.n_explicit))
        except BaseException as e:
            for future in (runs_ready, spo_ready):
                if not future.done():
                    future.set_exception(_Aborted(e))
            builder.join()
            raise
        builder.join()
        rep.entries_appended = sum(v for k, v in written.items() if k != "n_explicit")
        rep.append_seconds = timings.get("append", 0.0)
        rep.seconds["append"] = lap()
        rep.seconds["total"] = time.perf_counter() - t_all
        return rep
    finally:
        if not keep_work_dir:
            shutil.rmtree(work, ignore_errors=True)


class _Aborted(Exception):
    """The Spark side failed: abandon the environment being built."""


class _Thread:
    """Run ``fn(*args)`` in a thread; ``join()`` re-raises its exception."""

    def __init__(self, fn: Callable, *args: Any):
        self.error: BaseException | None = None

        def run() -> None:
            try:
                fn(*args)
            except BaseException as e:  # noqa: BLE001 - handed to join()
                self.error = e

        self.thread = threading.Thread(target=run, name="trine-lmdb-build", daemon=True)
        self.thread.start()

    def join(self) -> None:
        self.thread.join()
        if self.error is not None and not isinstance(self.error, _Aborted):
            raise self.error


def _chain(*its: Iterable) -> Iterator:
    for it in its:
        yield from it


def materialise_files(paths: Sequence[str | os.PathLike], out: str | os.PathLike, fmt: str = "parquet", *,
                      master: str | None = None, conf: Mapping[str, Any] | Iterable[str] | str | None = None,
                      work_dir: str | os.PathLike | None = None, skip_invalid: bool = False,
                      annotate: bool = False, progress: Progress | None = None) -> int:
    """Compute the closure of N-Triples files with Spark and export it; no store is built.

    ``fmt="parquet"``: ``out`` is a directory of Parquet files with columns
    s, p, o (canonical N-Triples terms), explicit, count, step.
    ``fmt="nt"``: ``out`` is one N-Triples file (gzip if it ends in .gz),
    lines sorted by statement; with ``annotate`` each line carries the
    ``# explicit=.. count=.. step=..`` comment of ``trine dump --annotate``.
    Returns the number of triples written.  Raises ParseError on a bad line
    unless ``skip_invalid``.
    """
    if fmt not in ("parquet", "nt"):
        raise ValueError(f"unknown format {fmt!r}; choose parquet or nt")
    check_spark()
    from pyspark.sql import functions as F

    from .closure import close
    from .encode import encode

    out = Path(out)
    if fmt == "parquet" and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise StoreError(f"{out}: already exists (choose a new directory)")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = _work_dir(None, work_dir if work_dir is not None else out.parent)
    try:
        spark = get_session(master, conf)
        files = parse.expand_inputs(paths, work / "stdin")
        enc = encode(spark, files, work, FIRST_FREE_SERIAL, None, 0, None, skip_invalid, progress)
        cl = close(spark, enc.explicit, enc.schema_rows, work, progress)
        spark.sparkContext.setJobDescription("trine: export")
        known = spark.read.schema("first long, id long").parquet(str(enc.new_ids_dir)).select("id", "first")
        strings = spark.read.schema(parse.TERMS_SCHEMA).parquet(str(enc.parsed_dir / "terms")) \
            .select("first", "term")
        vocab = ", ".join(f"({tid}, '{term}')" for term, tid in FIXED_IDS.items())
        terms = spark.sql(f"SELECT CAST(col1 AS BIGINT) AS id, col2 AS term FROM VALUES {vocab}") \
            .unionByName(known.join(strings, "first").select("id", "term"))
        df = cl.aggregate()
        for c in ("s", "p", "o"):
            df = df.join(terms.withColumnRenamed("id", c).withColumnRenamed("term", c + "_t"), c)
        df = df.select(F.col("s_t").alias("s"), F.col("p_t").alias("p"), F.col("o_t").alias("o"),
                       F.col("explicit").cast("boolean").alias("explicit"), "count", "step")
        if fmt == "parquet":
            df.write.mode("overwrite").parquet(str(out))
        else:
            stmt = F.concat_ws(" ", "s", "p", "o", F.lit("."))
            line = stmt
            if annotate:
                line = F.concat(stmt, F.lit(" # explicit="), F.col("explicit").cast("int").cast("string"),
                                F.lit(" count="), F.col("count").cast("string"),
                                F.lit(" step="), F.col("step").cast("string"))
            text = work / "export"
            df.select(stmt.alias("k"), line.alias("value")).orderBy("k").select("value") \
                .write.mode("overwrite").text(str(text))
            _concatenate_text(text, out)
        if progress:
            progress("export", cl.n_triples)
        return cl.n_triples
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _concatenate_text(src: Path, out: Path) -> None:
    """Spark's text part files, in partition order, into one file (gzip for .gz)."""
    parts = sorted((int(f.name.split("-")[1]), f) for f in src.iterdir()
                   if f.name.startswith("part-") and not f.name.endswith(".crc"))
    tmp = out.with_name(out.name + ".tmp")
    opener = gzip.open if out.name.endswith(".gz") else open
    with opener(tmp, "wb") as w:
        for _, f in parts:
            with open(f, "rb") as r:
                shutil.copyfileobj(r, w, 1 << 20)
    os.replace(tmp, out)

