"""A failed Spark load leaves the store exactly as it was."""

from __future__ import annotations

import pytest
from sparkutil import random_graph, write_lines

from trine import Store
from trine.reasoning.spark import job
from trine.reasoning.spark.session import JAVA_MESSAGE, SparkUnavailable
from trine.store import bulk
from trine.store.ntriples import ParseError

pytestmark = pytest.mark.spark


@pytest.fixture
def loaded(tmp_path):
    db = tmp_path / "db"
    with Store.open(db) as s:
        s.load([str(write_lines(tmp_path / "base.nt", random_graph(3, size=12)))], engine="local")
        before = s.dump_lines(annotate=True)
    return db, before


def _leftovers(db):
    return sorted(p.name for p in db.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".spark-work"))


def test_failure_while_appending_leaves_the_store_intact(spark, tmp_path, loaded, monkeypatch):
    db, before = loaded
    calls = []

    def boom(txn, dbs, name, chunk):
        calls.append(name)
        if name == "pos":
            raise RuntimeError("injected failure in the append stage")
        return original(txn, dbs, name, chunk)

    original = bulk.append_index
    monkeypatch.setattr(bulk, "append_index", boom)
    new = write_lines(tmp_path / "new.nt", random_graph(4, size=12))
    with Store.open(db) as s:
        with pytest.raises(RuntimeError, match="injected failure"):
            s.load([str(new)], engine="spark")
        assert s.dump_lines(annotate=True) == before
    assert "pos" in calls
    assert _leftovers(db) == []


def test_bad_line_names_file_and_line_and_changes_nothing(spark, tmp_path, loaded):
    db, before = loaded
    good = write_lines(tmp_path / "good.nt", random_graph(5, size=6))
    bad = write_lines(tmp_path / "bad.nt", ["<http://ex/a> <http://ex/p> <http://ex/b> .", "",
                                            "<http://ex/a> <http://ex/p> .", "not a triple either"])
    with Store.open(db) as s:
        with pytest.raises(ParseError) as err:
            s.load([str(good), str(bad)], engine="spark")
        assert s.dump_lines(annotate=True) == before
    assert err.value.source == str(bad) and err.value.line == 3
    assert str(err.value).startswith(f"{bad}:3:")
    assert _leftovers(db) == []


def test_skip_invalid_reports_and_loads_the_rest(spark, tmp_path):
    bad = write_lines(tmp_path / "bad.nt", ["<http://ex/a> <http://ex/p> <http://ex/b> .",
                                            "<http://ex/a> <http://ex/p> .",
                                            "<http://ex/c> <http://ex/p> \"x\" ."])
    with Store.open(tmp_path / "db") as s:
        rep = s.load([str(bad)], engine="spark", skip_invalid=True)
        assert len(s) == 2
    assert [(e.source, e.line) for e in rep.skipped] == [(str(bad), 2)]


def test_no_java_gives_one_clear_line(tmp_path, monkeypatch):
    from trine.reasoning.spark import session
    monkeypatch.setattr(session, "java_executable", lambda: None)
    monkeypatch.setattr(session, "_java_checked", None)
    with Store.open(tmp_path / "db") as s:
        with pytest.raises(SparkUnavailable) as err:
            s.load([str(write_lines(tmp_path / "x.nt", random_graph(1, size=3)))], engine="spark")
    assert str(err.value) == JAVA_MESSAGE
    assert not list((tmp_path / "db").glob(".spark-work*"))


def test_unknown_options_are_errors(tmp_path):
    with Store.open(tmp_path / "db") as s:
        with pytest.raises(TypeError, match="frobnicate"):
            job.load_spark(s.db, [], frobnicate=1)
