"""The entry point for callers holding their own transaction (the rdflib plugin):
``bgp_query`` + ``prepare`` + ``decode_rows`` in trine/query/api.py."""

from __future__ import annotations

from collections import Counter

import pytest
from rdflib import BNode, Literal, Namespace, URIRef

from trine import Store
from trine.query import api, planner
from trine.query.algebra import Var
from trine.query.api import bgp_query, decode_rows, prepare, snapshot_id
from trine.store.keys import Record

EX = Namespace("http://example.org/")
X, Y, B = Var("x"), Var("y"), Var("b", bnode=True)

TRIPLES = [
    (EX.a, EX.p, EX.b),
    (EX.a, EX.p, EX.c),
    (EX.b, EX.p, EX.c),
    (EX.c, EX.q, Literal("x")),
    (BNode("n"), EX.p, EX.a),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with Store.open(tmp_path_factory.mktemp("entry") / "db") as s:
        s.add(TRIPLES)
        yield s


def run(store, query, snapshot=True):
    with store.db.read() as txn:
        snap = snapshot_id(store.db.env, txn) if snapshot else None
        plan, ex = prepare(txn, query, snapshot=snap)
        if query.form == "ASK":
            return ex.ask(plan)
        return Counter(r for chunk in decode_rows(ex, ex.solutions(plan), query.projection) for r in chunk)


def test_equal_bgps_are_one_query_object():
    a = bgp_query([(X, EX.p, Y)], [X, Y])
    assert bgp_query([(X, EX.p, Y)], (X, Y)) is a
    assert bgp_query([(X, EX.p, Y)], [X, Y], distinct=True) is not a
    assert bgp_query([(X, EX.q, Y)], [X, Y]) is not a


def test_join_projection_and_unbound_columns(store):
    q = bgp_query([(X, EX.p, Y), (Y, EX.p, Var("z"))], [X, Var("z"), Var("never")])
    assert run(store, q) == Counter({(EX.a, EX.c, None): 1, (BNode("n"), EX.b, None): 1, (BNode("n"), EX.c, None): 1})


def test_blank_node_variables_can_be_projected(store):
    q = bgp_query([(B, EX.p, X)], [B, X])
    got = run(store, q)
    assert sum(got.values()) == 4 and (BNode("n"), EX.a) in got


def test_distinct_and_ask(store):
    assert run(store, bgp_query([(X, EX.p, Y)], [X])) == Counter({(EX.a,): 2, (EX.b,): 1, (BNode("n"),): 1})
    assert run(store, bgp_query([(X, EX.p, Y)], [X], distinct=True)) == Counter(
        {(EX.a,): 1, (EX.b,): 1, (BNode("n"),): 1})
    assert run(store, bgp_query([(X, EX.q, Literal("x"))], (), ask=True)) is True
    assert run(store, bgp_query([(X, EX.q, Literal("y"))], (), ask=True)) is False


def test_constants_substituted_for_bound_variables(store):
    # a caller that already knows ?x (rdflib's bindings) substitutes it, also a blank node
    assert run(store, bgp_query([(BNode("n"), EX.p, Y)], [Y])) == Counter({(EX.a,): 1})
    assert run(store, bgp_query([(URIRef("http://example.org/none"), EX.p, Y)], [Y])) == Counter()


def test_empty_pattern_is_one_solution(store):
    assert run(store, bgp_query([], [X])) == Counter({(None,): 1})


def test_plans_are_cached_per_snapshot(store, monkeypatch):
    q = bgp_query([(X, EX.p, Y), (Y, EX.q, Var("l"))], [X, Var("l")])
    calls = []
    real = planner.plan_query
    monkeypatch.setattr(api, "plan_query", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    want = Counter({(EX.a, Literal("x")): 1, (EX.b, Literal("x")): 1})
    assert run(store, q) == want and run(store, q) == want
    assert len(calls) == 1
    assert run(store, q, snapshot=False) == want     # no snapshot (a write transaction): planned afresh
    assert len(calls) == 2


class _Abort(Exception):
    def __init__(self, rows):
        super().__init__()
        self.rows = rows


def test_write_transaction_sees_its_own_changes(store):
    q = bgp_query([(X, EX.r, Y)], [X, Y])

    def inside(txn):
        d, r = txn.intern("<http://example.org/d>"), txn.intern("<http://example.org/r>")
        txn.insert(d, r, d, Record(explicit=True, count=1, step=0))
        plan, ex = prepare(txn, q)        # no snapshot: nothing cached from a changing state
        raise _Abort([r for chunk in decode_rows(ex, ex.solutions(plan), q.projection) for r in chunk])

    with pytest.raises(_Abort) as seen:
        store.db.write(inside)
    assert seen.value.rows == [(EX.d, EX.d)]
    assert run(store, q) == Counter()      # aborted: never committed
