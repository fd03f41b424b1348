"""``trine check``: structural consistency of a store, without trusting any one index.

Reads every index in bulk (numpy), and reports: indexes that disagree on the
set of triples, ids that do not decode, dictionary entries whose hash entry
is missing, malformed records, and meta counters that do not match.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .arrays import unique
from .database import Database
from .keys import PERMUTATIONS, SPO_VALUE_BYTES, SPO_VALUE_DTYPE
from .txn import Txn, term_hash

MAX_REPORTED = 20


@dataclass
class CheckReport:
    triples: int = 0
    terms: int = 0
    problems: list[str] = field(default_factory=list)
    deep: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems

    def problem(self, text: str) -> None:
        self.problems.append(text)


def index_rows(txn: Txn, name: str) -> tuple[np.ndarray, np.ndarray | None]:
    """All entries of one index as (n, 3) uint32 rows in s, p, o order (+ SPO records)."""
    c = txn.cursor(name)
    keys = list(c.iternext_nodup(keys=True, values=False)) if c.first() else []
    width = SPO_VALUE_BYTES if name == "spo" else 8
    buf = c.getmulti(keys, dupdata=True, dupfixed_bytes=width, keyfixed=True) if keys else b""
    if name == "spo":
        dt = np.dtype([("k", ">u4")] + [(f, t) for f, (t, _) in SPO_VALUE_DTYPE.fields.items()])
        arr = np.frombuffer(buf, dtype=dt)
        rows = np.column_stack((arr["k"], arr["p"], arr["o"])).astype(np.uint32)
        return rows, arr
    arr = np.frombuffer(buf, dtype=">u4").reshape(-1, 3)
    perm = PERMUTATIONS[name]
    rows = np.empty_like(arr, dtype=np.uint32)
    for i in range(3):
        rows[:, perm[i]] = arr[:, i]
    return rows, None


def _sorted(rows: np.ndarray) -> np.ndarray:
    order = np.lexsort((rows[:, 2], rows[:, 1], rows[:, 0]))
    return rows[order]


def check_store(db: Database) -> CheckReport:
    rep = CheckReport()
    with db.read() as txn:
        spo, rec = index_rows(txn, "spo")
        rep.triples = len(spo)
        base = _sorted(spo)
        if len(base) > 1:
            dup = np.all(base[1:] == base[:-1], axis=1)
            if dup.any():
                rep.problem(f"spo: {int(dup.sum())} duplicate entries")
        for name in PERMUTATIONS:
            if name == "spo":
                continue
            rows = _sorted(index_rows(txn, name)[0])
            if rows.shape != base.shape or not np.array_equal(rows, base):
                rep.problem(f"index {name} holds {len(rows)} triples, spo holds {len(base)}, "
                            "or they differ")
        # records
        if rec is not None and len(rec):
            bad_flag = rec["explicit"] > 1
            bad_count = rec["count"] < 1
            bad_step = (rec["explicit"] == 1) != (rec["step"] == 0)
            for what, mask in (("explicit flag not 0/1", bad_flag), ("count < 1", bad_count),
                               ("step 0 not exactly for explicit triples", bad_step)):
                if mask.any():
                    rep.problem(f"records: {int(mask.sum())} with {what}")
            n_explicit = int((rec["explicit"] == 1).sum())
            if n_explicit != txn.n_explicit():
                rep.problem(f"meta n_explicit={txn.n_explicit()} but {n_explicit} explicit records")
        if len(spo) != txn.n_triples():
            rep.problem(f"meta n_triples={txn.n_triples()} but spo holds {len(spo)}")
        # dictionary
        i2t = txn.cursor("i2t")
        known = set()
        t2i = txn.cursor("t2i")
        if i2t.first():
            for k, v in i2t.iternext():
                tid = int.from_bytes(k, "big")
                known.add(tid)
                if not t2i.set_key_dup(term_hash(bytes(v)), k):
                    if len(rep.problems) < MAX_REPORTED:
                        rep.problem(f"dictionary: term {bytes(v)[:60]!r} (id {tid}) has no hash entry")
        rep.terms = len(known)
        used = unique(spo) if len(spo) else np.zeros(0, np.uint32)
        missing = [int(x) for x in used if int(x) not in known]
        if missing:
            rep.problem(f"{len(missing)} ids used in triples do not decode, e.g. {missing[:5]}")
    return rep
