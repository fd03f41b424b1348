"""``trine check --deep``: recompute the closure of the explicit triples and compare."""

from __future__ import annotations

import numpy as np

from trine.store.check import CheckReport, index_rows
from trine.store.database import Database

from .materialise import materialise, to_columns

MAX_DIFFS = 20


def deep_check(db: Database, rep: CheckReport) -> CheckReport:
    rep.deep = True
    with db.read() as txn:
        rows, rec = index_rows(txn, "spo")
        term = txn.term
        stored = {}
        if rec is not None:
            for (s, p, o), e, c, st in zip(rows.tolist(), rec["explicit"].tolist(),
                                           rec["count"].tolist(), rec["step"].tolist()):
                stored[(s, p, o)] = (e, c, st)
        explicit = np.array([t for t, r in stored.items() if r[0] == 1], dtype=np.uint32).reshape(-1, 3)
        cols = to_columns(materialise(explicit))
        expected = {}
        for s, p, o, e, c, st in zip(cols.s.tolist(), cols.p.tolist(), cols.o.tolist(),
                                     cols.explicit.tolist(), cols.count.tolist(), cols.step.tolist()):
            expected[(s, p, o)] = (e, c, st)
        diffs = []
        for t in stored.keys() - expected.keys():
            diffs.append(f"stored but not entailed: {_show(term, t)}")
        for t in expected.keys() - stored.keys():
            diffs.append(f"entailed but missing: {_show(term, t)}")
        for t in stored.keys() & expected.keys():
            if stored[t] != expected[t]:
                (e1, c1, s1), (e2, c2, s2) = stored[t], expected[t]
                diffs.append(f"record differs for {_show(term, t)}: stored explicit={e1} count={c1} step={s1}, "
                             f"recomputed explicit={e2} count={c2} step={s2}")
        if diffs:
            rep.problem(f"materialisation: {len(diffs)} differences from a recomputation")
            rep.problems.extend(sorted(diffs)[:MAX_DIFFS])
    return rep


def _show(term, t) -> str:
    return " ".join(term(x) for x in t)
