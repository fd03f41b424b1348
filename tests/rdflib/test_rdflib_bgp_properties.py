"""Property test: BGPs handed to trine.query give rdflib's own answers.

Random basic graph patterns (shared and repeated variables, blank nodes,
constants the store has or has never seen, projections, DISTINCT, ASK) over a
random graph with some RDFS vocabulary, in both views, reaching trine in each
of the plugin's ways:

* ``whole``: ``Graph.query`` -> ``TrineStore.query`` (the whole query);
* ``bgp``: rdflib's own evaluation (``use_store_provided=False``) with the BGP
  handed over by ``CUSTOM_EVALS``;
* ``bound``: as ``bgp``, with one variable bound by ``initBindings`` (the
  plugin substitutes it before planning);

with each of the executor's join choices forced, and compared with rdflib
evaluating the same graph without trine (``accelerate=False``) and with
rdflib's memory store over the same triples: the rows, ``len`` and
``bindings`` of the result.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rdflib import RDF, RDFS, Graph, Literal, Namespace, URIRef

from trine.query import access
from trine.query import executor as executor_mod
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
    real = store.prepared

    def counting(*args):
        store.handed_over += 1
        return real(*args)
    store.prepared = counting
    yield store, g, m
    store.close()


VARS = ["?a", "?b", "?c", "_:x"]
TERMS = [n.n3() for n in NODES[:4]] + ["<http://example.org/unknown>", '"a"', '"1"^^<http://www.w3.org/2001/XMLSchema#integer>']
PRED_TERMS = [p.n3() for p in PREDS] + ["<http://example.org/unknown>"]
BINDABLE = NODES[:4] + [EX.p, EX.C, URIRef("http://example.org/unknown"), Literal("a"), Literal(1)]

position = st.one_of(st.sampled_from(VARS), st.sampled_from(TERMS))
predicate = st.one_of(st.sampled_from(VARS[:3]), st.sampled_from(PRED_TERMS))
pattern = st.tuples(position, predicate, position)


@st.composite
def queries(draw):
    """(query text, initial bindings) -- bindings only for the ``bound`` entry."""
    pats = draw(st.lists(pattern, min_size=1, max_size=4))
    body = " . ".join(" ".join(t) for t in pats)
    used = sorted({x for t in pats for x in t if x.startswith("?")})
    bind = {}
    if used and draw(st.booleans()):
        bind = {draw(st.sampled_from(used))[1:]: draw(st.sampled_from(BINDABLE))}
    form = draw(st.sampled_from(["select", "project", "ask"]))
    if form == "ask":
        return f"ASK {{ {body} }}", bind
    if form == "project":
        proj = draw(st.lists(st.sampled_from(VARS[:3]), min_size=1, max_size=3, unique=True))
        distinct = "DISTINCT " if draw(st.booleans()) else ""
        return f"SELECT {distinct}{' '.join(proj)} WHERE {{ {body} }}", bind
    return f"SELECT * WHERE {{ {body} }}", bind


def answers(graph, q, bind, whole=True):
    res = graph.query(q, initBindings=bind, use_store_provided=whole)
    if res.type == "ASK":
        return res.askAnswer
    rows = sorted(tuple(str(v) if v is not None else None for v in row) for row in res)
    bindings = sorted(sorted((str(k), str(v)) for k, v in b.items()) for b in res.bindings)
    return rows, len(res), bindings, [str(v) for v in res.vars]


STRATEGIES = {
    "adaptive": {},
    "probe-only": {(executor_mod, "FORCE_JOIN_METHOD"): "probe"},
    "merge-only": {(executor_mod, "FORCE_JOIN_METHOD"): "merge"},
    "python-paths": {(executor_mod, "SMALL_LOOKUP"): 10**9, (executor_mod, "SMALL_PROBE"): 10**9,
                     (access, "SMALL_RANGE"): 10**9},
    "numpy-paths": {(executor_mod, "SMALL_LOOKUP"): 0, (executor_mod, "SMALL_PROBE"): 0,
                    (access, "SMALL_RANGE"): 0},
}


@pytest.fixture(params=list(STRATEGIES))
def strategy(request):
    old = {k: getattr(*k) for k in STRATEGIES[request.param]}
    for (mod, name), v in STRATEGIES[request.param].items():
        setattr(mod, name, v)
    yield request.param
    for (mod, name), v in old.items():
        setattr(mod, name, v)


@pytest.mark.parametrize("entry", ["whole", "bgp", "bound"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(qb=queries())
def test_accelerated_bgp_equals_rdflib(graphs, strategy, entry, qb):
    store, g, m = graphs
    q, bind = qb
    if entry != "bound":
        bind = {}
    whole = entry == "whole"
    store.accelerate = True
    store.handed_over = 0
    fast = answers(g, q, bind, whole)
    assert store.handed_over, "the BGP was not handed to trine"
    store.accelerate = False
    slow = answers(g, q, bind, whole)
    store.accelerate = True
    assert fast == slow, (q, bind)
    assert fast == answers(m, q, bind), (q, bind)
