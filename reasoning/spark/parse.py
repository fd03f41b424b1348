"""Reading N-Triples inside Spark tasks, with trine's own parser.

The tasks are those of ``trine.store.ntriples_tasks`` (one file share each,
exact line numbers, task-local keys and first-occurrence positions), planned
on the driver.  Here a task writes (``write_tasks``) Parquet files of its
triples (task-local keys) and of its terms with ``first`` and hashes, so
that Spark numbers terms in first-occurrence order exactly like the
in-process dictionary and groups terms on integers, and returns its bad
lines ``(file, line, column, message)``; the driver reports the first one
over all tasks (the one the in-process load reports).

Nothing here imports pyspark: these functions run in the Python workers.
"""

from __future__ import annotations

import errno
import glob
import hashlib
import os
import shutil
import sys
import zlib
from pathlib import Path
from typing import Iterable, Iterator

from trine.store import ntriples
from trine.store.ntriples_tasks import (  # noqa: F401  (the task format, shared with in-process loads)
    ERROR, FILE_SHIFT, LINE_SHIFT, TASK_SHIFT, TERM, TRIPLE, InputFile, Sink, input_file, parse_error,
    parse_task, plan_tasks, run_tasks)
from trine.store.terms import BLANK, IRI, LITERAL

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
            out.append(input_file(target, "<stdin>"))
        elif Path(p).is_file():
            out.append(input_file(Path(p), p))
        else:
            raise FileNotFoundError(errno.ENOENT, f"{p}: no such file or directory", p)
    return out


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


def encode_tasks(parsed_dir: str, keymap_dir: str, tasks: Iterable[int], by_hash: bool = False) -> Iterator[int]:
    """mapPartitions body: map each task's triples from task-local keys to
    term ids (a dense numpy lookup) and write
    ``parsed_dir/encoded/task-N.parquet``; yields the number of triples per
    task.  The lookup comes from the task's slice of the key -> id map
    (``keymap_dir/task=N``) or, ``by_hash``, from the task's own term rows
    and the whole hash -> id table in ``keymap_dir`` (a map-side join, for
    dictionaries small enough for every task to read)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(f"{parsed_dir}/encoded", exist_ok=True)
    by_h = _hash_ids(keymap_dir) if by_hash else None
    for tid in tasks:
        if by_h is None:
            keys, ids = _read_columns(sorted(glob.glob(f"{keymap_dir}/task={tid}/*.parquet")), ("key", "id"))
        else:
            keys, h = _read_columns([f"{parsed_dir}/terms/task-{tid:05d}.parquet"], ("key", "h"))
            hs, hid = by_h
            pos = np.minimum(np.searchsorted(hs, h), max(len(hs) - 1, 0))
            if len(h) and not np.array_equal(hs[pos], h):
                raise RuntimeError(f"task {tid}: a term has no id")
            ids = hid[pos]
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


def _read_columns(files: list[str], names: tuple[str, str]):
    """Two int64 columns of Parquet files, concatenated."""
    import numpy as np
    import pyarrow.parquet as pq

    tables = [pq.read_table(f, columns=list(names)) for f in files]
    return tuple(np.concatenate([t.column(n).to_numpy() for t in tables]) if tables else np.zeros(0, np.int64)
                 for n in names)


def _hash_ids(ids_dir: str):
    """The (h, id) table sorted by h, for ``searchsorted`` lookups."""
    import numpy as np

    h, ids = _read_columns(sorted(glob.glob(f"{ids_dir}/*.parquet")), ("h", "id"))
    order = np.argsort(h, kind="stable")
    return h[order], ids[order]
