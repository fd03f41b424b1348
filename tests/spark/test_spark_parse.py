"""The Spark tasks' reader numbers lines exactly like the in-process reader."""

from __future__ import annotations

import gzip
import random

import pytest

from trine.reasoning.spark import parse
from trine.store import ntriples

pytestmark = pytest.mark.spark

PIECES = [b'<http://a/s> <http://a/p> "x" .', b"", b"# comment", b"bad line", b'<http://a/s> <http://a/p> _:b1 .',
          b"\xff\xfe not utf-8", b"<a> <b> <c> .", b'<http://a/s> <http://a/p> "caf\xc3\xa9"@FR .']
SEPARATORS = [b"\n", b"\r", b"\r\n", b"\n\n", b"\r\r\n"]


def _reference(path):
    errors: list[ntriples.ParseError] = []
    triples = list(ntriples.read_triples(path, skip_invalid=True, errors=errors))
    return triples, [(0, e.line, e.column, e.message) for e in errors]


@pytest.mark.parametrize("seed", range(6))
def test_line_numbers_and_errors_match_the_local_reader(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(parse, "CHUNK_BYTES", 29)  # many chunks, cut everywhere
    rnd = random.Random(seed)
    for trial in range(40):
        data = b"".join(rnd.choice(PIECES) + rnd.choice(SEPARATORS) for _ in range(rnd.randint(0, 30)))
        if data and rnd.random() < 0.3:
            data = data[:-1]
        path = tmp_path / f"in-{trial}.nt"
        path.write_bytes(gzip.compress(data) if trial % 3 == 0 else data)
        ref_triples, ref_errors = _reference(path)
        for parts in (1, 2, 3):
            rows = list(parse.run_tasks([(k, 0, str(path), k, parts, True) for k in range(parts)]))
            errors = sorted(r[1:] for r in rows if r[0] == parse.ERROR)
            terms = {r[1]: r[4] for r in rows if r[0] == parse.TERM}
            triples = [tuple(terms[k] for k in r[1:4]) for r in rows if r[0] == parse.TRIPLE]
            assert errors == ref_errors
            assert sorted(triples) == sorted(ref_triples)


def test_first_positions_follow_file_order(tmp_path):
    path = tmp_path / "x.nt"
    path.write_text("<http://a/1> <http://a/p> <http://a/2> .\n\n<http://a/3> <http://a/p> <http://a/1> .\n")
    rows = list(parse.run_tasks([(0, 5, str(path), 0, 1, False)]))
    first = {r[4]: r[2] for r in rows if r[0] == parse.TERM}
    pos = lambda line, slot: (5 << parse.FILE_SHIFT) | (line << parse.LINE_SHIFT) | slot  # noqa: E731
    assert first == {"<http://a/1>": pos(1, 0), "<http://a/p>": pos(1, 1), "<http://a/2>": pos(1, 2),
                     "<http://a/3>": pos(3, 0)}


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
