"""The closure in two Spark passes when the data cannot change the schema.

The usual input (LUBM, and most real data) uses the rho-df vocabulary only
as schema: no subject of an spo, dom or range triple and no object of an spo
triple is spo, sco, dom, range or rdf:type (``fixed_schema``).  Then no
rule derives a schema triple except R1/R2 from schema triples, and schema
triples are never the data atom of R3, R5 or R6; rdf:type triples are the
data atom of R4 only.  So (the modular view of seed 001):

* the schema closure, with the steps of its triples, is computed in the
  driver (R1/R2 stage by stage, as the rounds would);
* every other derivation is a chain from one explicit triple through schema
  atoms of known steps: (A Q B) -spo-> (A P B) -dom-> (A type D) -sco->
  (A type C), or -range-> (B type R) -sco-> ...  The least height of each
  chain end from a given predicate (or class) is a shortest-path problem on
  the schema alone, solved in the driver (``emission_tables``; the height of
  a rule application is 1 + max(height of the data atom, step of the schema
  atom)).  Pass 1 joins the explicit triples with these small tables
  (broadcast) and keeps, per triple, the least height over all chains: that
  is the closure with every triple's naive stage, i.e. its step.
* Pass 2 (the final aggregation, ``ClosureResult.aggregate``) counts the
  rule instances over the closure: one broadcast join per rule kind, as in
  the rounds, plus the R1/R2 instances counted in the driver.

Two shuffles instead of two per round; the records are the rounds' (and
the in-process engine's) byte for byte.  Anything else, and schemas whose
tables would exceed TABLE_ROWS_MAX rows (too big to broadcast), takes the
rounds (``closure.close_by_rounds``).
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from trine.store.keys import KIND_MASK, MAX_STEP
from trine.store.terms import IRI, LITERAL
from trine.store.vocab import DOM, RNG, SCO, SPO, TYPE

from .closure import ClosureResult, Schema, by_predicate, by_type_object, local_frame, union_all

# Terms whose use as the subject of spo/dom/range, or the object of spo,
# would let data derive schema (or rdf:type triples feed R3, R5, R6).
VOCABULARY = frozenset((SPO, SCO, DOM, RNG, TYPE))
DATA, SUBJECT_TYPE, OBJECT_TYPE = 0, 1, 2   # what an emitted head is (``emission_tables``)
# Larger tables (a big ontology) are not broadcast: the rounds run instead.
TABLE_ROWS_MAX = 1_000_000


def fixed_schema(schema_rows: Iterable[tuple[int, int, int]]) -> bool:
    """True when no derivation can produce a schema triple except R1/R2 over
    schema triples (see the module docstring)."""
    for s, p, o in schema_rows:
        if p in (SPO, DOM, RNG) and s in VOCABULARY:
            return False
        if p == SPO and o in VOCABULARY:
            return False
    return True


def schema_closure(schema_rows: Iterable[tuple[int, int, int]]) -> Schema:
    """The schema triples closed under R1/R2, each with its naive stage."""
    schema = Schema()
    schema.add(schema_rows, 0)
    stage = 1
    while True:
        heads = schema.transitive_heads(SPO, stage - 1) + schema.transitive_heads(SCO, stage - 1)
        new = [h for h in heads if (h[0], h[2]) not in schema.rel[h[1]]]
        if not new:
            return schema
        if stage > MAX_STEP:
            raise OverflowError(f"materialisation needs more than {MAX_STEP} stages")
        schema.add(new, stage)
        stage += 1


def transitive_instances(schema: Schema) -> list[tuple[int, int, int, int]]:
    """(s, p, o, n): the number of R1/R2 instances with head (s p o)."""
    rows = []
    for r in (SPO, SCO):
        by_subject: dict[int, list[int]] = {}
        for a, b in schema.rel[r]:
            by_subject.setdefault(a, []).append(b)
        heads: Counter = Counter()
        for a, b in schema.rel[r]:
            for c in by_subject.get(b, ()):
                heads[(a, c)] += 1
        rows.extend((a, r, c, n) for (a, c), n in heads.items())
    return rows


def emission_tables(schema: Schema) -> tuple[list[tuple[int, int, int, int]], list[tuple[int, int, int]]]:
    """What one explicit triple derives, with the least height of each head.

    ``by_predicate`` rows (Q, kind, X, h): an explicit (A Q B) yields
    (A X B) (kind DATA), (A type X) (SUBJECT_TYPE) or, when B is not a
    literal, (B type X) (OBJECT_TYPE) at height h at best.  ``by_class``
    rows (B, C, h): an explicit (A type B) yields (A type C) at height h.
    """
    up: dict[tuple[int, int], list[tuple[tuple[int, int], int]]] = {}

    def edge(src: tuple[int, int], dst: tuple[int, int], step: int) -> None:
        up.setdefault(src, []).append((dst, step))

    for (q, p), st in schema.rel[SPO].items():
        if p & KIND_MASK == IRI and p != q:        # R3 does not fire with a non-IRI predicate
            edge((DATA, q), (DATA, p), st)
    for (p, d), st in schema.rel[DOM].items():
        edge((DATA, p), (SUBJECT_TYPE, d), st)
    for (p, r), st in schema.rel[RNG].items():
        edge((DATA, p), (OBJECT_TYPE, r), st)
    for (b, c), st in schema.rel[SCO].items():
        if b != c:
            edge((SUBJECT_TYPE, b), (SUBJECT_TYPE, c), st)
            edge((OBJECT_TYPE, b), (OBJECT_TYPE, c), st)

    by_predicate = []
    for q in sorted({x for kind, x in up if kind == DATA}):
        for (kind, x), h in _least_heights((DATA, q), up).items():
            by_predicate.append((q, kind, x, h))
    by_class = []
    for b in sorted({x for kind, x in up if kind == SUBJECT_TYPE}):
        for (_, c), h in _least_heights((SUBJECT_TYPE, b), up).items():
            by_class.append((b, c, h))
    return by_predicate, by_class


def _least_heights(start: tuple[int, int], up: dict) -> dict[tuple[int, int], int]:
    """Dijkstra from ``start`` at height 0, a rule application costing
    1 + max(height, step of its schema atom); ``start`` itself is left out."""
    best = {start: 0}
    heap = [(0, start)]
    while heap:
        h, node = heapq.heappop(heap)
        if h > best[node]:
            continue
        for nxt, st in up.get(node, ()):
            nh = 1 + max(h, st)
            if nh < best.get(nxt, MAX_STEP + 2):
                best[nxt] = nh
                heapq.heappush(heap, (nh, nxt))
    del best[start]
    return best


@dataclass
class Plan:
    """What the driver computes before the two passes."""

    schema: Schema                              # closed under R1/R2, with steps
    by_predicate: list[tuple[int, int, int, int]]
    by_class: list[tuple[int, int, int]]        # see ``emission_tables``


def two_pass_plan(schema_rows: list[tuple[int, int, int]]) -> Plan | None:
    """The two-pass plan, or None when the rounds must do: the data could
    change the schema, or the tables would be too big to broadcast."""
    if not fixed_schema(schema_rows):
        return None
    schema = schema_closure(schema_rows)
    by_predicate, by_class = emission_tables(schema)
    if len(by_predicate) + len(by_class) > TABLE_ROWS_MAX:
        return None
    return Plan(schema, by_predicate, by_class)


def close_fixed_schema(spark, explicit, plan: Plan, work: Path,
                       progress: Callable[[str, int], None] | None = None) -> ClosureResult:
    """The closure of ``explicit`` ((s, p, o) longs, repeats allowed) by
    ``plan``; the triples with their steps are written to ``work/closure``
    as Parquet (s, p, o, step, explicit)."""
    from pyspark.sql import functions as F

    spark.sparkContext.setJobDescription("trine: closure (fixed schema)")
    schema = plan.schema
    out = work / "closure"
    _least_steps(spark, F, explicit, plan).write.mode("overwrite").option("compression", "snappy") \
        .parquet(str(out))
    closure = spark.read.schema("s long, p long, o long, step int, explicit int").parquet(str(out))
    per_step = dict(closure.groupBy("step").count().collect())
    top = max(per_step, default=0)
    if top > MAX_STEP:
        raise OverflowError(f"materialisation needs more than {MAX_STEP} stages")
    new_per_round = [per_step.get(n, 0) for n in range(1, top + 1)] + [0]
    if progress:
        for n in new_per_round:
            progress("closure", n)
    return ClosureResult(_record_rows(spark, F, closure, schema), sum(per_step.values()), per_step.get(0, 0),
                         len(new_per_round), new_per_round, closure.select("s", "p", "o"), out, "fixed schema")


def _least_steps(spark, F, explicit, plan: Plan):
    """Pass 1: (s, p, o, step, explicit) of every triple of the closure."""
    schema, emit_rows, class_rows = plan.schema, plan.by_predicate, plan.by_class
    h, ex = F.col("h").cast("int").alias("h"), F.col("explicit").cast("int").alias("explicit")
    derived = F.lit(0).alias("explicit")
    parts = [explicit.select("s", "p", "o", F.lit(0).alias("h"), F.lit(1).alias("explicit"))]
    if emit_rows:
        rules = local_frame(spark, emit_rows, ("jp", "kind", "x", "h"))
        j = explicit.join(F.broadcast(rules), explicit.p == rules.jp)
        kind, s, o, x = F.col("kind"), F.col("s"), F.col("o"), F.col("x")
        j = j.filter((kind != OBJECT_TYPE) | (o.bitwiseAND(KIND_MASK) != LITERAL))
        parts.append(j.select(F.when(kind == OBJECT_TYPE, o).otherwise(s).alias("s"),
                              F.when(kind == DATA, x).otherwise(F.lit(TYPE)).alias("p"),
                              F.when(kind == DATA, o).otherwise(x).alias("o"), h, derived))
    if class_rows:
        rules = local_frame(spark, class_rows, ("b", "c", "h"))
        typ = explicit.filter(F.col("p") == TYPE)
        j = typ.join(F.broadcast(rules), typ.o == rules.b)
        parts.append(j.select("s", F.lit(TYPE).cast("long").alias("p"), F.col("c").alias("o"), h, derived))
    derived_schema = [(a, r, b, st) for r in (SPO, SCO) for (a, b), st in schema.rel[r].items() if st > 0]
    if derived_schema:
        parts.append(local_frame(spark, derived_schema, ("s", "p", "o", "h")).select("s", "p", "o", h, derived))
    rows = union_all([part.select("s", "p", "o", h, ex) for part in parts])
    # Hash-partitioned first: most rows are distinct, and a partial
    # aggregation before the shuffle would cost more than it saves.
    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    return rows.repartition(n, "s", "p", "o").groupBy("s", "p", "o") \
        .agg(F.min("h").alias("step"), F.max("explicit").alias("explicit"))


def _record_rows(spark, F, closure, schema: Schema):
    """Pass 2's input (``ClosureResult.rows``): the closure's triples with
    their explicit flag and step, and one row per rule instance over them."""
    no_step = F.lit(None).cast("int").alias("step")
    rows = [closure.select("s", "p", "o", "explicit", F.col("explicit").cast("long").alias("cnt"), "step")]
    p_rows, o_rows = schema.all_rule_rows()
    fired = ([by_predicate(F, closure, p_rows, spark)] if p_rows else []) + \
        ([by_type_object(F, closure, o_rows, spark)] if o_rows else [])
    rows += [f.select("s", "p", "o", F.lit(0).alias("explicit"), F.lit(1).cast("long").alias("cnt"), no_step)
             for f in fired]
    counted = transitive_instances(schema)
    if counted:
        rows.append(local_frame(spark, counted, ("s", "p", "o", "cnt"))
                    .select("s", "p", "o", F.lit(0).alias("explicit"), "cnt", no_step))
    return union_all(rows)
