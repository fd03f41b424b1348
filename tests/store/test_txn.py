"""Txn's batched existence test against the triples the store lists."""

from __future__ import annotations

import numpy as np
import pytest
import rdflib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trine import Store

EX = rdflib.Namespace("http://x/")
NAMES = [EX[n] for n in "abcd"] + [rdflib.RDF.type, rdflib.RDFS.subClassOf]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A small store (some triples derived) and its triples with explicit flags, as ids."""
    path = tmp_path_factory.mktemp("txn") / "store"
    with Store.open(path) as s:
        s.add([(EX.a, rdflib.RDFS.subClassOf, EX.b), (EX.b, rdflib.RDFS.subClassOf, EX.c),
               (EX.d, rdflib.RDF.type, EX.a), (EX.a, EX.b, EX.c), (EX.c, EX.c, EX.c)])
    s = Store.open(path)
    ctx = s.db.read()
    txn = ctx.__enter__()
    ids = [txn.term_id(f"<{n}>") for n in NAMES]
    truth = {t: txn.record(*t).explicit for t in txn.scan()}
    assert any(truth.values()) and not all(truth.values())
    yield txn, ids, truth
    ctx.__exit__(None, None, None)
    s.close()


rows = st.lists(st.tuples(*[st.integers(0, len(NAMES) - 1)] * 3), min_size=0, max_size=30)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=rows, const_po=st.booleans(), explicit_only=st.booleans())
def test_contained_matches_the_stored_triples(stored, rows, const_po, explicit_only):
    txn, ids, truth = stored
    triples = [(ids[a], ids[b], ids[c]) for a, b, c in rows]
    if const_po and triples:  # the (?x :p :o) shape: p and o given once
        p, o = triples[0][1], triples[0][2]
        triples = [(s, p, o) for s, _, _ in triples]
        args = (np.array([t[0] for t in triples], dtype=np.uint32), p, o)
    else:
        cols = np.array(triples, dtype=np.uint32).reshape(-1, 3)
        args = (cols[:, 0], cols[:, 1], cols[:, 2])
    want = [i for i, t in enumerate(triples) if t in truth and (truth[t] or not explicit_only)]
    assert txn.contained(*args, explicit_only=explicit_only) == want
