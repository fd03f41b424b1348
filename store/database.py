"""A store directory on disk: its active LMDB environment and its writer lock.

Layout of a store directory::

    DB/
      CURRENT        name of the active environment ("env-000001")
      env-000001/    the LMDB environment (data.mdb, lock.mdb)
      write.lock     flock()ed by the one writer at a time

Small updates run as one LMDB write transaction in the active environment.
Bulk loads build a complete new environment beside it and then swap
``CURRENT`` with an atomic rename, so a crash at any moment leaves either the
old store or the new one, never a half-loaded store.  Processes that hold the
old environment open notice the swap (CURRENT's inode changes) at their next
transaction and reopen.
"""

from __future__ import annotations

import fcntl
import threading
import os
import shutil
import struct
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import lmdb

from .keys import INDEX_NAMES, PAIR_BYTES, SPO_VALUE_BYTES
from .txn import Txn
from .vocab import FIRST_FREE_SERIAL, FIXED_IDS

FORMAT_VERSION = 1
DEFAULT_RULESET = "rhodf"
INITIAL_MAP_SIZE = 1 << 30
MAX_DBS = 16

T = TypeVar("T")


class StoreError(Exception):
    """A store that cannot be opened or used as asked."""


class WriterBusy(StoreError):
    """Another process holds the store's writer lock."""


def _open_env(path: Path, readonly: bool, map_size: int | None = None) -> lmdb.Environment:
    size = map_size or max(INITIAL_MAP_SIZE, 2 * _file_size(path / "data.mdb"))
    return lmdb.open(
        str(path), map_size=size, max_dbs=MAX_DBS, readonly=readonly,
        subdir=True, max_readers=256, readahead=False, meminit=False,
    )


class _SharedEnv:
    """One process-wide handle per environment directory (LMDB allows only one)."""

    def __init__(self, env: lmdb.Environment, dbs: dict):
        self.env, self.dbs, self.refs = env, dbs, 0


_SHARED: dict[str, _SharedEnv] = {}
_SHARED_LOCK = threading.Lock()


def _acquire_env(path: Path, readonly: bool) -> _SharedEnv:
    key = os.path.realpath(path)
    with _SHARED_LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            # Read-only-ness is enforced per handle (Database.writer_lock); the
            # shared environment is writable unless the OS says otherwise.
            try:
                env = _open_env(path, readonly=False)
            except lmdb.Error:
                if not readonly:
                    raise
                env = _open_env(path, readonly=True)
            shared = _SHARED[key] = _SharedEnv(env, open_databases(env, create=False))
        shared.refs += 1
        return shared


def _release_env(path: Path) -> None:
    key = os.path.realpath(path)
    with _SHARED_LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            return
        shared.refs -= 1
        if shared.refs <= 0:
            shared.env.close()
            del _SHARED[key]


def _file_size(p: Path) -> int:
    try:
        return p.stat().st_size
    except FileNotFoundError:
        return 0


def open_databases(env: lmdb.Environment, create: bool) -> dict[str, object]:
    """Handles of every sub-database of an environment, by name."""
    kw = {"create": create}
    dbs: dict[str, object] = {
        "meta": env.open_db(b"meta", **kw),
        "t2i": env.open_db(b"t2i", dupsort=True, dupfixed=True, **kw),
        "i2t": env.open_db(b"i2t", **kw),
        "ns": env.open_db(b"ns", **kw),
    }
    for name in INDEX_NAMES:
        dbs[name] = env.open_db(name.encode(), dupsort=True, dupfixed=True, **kw)
    return dbs


def init_meta(txn: lmdb.Transaction, dbs: dict, ruleset: str = DEFAULT_RULESET,
              with_vocabulary: bool = True) -> None:
    """Write a fresh store's meta data and its fixed vocabulary."""
    meta = dbs["meta"]
    txn.put(b"format", str(FORMAT_VERSION).encode(), db=meta)
    txn.put(b"ruleset", ruleset.encode(), db=meta)
    txn.put(b"next_serial", struct.pack(">Q", FIRST_FREE_SERIAL), db=meta)
    txn.put(b"n_triples", struct.pack(">Q", 0), db=meta)
    txn.put(b"n_explicit", struct.pack(">Q", 0), db=meta)
    if with_vocabulary:
        t = Txn(txn, dbs, write=True)
        for term, tid in FIXED_IDS.items():
            t.put_term(term, tid)


class Database:
    """One store directory.  Not shared between threads without a lock."""

    def __init__(self, path: str | os.PathLike, create: bool = False, readonly: bool = False):
        self.path = Path(path)
        self._current_file = str(self.path / "CURRENT")
        self._lock_depth = 0
        self._env: lmdb.Environment | None = None
        self._dbs: dict = {}
        self._current_stat: tuple[int, int] | None = None
        self.readonly = readonly
        if not (self.path / "CURRENT").exists():
            if not create:
                raise StoreError(f"{self.path}: not a trine store (no CURRENT file); "
                                 "create it with `trine load` or Store.open(path, create=True)")
            if readonly:
                raise StoreError(f"{self.path}: cannot create a store read-only")
            self._create()
        self._reopen()
        fmt = self.meta_value("format")
        if fmt != str(FORMAT_VERSION):
            raise StoreError(f"{self.path}: store format {fmt}, this trine reads format {FORMAT_VERSION}")

    # --- lifecycle -------------------------------------------------------
    def _create(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        with self.writer_lock():
            if (self.path / "CURRENT").exists():
                return
            name = self._new_env_name()
            tmp = self.path / (name + ".tmp")
            tmp.mkdir()
            env = _open_env(tmp, readonly=False)
            dbs = open_databases(env, create=True)
            with env.begin(write=True) as txn:
                init_meta(txn, dbs)
            env.close()
            os.rename(tmp, self.path / name)
            self._point_current(name)

    def _new_env_name(self) -> str:
        existing = [int(p.name.split("-")[1].split(".")[0]) for p in self.path.glob("env-*")
                    if p.name.split("-")[1].split(".")[0].isdigit()]
        return "env-%06d" % (max(existing, default=0) + 1)

    def _point_current(self, name: str) -> None:
        tmp = self.path / "CURRENT.tmp"
        with open(tmp, "w") as f:
            f.write(name + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, self.path / "CURRENT")
        dfd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    def _current_name(self) -> str:
        return (self.path / "CURRENT").read_text().strip()

    def _stat_current(self) -> tuple[int, int]:
        # Runs before every transaction (to notice a swapped environment):
        # os.stat on a prepared string, not pathlib.
        st = os.stat(self._current_file)
        return st.st_ino, st.st_mtime_ns

    def _reopen(self) -> None:
        if self._env is not None:
            _release_env(self._env_dir)
        self._current_stat = self._stat_current()
        self._env_dir = self.path / self._current_name()
        shared = _acquire_env(self._env_dir, readonly=self.readonly)
        self._env, self._dbs = shared.env, shared.dbs

    def _ensure_current(self) -> None:
        if self._stat_current() != self._current_stat:
            self._reopen()

    @property
    def env(self) -> lmdb.Environment:
        assert self._env is not None, "store is closed"
        return self._env

    @property
    def env_path(self) -> Path:
        return self.path / self._current_name()

    def close(self) -> None:
        if self._env is not None:
            _release_env(self._env_dir)
            self._env = None

    # --- transactions ----------------------------------------------------
    @contextmanager
    def read(self) -> Iterator[Txn]:
        """A consistent read-only snapshot; never blocks on writers."""
        self._ensure_current()
        while True:
            try:
                txn = self.env.begin(write=False, buffers=False)
                break
            except lmdb.MapResizedError:
                self.env.set_mapsize(0)
        try:
            yield Txn(txn, self._dbs, write=False)
        finally:
            txn.abort()

    @contextmanager
    def writer_lock(self, wait: bool = True, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
        """The store's single-writer lock (an flock on DB/write.lock)."""
        if self.readonly:
            raise StoreError(f"{self.path}: opened read-only")
        if self._lock_depth:  # re-entrant: a bulk load holds it across read, build and swap
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        fd = os.open(self.path / "write.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not wait:
                    raise WriterBusy(f"{self.path}: another process is writing to this store")
                if on_wait is not None:
                    on_wait()
                fcntl.flock(fd, fcntl.LOCK_EX)
            self._lock_depth = 1
            if self._env is not None:
                self._ensure_current()  # the holder works on the latest environment
            yield
        finally:
            self._lock_depth = 0
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def write(self, fn: Callable[[Txn], T], wait: bool = True) -> T:
        """Run ``fn`` in one write transaction: all of it is committed or none.

        ``fn`` may be run again from the start if the map had to grow, so it
        must not have effects outside the transaction it is given.
        """
        with self.writer_lock(wait=wait, on_wait=_say_waiting(self.path)):
            self._ensure_current()
            while True:
                try:
                    txn = self.env.begin(write=True)
                except lmdb.MapResizedError:
                    self.env.set_mapsize(0)
                    continue
                t = Txn(txn, self._dbs, write=True)
                try:
                    result = fn(t)
                    t.flush()
                    txn.commit()
                    return result
                except lmdb.MapFullError:
                    txn.abort()
                    self.env.set_mapsize(self.env.info()["map_size"] * 2)
                except BaseException:
                    txn.abort()
                    raise

    def replace(self, build: Callable[[Path], None]) -> None:
        """Swap in a new environment that ``build(dir)`` writes from scratch.

        Runs under the writer lock; the old environment stays active until
        the new one is complete, and is deleted after the swap.
        """
        with self.writer_lock(on_wait=_say_waiting(self.path)):
            self._ensure_current()
            old = self._current_name()
            name = self._new_env_name()
            tmp = self.path / (name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            try:
                build(tmp)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            os.rename(tmp, self.path / name)
            self._point_current(name)
            self._reopen()
            shutil.rmtree(self.path / old, ignore_errors=True)
            for stale in self.path.glob("env-*.tmp"):
                shutil.rmtree(stale, ignore_errors=True)

    # --- meta ------------------------------------------------------------
    def meta_value(self, key: str) -> str | None:
        with self.read() as t:
            return t.meta_str(key)

    def size_on_disk(self) -> int:
        return _file_size(self.env_path / "data.mdb")


def _say_waiting(path: Path) -> Callable[[], None]:
    def say() -> None:
        print(f"trine: {path}: waiting for another process to finish writing...", file=sys.stderr)
    return say


def timed() -> Callable[[], float]:
    t0 = time.perf_counter()
    return lambda: time.perf_counter() - t0


__all__ = ["Database", "StoreError", "WriterBusy", "open_databases", "init_meta",
           "PAIR_BYTES", "SPO_VALUE_BYTES"]
