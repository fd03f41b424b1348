"""Parallel parsing of bulk inputs: worker processes must give exactly what a
sequential read gives (same dictionary, same triples, same errors)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest

from trine import Store
from trine.store import bulk, ntriples
from trine.store.bulk import Dictionary, encode_files

ROOT = Path(__file__).resolve().parents[2]
LUBM1 = ROOT / "fixtures" / "lubm1-gen.nt.gz"


@pytest.fixture(scope="module")
def lubm_plain(tmp_path_factory) -> Path:
    """The bundled LUBM(1) decompressed: about 13 MB, so several 4 MiB chunks."""
    out = tmp_path_factory.mktemp("lubm") / "lubm1.nt"
    with gzip.open(LUBM1, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def encode(paths, workers, **kw):
    d = Dictionary()
    errors: list[ntriples.ParseError] = []
    ids = encode_files(paths, d, workers=workers, parallel_min_bytes=0, errors=errors, **kw)
    return d, ids, errors


def as_set(ids: np.ndarray) -> set[tuple[int, int, int]]:
    return set(map(tuple, ids.tolist()))


def test_workers_give_the_sequential_dictionary_and_triples(lubm_plain, monkeypatch):
    monkeypatch.setattr(bulk, "PART_BYTES", 1 << 20)   # two parts, interleaved chunks
    d1, seq, _ = encode([lubm_plain, ROOT / "fixtures" / "univ-bench.nt"], workers=1)
    d2, par, _ = encode([lubm_plain, ROOT / "fixtures" / "univ-bench.nt"], workers=2)
    assert d2.new_terms == d1.new_terms and d2.next_serial == d1.next_serial
    assert len(par) == len(seq) and as_set(par) == as_set(seq)


def test_workers_keep_an_existing_dictionary(lubm_plain, monkeypatch):
    monkeypatch.setattr(bulk, "PART_BYTES", 1 << 20)
    dicts = []
    for workers in (1, 2):
        d = Dictionary()
        encode_files([ROOT / "fixtures" / "univ-bench.nt"], d, workers=1)
        encode_files([lubm_plain], d, workers=workers, parallel_min_bytes=0)
        dicts.append(d.new_terms)
    assert dicts[0] == dicts[1]


def _with_bad_lines(src: Path, dst: Path, every: int) -> list[int]:
    bad = []
    with open(src, "rb") as f, open(dst, "wb") as out:
        for i, line in enumerate(f, 1):
            if i % every == 0:
                out.write(b"<http://a> <http://b> oops .\n")
                bad.append(i)
            else:
                out.write(line)
    return bad


def test_first_error_is_the_sequential_one(lubm_plain, tmp_path, monkeypatch):
    monkeypatch.setattr(bulk, "PART_BYTES", 1 << 20)
    bad_file = tmp_path / "bad.nt"
    bad = _with_bad_lines(lubm_plain, bad_file, every=45_000)
    with pytest.raises(ntriples.ParseError) as seq:
        encode([bad_file], workers=1)
    with pytest.raises(ntriples.ParseError) as par:
        encode([bad_file], workers=2)
    assert str(par.value) == str(seq.value)
    assert par.value.line == bad[0] and par.value.source == str(bad_file)


def test_skipped_lines_are_reported_in_order(lubm_plain, tmp_path, monkeypatch):
    monkeypatch.setattr(bulk, "PART_BYTES", 1 << 20)
    bad_file = tmp_path / "bad.nt"
    bad = _with_bad_lines(lubm_plain, bad_file, every=20_000)
    d1, seq, e1 = encode([bad_file], workers=1, skip_invalid=True)
    d2, par, e2 = encode([bad_file], workers=2, skip_invalid=True)
    assert [e.line for e in e2] == bad and list(map(str, e2)) == list(map(str, e1))
    assert d2.new_terms == d1.new_terms and as_set(par) == as_set(seq)


def test_store_load_with_workers_equals_sequential_load(lubm_plain, tmp_path, monkeypatch):
    """Through the user's entry point: the annotated dumps are identical."""
    dumps = []
    for workers in ("1", "2"):
        monkeypatch.setenv("TRINE_WORKERS", workers)
        monkeypatch.setattr(bulk, "PARALLEL_MIN_BYTES", 0)
        monkeypatch.setattr(bulk, "PART_BYTES", 1 << 20)
        store = Store.open(tmp_path / f"w{workers}", create=True)
        store.load([lubm_plain, ROOT / "fixtures" / "univ-bench.nt"], engine="local")
        dumps.append(list(store.dump_lines(annotate=True)))
        store.close()
    assert dumps[0] == dumps[1] and len(dumps[0]) > 100_000
