"""Parse tasks (a file share each) number lines, report errors and record
first occurrences exactly like the sequential reader; both the worker
processes of a local load and Spark's Python workers run them."""

from __future__ import annotations

import gzip
import random

import pytest

from trine.store import ntriples, ntriples_tasks

PIECES = [b'<http://a/s> <http://a/p> "x" .', b"", b"# comment", b"bad line", b'<http://a/s> <http://a/p> _:b1 .',
          b"\xff\xfe not utf-8", b"<a> <b> <c> .", b'<http://a/s> <http://a/p> "caf\xc3\xa9"@FR .']
SEPARATORS = [b"\n", b"\r", b"\r\n", b"\n\n", b"\r\r\n"]


def _reference(path):
    errors: list[ntriples.ParseError] = []
    triples = list(ntriples.read_triples(path, skip_invalid=True, errors=errors))
    return triples, [(0, e.line, e.column, e.message) for e in errors]


@pytest.mark.parametrize("seed", range(6))
def test_line_numbers_and_errors_match_the_local_reader(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(ntriples_tasks, "CHUNK_BYTES", 29)  # many chunks, cut everywhere
    rnd = random.Random(seed)
    for trial in range(40):
        data = b"".join(rnd.choice(PIECES) + rnd.choice(SEPARATORS) for _ in range(rnd.randint(0, 30)))
        if data and rnd.random() < 0.3:
            data = data[:-1]
        path = tmp_path / f"in-{trial}.nt"
        path.write_bytes(gzip.compress(data) if trial % 3 == 0 else data)
        ref_triples, ref_errors = _reference(path)
        for parts in (1, 2, 3):
            rows = list(ntriples_tasks.run_tasks([(k, 0, str(path), k, parts, True) for k in range(parts)]))
            errors = sorted(r[1:] for r in rows if r[0] == ntriples_tasks.ERROR)
            terms = {r[1]: r[4] for r in rows if r[0] == ntriples_tasks.TERM}
            triples = [tuple(terms[k] for k in r[1:4]) for r in rows if r[0] == ntriples_tasks.TRIPLE]
            assert errors == ref_errors
            assert sorted(triples) == sorted(ref_triples)


def test_first_positions_follow_file_order(tmp_path):
    path = tmp_path / "x.nt"
    path.write_text("<http://a/1> <http://a/p> <http://a/2> .\n\n<http://a/3> <http://a/p> <http://a/1> .\n")
    rows = list(ntriples_tasks.run_tasks([(0, 5, str(path), 0, 1, False)]))
    first = {r[4]: r[2] for r in rows if r[0] == ntriples_tasks.TERM}
    pos = lambda line, slot: (5 << ntriples_tasks.FILE_SHIFT) | (line << ntriples_tasks.LINE_SHIFT) | slot  # noqa: E731
    assert first == {"<http://a/1>": pos(1, 0), "<http://a/p>": pos(1, 1), "<http://a/2>": pos(1, 2),
                     "<http://a/3>": pos(3, 0)}
