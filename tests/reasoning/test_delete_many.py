"""Txn.delete_many, set_records and insert_many (maintenance's batched writes) against their per-triple forms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trine.store.database import Database
from trine.store.keys import INDEX_NAMES, Record

ids = st.integers(min_value=1, max_value=6).map(lambda x: x << 2)
stored = st.dictionaries(st.tuples(ids, ids, ids), st.booleans(), min_size=1, max_size=60)


def snapshot(db: Database) -> tuple:
    with db.read() as txn:
        out = []
        for name in INDEX_NAMES:
            c = txn.cursor(name)
            out.append(list(c.iternext(keys=True, values=True)) if c.first() else [])
        return tuple(out), txn.n_triples(), txn.n_explicit()


def build(path, triples: dict) -> Database:
    db = Database(path, create=True)
    db.write(lambda txn: [txn.insert(*t, Record(e, 1 + i, 0 if e else 1)) for i, (t, e) in enumerate(triples.items())])
    return db


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored, st.data())
def test_delete_many_equals_one_by_one(tmp_path_factory, triples, data):
    keys = sorted(triples)
    # Whole subjects (the whole-key path) as well as scattered triples.
    subjects = data.draw(st.sets(st.sampled_from(sorted({t[0] for t in keys}))))
    gone = {t for t in keys if t[0] in subjects} | set(data.draw(st.lists(st.sampled_from(keys))))
    gone_list = data.draw(st.permutations(sorted(gone)))
    d = tmp_path_factory.mktemp("dm")
    a, b = build(d / "a", triples), build(d / "b", triples)
    try:
        a.write(lambda txn: txn.delete_many(gone_list))
        b.write(lambda txn: [txn.delete(*t) for t in gone_list])
        assert snapshot(a) == snapshot(b)
    finally:
        a.close()
        b.close()


def test_delete_many_rejects_absent_and_repeated(tmp_path):
    db = build(tmp_path / "db", {(4, 8, 12): True, (4, 8, 16): False})
    try:
        before = snapshot(db)
        for bad in ([(4, 8, 12), (4, 8, 20)], [(4, 8, 12), (4, 8, 12)], [(4, 8, 12), (4, 8, 16), (4, 12, 4)],
                    [(8, 8, 8)]):
            with pytest.raises(KeyError):
                db.write(lambda txn: txn.delete_many(bad))
            assert snapshot(db) == before
    finally:
        db.close()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored, st.data())
def test_set_records_equals_one_by_one(tmp_path_factory, triples, data):
    keys = sorted(triples)
    new = data.draw(st.dictionaries(st.sampled_from(keys), st.tuples(st.booleans(), st.integers(1, 9), st.integers(0, 9))))
    items = [(t, Record(*r)) for t, r in new.items()]
    d = tmp_path_factory.mktemp("sr")
    a, b = build(d / "a", triples), build(d / "b", triples)
    try:
        a.write(lambda txn: txn.set_records(items))
        b.write(lambda txn: [txn.set_record(*t, r) for t, r in items])
        assert snapshot(a) == snapshot(b)
        with pytest.raises(KeyError):
            a.write(lambda txn: txn.set_records([((100, 100, 100), Record(True, 1, 0))]))
    finally:
        a.close()
        b.close()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored, st.dictionaries(st.tuples(ids, ids, ids), st.tuples(st.booleans(), st.integers(1, 9), st.integers(0, 9)),
                               max_size=40), st.data())
def test_insert_many_equals_one_by_one(tmp_path_factory, triples, new, data):
    # insertion's batched write: the new triples (not stored yet) in any order
    items = data.draw(st.permutations(sorted((t, Record(*r)) for t, r in new.items() if t not in triples)))
    d = tmp_path_factory.mktemp("im")
    a, b = build(d / "a", triples), build(d / "b", triples)
    try:
        arr = np.array([t for t, _ in items], dtype=np.uint32).reshape(-1, 3)
        cols = [np.array([r[i] for _, r in items], dtype=np.int64) for i in range(3)]
        a.write(lambda txn: txn.insert_many(arr, *cols))
        b.write(lambda txn: [txn.insert(*t, r) for t, r in items])
        assert snapshot(a) == snapshot(b)
    finally:
        a.close()
        b.close()


def test_insert_many_rejects_stored_and_repeated(tmp_path):
    db = build(tmp_path / "db", {(4, 8, 12): True})
    try:
        before = snapshot(db)
        one = np.ones(2, dtype=np.int64)
        for bad in ([(4, 8, 16), (4, 8, 12)], [(4, 8, 16), (4, 8, 16)]):
            with pytest.raises(KeyError):
                db.write(lambda txn: txn.insert_many(np.array(bad, dtype=np.uint32), one, one, one))
            assert snapshot(db) == before
    finally:
        db.close()
