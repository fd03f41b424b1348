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
