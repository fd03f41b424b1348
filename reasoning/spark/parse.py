"""Reading N-Triples inside Spark tasks, with trine's own parser.

Inputs are planned on the driver as tasks ``(task, file, part, parts)``.  A
task streams its whole file (plain or gzip) in chunks of about 4 MiB cut at
line ends, counts the lines of every chunk, and parses only the chunks whose
index is ``part`` modulo ``parts``.  So a single gzip file (which cannot be
split by offset) is still parsed by several cores, every line keeps its exact
line number for error messages, and line numbering follows
``trine.store.ntriples`` (the in-process reader) exactly.

A task dictionary-encodes its triples locally (a dict, as the in-process
path does) and yields rows of one shape ``(kind, a, b, c, text)``:

* ``(TRIPLE, s, p, o, None)``: a triple as task-local term keys
  (``task << 32 | local index``);
* ``(TERM, key, first, 0, term)``: a term the first time the task meets it;
  ``first`` is its position ``file << 42 | line << 2 | slot`` (slot 0, 1, 2
  for s, p, o) so the driver can number terms in first-occurrence order,
  exactly like the in-process dictionary;
* ``(ERROR, file, line, column, message)``: a line that is not N-Triples.
  Without ``skip_invalid`` a task stops at its first bad line; the driver
  reports the first one over all tasks (the one the in-process load reports).

Nothing here imports pyspark: these functions run in the Python workers.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from trine.store import ntriples
from trine.store.ntriples import _LineError, open_input, parse_line

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
    """Input files in load order: directories are walked (sorted, hidden and
    ``_``-prefixed names skipped), ``-`` (standard input) is spooled to a file."""
    out: list[InputFile] = []
    for p in paths:
        if str(p) == "-":
            spool_dir.mkdir(parents=True, exist_ok=True)
            target = spool_dir / f"stdin-{len(out)}.nt"
            with open(target, "wb") as f:
                shutil.copyfileobj(sys.stdin.buffer, f, 1 << 20)
            out.append(_input(target, "<stdin>"))
            continue
        path = Path(p)
        if path.is_dir():
            for f in sorted(_walk(path)):
                out.append(_input(f, str(f)))
        elif path.exists():
            out.append(_input(path, str(p)))
        else:
            raise FileNotFoundError(f"{p}: no such file or directory")
    return out


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "_"))]
        for f in filenames:
            if not f.startswith((".", "_")) and not f.endswith(".crc"):
                yield Path(dirpath) / f


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


def parse_task(task: int, file_idx: int, path: str, part: int, parts: int,
               skip_invalid: bool) -> Iterator[tuple]:
    base = task << TASK_SHIFT
    fbase = file_idx << FILE_SHIFT
    ids: dict[str, int] = {}
    line_no = 0
    for ci, chunk in enumerate(_chunks(path)):
        if ci % parts != part:
            line_no += _count_lines(chunk)
            continue
        lines = _segments(chunk)
        texts = None
        if b"\r" not in chunk:
            try:  # one decode per chunk; a bad line falls back to per-line decoding
                texts = chunk.decode("utf-8").split("\n")
                if chunk.endswith(b"\n"):
                    texts.pop()
            except UnicodeDecodeError:
                texts = None
        for i, raw in enumerate(lines):
            line_no += 1
            try:
                text = texts[i] if texts is not None else raw.decode("utf-8")
                t = parse_line(text)
            except UnicodeDecodeError as e:
                err = (ERROR, file_idx, line_no, e.start + 1, "invalid UTF-8")
            except _LineError as e:
                err = (ERROR, file_idx, line_no, e.column, e.message)
            else:
                if t is None:
                    continue
                pos = fbase | (line_no << LINE_SHIFT)
                s, p, o = t
                ks = ids.get(s)
                if ks is None:
                    ks = ids[s] = len(ids)
                    yield (TERM, base | ks, pos, 0, s)
                kp = ids.get(p)
                if kp is None:
                    kp = ids[p] = len(ids)
                    yield (TERM, base | kp, pos | 1, 0, p)
                ko = ids.get(o)
                if ko is None:
                    ko = ids[o] = len(ids)
                    yield (TERM, base | ko, pos | 2, 0, o)
                yield (TRIPLE, base | ks, base | kp, base | ko, None)
                continue
            yield err
            if not skip_invalid:
                return


def run_tasks(tasks: Iterable[tuple]) -> Iterator[tuple]:
    """mapPartitions body: the rows of every task of one partition."""
    for t in tasks:
        yield from parse_task(*t)


def parse_error(files: list[InputFile], row) -> ntriples.ParseError:
    _, file_idx, line, col, msg = row
    return ntriples.ParseError(files[file_idx].name, line, col, msg)
