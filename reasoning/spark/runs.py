"""Sorted runs: Spark writes them, the driver appends them into LMDB.

For each of the six permutations Spark range-partitions the closure on the
permutation's three ids and sorts within partitions, then writes Parquet:
part file i holds the i-th key range, so reading the part files in order
yields the whole index in key order.  SPO carries the records.  The
dictionary of new terms is a run sorted by id (encode.py).

``trine.store.bulk.build_environment_from_runs`` writes a complete
environment from these runs with ``putmulti(append=True)`` (MDB_APPEND /
MDB_APPENDDUP), streaming one Parquet row group at a time: the driver never
holds the closure.  The in-process load writes its environments with the
same function, from runs sorted in numpy.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from trine.store.bulk import OtherOrders
from trine.store.keys import PERMUTATIONS

from .closure import union_all
from .session import whole_waves

_PART = re.compile(r"part-(\d+)")
COLS = ("s", "p", "o")


def write_runs(spark, closure, work: Path, mode: str = "six", rows_per_part: int = 2_000_000) -> Path:
    """Write the sorted runs of a ``closure.ClosureResult`` under ``work/runs``.

    The SPO run (with the records) comes straight out of the closure's final
    aggregation: its rows are range-partitioned (``subject_ranges``) before
    they are aggregated, so one shuffle both counts and sorts.  ``mode="six"``: a
    second job range-partitions the union of the other five permutations on
    (perm, a, b, c) and writes ``runs/other/perm=<i>/part-*`` (``i`` indexes
    ``PERMUTATIONS``).  ``mode="spo"``: only the SPO run; the driver sorts
    the other five orders itself (``DriverOrders``).  In every directory the
    part files, in partition order, hold the run in key order.
    """
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    n = closure.n_triples
    out = work / "runs"
    sc.setJobDescription("trine: closure counts and the SPO run")
    par = max(1, sc.defaultParallelism)
    parts = whole_waves(max(min(par, -(-n // 50_000)), min(1024, -(-n // rows_per_part)), 1), par, 1024)
    ranges = subject_ranges(spark, closure.triples, n, parts)
    spo = closure.aggregate(parts, ranges).sortWithinPartitions("s", "p", "o") \
        .select(F.col("s").alias("a"), F.col("p").alias("b"), F.col("o").alias("c"), "explicit", "count", "step")
    spo.write.mode("overwrite").option("compression", "snappy").parquet(str(out / "spo"))
    if mode == "spo":
        return out
    sc.setJobDescription("trine: sorted runs")
    base = spark.read.schema(RUN_SCHEMA).parquet(str(out / "spo"))
    cols = {"s": F.col("a"), "p": F.col("b"), "o": F.col("c")}
    others = []
    for idx, name in enumerate(PERMUTATIONS):
        if name == "spo":
            continue
        a, b, c = (COLS[i] for i in PERMUTATIONS[name])
        others.append(base.select(F.lit(idx).alias("perm"), cols[a].alias("a"), cols[b].alias("b"),
                                  cols[c].alias("c")))
    key = ["perm", "a", "b", "c"]
    parts = whole_waves(max(min(par, -(-n // 10_000)), min(1024, -(-n * 5 // rows_per_part)), 1), par, 1024)
    union_all(others).repartitionByRange(parts, *key).sortWithinPartitions(*key) \
        .write.mode("overwrite").partitionBy("perm").option("compression", "snappy").parquet(str(out / "other"))
    return out


RUN_SCHEMA = "a long, b long, c long, explicit byte, count long, step int"
# Up to this many partitions, ranges of subjects are chosen by the driver.
DRIVER_RANGES_MAX = 64
SAMPLE_PER_PARTITION = 1000


def subject_ranges(spark, triples, n: int, parts: int):
    """A column whose hash partitioning puts the rows of the i-th range of
    subjects into partition i, or None (then Spark's range partitioning is
    used, which samples the whole input of the aggregation: the rule
    instance joins, computed twice).

    The bounds come from a sample of the closure's triples (cheap to read);
    each range gets a label that Spark's own partitioning hash (Murmur3, as
    ``F.hash``) sends to the range's partition, found by asking Spark.
    """
    from pyspark.sql import functions as F

    if parts < 2 or parts > DRIVER_RANGES_MAX or n < 2 * parts:
        return None
    fraction = min(1.0, SAMPLE_PER_PARTITION * parts / n)
    sample = sorted(r[0] for r in triples.select("s").sample(False, fraction, seed=parts).collect())
    bounds = sorted({sample[len(sample) * i // parts] for i in range(1, parts)} if sample else set())
    if not bounds:
        return None
    target = F.pmod(F.hash(F.col("id")), F.lit(parts))
    found: dict[int, int] = {}
    for row in spark.range(0, 64 * parts).select("id", target.alias("t")).collect():
        found.setdefault(row[1], row[0])
    if any(i not in found for i in range(len(bounds) + 1)):
        return None
    labels = [found[i] for i in range(len(bounds) + 1)]
    index = sum((F.col("s") >= F.lit(b)).cast("int") for b in bounds)
    return F.element_at(F.array(*(F.lit(x).cast("long") for x in labels)), index + 1)


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


def write_triples(spark, closure, work: Path) -> Path:
    """Write the closure's triples (s, p, o), unsorted and without records,
    to ``work/runs/triples`` (unless they are on disk already): with
    ``mode="spo"`` the driver sorts and appends the five other orders from
    them while Spark aggregates the counts for the SPO run (``DriverOrders``)."""
    if closure.triples_dir is not None:
        return closure.triples_dir
    spark.sparkContext.setJobDescription("trine: closure triples")
    out = work / "runs" / "triples"
    closure.triples.write.mode("overwrite").option("compression", "snappy").parquet(str(out))
    return out


def triples_digest(s: np.ndarray, p: np.ndarray, o: np.ndarray) -> int:
    """An order-independent digest of a set of triples (a wrapping sum of a
    mix of each row): what the SPO run and the triples must agree on."""
    u = np.uint64
    mixed = (s.astype(u) * u(0x9E3779B97F4A7C15)) ^ (p.astype(u) * u(0xC2B2AE3D27D4EB4F)) \
        ^ (o.astype(u) * u(0x165667B19E3779F9))
    return int(mixed.sum(dtype=u))


class DriverOrders:
    """``runs(name)`` for ``build_environment_from_runs`` with ``mode="spo"``.

    The five orders other than SPO are sorted in the driver from the
    closure's triples (``write_triples``), read when first asked for; the
    SPO run is streamed from Spark's output once ``spo_dir()`` (which may
    block until Spark has written it) returns, and checked against the
    triples' digest as it goes.  Append the other orders first: they are
    ready while Spark is still counting."""

    def __init__(self, triples_dir: Path, spo_dir: Callable[[], Path]):
        self.triples_dir = triples_dir
        self.spo_dir = spo_dir
        self.others: OtherOrders | None = None
        self.digest: int | None = None

    def __call__(self, name: str) -> Iterator[dict[str, np.ndarray]]:
        if self.others is None:
            chunks = list(read_run(self.triples_dir, list(COLS)))
            s, p, o = (np.concatenate([c[k] for c in chunks]).astype(np.uint32) if chunks
                       else np.zeros(0, np.uint32) for k in COLS)
            del chunks
            self.digest = triples_digest(s, p, o)
            self.others = OtherOrders(s, p, o)
        return self._spo(self.digest) if name == "spo" else self.others(name)

    def _spo(self, expected: int) -> Iterator[dict[str, np.ndarray]]:
        digest = 0
        for chunk in read_run(run_dir(self.spo_dir(), "spo")):
            digest += triples_digest(chunk["a"], chunk["b"], chunk["c"])
            yield chunk
        if digest % (1 << 64) != expected:
            raise RuntimeError("the SPO run and the closure's triples differ")
