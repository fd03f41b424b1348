"""Loading into a non-empty store merges: the result is one load of the union."""

from __future__ import annotations

import pytest
from sparkutil import diff, local_dump, random_graph, write_lines

from trine import Store

pytestmark = pytest.mark.spark


def _halves(tmp_path, seed: int, size: int):
    lines = random_graph(seed, size=size)
    # Shared blank nodes and terms across the halves, overlapping triples.
    a = write_lines(tmp_path / f"a{seed}.nt", lines[: size * 2 // 3])
    b = write_lines(tmp_path / f"b{seed}.nt", lines[size // 3:])
    union = write_lines(tmp_path / f"u{seed}.nt", lines)
    return a, b, union


@pytest.mark.parametrize("seed", [7, 11])
def test_two_spark_loads_equal_one_load_of_the_union(spark, tmp_path, seed):
    a, b, union = _halves(tmp_path, seed, 24)
    expected = local_dump(tmp_path / "union", [union])
    with Store.open(tmp_path / "db") as s:
        s.load([str(a)], engine="spark")
        rep = s.load([str(b)], engine="spark")
        got = s.dump_lines(annotate=True)
        assert s.check(deep=True).ok
    assert got == expected, diff(got, expected)
    assert rep.explicit == len([line for line in expected if "explicit=1" in line])


def test_local_then_spark_equals_one_load_of_the_union(spark, tmp_path, bundled_lubm1):
    """The bundled LUBM(1) loaded locally, then the ontology (and a small graph
    using existing terms and new ones) through Spark."""
    extra = write_lines(tmp_path / "extra.nt", [
        "<http://www.Department0.University0.edu/FullProfessor0> "
        "<http://swat.cse.lehigh.edu/onto/univ-bench.owl#headOf> <http://ex/newDept> .",
        "<http://ex/newDept> <http://www.w3.org/2000/01/rdf-schema#label> \"new\"@en .",
    ])
    data, ontology = bundled_lubm1
    expected = local_dump(tmp_path / "union", [data, ontology, extra])
    with Store.open(tmp_path / "db") as s:
        s.load([str(data)], engine="local")
        s.add_files([str(extra)])  # an update between the loads
        s.load([str(ontology)], engine="spark")
        got = s.dump_lines(annotate=True)
    assert got == expected, diff(got, expected)
