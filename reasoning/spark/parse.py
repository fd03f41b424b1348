"""Reading N-Triples inside Spark tasks, with trine's own parser.

Inputs are planned on the driver as tasks ``(task, file, part, parts)``.  A
task streams its whole file (plain or gzip) in chunks of about 4 MiB cut at
line ends, counts the lines of every chunk, and parses only the chunks whose
index is ``part`` modulo ``parts``.  So a single gzip file (which cannot be
split by offset) is still parsed by several cores, every line keeps its exact
line number for error messages, and line numbering follows
``trine.store.ntriples`` (the in-process reader) exactly.

A task dictionary-encodes its triples locally (a dict, as the in-process
path does) and writes (``write_tasks``) Parquet files of

* triples as task-local term keys (``task << 32 | local index``);
* terms the first time the task meets them, with ``first``, the position
  ``file << 42 | line << 2 | slot`` (slot 0, 1, 2 for s, p, o), so Spark can
  number terms in first-occurrence order exactly like the in-process
  dictionary, and with hashes so that Spark groups terms on integers;

and returns the bad lines ``(file, line, column, message)``.  Without
``skip_invalid`` a task stops at its first bad line; the driver reports the
first one over all tasks (the one the in-process load reports).

Nothing here imports pyspark: these functions run in the Python workers.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import sys
import zlib
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from trine.store import ntriples
from trine.store.ntriples import _LineError, open_input, parse_line
from trine.store.terms import BLANK, IRI, LITERAL

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


def expand_inputs(paths: Iterable[str | os.PathLike], spool_dir: Path) -> list[InputFile]:
    """Input files in load order, as the in-process load reads them
    (``ntriples.expand_inputs``: directories walked recursively, sorted,
    hidden names skipped); ``-`` (standard input) is spooled to a file."""
    out: list[InputFile] = []
    for p in ntriples.expand_inputs([str(x) for x in paths]):
        if p == "-":
            spool_dir.mkdir(parents=True, exist_ok=True)
            target = spool_dir / f"stdin-{len(out)}.nt"
            with open(target, "wb") as f:
                shutil.copyfileobj(sys.stdin.buffer, f, 1 << 20)
            out.append(_input(target, "<stdin>"))
        elif Path(p).is_file():
            out.append(_input(Path(p), p))
        else:
            raise FileNotFoundError(errno.ENOENT, f"{p}: no such file or directory", p)
    return out


def _input(path: Path, name: str) -> InputFile:
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return InputFile(str(path.resolve()), name, gz, path.stat().st_size)


def plan_tasks(files: list[InputFile], parallelism: int, skip_invalid: bool) -> list[tuple]:
    """One task per (file, part); big files get up to ``parallelism`` parts."""
    tasks = []
    for i, f in enumerate(files):
        raw = f.size * GZIP_RATIO if f.gzip else f.size
        per = BYTES_PER_PART_GZ if f.gzip else BYTES_PER_PART_PLAIN
        parts = max(1, min(parallelism, -(-raw // per)))
        for k in range(parts):
            tasks.append((len(tasks), i, f.path, k, parts, skip_invalid))
    return tasks


# --- worker side ----------------------------------------------------------------

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


def term_hashes(terms: list[str]) -> tuple[list[int], list[int], list[int]]:
    """(h, h2, kind) per term: h is the store's 8-byte term hash (blake2b of
    the UTF-8 bytes, trine.store.txn.term_hash) as a signed big-endian
    integer, h2 an independent check (crc32 and length) that exposes a
    collision of h, kind the id kind bits."""
    h, h2, kind = [], [], []
    blake = hashlib.blake2b
    crc = zlib.crc32
    frombytes = int.from_bytes
    for t in terms:
        b = t.encode("utf-8")
        h.append(frombytes(blake(b, digest_size=8).digest(), "big", signed=True))
        h2.append(crc(b) | (len(b) << 32))
        c = t[0]
        kind.append(IRI if c == "<" else BLANK if c == "_" else LITERAL)
    return h, h2, kind


TRIPLES_SCHEMA = "s long, p long, o long"
TERMS_SCHEMA = "key long, first long, h long, h2 long, kind byte, term string"


def write_tasks(out_dir: str, tasks: Iterable[tuple]) -> Iterator[tuple]:
    """mapPartitions body: parse each task into two Parquet files.

    ``out_dir/triples/task-N.parquet`` (s, p, o task-local keys) and
    ``out_dir/terms/task-N.parquet`` (key, first, h, h2, kind, term) in
    increasing ``first`` order; yields one summary ``(task, triples, terms,
    errors)`` per task, errors as ``(file, line, column, message)``.  Parquet
    is how rows reach the JVM cheaply (pickling millions of tuples through
    Py4J costs more than the parse itself), and Spark reads only the integer
    columns: strings never enter a shuffle.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    tschema = pa.schema([("s", pa.int64()), ("p", pa.int64()), ("o", pa.int64())])
    dschema = pa.schema([("key", pa.int64()), ("first", pa.int64()), ("h", pa.int64()), ("h2", pa.int64()),
                         ("kind", pa.int8()), ("term", pa.string())])
    os.makedirs(f"{out_dir}/triples", exist_ok=True)
    os.makedirs(f"{out_dir}/terms", exist_ok=True)
    for task in tasks:
        tid = task[0]
        sink = Sink()
        with pq.ParquetWriter(f"{out_dir}/triples/task-{tid:05d}.parquet", tschema, compression="snappy",
                              use_dictionary=False) as tw, \
                pq.ParquetWriter(f"{out_dir}/terms/task-{tid:05d}.parquet", dschema, compression="snappy",
                                 use_dictionary=False) as dw:

            def flush(sk: Sink) -> None:
                a = np.frombuffer(sk.triples, dtype=np.int64).reshape(-1, 3)
                tw.write_table(pa.table([a[:, 0], a[:, 1], a[:, 2]], schema=tschema))
                h, h2, kind = term_hashes(sk.terms)
                dw.write_table(pa.table([np.frombuffer(sk.keys, dtype=np.int64),
                                         np.frombuffer(sk.firsts, dtype=np.int64),
                                         np.array(h, dtype=np.int64), np.array(h2, dtype=np.int64),
                                         np.array(kind, dtype=np.int8),
                                         pa.array(sk.terms, pa.string())], schema=dschema))
                sk.clear()

            parse_task(*task, sink=sink, flush=flush)
            flush(sink)
        yield (tid, sink.n_triples, sink.n_terms, sink.errors)


def encode_tasks(parsed_dir: str, keymap_dir: str, tasks: Iterable[int]) -> Iterator[int]:
    """mapPartitions body: map each task's triples from task-local keys to
    term ids with the task's slice of the key -> id map (a dense numpy
    lookup) and write ``parsed_dir/encoded/task-N.parquet``; yields the
    number of triples per task."""
    import glob

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(f"{parsed_dir}/encoded", exist_ok=True)
    for tid in tasks:
        files = sorted(glob.glob(f"{keymap_dir}/task={tid}/*.parquet"))
        tables = [pq.read_table(f, columns=["key", "id"]) for f in files]
        keys = np.concatenate([t.column("key").to_numpy() for t in tables]) if tables else np.zeros(0, np.int64)
        ids = np.concatenate([t.column("id").to_numpy() for t in tables]) if tables else np.zeros(0, np.int64)
        local = keys & 0xFFFFFFFF
        lookup = np.full(int(local.max()) + 1 if len(local) else 0, -1, dtype=np.int64)
        lookup[local] = ids
        src = pq.ParquetFile(f"{parsed_dir}/triples/task-{tid:05d}.parquet")
        n = 0
        schema = pa.schema([("s", pa.int64()), ("p", pa.int64()), ("o", pa.int64())])
        with pq.ParquetWriter(f"{parsed_dir}/encoded/task-{tid:05d}.parquet", schema, compression="snappy",
                              use_dictionary=False) as w:
            for i in range(src.num_row_groups):
                t = src.read_row_group(i)
                cols = [lookup[t.column(c).to_numpy() & 0xFFFFFFFF] for c in ("s", "p", "o")]
                if any(len(c) and c.min() < 0 for c in cols):
                    raise RuntimeError(f"task {tid}: a term key has no id")
                w.write_table(pa.table(cols, schema=schema))
                n += len(cols[0])
        yield n


def parse_error(files: list[InputFile], err: tuple[int, int, int, str]) -> ntriples.ParseError:
    file_idx, line, col, msg = err
    return ntriples.ParseError(files[file_idx].name, line, col, msg)
