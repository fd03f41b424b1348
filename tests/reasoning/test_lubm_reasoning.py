"""LUBM(1) + ontology: the in-process engine against the reference, and a department round trip."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from trine_testing import shared_path
from reference import annotated_lines, closure
from trine import Store
from trine.store.ntriples import read_triples

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lubm1(tmp_path_factory):
    data = shared_path("data/lubm/lubm1.nt.gz")
    onto = shared_path("data/lubm/univ-bench.nt")
    db = tmp_path_factory.mktemp("lubm1") / "db"
    store = Store.open(db)
    store.load([data, onto], engine="local")
    yield store, data, onto
    store.close()


def test_lubm1_equals_reference(lubm1):
    store, data, onto = lubm1
    E = set(read_triples(data)) | set(read_triples(onto))
    expected = annotated_lines(closure(E))
    got = store.dump_lines(annotate=True)
    assert len(got) == 126730  # the rho-df closure size given in ../shared/data/lubm/README.md
    assert got == expected


@pytest.mark.parametrize("algorithm", ["counting", "dred"])
def test_remove_and_readd_department(lubm1, tmp_path, algorithm):
    store, data, _ = lubm1
    before = store.dump_lines(annotate=True)
    dept = tmp_path / "dept3.nt"
    with gzip.open(data, "rt") as f, open(dept, "w") as out:
        out.writelines(line for line in f if "Department3.University0.edu" in line)
    rep = store.remove_files([dept], algorithm=algorithm)
    assert rep.explicit_removed > 5000 and rep.derived_removed > 0
    assert store.check(deep=True).ok
    store.add_files([dept])
    assert store.dump_lines(annotate=True) == before


def test_dynamite_schema_update(lubm1):
    """DynamiTE's update 4 (sub-property change on ub:headOf) both ways, against a fresh load."""
    store, data, onto = lubm1
    up = shared_path("data/dynamite-updates")
    before = store.dump_lines(annotate=True)
    store.remove_files([up / "remove_update4.nt.gz"])
    store.add_files([up / "add_update4.nt.gz"])
    E = (set(read_triples(data)) | set(read_triples(onto)) | set(read_triples(up / "add_update4.nt.gz"))) \
        - set(read_triples(up / "remove_update4.nt.gz"))
    assert store.dump_lines(annotate=True) == annotated_lines(closure(E))
    store.remove_files([up / "add_update4.nt.gz"])
    store.add_files([up / "remove_update4.nt.gz"])
    assert store.dump_lines(annotate=True) == before


def test_bundled_generator_data_loads_without_shared(tmp_path):
    with Store.open(tmp_path / "db") as store:
        store.load([ROOT / "fixtures/lubm1-gen.nt.gz", ROOT / "fixtures/univ-bench.nt"], engine="local")
        assert store.check(deep=True).ok
        assert store.stats()["derived"] > 20000
