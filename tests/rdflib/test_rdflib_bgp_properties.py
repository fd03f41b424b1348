"""Property test: the id-level BGP evaluation gives rdflib's own answers.

Random basic graph patterns (shared and repeated variables, blank nodes,
constants the store has or has never seen, projections, DISTINCT) over a
random graph with some RDFS vocabulary, in both views, evaluated by rdflib
with and without trine's evaluation, and by rdflib's memory store over the
same triples.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rdflib import RDF, RDFS, Graph, Literal, Namespace

import trine.rdflib_bgp as bgp
from trine.rdflib import TrineStore

EX = Namespace("http://example.org/")
NODES = [EX[f"n{i}"] for i in range(8)]
PREDS = [EX.p, EX.q, EX.r, RDF.type]
CLASSES = [EX.C, EX.D]
LITS = [Literal("a"), Literal("b", lang="en"), Literal(1), Literal("1")]


def random_graph(seed: int = 7) -> list[tuple]:
    rnd = random.Random(seed)
    triples = {(EX.C, RDFS.subClassOf, EX.D), (EX.q, RDFS.subPropertyOf, EX.p), (EX.r, RDFS.range, EX.C)}
    while len(triples) < 120:
        s = rnd.choice(NODES)
        p = rnd.choice(PREDS)
        if p == RDF.type:
            o = rnd.choice(CLASSES)
        else:
            o = rnd.choice(NODES + LITS)
        triples.add((s, p, o))
    return sorted(triples)


@pytest.fixture(scope="module", params=[True, False], ids=["inferred", "explicit"])
def graphs(request, tmp_path_factory):
    store = TrineStore(tmp_path_factory.mktemp("bgp") / "db", inferred=request.param)
    g = Graph(store=store)
    for t in random_graph():
        g.add(t)
    g.commit()
    m = Graph()
    for t in g:
        m.add(t)
    yield store, g, m
    store.close()


VARS = ["?a", "?b", "?c", "_:x"]
TERMS = [n.n3() for n in NODES[:4]] + ["<http://example.org/unknown>", '"a"', '"1"^^<http://www.w3.org/2001/XMLSchema#integer>']
PRED_TERMS = [p.n3() for p in PREDS] + ["<http://example.org/unknown>"]

position = st.one_of(st.sampled_from(VARS), st.sampled_from(TERMS))
predicate = st.one_of(st.sampled_from(VARS[:3]), st.sampled_from(PRED_TERMS))
pattern = st.tuples(position, predicate, position)


@st.composite
def queries(draw):
    pats = draw(st.lists(pattern, min_size=1, max_size=4))
    body = " . ".join(" ".join(t) for t in pats)
    used = sorted({x for t in pats for x in t if x.startswith("?")})
    if used and draw(st.booleans()):
        proj = draw(st.lists(st.sampled_from(used), min_size=1, max_size=len(used), unique=True))
        distinct = "DISTINCT " if draw(st.booleans()) else ""
        return f"SELECT {distinct}{' '.join(proj)} WHERE {{ {body} }}"
    return f"SELECT * WHERE {{ {body} }}"


def answers(graph, q):
    return sorted(tuple(str(v) if v is not None else None for v in row) for row in graph.query(q))


STRATEGIES = {
    "cost-based": {},
    "always-lookup": {"BATCH_COST_ROWS": 0, "CHECK_COST_ROWS": 0, "EXACT_COUNT_LIMIT": 0,
                      "SMALL_TABLE": 10**9},
    "never-lookup": {"BATCH_COST_ROWS": 10**9, "CHECK_COST_ROWS": 10**9, "EXACT_COUNT_LIMIT": 10**9,
                     "SMALL_TABLE": 0},
}


@pytest.fixture(params=list(STRATEGIES))
def strategy(request):
    old = {k: getattr(bgp, k) for k in STRATEGIES[request.param]}
    for k, v in STRATEGIES[request.param].items():
        setattr(bgp, k, v)
    yield request.param
    for k, v in old.items():
        setattr(bgp, k, v)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=queries())
def test_accelerated_bgp_equals_rdflib(graphs, strategy, q):
    store, g, m = graphs
    store.accelerate = True
    fast = answers(g, q)
    store.accelerate = False
    slow = answers(g, q)
    store.accelerate = True
    assert fast == slow, q
    assert fast == answers(m, q), q
