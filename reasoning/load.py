"""The in-process bulk load (``--engine local``): parse, encode, close, build, swap.

Loading into an empty store builds the environment from the inputs; loading
into a non-empty store merges: the existing dictionary keeps its ids, the
explicit sets are united, the closure is recomputed, and the new environment
replaces the old one only when it is complete.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from trine.store import ntriples
from trine.store.bulk import Dictionary, build_environment, encode_files, iter_dictionary, unique_rows
from trine.store.database import Database
from trine.store.vocab import FIXED_IDS

from .materialise import materialise, to_columns
from .rules import RULESET_NAME


@dataclass
class LoadReport:
    input_triples: int = 0          # lines parsed (with duplicates)
    explicit: int = 0               # distinct explicit triples in the store afterwards
    triples: int = 0                # all triples in the store afterwards
    skipped: list[ntriples.ParseError] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    engine: str = "local"


def existing_state(db: Database) -> tuple[Dictionary, np.ndarray, list[tuple[str, str]]]:
    """The dictionary, explicit triples and namespaces of a store, for merging."""
    d = Dictionary()
    with db.read() as t:
        n = t.n_triples()
        d.next_serial = t.meta_int("next_serial")
        namespaces = list(t.namespaces())
        if n == 0:
            return d, np.zeros((0, 3), np.uint32), namespaces
        for tid, term in iter_dictionary(t.txn, t.dbs):
            if tid not in FIXED_IDS.values():
                d.ids[term] = tid
                d.new_terms.append((tid, term))
        rows = [(s, p, o) for s, p, o, r in t.scan_records() if r.explicit]
    return d, np.array(rows, dtype=np.uint32).reshape(-1, 3), namespaces


def load_local(db: Database, paths: Iterable[str | Path], skip_invalid: bool = False,
               progress: Callable[[str, int], None] | None = None) -> LoadReport:
    rep = LoadReport()
    t0 = time.perf_counter()
    d, old, namespaces = existing_state(db)
    errors: list[ntriples.ParseError] = []
    tick = (lambda k: progress("parse", k)) if progress else None
    new = encode_files(paths, d, skip_invalid=skip_invalid, errors=errors, progress=tick)
    rep.input_triples = len(new)
    rep.skipped = errors
    ids = unique_rows(np.concatenate((old, new)) if len(old) else new)
    rep.explicit = len(ids)
    t1 = time.perf_counter()
    rep.seconds["encode"] = t1 - t0
    if progress:
        progress("closure", 0)
    closure = materialise(ids)
    cols = to_columns(closure)
    rep.triples = len(cols)
    t2 = time.perf_counter()
    rep.seconds["closure"] = t2 - t1
    if progress:
        progress("write", 0)
    db.replace(lambda path: build_environment(path, d.new_terms, cols, d.next_serial,
                                              namespaces=namespaces, ruleset=RULESET_NAME))
    rep.seconds["write"] = time.perf_counter() - t2
    return rep
