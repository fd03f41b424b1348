"""The driver's class-data archive: recorded once, promoted when complete, then mapped."""

from __future__ import annotations

import os
import time

import pytest

from trine.reasoning.spark import session

pytestmark = pytest.mark.spark

MAGIC = bytes.fromhex("a8ab0bf0")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(session.CDS_ENV, raising=False)
    return tmp_path / "trine"


def archive_name(cache):
    import pyspark
    return cache / f"spark-{pyspark.__version__}-j1.jsa"


def test_first_session_records_into_a_file_of_its_own(cache):
    opts = session.class_archive_options("j1")
    assert f"-XX:ArchiveClassesAtExit={archive_name(cache)}.new-{os.getpid()}" in opts
    assert "-Xlog:cds=off" in opts and cache.is_dir()


def test_a_complete_recording_is_promoted_and_mapped(cache):
    cache.mkdir()
    (cache / "spark-0.0.1-old.jsa").write_bytes(MAGIC + b"x")           # another pyspark version
    (archive_name(cache).parent / (archive_name(cache).name + ".new-1")).write_bytes(MAGIC + b"archive")
    (archive_name(cache).parent / (archive_name(cache).name + ".new-2")).write_bytes(MAGIC + b"other")
    opts = session.class_archive_options("j1")
    assert opts.startswith(f"-XX:SharedArchiveFile={archive_name(cache)} ")
    assert archive_name(cache).read_bytes() == MAGIC + b"archive"
    assert sorted(p.name for p in cache.iterdir()) == [archive_name(cache).name]


def test_an_unfinished_recording_is_not_used(cache):
    cache.mkdir()
    partial = archive_name(cache).parent / (archive_name(cache).name + ".new-7")
    partial.write_bytes(b"\0" * 64)      # HotSpot writes the header last
    assert session.class_archive_options("j1") == ""
    assert not archive_name(cache).exists() and partial.exists()
    old = time.time() - 2 * session._STALE_SECONDS
    os.utime(partial, (old, old))        # abandoned: removed, and recorded anew
    assert "ArchiveClassesAtExit" in session.class_archive_options("j1")
    assert not partial.exists()


@pytest.mark.parametrize("env, jvm, java_id", [("off", "", "j1"), ("", "-XX:SharedArchiveFile=/x.jsa", "j1"),
                                              ("", "-Xshare:off", "j1"), ("", "", "")])
def test_nothing_is_added_when_disabled_or_chosen_by_the_caller(cache, monkeypatch, env, jvm, java_id):
    if env:
        monkeypatch.setenv(session.CDS_ENV, env)
    assert session.class_archive_options(java_id, jvm) == ""


def test_an_unwritable_cache_means_no_archive(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))    # a file where the directory should be
    monkeypatch.delenv(session.CDS_ENV, raising=False)
    assert session.class_archive_options("j1") == ""
