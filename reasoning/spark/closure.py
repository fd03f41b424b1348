"""The rho-df closure in Spark, with the counts and steps of the contract.

This is ``reasoning/materialise.py`` (the executable specification) spread
over a cluster.  Every rule of ``reasoning/rules.py`` has one schema atom
(predicate spo, sco, dom or range) and one other atom:

* the schema triples (few) live in the driver, with their steps, and are
  re-collected from every round's new triples, so schema derived from data
  (``p rdfs:subPropertyOf rdfs:subClassOf``, a property declared a
  sub-property of rdf:type or rdfs:domain, ...) is used from the round after
  it appears;
* R1/R2 (spo/sco transitivity: both atoms are schema) run in the driver;
* R3-R6 are one broadcast join of the data with a small rule table built
  from the schema (R3, R5, R6 keyed by the data triple's predicate, R4 keyed
  by the rdf:type triple's object).

Rounds are the naive stages: round n fires exactly the rule instances whose
larger body step is n - 1, as the union of (schema atoms of step n - 1) x
(all data of step <= n - 1) and (schema atoms of step < n - 1) x (data of
step n - 1).  So each instance fires in exactly one round; the heads of a
round, minus the triples already known, are the triples of step n; and a
triple's count is [explicit] + the number of instances fired with it as
head over all rounds: one aggregation at the end.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from trine.store.keys import KIND_MASK, MAX_STEP
from trine.store.terms import IRI, LITERAL
from trine.store.vocab import DOM, RNG, SCO, SPO, TYPE

SCHEMA_PREDICATES = (SPO, SCO, DOM, RNG)
R3, R5, R6 = 3, 5, 6


@dataclass
class ClosureResult:
    rows: object               # DataFrame (s, p, o, explicit, cnt, step): see ``aggregate``
    n_triples: int
    n_explicit: int
    rounds: int
    new_per_round: list[int] = field(default_factory=list)
    # The closure's triples (s, p, o), without records: known before, and much
    # cheaper than, the aggregation of the counts; ``triples_dir``: where they
    # already are as Parquet (columns s, p, o and more), if anywhere.
    triples: object = None
    triples_dir: Path | None = None
    method: str = "rounds"       # or "fixed schema" (fixed_schema.py)

    def aggregate(self, range_partitions: int | None = None, range_label=None):
        """The closure (s, p, o, explicit, count, step): one aggregation over
        the explicit triples and the heads fired in every round.  With
        ``range_partitions`` the rows are range-partitioned first, so the
        result comes out in SPO order partition by partition: on (s, p, o)
        by Spark, or by ``range_label`` (``runs.subject_ranges``), a column
        that hash-partitions each range of subjects into its partition."""
        from pyspark.sql import functions as F

        rows, keys = self.rows, ["s", "p", "o"]
        if range_partitions and range_label is not None:
            # Grouping on the label too (a function of s) keeps the
            # aggregation inside the label's partitions: no second shuffle.
            rows, keys = rows.withColumn("range", range_label).repartition(range_partitions, "range"), ["range"] + keys
        elif range_partitions:
            rows = rows.repartitionByRange(range_partitions, "s", "p", "o")
        return rows.groupBy(*keys).agg(
            F.max("explicit").cast("byte").alias("explicit"),
            F.sum("cnt").alias("count"),
            F.min("step").alias("step"),
        ).select("s", "p", "o", "explicit", "count", "step")


class Schema:
    """Schema triples known so far: predicate -> {(s, o): step}."""

    def __init__(self) -> None:
        self.rel: dict[int, dict[tuple[int, int], int]] = {p: {} for p in SCHEMA_PREDICATES}

    def add(self, rows, step: int) -> None:
        for s, p, o in rows:
            self.rel[p].setdefault((s, o), step)

    def transitive_heads(self, r: int, prev: int) -> list[tuple[int, int, int]]:
        """R1/R2 instances of stage prev + 1: (A r B) (B r C), larger step == prev."""
        rel = self.rel[r]
        by_subject: dict[int, list[tuple[int, int]]] = {}
        for (a, b), st in rel.items():
            by_subject.setdefault(a, []).append((b, st))
        heads = []
        for (a, b), st in rel.items():
            for c, st2 in by_subject.get(b, ()):
                if max(st, st2) == prev:
                    heads.append((a, r, c))
        return heads

    def rule_rows(self, prev: int) -> tuple[list, list, list, list]:
        """Rule tables split by the schema atom's step: (== prev, < prev)."""
        p_new, p_old, o_new, o_old = [], [], [], []
        for (q, sup), st in self.rel[SPO].items():
            if sup & KIND_MASK == IRI:
                (p_new if st == prev else p_old).append((q, R3, sup))
        for (p, d), st in self.rel[DOM].items():
            (p_new if st == prev else p_old).append((p, R5, d))
        for (p, r), st in self.rel[RNG].items():
            (p_new if st == prev else p_old).append((p, R6, r))
        for (b, c), st in self.rel[SCO].items():
            (o_new if st == prev else o_old).append((b, c))
        return p_new, p_old, o_new, o_old

    def all_rule_rows(self) -> tuple[list, list]:
        """Every rule table row, whatever its step: (R3/R5/R6, R4)."""
        p_new, p_old, o_new, o_old = self.rule_rows(-1)
        return p_new + p_old, o_new + o_old


def local_frame(spark, rows: list[tuple[int, ...]], names: tuple[str, ...]):
    """A small DataFrame of integers as an inline table (a LocalRelation:
    broadcasting it needs no Spark job, unlike ``createDataFrame``)."""
    if len(rows) > 20_000:
        return spark.createDataFrame(rows, ", ".join(f"{n} long" for n in names))
    values = ", ".join("(" + ", ".join(str(int(x)) for x in r) + ")" for r in rows)
    cols = ", ".join(f"CAST(col{i + 1} AS BIGINT) AS {n}" for i, n in enumerate(names))
    return spark.sql(f"SELECT {cols} FROM VALUES {values}")


def union_all(frames: list):
    """The rows of all the DataFrames (same columns, matched by name)."""
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


def count_and_schema(F, df) -> tuple[int, list[tuple[int, int, int]]]:
    """Row count and the rows with a schema predicate (of a materialised
    DataFrame: two scans cost less than one collect_list aggregation)."""
    schema = df.filter(F.col("p").isin(list(SCHEMA_PREDICATES))).collect()
    return df.count(), [(r[0], r[1], r[2]) for r in schema]


def by_predicate(F, data, rows, spark):
    """R3, R5, R6 instances: data triples joined on their predicate."""
    rules = local_frame(spark, rows, ("jp", "mode", "c"))
    j = data.join(F.broadcast(rules), data.p == rules.jp)
    mode, s, o, c = F.col("mode"), F.col("s"), F.col("o"), F.col("c")
    j = j.filter((mode != R6) | (o.bitwiseAND(KIND_MASK) != LITERAL))
    return j.select(F.when(mode == R6, o).otherwise(s).alias("s"),
                    F.when(mode == R3, c).otherwise(F.lit(TYPE)).alias("p"),
                    F.when(mode == R3, o).otherwise(c).alias("o"))


def by_type_object(F, data, rows, spark):
    """R4 instances: (A type B) joined on B with (B sco C)."""
    rules = local_frame(spark, rows, ("b", "c"))
    typ = data.filter(F.col("p") == TYPE)
    j = typ.join(F.broadcast(rules), typ.o == rules.b)
    return j.select(F.col("s"), F.lit(TYPE).cast("long").alias("p"), F.col("c").alias("o"))


def close(spark, explicit, schema_rows: list[tuple[int, int, int]], work: Path,
          progress: Callable[[str, int], None] | None = None, rounds: bool = False) -> ClosureResult:
    """The closure of ``explicit`` (a DataFrame of (s, p, o) longs, repeats
    allowed; ``schema_rows`` are its distinct triples with a schema
    predicate): in two passes when the data cannot change the schema
    (fixed_schema.py; its aggregation removes the repeats), else (or with
    ``rounds``) by semi-naive rounds.  ``work``: a directory for
    intermediate files."""
    from .fixed_schema import close_fixed_schema, two_pass_plan

    two_passes = None if rounds else two_pass_plan(schema_rows)
    if two_passes is not None:
        return close_fixed_schema(spark, explicit, two_passes, work, progress)
    # Hash-partitioned on the triple first: distinct() alone aggregates each
    # task's (mostly unique) rows before the shuffle too, at twice the cost.
    parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
    explicit = explicit.repartition(parts, "s", "p", "o").distinct().localCheckpoint(True)
    return close_by_rounds(spark, explicit, explicit.count(), schema_rows, progress)


def close_by_rounds(spark, explicit, n_explicit: int, schema_rows: list[tuple[int, int, int]],
                    progress: Callable[[str, int], None] | None = None, max_rounds: int = MAX_STEP) -> ClosureResult:
    """The closure by semi-naive rounds (any input)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    level = StorageLevel.MEMORY_AND_DISK
    sc = spark.sparkContext
    schema = Schema()
    schema.add(schema_rows, 0)
    deltas = [explicit]          # deltas[n]: the triples of step n
    fired = []                   # per round n: (s, p, o, c, new): heads with multiplicity c
    new_per_round = []
    n = 1
    while True:
        if n > max_rounds:
            raise OverflowError(f"materialisation needs more than {MAX_STEP} stages")
        sc.setJobDescription(f"trine: closure round {n}")
        prev = n - 1
        known = union_all(deltas)
        delta = deltas[prev]
        p_new, p_old, o_new, o_old = schema.rule_rows(prev)
        small = schema.transitive_heads(SPO, prev) + schema.transitive_heads(SCO, prev)
        parts = []
        if p_new:
            parts.append(by_predicate(F, known, p_new, spark))
        if p_old:
            parts.append(by_predicate(F, delta, p_old, spark))
        if o_new:
            parts.append(by_type_object(F, known, o_new, spark))
        if o_old:
            parts.append(by_type_object(F, delta, o_old, spark))
        if small:
            parts.append(local_frame(spark, small, ("s", "p", "o")))
        if not parts:
            break
        heads = union_all(parts)
        head_preds = sorted({TYPE} | {r[2] for r in p_new + p_old if r[1] == R3} | {t[1] for t in small})
        candidates = known.filter(F.col("p").isin(head_preds)) if len(head_preds) < 64 else known
        candidates = candidates.select("s", "p", "o", F.lit(False).alias("new"))
        # One job per round: count the heads, mark the new ones, materialise
        # (localCheckpoint also cuts the lineage, or plans grow every round).
        counted = heads.groupBy("s", "p", "o").agg(F.count(F.lit(1)).alias("c")) \
            .join(candidates, ["s", "p", "o"], "left") \
            .select("s", "p", "o", "c", F.col("new").isNull().alias("new")) \
            .localCheckpoint(True, level)
        new = counted.filter(F.col("new")).select("s", "p", "o")
        n_new, new_schema = count_and_schema(F, new)
        fired.append(counted)
        new_per_round.append(n_new)
        if progress:
            progress("closure", n_new)
        if n_new == 0:
            break
        deltas.append(new)
        schema.add(new_schema, n)
        n += 1

    parts = [explicit.select("s", "p", "o", F.lit(1).alias("explicit"), F.lit(1).cast("long").alias("cnt"),
                             F.lit(0).alias("step"))]
    for i, a in enumerate(fired, start=1):
        parts.append(a.select("s", "p", "o", F.lit(0).alias("explicit"), F.col("c").alias("cnt"),
                              F.when(F.col("new"), F.lit(i)).alias("step")))
    return ClosureResult(union_all(parts), n_explicit + sum(new_per_round), n_explicit, len(new_per_round),
                         new_per_round, union_all(deltas))
