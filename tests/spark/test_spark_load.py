"""A Spark load yields exactly the in-process load's store (the annotated dump)."""

from __future__ import annotations

import pytest
from reference import annotated_lines, closure
from sparkutil import SPO, TYPE, diff, local_dump, meta_free_graph, random_graph, spark_dump, write_lines

from trine import Store
from trine.store import ntriples

pytestmark = pytest.mark.spark


def test_lubm1_shared_equals_local(spark, tmp_path, shared_lubm1):
    expected = local_dump(tmp_path / "local", shared_lubm1)
    got = spark_dump(tmp_path / "spark", shared_lubm1)
    assert got == expected, diff(got, expected)


def test_lubm1_bundled_equals_local_with_six_spark_runs(spark, tmp_path, bundled_lubm1):
    """The bundled generator output; all six orders sorted by Spark (runs='six')."""
    expected = local_dump(tmp_path / "local", bundled_lubm1)
    with Store.open(tmp_path / "spark") as s:
        rep = s.load([str(f) for f in bundled_lubm1], engine="spark", runs="six")
        got = s.dump_lines(annotate=True)
        assert s.check(deep=True).ok
    assert rep.runs == "six" and rep.engine == "spark"
    assert got == expected, diff(got, expected)
    # Same first-occurrence numbering as the in-process dictionary: same ids too.
    with Store.open(tmp_path / "local") as a, Store.open(tmp_path / "spark") as b:
        with a.db.read() as ta, b.db.read() as tb:
            assert list(ta.scan_records()) == list(tb.scan_records())


GRAPHS = list(range(15))


def test_random_graphs_equal_local_and_reference(spark, tmp_path):
    """Small random graphs over a tiny vocabulary (cycles, self-loops, meta-use
    of rdfs:subPropertyOf/subClassOf/domain/range and rdf:type, literals and
    blank nodes everywhere), each loaded by Spark, locally, and closed by the
    independent reference."""
    for seed in GRAPHS:
        lines = random_graph(seed)
        path = write_lines(tmp_path / f"g{seed}.nt", lines)
        expected = local_dump(tmp_path / f"local{seed}", [path])
        ref = annotated_lines(closure(set(ntriples.parse_text("\n".join(lines)))))
        assert expected == ref, f"seed {seed}: the local engine disagrees with the reference"
        got = spark_dump(tmp_path / f"spark{seed}", [path])
        assert got == expected, f"seed {seed}: " + diff(got, expected)


def test_closure_paths(spark, tmp_path, bundled_lubm1, monkeypatch):
    """Data that cannot change the schema is closed in two passes, anything
    else by rounds; both give the local (and reference) records."""
    for seed in range(6):
        lines = meta_free_graph(seed)
        path = write_lines(tmp_path / f"m{seed}.nt", lines)
        expected = annotated_lines(closure(set(ntriples.parse_text("\n".join(lines)))))
        with Store.open(tmp_path / f"spark{seed}") as s:
            rep = s.load([str(path)], engine="spark")
            got = s.dump_lines(annotate=True)
        assert rep.closure == "fixed schema"
        assert got == expected, f"seed {seed}: " + diff(got, expected)
    meta = write_lines(tmp_path / "meta.nt", [f"<http://ex/p> {SPO} {TYPE} .",
                                              "<http://ex/a> <http://ex/p> <http://ex/C> ."])
    with Store.open(tmp_path / "meta") as s:
        assert s.load([str(meta)], engine="spark").closure == "rounds"
        assert (s.dump_lines() == sorted(["<http://ex/a> <http://ex/p> <http://ex/C> .",
                                          f"<http://ex/a> {TYPE} <http://ex/C> .", f"<http://ex/p> {SPO} {TYPE} ."]))

    from trine.reasoning.spark import fixed_schema
    monkeypatch.setattr(fixed_schema, "TABLE_ROWS_MAX", 0)    # "too big to broadcast": rounds
    expected = local_dump(tmp_path / "local", bundled_lubm1)
    with Store.open(tmp_path / "rounds") as s:
        rep = s.load([str(f) for f in bundled_lubm1], engine="spark")
        got = s.dump_lines(annotate=True)
    assert rep.closure == "rounds" and rep.rounds == 3
    assert got == expected, diff(got, expected)


def test_many_files_directories_and_gzip(spark, tmp_path):
    import gzip
    lines = random_graph(101, size=40) + random_graph(102, size=40)
    d = tmp_path / "in"
    d.mkdir()
    write_lines(d / "part1.nt", lines[:30])
    (d / "part2.nt.gz").write_bytes(gzip.compress(("\n".join(lines[30:60]) + "\n").encode()))
    extra = write_lines(tmp_path / "extra.nt", lines[60:] + lines[:5])  # duplicates across files
    files = [d / "part1.nt", d / "part2.nt.gz", extra]
    expected = local_dump(tmp_path / "local", files)
    got = spark_dump(tmp_path / "spark", [d, extra])
    assert got == expected, diff(got, expected)


def test_empty_input(spark, tmp_path):
    path = write_lines(tmp_path / "empty.nt", ["# nothing here", ""])
    with Store.open(tmp_path / "db") as s:
        rep = s.load([str(path)], engine="spark")
        assert rep.input_triples == 0 and rep.triples == 0 and len(s) == 0
        assert s.check().ok


def test_exact_dictionary_and_hash_collision_fallback(spark, tmp_path, monkeypatch):
    """Terms are grouped on 64-bit hashes; a collision (here: rdf:type made to
    share the hash of an input term) is detected by the second hash and the
    dictionary is rebuilt on the strings.  ``exact=True`` forces that path."""
    from trine.reasoning.spark import encode, parse

    lines = random_graph(21, size=20) + ["<http://ex/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
                                         "<http://ex/b> ."]
    path = write_lines(tmp_path / "g.nt", lines)
    expected = local_dump(tmp_path / "local", [path])
    with Store.open(tmp_path / "exact") as s:
        rep = s.load([str(path)], engine="spark", exact=True)
        assert rep.exact_dictionary
        got = s.dump_lines(annotate=True)
    assert got == expected, diff(got, expected)

    (h_a,), _, _ = parse.term_hashes(["<http://ex/a>"])
    real = encode.vocabulary_rows

    def colliding():
        return [(tid, h_a if term.endswith("#type>") else h, h2, kind, term) for tid, h, h2, kind, term in real()]

    monkeypatch.setattr(encode, "vocabulary_rows", colliding)
    with Store.open(tmp_path / "collision") as s:
        rep = s.load([str(path)], engine="spark")
        assert rep.exact_dictionary
        got = s.dump_lines(annotate=True)
    assert got == expected, diff(got, expected)


def test_key_map_joined_by_spark(spark, tmp_path, monkeypatch):
    """Above MAP_SIDE_TERMS terms the encode tasks do not read the whole
    hash -> id table; Spark joins the keys with their ids instead.  Forced
    here, on a merge (stored terms keep their ids), both ways agree."""
    from trine.reasoning.spark import encode

    lines = random_graph(33, size=40)
    first, second = write_lines(tmp_path / "a.nt", lines[:25]), write_lines(tmp_path / "b.nt", lines[15:])
    expected = local_dump(tmp_path / "local", [first, second])
    monkeypatch.setattr(encode, "MAP_SIDE_TERMS", 0)
    with Store.open(tmp_path / "joined") as s:
        s.load([str(first)], engine="spark")
        s.load([str(second)], engine="spark")
        got = s.dump_lines(annotate=True)
    assert got == expected, diff(got, expected)
