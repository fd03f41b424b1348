"""End to end through the `trine` command, as a user would run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "fixtures" / "lubm1-gen.nt.gz"
ONTOLOGY = ROOT / "fixtures" / "univ-bench.nt"


def trine(*args: str, input: str | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "trine.cli.main", *map(str, args)], capture_output=True,
                       text=True, input=input)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


@pytest.mark.parametrize("cmd", ["load", "add", "remove", "dump", "stats", "check", "query", "repl", "materialise"])
def test_every_command_has_help(cmd):
    assert "Usage:" in trine(cmd, "--help").stdout


def test_load_dump_round_trip(tmp_path):
    db = tmp_path / "db"
    r = trine("load", db, BUNDLED, ONTOLOGY, "--engine", "local")
    assert "after materialisation" in r.stderr
    explicit = trine("dump", db, "--explicit-only").stdout.splitlines()
    db2 = tmp_path / "db2"
    trine("load", db2, "-", "--engine", "local", input="\n".join(explicit) + "\n")
    assert trine("dump", db2, "--annotate").stdout == trine("dump", db, "--annotate").stdout
    assert "ok:" in trine("check", db, "--deep").stdout


def test_annotated_dump_format(tmp_path):
    db = tmp_path / "db"
    data = ("<http://x/A> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <http://x/B> .\n"
            "<http://x/i> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://x/A> .\n")
    trine("add", db, "-", input=data)
    assert trine("dump", db, "--annotate").stdout == (
        "<http://x/A> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <http://x/B> . # explicit=1 count=1 step=0\n"
        "<http://x/i> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://x/A> . # explicit=1 count=1 step=0\n"
        "<http://x/i> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://x/B> . # explicit=0 count=1 step=1\n")


def test_add_remove_and_not_explicit_note(tmp_path):
    db = tmp_path / "db"
    f = tmp_path / "u.nt"
    f.write_text("<http://x/A> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <http://x/B> .\n"
                 "<http://x/i> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://x/A> .\n")
    trine("add", db, f)
    derived = tmp_path / "d.nt"
    derived.write_text("<http://x/i> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://x/B> .\n")
    r = trine("remove", db, derived)
    assert "not explicit" in r.stderr
    r = trine("remove", db, f, "--algorithm", "dred")
    assert "removed 2 explicit" in r.stderr
    assert trine("dump", db).stdout == ""


def test_bad_file_error_names_file_line_and_keeps_store(tmp_path):
    db = tmp_path / "db"
    trine("load", db, ONTOLOGY, "--engine", "local")
    before = trine("dump", db, "--annotate").stdout
    bad = tmp_path / "bad.nt"
    bad.write_text("<http://x/a> <http://x/p> <http://x/b> .\n<http://x/a> <http://x/p> oops .\n")
    for cmd in ("load", "add", "remove"):
        r = trine(cmd, db, bad, ok=False)
        assert r.returncode == 1
        assert f"{bad}:2:27:" in r.stderr and "nothing was changed" in r.stderr
    assert trine("dump", db, "--annotate").stdout == before
    r = trine("load", db, bad, "--skip-invalid", "--engine", "local")
    assert "skipped 1 invalid line" in r.stderr and f"{bad}:2:27" in r.stderr


def test_stats_and_missing_store(tmp_path):
    db = tmp_path / "db"
    trine("load", db, ONTOLOGY, "--engine", "local")
    out = trine("stats", db).stdout
    assert "explicit    293" in out and "bytes/triple" in out
    r = trine("stats", tmp_path / "nope", ok=False)
    assert r.returncode != 0


def test_check_reports_corruption(tmp_path):
    db = tmp_path / "db"
    trine("load", db, ONTOLOGY, "--engine", "local")
    from trine.store.database import Database
    from trine.store.keys import pack_id, pack_pair
    d = Database(db)
    with d.env.begin(write=True) as txn:  # delete one entry from one index behind trine's back
        c = txn.cursor(db=d._dbs["osp"])
        c.first()
        c.delete()
    d.close()
    r = trine("check", db, ok=False)
    assert r.returncode == 2 and "index osp" in r.stderr
