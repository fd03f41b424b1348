"""N-Triples parsing split into independent tasks, for parallel bulk loads.

A bulk load plans its inputs as tasks ``(task, file, path, part, parts,
skip_invalid)``.  A task streams its whole file (plain or gzip) in chunks of
about 4 MiB cut at line ends, counts the lines of every chunk, and parses
only the chunks whose index is ``part`` modulo ``parts``.  So a single gzip
file (which cannot be split by offset) is still parsed by several cores,
every line keeps its exact line number for error messages, and line
numbering follows ``ntriples`` (the sequential reader) exactly.

A task dictionary-encodes its triples locally (a dict, as the sequential
path does) into a ``Sink``:

* triples as task-local term keys (``task << 32 | local index``);
* terms the first time the task meets them, with ``first``, the position
  ``file << 42 | line << 2 | slot`` (slot 0, 1, 2 for s, p, o), so that the
  merge can number terms in first-occurrence order exactly like the
  sequential dictionary;
* the bad lines ``(file, line, column, message)``.  Without ``skip_invalid``
  a task stops at its first bad line; the merge reports the first one over
  all tasks, which is the one a sequential read reports.

Two engines run these tasks: worker processes of an in-process load
(``encode_task``, merged by ``trine.store.bulk.encode_files``) and Spark's
Python workers (``trine.reasoning.spark.parse``).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from . import ntriples
from .ntriples import _LineError, open_input, parse_line

TRIPLE, TERM, ERROR = 0, 1, 2
CHUNK_BYTES = 4 << 20
FILE_SHIFT = 42
LINE_SHIFT = 2
TASK_SHIFT = 32
# Rough uncompressed bytes per gzip byte (N-Triples compresses 20-40x).
GZIP_RATIO = 30
BYTES_PER_PART_GZ = 96 << 20
BYTES_PER_PART_PLAIN = 48 << 20


@dataclass(frozen=True)
class InputFile:
    path: str       # absolute path the executors read
    name: str       # name used in error messages (as the user gave it)
    gzip: bool
    size: int


def input_file(path: Path, name: str) -> InputFile:
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return InputFile(str(path.resolve()), name, gz, path.stat().st_size)


def plan_tasks(files: list[InputFile], parallelism: int, skip_invalid: bool,
               part_bytes: int | None = None) -> list[tuple]:
    """One task per (file, part); big files get up to ``parallelism`` parts
    of at least ``part_bytes`` uncompressed bytes each (by default Spark's
    sizes: a task there costs more than a worker process here)."""
    tasks = []
    for i, f in enumerate(files):
        raw = f.size * GZIP_RATIO if f.gzip else f.size
        per = part_bytes or (BYTES_PER_PART_GZ if f.gzip else BYTES_PER_PART_PLAIN)
        parts = max(1, min(parallelism, -(-raw // per)))
        for k in range(parts):
            tasks.append((len(tasks), i, f.path, k, parts, skip_invalid))
    return tasks


def _segments(data: bytes) -> list[bytes]:
    """The lines of a chunk, as ``ntriples._lines`` yields them."""
    if b"\r" not in data:
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        return lines
    out = []
    # Reproduce file iteration (segments keep their "\n") then _lines' CR rule.
    parts = data.split(b"\n")
    last = len(parts) - 1
    for i, seg in enumerate(parts):
        if i == last and seg == b"":
            break
        full = seg + b"\n" if i < last else seg
        if b"\r" in full:
            for part in full.split(b"\r"):
                if part and part != b"\n":
                    out.append(part.rstrip(b"\n"))
        else:
            out.append(seg)
    return out


def _count_lines(data: bytes) -> int:
    if b"\r" not in data:
        n = data.count(b"\n")
        return n if not data or data.endswith(b"\n") else n + 1
    return len(_segments(data))


def _chunks(path: str) -> Iterator[bytes]:
    """Chunks of about CHUNK_BYTES, cut at line ends (see the module doc)."""
    with open_input(path) as stream:
        rest = b""
        while True:
            block = stream.read(CHUNK_BYTES)
            if not block:
                if rest:
                    yield rest
                return
            buf = rest + block if rest else block
            cut = buf.rfind(b"\n")
            if cut < 0:
                # No LF at all: cut at a CR that is not the buffer's last byte.
                cut = buf.rfind(b"\r", 0, len(buf) - 1)
                if cut < 0 or buf[cut + 1:cut + 2] == b"\n":
                    rest = buf
                    continue
            yield buf[:cut + 1]
            rest = buf[cut + 1:]


class Sink:
    """What a task has parsed since the last flush (flat columns)."""

    def __init__(self) -> None:
        self.triples = array("q")     # s, p, o task-local keys, flat
        self.keys = array("q")
        self.firsts = array("q")
        self.terms: list[str] = []
        self.errors: list[tuple[int, int, int, str]] = []   # (file, line, column, message)
        self.n_triples = 0
        self.n_terms = 0
        self.lines = 0

    def clear(self) -> None:
        self.triples = array("q")
        self.keys = array("q")
        self.firsts = array("q")
        self.terms = []


def parse_task(task: int, file_idx: int, path: str, part: int, parts: int, skip_invalid: bool,
               sink: Sink, flush: Callable[[Sink], None] | None = None, flush_rows: int = 1 << 20) -> None:
    """Parse one task's share of a file into ``sink`` (``flush`` is called
    between chunks once ``flush_rows`` triples are buffered)."""
    base = task << TASK_SHIFT
    fbase = file_idx << FILE_SHIFT
    ids: dict[str, int] = {}
    line_no = 0
    for ci, chunk in enumerate(_chunks(path)):
        if ci % parts != part:
            line_no += _count_lines(chunk)
            continue
        trip = sink.triples.append
        keys = sink.keys.append
        firsts = sink.firsts.append
        terms = sink.terms.append
        n0 = len(ids)
        t0 = len(sink.triples)
        text = None
        if b"\r" not in chunk:
            try:  # one decode per chunk; a bad line falls back to per-line decoding
                text = chunk.decode("utf-8")
            except UnicodeDecodeError:
                text = None
        if text is not None:
            lines = text.split("\n")
            if chunk.endswith(b"\n"):
                lines.pop()
        else:
            lines = _segments(chunk)
        for raw in lines:
            line_no += 1
            try:
                t = parse_line(raw if text is not None else raw.decode("utf-8"))
            except UnicodeDecodeError as e:
                err = (file_idx, line_no, e.start + 1, "invalid UTF-8")
            except _LineError as e:
                err = (file_idx, line_no, e.column, e.message)
            else:
                if t is None:
                    continue
                s, p, o = t
                # Unrolled for s, p, o: this is the load's hottest loop, and a
                # function call per term would cost more than the lookup.
                ks = ids.get(s)
                if ks is None:
                    ks = ids[s] = len(ids)
                    keys(base | ks)
                    firsts(fbase | (line_no << LINE_SHIFT))
                    terms(s)
                kp = ids.get(p)
                if kp is None:
                    kp = ids[p] = len(ids)
                    keys(base | kp)
                    firsts(fbase | (line_no << LINE_SHIFT) | 1)
                    terms(p)
                ko = ids.get(o)
                if ko is None:
                    ko = ids[o] = len(ids)
                    keys(base | ko)
                    firsts(fbase | (line_no << LINE_SHIFT) | 2)
                    terms(o)
                trip(base | ks)
                trip(base | kp)
                trip(base | ko)
                continue
            sink.errors.append(err)
            if not skip_invalid:
                sink.n_triples += (len(sink.triples) - t0) // 3
                sink.n_terms += len(ids) - n0
                return
        sink.n_triples += (len(sink.triples) - t0) // 3
        sink.n_terms += len(ids) - n0
        if flush is not None and len(sink.triples) >= 3 * flush_rows:
            flush(sink)


def run_tasks(tasks: Iterable[tuple]) -> Iterator[tuple]:
    """The rows ``(kind, a, b, c, text)`` of every task (tests, small inputs)."""
    for t in tasks:
        sink = Sink()
        parse_task(*t, sink=sink)
        for k, f, term in zip(sink.keys, sink.firsts, sink.terms):
            yield (TERM, k, f, 0, term)
        tr = sink.triples
        for i in range(0, len(tr), 3):
            yield (TRIPLE, tr[i], tr[i + 1], tr[i + 2], None)
        for e in sink.errors:
            yield (ERROR,) + tuple(e)


def parse_error(files: list[InputFile], err: tuple[int, int, int, str]) -> ntriples.ParseError:
    file_idx, line, col, msg = err
    return ntriples.ParseError(files[file_idx].name, line, col, msg)


@dataclass
class TaskResult:
    """What a worker process sends back for one task (numpy arrays pickle
    as buffers; terms[i] has task-local index i)."""

    task: int
    triples: np.ndarray          # (n, 3) uint32 task-local indexes
    firsts: np.ndarray           # int64 first-occurrence position per term
    terms: list[str]
    errors: list[tuple[int, int, int, str]]


def encode_task(task: tuple) -> TaskResult:
    """Parse one task in a worker process (``ProcessPoolExecutor`` target)."""
    sink = Sink()
    parse_task(*task, sink=sink)
    local = (np.frombuffer(sink.triples, dtype=np.int64) & 0xFFFFFFFF).astype(np.uint32)
    return TaskResult(task[0], local.reshape(-1, 3), np.frombuffer(sink.firsts, dtype=np.int64).copy(),
                      sink.terms, sink.errors)


def run_in_workers(tasks: list[tuple], workers: int) -> Iterator[list[TaskResult]]:
    """Run ``tasks`` on ``workers`` cores: task i goes to worker i mod
    workers; worker 0 is this process, the others fresh interpreters.
    Yields each worker's results as it finishes.

    Plain subprocesses rather than multiprocessing: spawn and forkserver
    re-run the caller's main script in every worker (which breaks scripts
    without a ``__main__`` guard and ``python -``), and fork copies a parent
    that may hold LMDB environments and threads.
    """
    workers = max(1, min(workers, len(tasks)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    procs = []
    try:
        for w in range(1, workers):
            proc = subprocess.Popen([sys.executable, "-m", "trine.store.ntriples_tasks"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            proc.stdin.write(pickle.dumps(tasks[w::workers]))
            proc.stdin.close()
            procs.append(proc)
        yield [encode_task(t) for t in tasks[0::workers]]
        for proc in procs:
            out = proc.stdout.read()
            err = proc.stderr.read()
            if proc.wait() != 0:
                raise RuntimeError(f"N-Triples worker failed (exit {proc.returncode}): "
                                   f"{err.decode(errors='replace').strip()[-2000:]}")
            yield pickle.loads(out)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _worker_main() -> None:
    tasks = pickle.load(sys.stdin.buffer)
    pickle.dump([encode_task(t) for t in tasks], sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)


if __name__ == "__main__":
    # Through the package, so that results pickle as trine.store.ntriples_tasks.TaskResult.
    from trine.store.ntriples_tasks import _worker_main as main
    main()
