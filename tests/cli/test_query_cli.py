"""``trine query`` end to end (subprocess), on the bundled LUBM(1)-like data."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "fixtures" / "lubm1-gen.nt.gz"
ONTOLOGY = ROOT / "fixtures" / "univ-bench.nt"
UB = "http://swat.cse.lehigh.edu/onto/univ-bench.owl#"
Q_NAMES = (f"PREFIX ub: <{UB}> SELECT ?x ?n WHERE {{ ?x a ub:Department ; ub:name ?n }} "
           "ORDER BY ?n LIMIT 3")


def trine(*args, input=None, ok=True) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "trine.cli.main", *map(str, args)], capture_output=True,
                       text=True, input=input)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    from trine import Store
    path = tmp_path_factory.mktemp("cli") / "db"
    with Store.open(path) as store:
        store.load([BUNDLED, ONTOLOGY], engine="local")
    return path


def test_query_text_default_format_is_tsv_when_piped(db):
    out = trine("query", db, Q_NAMES).stdout
    lines = out.splitlines()
    assert lines[0] == "?x\t?n"
    assert len(lines) == 4
    assert lines[1].startswith("<http://www.Department") and lines[1].split("\t")[1].startswith('"Department')


def test_query_from_file(db, tmp_path):
    f = tmp_path / "q.rq"
    f.write_text(Q_NAMES.replace(" SELECT", "\n# a comment\nSELECT"))
    assert trine("query", db, "-f", f).stdout == trine("query", db, Q_NAMES).stdout


def test_every_format(db):
    table = trine("query", db, Q_NAMES, "--format", "table").stdout
    assert table.splitlines()[0].startswith("┌") and "?x" in table and table.rstrip().endswith("3 rows")
    widths = {len(l) for l in table.splitlines()[:-1]}
    assert len(widths) == 1  # aligned

    raw = subprocess.run([sys.executable, "-m", "trine.cli.main", "query", str(db), Q_NAMES, "--format", "csv"],
                         capture_output=True, check=True).stdout
    assert raw.count(b"\r\n") == 4 and raw.count(b"\n") == 4  # CRLF line ends, per the spec
    rows = list(csv.reader(io.StringIO(raw.decode())))
    assert rows[0] == ["x", "n"] and len(rows) == 4
    assert rows[1][0].startswith("http://www.Department") and rows[1][1].startswith("Department")

    tsv_out = trine("query", db, Q_NAMES, "--format", "tsv").stdout
    assert tsv_out.splitlines()[0] == "?x\t?n"

    js = json.loads(trine("query", db, Q_NAMES, "--format", "json").stdout)
    assert js["head"]["vars"] == ["x", "n"]
    b = js["results"]["bindings"]
    assert len(b) == 3 and b[0]["x"]["type"] == "uri" and b[0]["n"] == {"type": "literal", "value": b[0]["n"]["value"]}

    ask = json.loads(trine("query", db, "ASK { ?s ?p ?o }", "--format", "json").stdout)
    assert ask == {"head": {}, "boolean": True}
    assert trine("query", db, "ASK { <http://nowhere> ?p ?o }").stdout.strip() == "false"


def test_count_and_explicit_only(db):
    q = f"PREFIX ub: <{UB}> SELECT (COUNT(*) AS ?n) WHERE {{ ?x a ub:Person }}"
    derived = int(trine("query", db, q, "--format", "csv").stdout.splitlines()[1])
    explicit = int(trine("query", db, q, "--format", "csv", "--explicit-only").stdout.splitlines()[1])
    assert derived > 1000 and explicit == 0  # nobody is stated to be a ub:Person


def test_explain(db):
    out = trine("query", db, "--explain", f"PREFIX ub: <{UB}> SELECT ?x ?y WHERE "
                "{ ?x a ub:GraduateStudent . ?x ub:advisor ?y . ?y a ub:FullProfessor }").stdout
    ops = [l for l in out.splitlines() if "est=" in l]
    assert len(ops) >= 4 and all("actual=" in l for l in ops)
    assert "ub:advisor" in out and "rows" in out.splitlines()[-1]


def test_bad_query_reports_line_and_column(db):
    r = trine("query", db, "SELECT ?x\nWHERE { ?x ?p }", ok=False)
    assert r.returncode == 1
    assert "trine: error: line 2, column 15:" in r.stderr
    assert "Traceback" not in r.stderr


def test_unsupported_construct_is_named(db):
    r = trine("query", db, "SELECT ?x WHERE { ?x ?p ?o OPTIONAL { ?x ?q ?z } }", ok=False)
    assert r.returncode == 1
    assert "OPTIONAL is not supported" in r.stderr and "rdflib" in r.stderr
    r = trine("query", db, "SELECT ?x WHERE { ?x ?p ?o } GROUP BY ?x", ok=False)
    assert "GROUP BY" in r.stderr


def test_missing_query(db):
    r = trine("query", db, ok=False)
    assert r.returncode != 0 and "give a query" in r.stderr


def test_explain_explicit_only(db):
    q = f"PREFIX ub: <{UB}> SELECT ?x WHERE {{ ?x a ub:Person }}"
    assert trine("query", db, "--explain", q).stdout.splitlines()[-1].startswith("(")
    out = trine("query", db, "--explain", "--explicit-only", q).stdout
    assert out.splitlines()[-1].startswith("(0 rows")
