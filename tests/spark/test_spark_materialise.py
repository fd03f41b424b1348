"""``materialise_files``: the closure exported without building a store."""

from __future__ import annotations

import gzip

import pytest
from sparkutil import diff, local_dump, random_graph, write_lines

from trine.reasoning.spark.job import materialise_files

pytestmark = pytest.mark.spark


def test_nt_export_equals_the_annotated_dump(spark, tmp_path):
    lines = random_graph(31, size=25) + random_graph(32, size=25)
    src = write_lines(tmp_path / "in.nt", lines)
    expected = local_dump(tmp_path / "local", [src])
    out = tmp_path / "closure.nt.gz"
    n = materialise_files([src], out, "nt", annotate=True)
    got = gzip.decompress(out.read_bytes()).decode().splitlines()
    assert n == len(expected)
    assert got == expected, diff(got, expected)


def test_parquet_export(spark, tmp_path):
    import pyarrow.parquet as pq

    src = write_lines(tmp_path / "in.nt", random_graph(33, size=20))
    expected = local_dump(tmp_path / "local", [src])
    out = tmp_path / "closure"
    n = materialise_files([src], out, "parquet")
    t = pq.read_table(out)
    got = sorted(f"{s} {p} {o} . # explicit={int(e)} count={c} step={st}"
                 for s, p, o, e, c, st in zip(*(t.column(k).to_pylist()
                                                for k in ("s", "p", "o", "explicit", "count", "step"))))
    assert n == len(expected) == t.num_rows
    assert got == sorted(expected)
    with pytest.raises(Exception, match="already exists"):
        materialise_files([src], out, "parquet")
