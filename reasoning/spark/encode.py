"""Dictionary encoding in Spark: parse, number the new terms, encode the triples.

1. The parse job (``parse.write_tasks`` in the Python workers) writes, per
   task, the triples as task-local term keys and the task's terms with the
   position where the task first met them.
2. ``groupBy(term)``: one row per distinct term, its first position over
   all inputs and the task-local keys that name it.
3. Terms already in the store (and the fixed rho-df vocabulary) keep their
   ids (a join against the existing dictionary).  New terms are numbered in
   order of first occurrence from the store's ``next_serial`` (a range
   sort, then per-partition offsets: a distributed zipWithIndex), and get
   the kind bits of their first character: exactly the ids the in-process
   dictionary would give them.
4. The triples are encoded by three joins of their keys against the
   key -> id map (broadcast while it is small enough), united with the
   store's explicit triples, and deduplicated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from trine.store import ntriples
from trine.store.terms import BLANK, IRI, LITERAL
from trine.store.vocab import FIXED_IDS

from . import parse
from .closure import local_frame

# Above this many key -> id rows the triples are encoded with shuffle joins.
BROADCAST_MAP_ROWS = 25_000_000
MID_BITS = 33  # monotonically_increasing_id(): partition << 33 | row within partition


@dataclass
class Encoded:
    explicit: object                 # DataFrame (s, p, o) longs, distinct, persisted
    n_explicit: int
    input_triples: int
    new_terms: int
    next_serial: int                 # after this load
    dictionary_dir: Path             # parquet (id, term) of the new terms, sorted by id
    term_bytes: int
    skipped: list[ntriples.ParseError] = field(default_factory=list)


def fixed_dictionary(spark):
    """The rho-df vocabulary's fixed (id, term) rows as a DataFrame."""
    values = ", ".join(f"({tid}, '{term}')" for term, tid in FIXED_IDS.items())
    return spark.sql(f"SELECT CAST(col1 AS BIGINT) AS id, col2 AS term FROM VALUES {values}")


def kind_expr(F, col):
    first = F.substring(col, 1, 1)
    return F.when(first == "<", F.lit(IRI)).when(first == "_", F.lit(BLANK)).otherwise(F.lit(LITERAL))


def encode(spark, files: list[parse.InputFile], work: Path, next_serial: int, old_dictionary: Path | None,
           old_explicit: Path | None, skip_invalid: bool,
           progress: Callable[[str, int], None] | None = None) -> Encoded:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    sc = spark.sparkContext
    parsed = work / "parsed"
    tasks = parse.plan_tasks(files, max(1, sc.defaultParallelism), skip_invalid)
    out_dir = str(parsed)
    sc.setJobDescription("trine: parse N-Triples")
    summaries = sc.parallelize(tasks, max(1, len(tasks))) \
        .mapPartitions(lambda it: parse.write_tasks(out_dir, it)).collect()
    errors = sorted(e for s in summaries for e in s[3])
    if errors and not skip_invalid:
        raise parse.parse_error(files, errors[0])
    skipped = [parse.parse_error(files, e) for e in errors]
    input_triples = sum(s[1] for s in summaries)
    map_rows = sum(s[2] for s in summaries)
    if progress:
        progress("parse", input_triples)

    sc.setJobDescription("trine: dictionary")
    terms = spark.read.schema("key long, first long, term string").parquet(str(parsed / "terms"))
    triples = spark.read.schema("s long, p long, o long").parquet(str(parsed / "triples"))
    grouped = terms.groupBy("term").agg(F.min("first").alias("first"), F.collect_list("key").alias("keys"))

    known = fixed_dictionary(spark)
    if old_dictionary is not None:
        known = known.unionByName(spark.read.schema("id long, term string").parquet(str(old_dictionary)))
        matched = grouped.join(known, "term", "left")
    else:
        matched = grouped.join(F.broadcast(known), "term", "left")
    matched = matched.localCheckpoint(True, StorageLevel.MEMORY_AND_DISK)

    new = matched.filter(F.col("id").isNull()).select("term", "first", "keys")
    ranked = new.repartitionByRange("first").sortWithinPartitions("first") \
        .withColumn("mid", F.monotonically_increasing_id()) \
        .localCheckpoint(True, StorageLevel.MEMORY_AND_DISK)
    counts = sorted((r[0], r[1], r[2] or 0) for r in ranked.groupBy(F.shiftright(F.col("mid"), MID_BITS).alias("pid"))
                    .agg(F.count(F.lit(1)), F.sum(F.octet_length("term"))).collect())
    offsets, total = [], 0
    for pid, n, _ in counts:
        offsets.append((pid, total))
        total += n
    new_terms = total
    term_bytes = sum(c[2] for c in counts)
    off = local_frame(spark, offsets or [(0, 0)], ("pid", "offset"))
    mask = (1 << MID_BITS) - 1
    serial = F.lit(next_serial) + F.col("offset") + F.col("mid").bitwiseAND(F.lit(mask))
    numbered = ranked.withColumn("pid", F.shiftright(F.col("mid"), MID_BITS)) \
        .join(F.broadcast(off), "pid") \
        .withColumn("id", serial * 4 + kind_expr(F, F.col("term")))
    dictionary_dir = work / "dictionary"
    # Range partitions are in key order and rows sorted within them: the part
    # files, in partition order, are the new terms sorted by id.
    numbered.select("id", "term").sortWithinPartitions("id").write.mode("overwrite").parquet(str(dictionary_dir))
    if progress:
        progress("encode", new_terms)

    key_map = matched.filter(F.col("id").isNotNull()).select(F.explode("keys").alias("key"), "id") \
        .unionByName(numbered.select(F.explode("keys").alias("key"), "id"))
    sc.setJobDescription("trine: encode triples")
    if map_rows <= BROADCAST_MAP_ROWS:
        key_map = F.broadcast(key_map)  # the same exchange serves the three joins
    enc = triples.alias("t")
    for c in ("s", "p", "o"):
        m = key_map.alias("m" + c)
        enc = enc.join(m, F.col(f"t.{c}") == F.col(f"m{c}.key"))
    enc = enc.select(F.col("ms.id").alias("s"), F.col("mp.id").alias("p"), F.col("mo.id").alias("o"))
    if old_explicit is not None:
        enc = enc.unionByName(spark.read.schema("s long, p long, o long").parquet(str(old_explicit)))
    explicit = enc.distinct().localCheckpoint(True, StorageLevel.MEMORY_AND_DISK)
    n_explicit = explicit.count()
    return Encoded(explicit, n_explicit, input_triples, new_terms, next_serial + new_terms, dictionary_dir,
                   int(term_bytes), skipped)
