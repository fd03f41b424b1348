"""``trine repl``: through a pseudo-terminal (pexpect), plus the input and
completion logic in-process."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pexpect
import pytest
from prompt_toolkit.document import Document

from trine.cli.repl import TrineCompleter, is_complete

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "fixtures" / "lubm1-gen.nt.gz"
ONTOLOGY = ROOT / "fixtures" / "univ-bench.nt"
UB = "http://swat.cse.lehigh.edu/onto/univ-bench.owl#"
PROMPT = "trine>"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    from trine import Store
    path = tmp_path_factory.mktemp("repl") / "db"
    with Store.open(path) as store:
        store.load([BUNDLED, ONTOLOGY], engine="local")
        store.bind("ub", UB)
    return path


def spawn(db, history: Path, term: str = "dumb") -> pexpect.spawn:
    env = dict(os.environ, TERM=term, TRINE_HISTORY=str(history), PROMPT_TOOLKIT_NO_CPR="1",
               COLUMNS="200", LINES="40")
    child = pexpect.spawn(sys.executable, ["-m", "trine.cli.main", "repl", str(db)], env=env,
                          encoding="utf-8", timeout=60, dimensions=(40, 200))
    # keys typed before prompt_toolkit switches the terminal to raw mode would
    # be read by the line discipline (^D as end of file): give it a moment
    child.delaybeforesend = 0.25
    child.expect_exact(PROMPT)
    return child


def run(child, line: str, expect: str | None = None) -> str:
    """Send a line; wait for ``expect`` then the prompt; the output in between."""
    child.send(line + "\r")
    out = ""
    if expect is not None:
        child.expect_exact(expect)
        out = child.before + child.after
    child.expect_exact(PROMPT)
    return out + child.before


def quit_(child) -> None:
    child.send(".quit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_session_queries_and_commands(db, tmp_path):
    child = spawn(db, tmp_path / "hist")
    out = run(child, f"SELECT ?d WHERE {{ ?d a ub:Department }} ORDER BY ?d LIMIT 2", "2 rows")
    assert "Department0.University0.edu" in out and "┌" in out
    # a bare triple pattern, ended with '.'
    out = run(child, "?x ub:name \"Department1\" .", "1 row")
    assert "Department1.University0.edu" in out
    # a multi-line query: continues until the braces close
    child.send("SELECT (COUNT(*) AS ?n)\r")
    child.send("WHERE { ?x a ub:FullProfessor }\r")
    child.expect_exact("1 row")
    child.expect_exact(PROMPT)
    # a bare pattern without '.' runs on a blank line
    child.send("?x ub:name \"Department2\"\r")
    child.send("\r")
    child.expect_exact("1 row")
    child.expect_exact(PROMPT)
    out = run(child, ".help", ".quit")
    assert ".explain" in out and ".timing" in out
    out = run(child, ".prefixes", "PREFIX xsd:")
    for p in ("rdf:", "rdfs:", "owl:", "ub:"):
        assert f"PREFIX {p}" in out + child.before
    run(child, ".prefix ex: <http://example.org/>", "PREFIX ex: <http://example.org/>")
    out = run(child, ".prefixes", "PREFIX xsd:")
    assert "PREFIX ex: <http://example.org/>" in out
    run(child, ".timing on", "timing on")
    out = run(child, "ASK { ?x a ub:University }", " ms)")
    assert "true" in out
    run(child, ".timing off", "timing off")
    run(child, ".format csv", "format csv")
    out = run(child, "SELECT ?n WHERE { <http://www.Department3.University0.edu> ub:name ?n }", "Department3")
    assert "\nn\r" in out  # the CSV header (CRLF line ends)
    assert "┌" not in out
    run(child, ".format json", "format json")
    out = run(child, "SELECT ?n WHERE { <http://www.Department3.University0.edu> ub:name ?n }", '"bindings"')
    run(child, ".format table", "format table")
    out = run(child, ".explain SELECT ?x WHERE { ?x a ub:Department }", "actual=")
    out = run(child, "SELECT ?x WHERE { ?x ?p }", "error: line 1, column")
    assert "^" in child.before or "^" in out
    run(child, "SELECT ?x WHERE { ?x ?p ?o OPTIONAL { ?x ?q ?r } }", "OPTIONAL is not supported")
    run(child, ".nonsense", "unknown command")
    quit_(child)


def test_ctrl_c_cancels_a_long_query_and_keeps_the_session(db, tmp_path):
    child = spawn(db, tmp_path / "hist")
    child.send("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f }\r")
    time.sleep(1.5)
    child.sendintr()
    child.expect_exact("query cancelled", timeout=30)
    child.expect_exact(PROMPT)
    out = run(child, "ASK { ?x a ub:University }", "true")
    # Ctrl-C at the prompt clears the input, Ctrl-D leaves
    child.send("SELECT ?x")
    time.sleep(0.25)  # sendintr/sendeof do not wait like send does
    child.sendintr()
    child.expect_exact(PROMPT)
    time.sleep(0.25)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_history_is_kept_across_sessions(db, tmp_path):
    hist = tmp_path / "hist"
    child = spawn(db, hist)
    run(child, "ASK { ?x a ub:Course }", "true")
    quit_(child)
    text = hist.read_text()
    assert "ASK { ?x a ub:Course }" in text
    # a new session recalls it with the Up arrow
    child = spawn(db, hist)
    child.send("\x1b[A")  # Up: the last entry is '.quit'
    child.send("\x1b[A")
    child.send("\r")
    child.expect_exact("true")
    child.expect_exact(PROMPT)
    quit_(child)


def test_long_results_are_paged(db, tmp_path):
    child = spawn(db, tmp_path / "hist")
    run(child, ".paging on", "paging on")
    child.send("SELECT ?x WHERE { ?x a ub:Course }\r")
    child.expect_exact("-- more")
    child.send("\r")
    child.expect_exact("-- more")
    child.send("q\r")
    child.expect_exact("(output stopped)")
    child.expect_exact(PROMPT)
    run(child, "ASK { ?x a ub:Course }", "true")
    quit_(child)


def test_full_terminal_session(db, tmp_path):
    """The same REPL on a capable terminal (escape sequences, real rendering)."""
    child = spawn(db, tmp_path / "hist", term="xterm-256color")
    child.send("SELECT ?d WHERE { ?d a ub:Department } LIMIT 1\r")
    child.expect_exact("1 row")
    child.expect_exact(PROMPT)
    child.send(".quit\r")
    child.expect(pexpect.EOF)


# ---------------------------------------------------------------------------
# In-process: when Enter runs the input, and completion
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, complete", [
    ("SELECT * WHERE { ?x ?p ?o }", True),
    ("SELECT * WHERE { ?x ?p ?o", False),
    ("SELECT * WHERE {\n ?x ?p ?o .", False),
    ("SELECT * WHERE {\n ?x ?p ?o .\n", True),          # a blank line always submits
    ("SELECT * WHERE { ?x ?p \"}\" ", False),          # braces inside strings do not count
    ("SELECT * WHERE { ?x ?p ?o } LIMIT 5", True),
    ("SELECT * WHERE { ?x ?p ?o } ORDER BY ?x", True),
    ("SELECT * WHERE { ?x ?p ?o } ORDER BY DESC(?x)", True),
    ("SELECT * WHERE { ?x ?p ?o } OFFSET 2", True),
    ("SELECT * WHERE { ?x ?p ?o } LIMIT", False),
    ("PREFIX ex: <http://e/>", False),
    ("?x a ex:C .", True),
    ("?x a ex:C", False),
    ("?x a ex:C\n", True),                              # Enter on a blank line
    (".help", True),
    ("", False),
])
def test_is_complete(text, complete):
    assert is_complete(text) is complete


def _completions(completer, text):
    return [c.text for c in completer.get_completions(Document(text, len(text)), None)]


def test_completion():
    c = TrineCompleter({"ub": UB, "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#"},
                       [UB + "takesCourse", UB + "GraduateStudent", "http://other.org/x#Thing"])
    assert "ub:takesCourse" in _completions(c, "SELECT * { ?x ub:tak")
    assert "ub:GraduateStudent" in _completions(c, "?x a Gradu")           # by local name
    assert "<http://other.org/x#Thing>" in _completions(c, "?x a Thi")      # no prefix: full IRI
    assert "ub:" in _completions(c, "?x u")
    assert _completions(c, "SELECT ?student ?sup { ?student ub:advisor ?s") == ["?student", "?sup"]
    assert ".help" in _completions(c, ".he")
    assert "SELECT" in _completions(c, "sel")
