"""The driver side of the two-pass closure (reasoning/spark/fixed_schema.py),
without Spark: applying its tables by hand to random graphs whose data
cannot change the schema gives exactly the reference's steps and counts."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st
from reference import DOM, RNG, SCO, SPO, TYPE, closure

from trine.reasoning.spark.closure import R3, R6, SCHEMA_PREDICATES
from trine.reasoning.spark.fixed_schema import (
    DATA, OBJECT_TYPE, SUBJECT_TYPE, emission_tables, fixed_schema, schema_closure, transitive_instances, two_pass_plan)
from trine.store.keys import KIND_MASK, make_id
from trine.store.terms import LITERAL, kind_of
from trine.store.vocab import FIRST_FREE_SERIAL, FIXED_IDS
from trine.store.vocab import TYPE as TYPE_ID

EX = [f"<http://ex/{c}>" for c in "abcd"]
NODES = EX + ["_:b1"]
OBJECTS = NODES + ['"x"', '"y"@en']
SCHEMA = [SPO, SCO, DOM, RNG]

# Meta-free by construction: the rho-df vocabulary only as the predicate of
# schema triples (and as rdf:type); cycles, self-loops, literal and blank
# classes and super-properties stay frequent.
data_triple = st.tuples(st.sampled_from(NODES), st.sampled_from(EX[:3] + [TYPE]), st.sampled_from(OBJECTS))
schema_triple = st.tuples(st.sampled_from(EX), st.sampled_from(SCHEMA), st.sampled_from(OBJECTS))
graphs = st.sets(st.one_of(data_triple, schema_triple), min_size=1, max_size=24)


def encode(triples):
    ids = dict(FIXED_IDS)
    for t in sorted({x for tr in triples for x in tr}):
        if t not in ids:
            ids[t] = make_id(FIRST_FREE_SERIAL + len(ids), kind_of(t))
    return {tuple(ids[x] for x in tr) for tr in triples}, {v: k for k, v in ids.items()}


def two_passes(E):
    """What the two Spark passes compute, in plain Python: triple -> (explicit, count, step)."""
    schema_rows = [t for t in E if t[1] in SCHEMA_PREDICATES]
    schema = schema_closure(schema_rows)
    by_predicate, by_class = emission_tables(schema)
    step = {t: 0 for t in E}

    def offer(t, h):
        if h < step.get(t, h + 1):
            step[t] = h

    for s, p, o in E:
        for q, kind, x, h in by_predicate:
            if q != p or (kind == OBJECT_TYPE and o & KIND_MASK == LITERAL):
                continue
            offer((s, x, o) if kind == DATA else (o if kind == OBJECT_TYPE else s, TYPE_ID, x), h)
        if p == TYPE_ID:
            for b, c, h in by_class:
                if b == o:
                    offer((s, TYPE_ID, c), h)
    for r, rel in schema.rel.items():
        for (a, b), st_ in rel.items():
            offer((a, r, b), st_)
    count = Counter({t: int(t in E) for t in step})
    p_rows, o_rows = schema.all_rule_rows()
    for s, p, o in step:
        for q, mode, c in p_rows:
            if q != p or (mode == R6 and o & KIND_MASK == LITERAL):
                continue
            count[(s, c, o) if mode == R3 else (o if mode == R6 else s, TYPE_ID, c)] += 1
        if p == TYPE_ID:
            for b, c in o_rows:
                if b == o:
                    count[(s, TYPE_ID, c)] += 1
    for s, p, o, n in transitive_instances(schema):
        count[(s, p, o)] += n
    return {t: (t in E, count[t], step[t]) for t in step}


@settings(max_examples=300, deadline=None)
@given(graphs)
def test_tables_give_the_reference_closure(triples):
    E, names = encode(triples)
    assert fixed_schema([t for t in E if t[1] in SCHEMA_PREDICATES])
    got = {tuple(names[x] for x in t): v for t, v in two_passes(E).items()}
    assert got == closure(set(triples))


def test_meta_use_is_not_fixed():
    spo, sco, dom, typ = (FIXED_IDS[x] for x in (SPO, SCO, DOM, TYPE))
    a, b = make_id(1000, 0), make_id(1001, 0)
    assert fixed_schema([(a, spo, b), (a, dom, b), (a, sco, typ)])
    assert not fixed_schema([(a, spo, sco)])          # data would derive subClassOf triples
    assert not fixed_schema([(a, spo, typ)])          # ... or rdf:type triples
    assert not fixed_schema([(sco, spo, a)])          # schema triples would be R3's data atoms
    assert not fixed_schema([(typ, dom, a)])          # rdf:type triples would be R5's
    assert two_pass_plan([(a, spo, sco)]) is None
    assert two_pass_plan([(a, spo, b), (b, dom, a)]).by_predicate == [
        (a, DATA, b, 1), (a, SUBJECT_TYPE, a, 2), (b, SUBJECT_TYPE, a, 1)]
