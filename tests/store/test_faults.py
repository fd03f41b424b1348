"""Crashes, concurrent readers and competing writers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import rdflib

from trine import Store
from trine.store.database import Database, WriterBusy

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "fixtures" / "lubm1-gen.nt.gz"
ONTOLOGY = ROOT / "fixtures" / "univ-bench.nt"
EX = rdflib.Namespace("http://x/")


def small_store(path: Path) -> list[str]:
    with Store.open(path) as s:
        s.add([(EX.a, rdflib.RDFS.subClassOf, EX.b), (EX.i, rdflib.RDF.type, EX.a)])
        return s.dump_lines(annotate=True)


def run_and_kill(args: list[str], wait_for, timeout: float = 60) -> None:
    """Start a process, SIGKILL it as soon as ``wait_for()`` is true."""
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + timeout
        while not wait_for() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the process finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()


def test_sigkill_mid_load_keeps_previous_store(tmp_path):
    db = tmp_path / "db"
    before = small_store(db)
    # kill once the new environment is being written
    run_and_kill([sys.executable, "-m", "trine.cli.main", "load", str(db), str(BUNDLED), str(ONTOLOGY),
                  "--engine", "local", "-q"],
                 wait_for=lambda: any(p.name.endswith(".tmp") and any(p.iterdir()) for p in db.glob("env-*")))
    with Store.open(db) as s:
        assert s.check(deep=True).ok
        assert s.dump_lines(annotate=True) == before
        s.add([(EX.j, rdflib.RDF.type, EX.a)])  # and it is still writable
        assert (EX.j, rdflib.RDF.type, EX.b) in s


def test_sigkill_mid_update_keeps_previous_store(tmp_path):
    db = tmp_path / "db"
    before = small_store(db)
    marker = tmp_path / "started"
    script = (
        "import sys, pathlib; from trine import Store\n"
        "s = Store.open(sys.argv[1])\n"
        "import trine.reasoning.maintenance as m\n"
        "orig = m.Maintainer.insert\n"
        "def slow(self, ts):\n"
        "    r = orig(self, ts); pathlib.Path(sys.argv[3]).write_text('x')\n"
        "    import time; time.sleep(60); return r\n"
        "m.Maintainer.insert = slow\n"
        "s.add_files([sys.argv[2]])\n"
    )
    run_and_kill([sys.executable, "-c", script, str(db), str(BUNDLED), str(marker)], wait_for=marker.exists)
    with Store.open(db) as s:
        assert s.check(deep=True).ok
        assert s.dump_lines(annotate=True) == before


def test_readers_see_last_committed_state_while_writer_works(tmp_path):
    db = tmp_path / "db"
    small_store(db)
    reader = Database(db)
    with reader.read() as snapshot:
        n0 = snapshot.n_triples()
        with Store.open(db) as w:  # a second handle writes meanwhile
            w.add([(EX.k, rdflib.RDF.type, EX.a)])
            w.load([BUNDLED], engine="local")  # swaps the environment
        assert snapshot.n_triples() == n0  # the old snapshot is stable
        assert sum(1 for _ in snapshot.scan()) == n0
    with reader.read() as fresh:
        assert fresh.n_triples() > n0
    reader.close()


def test_reader_in_other_process_during_write(tmp_path):
    db = tmp_path / "db"
    small_store(db)
    code = ("import sys; from trine import Store; s = Store.open(sys.argv[1], readonly=True); "
            "print(len(s))")
    out = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, check=True)
    assert int(out.stdout) == 3


def test_second_writer_waits_or_fails_clearly(tmp_path):
    db = tmp_path / "db"
    small_store(db)
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys, time; from trine.store.database import Database\n"
                               "d = Database(sys.argv[1])\n"
                               "with d.writer_lock():\n"
                               "    print('locked', flush=True); time.sleep(30)\n", str(db)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        d = Database(db)
        with pytest.raises(WriterBusy, match="another process is writing"):
            d.write(lambda t: None, wait=False)
    finally:
        holder.kill()
        holder.wait()
    with Store.open(db) as s:  # lock released by the kernel when the holder died
        s.add([(EX.z, rdflib.RDF.type, EX.a)])


def test_map_grows_by_itself(tmp_path, monkeypatch):
    import trine.store.database as database
    monkeypatch.setattr(database, "INITIAL_MAP_SIZE", 1 << 20)  # 1 MiB: far too small
    with Store.open(tmp_path / "db") as s:
        s.add([(EX[f"s{i}"], EX.p, rdflib.Literal("x" * 200 + str(i))) for i in range(20000)])
        assert len(s) == 20000
        assert s.check().ok


def test_api_rejects_invalid_triples_and_changes_nothing(tmp_path):
    with Store.open(tmp_path / "db") as s:
        s.add([(EX.a, EX.p, EX.b)])
        with pytest.raises(ValueError, match="literal cannot be the subject"):
            s.add([(EX.c, EX.p, EX.d), (rdflib.Literal("x"), EX.p, EX.b)])
        with pytest.raises(ValueError, match="must be an IRI"):
            s.add([(EX.a, rdflib.BNode(), EX.b)])
        assert len(s) == 1


def test_load_a_directory(tmp_path):
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    (d / "a.nt").write_text("<http://x/a> <http://x/p> <http://x/b> .\n")
    (d / "sub" / "b.nt").write_text("<http://x/c> <http://x/p> <http://x/d> .\n")
    with Store.open(tmp_path / "db") as s:
        s.load([d], engine="local")
        assert len(s) == 2


def test_namespaces_including_the_default_prefix(tmp_path):
    with Store.open(tmp_path / "db") as s:
        s.bind("", "http://x/")
        s.bind("ex", "http://example.org/")
        assert dict(s.namespaces()) == {"": "http://x/", "ex": "http://example.org/"}


def test_update_during_bulk_load_waits_and_is_not_lost(tmp_path, monkeypatch):
    import threading
    import trine.reasoning.load as load_mod
    db = tmp_path / "db"
    small_store(db)
    started = threading.Event()
    real = load_mod.materialise

    def slow(ids, *a, **k):
        started.set()
        time.sleep(1.0)
        return real(ids, *a, **k)

    monkeypatch.setattr(load_mod, "materialise", slow)
    data = tmp_path / "more.nt"
    data.write_text("<http://x/m> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://x/a> .\n")
    with Store.open(db) as loader, Store.open(db) as writer:
        t = threading.Thread(target=lambda: loader.load([data], engine="local"))
        t.start()
        started.wait(10)
        writer.add([(EX.late, rdflib.RDF.type, EX.a)])  # must wait for the load's swap
        t.join()
        assert (EX.late, rdflib.RDF.type, EX.b) in writer
        assert (EX.m, rdflib.RDF.type, EX.b) in writer
        assert writer.check(deep=True).ok
