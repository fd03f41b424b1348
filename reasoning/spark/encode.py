"""Dictionary encoding in Spark: parse, number the new terms, encode the triples.

1. The parse job (``parse.write_tasks`` in the Python workers) writes, per
   task, the triples as task-local term keys and the task's terms with the
   position where the task first met them and two hashes.
2. ``groupBy(h)``: one row per distinct term, on the 64-bit term hash (the
   store's own t2i hash), so that no string enters a shuffle; a second,
   independent hash detects a collision, in which case the grouping is
   redone on the term strings (``exact``).  Each row keeps the term's first
   position over all inputs.
3. Terms already in the store (and the fixed rho-df vocabulary) keep their
   ids (a join against the existing dictionary).  New terms are numbered in
   order of first occurrence from the store's ``next_serial`` (a range sort,
   then per-partition offsets: a distributed zipWithIndex) with the kind
   bits of the term: exactly the ids the in-process dictionary would give.
   Spark writes the new terms' (first, id) in id order; the driver takes
   their strings from the parse output (``new_dictionary``).
4. Each task's triples are mapped from keys to ids by a dense numpy lookup
   in a Python worker, built from the task's term rows and the hash -> id
   table (read whole by every task up to MAP_SIDE_TERMS terms), or else
   from the key -> id map (term rows joined with their ids by Spark) split
   by task; then united with the store's explicit triples (the closure
   removes repeats).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from trine.store import ntriples
from trine.store.vocab import FIXED_IDS

from . import parse
from .closure import SCHEMA_PREDICATES, local_frame
from .session import whole_waves

# Above this many existing terms the existing dictionary is joined, not broadcast.
BROADCAST_KNOWN_ROWS = 5_000_000
MID_BITS = 33  # monotonically_increasing_id(): partition << 33 | row within partition
ROWS_PER_PARTITION = 1_000_000
# Up to this many terms (new and stored) every encode task reads the whole
# hash -> id table (16 bytes a term) instead of Spark joining it with the keys.
MAP_SIDE_TERMS = 20_000_000


class HashCollision(Exception):
    """Two distinct terms share a 64-bit hash: group on the strings instead."""


@dataclass
class Encoded:
    explicit: object                 # DataFrame (s, p, o) longs, repeats possible
    schema_rows: list                # the explicit triples with a schema predicate, distinct
    input_triples: int
    new_terms: int
    next_serial: int                 # after this load
    parsed_dir: Path                 # the parse output (terms with their strings)
    new_ids_dir: Path                # parquet (first, id) of the new terms, in id order
    exact: bool = False
    skipped: list[ntriples.ParseError] = field(default_factory=list)


def vocabulary_rows() -> list[tuple[int, int, int, int, str]]:
    """(id, h, h2, kind, term) of the fixed rho-df vocabulary."""
    terms = list(FIXED_IDS)
    h, h2, kind = parse.term_hashes(terms)
    return [(FIXED_IDS[t], h[i], h2[i], kind[i], t) for i, t in enumerate(terms)]


def encode(spark, files: list[parse.InputFile], work: Path, next_serial: int, old_dictionary: Path | None,
           n_old_terms: int, old_explicit: Path | None, skip_invalid: bool,
           progress: Callable[[str, int], None] | None = None, exact: bool = False) -> Encoded:
    """Parse and encode ``files``; ``old_dictionary`` is parquet (id, h, h2, term)."""
    from pyspark.sql import functions as F

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
    if progress:
        progress("parse", input_triples)
    size_partitions(spark, input_triples + n_old_terms)

    try:
        ids = _number_terms(spark, parsed, work, next_serial, old_dictionary, n_old_terms, exact)
    except HashCollision:
        exact = True
        ids = _number_terms(spark, parsed, work, next_serial, old_dictionary, n_old_terms, exact)
    terms, term_ids, new_terms, new_ids_dir = ids
    if progress:
        progress("encode", new_terms)

    sc.setJobDescription("trine: encode triples")
    # Each task's triples are mapped from its keys to ids by a dense numpy
    # lookup in a Python worker (cheaper than three joins).  The lookup comes
    # from the whole hash -> id table when it is small enough for every task
    # to read (a map-side join), else from the key -> id map split by task.
    keymap_dir = work / "keymap"
    by_hash = not exact and new_terms + n_old_terms <= MAP_SIDE_TERMS
    if by_hash:
        term_ids.write.mode("overwrite").parquet(str(keymap_dir))
    else:
        group = group_column(exact)
        terms.select("key", group).join(term_ids, group) \
            .select("key", "id").withColumn("task", F.shiftright("key", parse.TASK_SHIFT)) \
            .write.mode("overwrite").partitionBy("task").parquet(str(keymap_dir))
    task_ids = [s[0] for s in summaries]
    pdir, kdir = str(parsed), str(keymap_dir)
    encoded = sum(sc.parallelize(task_ids, max(1, len(task_ids)))
                  .mapPartitions(lambda it: parse.encode_tasks(pdir, kdir, it, by_hash)).collect())
    if encoded != input_triples:
        raise RuntimeError(f"encoded {encoded} triples of {input_triples}")
    enc = spark.read.schema(parse.TRIPLES_SCHEMA).parquet(str(parsed / "encoded"))
    if old_explicit is not None:
        enc = enc.unionByName(spark.read.schema("s long, p long, o long").parquet(str(old_explicit)))
    # Not deduplicated here: the closure does it on the way (closure.close).
    schema = enc.filter(F.col("p").isin(list(SCHEMA_PREDICATES))).collect()
    schema_rows = sorted({(r[0], r[1], r[2]) for r in schema})
    return Encoded(enc, schema_rows, input_triples, new_terms, next_serial + new_terms,
                   parsed, new_ids_dir, exact, skipped)


def size_partitions(spark, rows: int) -> None:
    """Shuffle partitions for this load: few for small inputs (every task of
    every stage costs), up to the session's configured number."""
    sc = spark.sparkContext
    base = int(sc.getConf().get("spark.sql.shuffle.partitions", "8"))
    par = max(1, sc.defaultParallelism)
    n = max(1, min(base, -(-rows // ROWS_PER_PARTITION), 4 * par))
    spark.conf.set("spark.sql.shuffle.partitions", str(whole_waves(n, par, base)))


def group_column(exact: bool) -> str:
    """What identifies a term in the dictionary jobs: its hash, or (after a
    hash collision) its string."""
    return "term" if exact else "h"


def _number_terms(spark, parsed: Path, work: Path, next_serial: int, old_dictionary: Path | None,
                  n_old_terms: int, exact: bool):
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    sc.setJobDescription("trine: dictionary" + (" (exact)" if exact else ""))
    group = group_column(exact)
    cols = ["key", "first", "h", "h2", "kind"] + (["term"] if exact else [])
    terms = spark.read.schema(parse.TERMS_SCHEMA).parquet(str(parsed / "terms")).select(*cols)
    # Only primitive aggregates: collecting each term's keys here (collect_list)
    # made this job three times slower than grouping and joining back below.
    grouped = terms.groupBy(group).agg(F.min("first").alias("first"), F.min("h2").alias("h2lo"),
                                       F.max("h2").alias("h2hi"), F.min("kind").alias("kind"))
    vocab = vocabulary_rows()
    if exact:
        values = ", ".join(f"({r[0]}, {r[2]}, '{r[4]}')" for r in vocab)
        known = spark.sql(f"SELECT CAST(col1 AS BIGINT) AS id, CAST(col2 AS BIGINT) AS h2k, col3 AS term "
                          f"FROM VALUES {values}")
    else:
        known = local_frame(spark, [(r[0], r[1], r[2]) for r in vocab], ("id", "h", "h2k"))
    if old_dictionary is not None:
        old = spark.read.schema("id long, h long, h2 long, term string").parquet(str(old_dictionary))
        known = known.unionByName(old.select("id", group, F.col("h2").alias("h2k")))
    if old_dictionary is None or n_old_terms <= BROADCAST_KNOWN_ROWS:
        known = F.broadcast(known)
    matched = grouped.join(known, group, "left").localCheckpoint(True)

    new = matched.filter(F.col("id").isNull()).select(group, "first", "kind")
    ranked = new.repartitionByRange("first").sortWithinPartitions("first") \
        .withColumn("mid", F.monotonically_increasing_id()).localCheckpoint(True)
    # One job: per-partition counts of the new terms and the collision check.
    bad = (F.col("h2lo") != F.col("h2hi")) | (F.col("id").isNotNull() & (F.col("h2k") != F.col("h2lo")))
    check = matched.agg(F.sum(bad.cast("long"))).collect()[0][0] if not exact else 0
    if check:
        raise HashCollision()
    pid = F.shiftright(F.col("mid"), MID_BITS)
    counts = sorted((r[0], r[1]) for r in ranked.groupBy(pid.alias("pid")).agg(F.count(F.lit(1))).collect())
    offsets, total = [], 0
    for p, n in counts:
        offsets.append((p, total))
        total += n
    off = local_frame(spark, offsets or [(0, 0)], ("pid", "offset"))
    serial = F.lit(next_serial) + F.col("offset") + F.col("mid").bitwiseAND(F.lit((1 << MID_BITS) - 1))
    numbered = ranked.withColumn("pid", pid).join(F.broadcast(off), "pid") \
        .withColumn("id", serial * 4 + F.col("kind").cast("long"))
    new_ids_dir = work / "new-terms"
    # Range partitions are in key order, rows sorted within them: the part
    # files, in partition order, are the new terms sorted by first = by id.
    numbered.select("first", "id").write.mode("overwrite").parquet(str(new_ids_dir))
    ids = matched.filter(F.col("id").isNotNull()).select(group, "id").unionByName(numbered.select(group, "id"))
    return terms, ids, total, new_ids_dir


def new_dictionary(parsed: Path, new_ids_dir: Path, chunk: int = 1 << 20
                   ) -> Iterator[tuple[np.ndarray, list[bytes], np.ndarray]]:
    """(ids, utf-8 terms, hashes) of the new terms in id order, for the driver.

    Spark only wrote the new terms' first positions and ids; the strings
    come from the parse output (every term row there is at its task's first
    position, and a term's global first position is one of them).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .runs import part_files

    new = [pq.read_table(f, columns=["first", "id"]) for f in part_files(new_ids_dir)]
    if not new:
        return
    new_t = pa.concat_tables(new)
    firsts = new_t.column("first").to_numpy()
    ids = new_t.column("id").to_numpy()
    if len(firsts) == 0:
        return
    tables = [pq.read_table(f, columns=["first", "h", "term"]) for f in sorted((parsed / "terms").iterdir())
              if f.name.endswith(".parquet")]
    t = pa.concat_tables(tables)
    all_first = t.column("first").to_numpy()
    order = np.argsort(all_first, kind="stable")
    pos = order[np.searchsorted(all_first[order], firsts)]
    if not np.array_equal(all_first[pos], firsts):
        raise RuntimeError("a new term's first position is missing from the parse output")
    hashes = t.column("h").to_numpy()[pos]
    terms = t.column("term").take(pa.array(pos))
    for i in range(0, len(ids), chunk):
        part = terms.slice(i, chunk).to_pylist()
        yield ids[i:i + chunk], [x.encode("utf-8") for x in part], hashes[i:i + chunk]
