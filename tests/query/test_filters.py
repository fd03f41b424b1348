"""FilterEvaluator: its id-level shortcuts agree with evaluation on values.

``bound``, ``isIRI``/``isBlank``/``isLiteral`` and ``=``/``!=`` between
non-literals are decided from ids and their kind bits without decoding a
term; everything else is evaluated once per distinct combination of values
(:mod:`trine.query.values`).  The shortcuts must give exactly what the value
path gives, errors included, for every mix of kinds and unbound rows.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rdflib import BNode, Literal, Namespace

from trine import Store
from trine.query.algebra import And, Call, Compare, Not, Or, Var
from trine.query.batch import UNBOUND, Batch
from trine.query.decoding import TermDecoder
from trine.query.filters import FilterEvaluator
from trine.store.terms import from_rdflib

EX = Namespace("http://example.org/")
XSD = Namespace("http://www.w3.org/2001/XMLSchema#")

# literals that are equal by value but not by id, and ones that only error
TERMS = [
    EX.a, EX.b, BNode("n1"), BNode("n2"),
    Literal("1", datatype=XSD.integer), Literal("01", datatype=XSD.integer, normalize=False),
    Literal("1.0", datatype=XSD.decimal), Literal("a"), Literal("a", lang="en"),
    Literal("x", datatype=EX.custom),
]
A, B = Var("a"), Var("b")
CONSTS = [EX.a, EX.nowhere, Literal("1", datatype=XSD.integer), Literal("a")]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with Store.open(tmp_path_factory.mktemp("filters") / "db") as s:
        s.add([(EX.s, EX.p, t) for t in TERMS])
        yield s


@pytest.fixture(scope="module")
def term_ids(store):
    with store.db.read() as txn:
        return [txn.term_id(from_rdflib(t)) for t in TERMS]


def operands():
    return st.sampled_from([A, B] + CONSTS)


def expressions():
    leaf = st.one_of(
        st.builds(lambda op, x, y: Compare(op, x, y), st.sampled_from(["=", "!="]), operands(), operands()),
        st.builds(lambda n, v: Call(n, (v,)), st.sampled_from(["bound", "isiri", "isblank", "isliteral"]),
                  st.sampled_from([A, B])),
    )
    return st.recursive(leaf, lambda inner: st.one_of(
        st.builds(lambda xs: And(tuple(xs)), st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda xs: Or(tuple(xs)), st.lists(inner, min_size=2, max_size=3)),
        st.builds(Not, inner),
    ), max_leaves=4)


def scalar_tree(ev: FilterEvaluator, expr, b: Batch) -> np.ndarray:
    """The same three-valued result with every leaf evaluated on values."""
    if isinstance(expr, (And, Or, Not)):
        parts = [scalar_tree(ev, x, b) for x in (expr.items if not isinstance(expr, Not) else (expr.expr,))]
        if isinstance(expr, Not):
            return np.where(parts[0] == 2, 2, 1 - parts[0])
        win = 0 if isinstance(expr, And) else 1   # false decides And, true decides Or
        out = np.full(b.n, 1 - win)
        for p in parts:
            out = np.where(out == win, win, np.where(p == win, win, np.where(p == 2, 2, out)))
        return out
    return ev._scalar(expr, b)


@settings(max_examples=150, deadline=None)
@given(expr=expressions(), picks=st.lists(st.tuples(st.integers(-1, len(TERMS) - 1),
                                                    st.integers(-1, len(TERMS) - 1)),
                                          min_size=1, max_size=12))
def test_id_level_shortcuts_agree_with_values(store, term_ids, expr, picks):
    ids = [UNBOUND if i < 0 else term_ids[i] for pair in picks for i in pair]
    a = np.array(ids[0::2], dtype=np.uint32)
    b = np.array(ids[1::2], dtype=np.uint32)
    batch = Batch({A: a, B: b}, len(a))
    with store.db.read() as txn:
        ev = FilterEvaluator(txn, TermDecoder(txn))
        got = ev.tri(expr, batch)
        want = scalar_tree(ev, expr, batch)
    assert got.tolist() == want.tolist()


def test_equal_values_with_different_ids(store, term_ids):
    iri, one, zero_one, one_dec = term_ids[0], *term_ids[4:7]
    batch = Batch({A: np.array([one, one, iri], np.uint32),
                   B: np.array([zero_one, one_dec, iri], np.uint32)}, 3)
    with store.db.read() as txn:
        ev = FilterEvaluator(txn, TermDecoder(txn))
        assert ev.mask(Compare("=", A, B), batch).tolist() == [True, True, True]
        assert ev.mask(Compare("!=", A, B), batch).tolist() == [False, False, False]
