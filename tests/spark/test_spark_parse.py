"""Spark's input planning (the parse tasks themselves are tested in tests/store/test_ntriples_tasks.py)."""

from __future__ import annotations

import gzip

import pytest

from trine.reasoning.spark import parse

pytestmark = pytest.mark.spark

def test_expand_inputs_walks_directories_in_order(tmp_path):
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    for name in ("b.nt", "a.nt.gz", "sub/c.nt", ".hidden"):
        (d / name).write_bytes(gzip.compress(b"") if name.endswith(".gz") else b"")
    files = parse.expand_inputs([d], tmp_path / "spool")
    assert [f.name for f in files] == [str(d / "a.nt.gz"), str(d / "b.nt"), str(d / "sub" / "c.nt")]
    assert [f.gzip for f in files] == [True, False, False]
    with pytest.raises(FileNotFoundError):
        parse.expand_inputs([tmp_path / "missing.nt"], tmp_path / "spool")


@pytest.mark.parametrize("n, cores, most, want", [
    (1, 2, 8, 1), (2, 2, 8, 2), (7, 2, 8, 8), (5, 2, 1024, 6), (8, 2, 8, 8),
    (7, 3, 8, 6), (9, 4, 10, 8), (3, 4, 8, 3)])
def test_task_counts_fill_whole_waves(n, cores, most, want):
    from trine.reasoning.spark.session import whole_waves

    got = whole_waves(n, cores, most)
    assert got == want
    assert got <= max(n, most)
    assert got <= cores or got % cores == 0
