"""Incremental maintenance against the independent reference (tests/reference.py)."""

from __future__ import annotations

import random
import shutil
import tempfile
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference import DOM, RNG, SCO, SPO, TYPE, annotated_lines, closure
from trine import Store
from trine.reasoning import maintenance
from trine.store.terms import to_rdflib

NODES = ["<http://x/a>", "<http://x/b>", "<http://x/c>", "_:n1"]
PROPS = ["<http://x/p>", "<http://x/q>"]
VOCAB = [TYPE, SPO, SCO, DOM, RNG]
LITERALS = ['"lit"', '"1"^^<http://www.w3.org/2001/XMLSchema#integer>']

subjects = st.sampled_from(NODES + PROPS + VOCAB)
predicates = st.sampled_from(PROPS + VOCAB + VOCAB)  # vocabulary twice: meta-use is frequent
objects = st.sampled_from(NODES + PROPS + VOCAB + LITERALS)
triples = st.tuples(subjects, predicates, objects)


def rdf(ts):
    return [tuple(to_rdflib(x) for x in t) for t in ts]


def fresh_dump(E, algorithm_unused=None) -> list[str]:
    d = tempfile.mkdtemp(prefix="trine-fresh-")
    try:
        with Store.open(d) as s:
            s.add(rdf(sorted(E)))
            return s.dump_lines(annotate=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.booleans(), st.lists(triples, min_size=1, max_size=6)), min_size=1, max_size=6),
       st.sampled_from(["counting", "counting-batched", "insertion-batched", "dred"]),
       st.randoms(use_true_random=False))
def test_updates_match_reference(batches, algorithm, rnd):
    # counting-batched: the batched counting pass for every deletion it applies to;
    # insertion-batched: the batched semi-naive pass for every insertion it applies to
    with mock.patch.object(maintenance, "BATCH_MIN", 1 if algorithm == "counting-batched" else maintenance.BATCH_MIN), \
            mock.patch.object(maintenance, "INSERT_BATCH_MIN",
                              1 if algorithm == "insertion-batched" else maintenance.INSERT_BATCH_MIN):
        _updates_match_reference(batches, "dred" if algorithm == "dred" else "counting", rnd)


def _updates_match_reference(batches, algorithm, rnd):
    d = tempfile.mkdtemp(prefix="trine-prop-")
    try:
        E: set = set()
        with Store.open(d) as store:
            for is_add, batch in batches:
                if not is_add:
                    # mix in existing explicit, derived and absent triples
                    current = list(closure(E).keys())
                    batch = batch + rnd.sample(current, min(3, len(current)))
                if is_add:
                    store.add(rdf(batch))
                    E |= set(batch)
                else:
                    rep = store.remove(rdf(batch), algorithm=algorithm)
                    not_explicit = {b for b in batch if b not in E}
                    assert len(rep.not_explicit) == len(not_explicit)
                    E -= set(batch)
                expected = annotated_lines(closure(E))
                got = store.dump_lines(annotate=True)
                assert got == expected
            assert store.check(deep=True).ok
    finally:
        shutil.rmtree(d, ignore_errors=True)


# A fixed schema (cycles and meta-use included: rdf:type as a sub-property, domain
# or range of rdfs:subClassOf) and data removed in batches: the batched counting pass.
schema_triples = st.tuples(st.sampled_from(NODES[:3] + PROPS + [TYPE, SCO]), st.sampled_from([SPO, SCO, DOM, RNG]),
                           st.sampled_from(NODES[:3] + PROPS + [TYPE]))
data_triples = st.tuples(st.sampled_from(NODES + PROPS), st.sampled_from(PROPS + [TYPE]),
                         st.sampled_from(NODES + PROPS + LITERALS))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(schema_triples, max_size=8), st.lists(data_triples, min_size=1, max_size=14),
       st.lists(st.tuples(st.booleans(), st.lists(data_triples, max_size=5)), min_size=1, max_size=5),
       st.randoms(use_true_random=False))
def test_batched_data_deletion_matches_reference(schema, data, updates, rnd):
    d = tempfile.mkdtemp(prefix="trine-batch-")
    try:
        E = set(schema) | set(data)
        with mock.patch.object(maintenance, "BATCH_MIN", 1), mock.patch.object(maintenance, "INSERT_BATCH_MIN", 1), \
                Store.open(d) as store:
            store.add(rdf(sorted(E)))
            for is_add, batch in updates:
                if is_add:
                    store.add(rdf(batch))
                    E |= set(batch)
                    assert store.dump_lines(annotate=True) == annotated_lines(closure(E))
                    continue
                current = sorted(t for t in E if t[1] not in (SPO, SCO, DOM, RNG))
                batch = batch + rnd.sample(current, rnd.randint(0, len(current)))
                store.remove(rdf(batch))
                E -= set(batch)
                assert store.dump_lines(annotate=True) == annotated_lines(closure(E))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(schema_triples, max_size=8), st.lists(data_triples, max_size=14),
       st.lists(st.lists(data_triples, min_size=1, max_size=8), min_size=1, max_size=4),
       st.randoms(use_true_random=False))
def test_batched_data_insertion_matches_reference(schema, data, adds, rnd):
    """The batched semi-naive insertion (a fixed schema), with batches that mix new
    triples, explicit ones and derived ones (which become explicit, step 0)."""
    d = tempfile.mkdtemp(prefix="trine-ins-")
    try:
        E = set(schema) | set(data)
        with mock.patch.object(maintenance, "INSERT_BATCH_MIN", 1), Store.open(d) as store:
            store.add(rdf(sorted(E)))
            for batch in adds:
                derived = sorted(t for t in closure(E) if t not in E and t[1] not in (SPO, SCO, DOM, RNG))
                batch = batch + rnd.sample(derived, rnd.randint(0, len(derived)))
                store.add(rdf(batch))
                E |= set(batch)
                assert store.dump_lines(annotate=True) == annotated_lines(closure(E))
            assert store.check(deep=True).ok
    finally:
        shutil.rmtree(d, ignore_errors=True)


@settings(max_examples=40, deadline=None)
@given(st.lists(triples, min_size=1, max_size=12))
def test_bulk_load_matches_reference(E):
    d = tempfile.mkdtemp(prefix="trine-load-")
    try:
        path = d + "/in.nt"
        with open(path, "w") as f:
            for t in E:
                f.write(" ".join(t) + " .\n")
        with Store.open(d + "/db") as store:
            store.load([path], engine="local")
            assert store.dump_lines(annotate=True) == annotated_lines(closure(set(E)))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_cycle_is_not_kept_alive_by_counting(tmp_path):
    """The C0..Cn example of seed 002: a subClassOf cycle must not survive deletion."""
    c = [f"<http://x/C{i}>" for i in range(4)]
    E = {("<http://x/i>", TYPE, c[0])} | {(c[i], SCO, c[i + 1]) for i in range(3)} | {(c[3], SCO, c[1])}
    with Store.open(tmp_path / "db") as store:
        store.add(rdf(E))
        store.remove(rdf([(c[0], SCO, c[1])]))
        E.discard((c[0], SCO, c[1]))
        assert store.dump_lines(annotate=True) == annotated_lines(closure(E))
        assert not any("<http://x/i>" in line and "C2" in line for line in store.dump_lines())


def test_remove_not_explicit_changes_nothing(tmp_path):
    E = {("<http://x/A>", SCO, "<http://x/B>"), ("<http://x/i>", TYPE, "<http://x/A>")}
    with Store.open(tmp_path / "db") as store:
        store.add(rdf(E))
        before = store.dump_lines(annotate=True)
        rep = store.remove(rdf([("<http://x/i>", TYPE, "<http://x/B>"), ("<http://x/z>", TYPE, "<http://x/B>")]))
        assert len(rep.not_explicit) == 2
        assert store.dump_lines(annotate=True) == before


def test_explicit_and_derived_stays_derived(tmp_path):
    E = {("<http://x/A>", SCO, "<http://x/B>"), ("<http://x/i>", TYPE, "<http://x/A>"),
         ("<http://x/i>", TYPE, "<http://x/B>")}
    with Store.open(tmp_path / "db") as store:
        store.add(rdf(E))
        rep = store.remove(rdf([("<http://x/i>", TYPE, "<http://x/B>")]))
        assert rep.still_derived == 1
        assert "<http://x/i> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://x/B> . " \
               "# explicit=0 count=1 step=1" in store.dump_lines(annotate=True)


@pytest.mark.parametrize("algorithm", ["counting", "dred"])
def test_random_long_sequences(tmp_path, algorithm):
    rnd = random.Random(7)
    pool = [(s, p, o) for s in NODES + PROPS for p in PROPS + VOCAB for o in NODES + PROPS + LITERALS[:1]]
    E: set = set()
    with Store.open(tmp_path / "db") as store:
        for step in range(40):
            batch = rnd.sample(pool, rnd.randint(1, 8))
            if rnd.random() < 0.55:
                store.add(rdf(batch))
                E |= set(batch)
            else:
                batch += rnd.sample(sorted(E), min(len(E), 4))
                store.remove(rdf(batch), algorithm=algorithm)
                E -= set(batch)
            assert store.dump_lines(annotate=True) == fresh_dump(E)
        assert store.dump_lines(annotate=True) == annotated_lines(closure(E))
