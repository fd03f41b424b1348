"""Stateful property test of the rdflib plugin against a model.

Random sequences of what an rdflib application does to a ``Graph`` on a
TrineStore -- ``add``, ``addN``, ``remove`` with patterns, ``commit``,
``rollback``, reopening the graph -- over a tiny vocabulary that makes
reasoning, cycles and meta-use of the RDFS vocabulary frequent.  The model
is a set of explicit triples (the pending one and the last committed one);
after every step the graph must show exactly the reference closure
(tests/reference.py) of the pending set, or that set itself in the explicit
view; after every commit the store's annotated records must be the
reference's for the committed set, and a rollback must bring them back.
"""

from __future__ import annotations

import tempfile
import warnings

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from rdflib import RDF, RDFS, BNode, Graph, Literal, Namespace

from reference import annotated_lines, closure
from trine import Store
from trine.rdflib import TrineStore
from trine.store.terms import from_rdflib

EX = Namespace("http://example.org/")
NODES = [EX.a, EX.b, BNode("n")]
CLASSES = [EX.C, EX.D]
PROPS = [EX.p, EX.q]
VOCAB = [RDF.type, RDFS.subClassOf, RDFS.subPropertyOf, RDFS.domain, RDFS.range]

subjects = st.sampled_from(NODES + CLASSES + PROPS)
predicates = st.sampled_from(PROPS + VOCAB)
objects = st.sampled_from(NODES + CLASSES + PROPS + [RDF.type, RDFS.subClassOf, Literal("x")])
triples = st.tuples(subjects, predicates, objects)
patterns = st.tuples(st.one_of(st.none(), subjects), st.one_of(st.none(), predicates),
                     st.one_of(st.none(), objects))


def canon(t) -> tuple[str, str, str]:
    return tuple(from_rdflib(x) for x in t)  # type: ignore[return-value]


def matches(t, pattern) -> bool:
    return all(x is None or x == y for x, y in zip(pattern, t))


class GraphModel(RuleBasedStateMachine):
    inferred = True

    def __init__(self) -> None:
        super().__init__()
        self._dir = tempfile.TemporaryDirectory()
        self.path = self._dir.name + "/db"
        self.g = Graph(store=TrineStore(self.path, inferred=self.inferred))
        self.pending: set = set()
        self.committed: set = set()

    def teardown(self) -> None:
        self.g.close()
        self._dir.cleanup()

    # --- what applications do -------------------------------------------------------
    @rule(t=triples)
    def add(self, t):
        self.g.add(t)
        self.pending.add(t)

    @rule(ts=st.lists(triples, max_size=6))
    def add_n(self, ts):
        self.g.addN((s, p, o, self.g) for s, p, o in ts)
        self.pending |= set(ts)

    @rule(pattern=patterns)
    def remove(self, pattern):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # removing derived triples warns
            self.g.remove(pattern)
        self.pending = {t for t in self.pending if not matches(t, pattern)}

    @precondition(lambda self: self.pending)
    @rule(data=st.data())
    def remove_one_explicit(self, data):
        t = data.draw(st.sampled_from(sorted(self.pending)))
        self.remove(t)

    @rule()
    def commit(self):
        self.g.commit()
        self.committed = set(self.pending)
        with Store.open(self.path) as native:
            assert native.dump_lines(annotate=True) == annotated_lines(
                closure({canon(t) for t in self.committed}))

    @rule()
    def rollback(self):
        self.g.rollback()
        self.pending = set(self.committed)

    @rule()
    def reopen(self):
        # closing commits (rdflib's Store.close(commit_pending_transaction=True) default)
        self.g.close()
        self.committed = set(self.pending)
        self.g = Graph(store=TrineStore(self.path, inferred=self.inferred))

    # --- what the graph must show -------------------------------------------------------
    @invariant()
    def shows_the_model(self):
        shown = {canon(t) for t in self.g}
        explicit = {canon(t) for t in self.pending}
        want = set(closure(explicit)) if self.inferred else explicit
        assert shown == want
        assert len(self.g) == len(want)

    @invariant()
    def patterns_match_as_the_model(self):
        for pattern in ((EX.a, None, None), (None, RDF.type, None), (None, None, EX.C),
                        (EX.p, RDFS.subPropertyOf, None)):
            shown = {canon(t) for t in self.g.triples(pattern)}
            explicit = {canon(t) for t in self.pending}
            universe = set(closure(explicit)) if self.inferred else explicit
            want = {t for t in universe if matches(t, tuple(None if x is None else from_rdflib(x)
                                                            for x in pattern))}
            assert shown == want


class ExplicitGraphModel(GraphModel):
    inferred = False


_settings = settings(max_examples=60, stateful_step_count=15, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("machine", [GraphModel, ExplicitGraphModel], ids=["inferred", "explicit"])
def test_graph_follows_the_model(machine):
    machine.TestCase.settings = _settings
    machine.TestCase().runTest()
