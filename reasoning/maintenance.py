"""Incremental maintenance of the materialisation inside one write transaction.

The contract (docs/reasoning.md): for explicit triples E, the store holds the
closure I with, for each triple f,

* ``count(f)`` = [f in E] + number of rule instances with body in I and head f;
* ``step(f)`` = 0 if f in E, else min over those instances of 1 + the larger
  step of its two body atoms (the naive-evaluation stage of f).

Insertion (``insert``) is semi-naive from the delta: an instance is counted
once, when the last of its new body atoms is processed.  Steps can then only
fall; they are settled by a Dijkstra-like pass from the triples whose step
fell (Knuth's generalisation of Dijkstra to "1 + max" derivations).  Large
insertions that cannot change the schema do both at once, batched by step
in numpy (``_insert_batched``).

Deletion (``delete``) uses steps to tell well-founded support from cycles
(plain counting keeps cycles alive, seed 002):

1. *affected*: in increasing old step, a triple is affected if it lost its
   explicit flag or every instance achieving its old step uses an affected
   atom.  Triples whose best derivation survives are never touched.
2. *re-step*: the affected triples get new steps by Dijkstra from the
   unaffected ones; those that get none are no longer derivable: removed.
3. *recount*: every instance with a removed body atom is subtracted once
   from its head's count.

DRed (``algorithm="dred"``) replaces step 1 with DRed's over-deletion of
every consequence; steps 2 and 3 are DRed's re-derivation and need no other
code, so both algorithms leave identical records.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import numpy as np

from trine.store.gcpause import paused_gc
from trine.store.keys import MAX_STEP, Record
from trine.store.txn import Txn
from trine.store.vocab import SPO

from .rules import SCHEMA_PREDICATES, Delta, Triple, backward_instances, forward_data_instances, forward_instances

INF = 1 << 30
SCHEMA_SET = frozenset(SCHEMA_PREDICATES)
ALGORITHMS = ("counting", "dred")
# Deletions of at least this many explicit triples start with the batched
# counting pass (when the schema cannot change); below, per-triple work is cheaper.
BATCH_MIN = 256
# Insertions of at least this many triples run the batched semi-naive pass
# (when the schema cannot change).
INSERT_BATCH_MIN = 256


@dataclass
class UpdateReport:
    """What one add or remove did."""

    requested: int = 0
    explicit_added: int = 0          # new explicit triples (not stored before)
    made_explicit: int = 0           # derived triples that became explicit
    already_explicit: int = 0
    explicit_removed: int = 0
    not_explicit: list[Triple] = field(default_factory=list)  # removal asked for non-explicit triples
    still_derived: int = 0           # removed explicit triples that stay as derived
    derived_added: int = 0
    derived_removed: int = 0
    affected: int = 0                # triples whose step/derivability was re-examined
    seconds: float = 0.0             # time spent maintaining the closure (inside the transaction)

    @property
    def triples_added(self) -> int:
        return self.explicit_added + self.derived_added

    @property
    def triples_removed(self) -> int:
        return self.derived_removed + self.explicit_removed - self.still_derived


class SchemaCache:
    """The schema triples (spo, sco, dom, range) of the store, in memory, both ways.

    Filled lazily, one (subject, predicate) or (predicate, object) at a time, as
    rules ask: a mirror of the transaction, so an update that touches a few
    schema entries reads only those.  ``add`` and ``remove`` follow the
    transaction's writes into whatever is loaded.
    """

    def __init__(self, txn: Txn):
        self.txn = txn
        self.fwd: dict[int, dict[int, set[int]]] = {p: {} for p in SCHEMA_PREDICATES}
        self.bwd: dict[int, dict[int, set[int]]] = {p: {} for p in SCHEMA_PREDICATES}

    def objects(self, s: int, p: int) -> set[int]:
        got = self.fwd[p].get(s)
        if got is None:
            got = self.fwd[p][s] = {t[2] for t in self.txn.scan(s, p, None)}
        return got

    def subjects(self, p: int, o: int) -> set[int]:
        got = self.bwd[p].get(o)
        if got is None:
            got = self.bwd[p][o] = {t[0] for t in self.txn.scan(None, p, o)}
        return got

    def add(self, s: int, p: int, o: int) -> None:
        self._edit(s, p, o, set.add)

    def remove(self, s: int, p: int, o: int) -> None:
        self._edit(s, p, o, set.discard)

    def _edit(self, s: int, p: int, o: int, op) -> None:
        for table, key, value in ((self.fwd[p], s, o), (self.bwd[p], o, s)):
            got = table.get(key)
            if got is not None:  # not loaded: a later load reads the transaction
                op(got, value)


class Maintainer:
    """A view of the materialisation during one update (the rules' View)."""

    def __init__(self, txn: Txn):
        self.txn = txn
        self.schema = SchemaCache(txn)
        self.records: dict[Triple, Record] = {}   # changed or cached records
        self._backward: dict[Triple, list[tuple[Triple, Triple]]] = {}
        self._fwd: dict[Triple, list] = {}
        self.report = UpdateReport()

    # --- the View protocol used by rules --------------------------------
    def record(self, t: Triple) -> Record | None:
        r = self.records.get(t)
        if r is None:
            r = self.txn.record(*t)
            if r is not None:
                self.records[t] = r
        return r

    def contains(self, t: Triple) -> bool:
        s, p, o = t
        if p in SCHEMA_SET:
            return o in self.schema.objects(s, p)
        return self.record(t) is not None

    def objects(self, s: int, p: int) -> Iterator[int]:
        if p in SCHEMA_SET:
            return iter(tuple(self.schema.objects(s, p)))
        return (t[2] for t in self.txn.scan(s, p, None))

    def subjects(self, p: int, o: int) -> Iterator[int]:
        if p in SCHEMA_SET:
            return iter(tuple(self.schema.subjects(p, o)))
        return (t[0] for t in self.txn.scan(None, p, o))

    def pairs(self, p: int) -> Iterator[tuple[int, int]]:
        a = self.txn.match_array(None, p, None)  # read at once: callers may write while iterating
        return zip(a[:, 0].tolist(), a[:, 2].tolist())

    def _forward(self, t: Triple) -> list:
        """forward_instances(t), memoised: deletion reads an unchanging store
        until its final physical removal, and visits a triple up to 3 times."""
        got = self._fwd.get(t)
        if got is None:
            got = self._fwd[t] = list(forward_instances(t, self))
        return got

    def _read_records(self, triples: list[Triple]) -> None:
        """Cache the records of many triples, read subject by subject in one call."""
        a = np.array(triples, dtype=np.uint32).reshape(-1, 3)
        got = self.txn.records_array(a[:, 0], a[:, 1], a[:, 2])
        records = self.records
        for t, f, e, c, s in zip(triples, got["found"].tolist(), got["explicit"].tolist(), got["count"].tolist(),
                                 got["step"].tolist()):
            if f and t not in records:
                records[t] = Record(e, c, s)

    def step(self, t: Triple) -> int:
        r = self.record(t)
        assert r is not None, t
        return r.step

    # --- physical changes -------------------------------------------------
    def _store_new(self, t: Triple, rec: Record) -> None:
        # A new derived triple's step is unknown (INF) until the step pass;
        # the stored placeholder is overwritten by _write_back.
        self.txn.insert(*t, rec._replace(step=min(rec.step, MAX_STEP)))
        self.records[t] = rec
        if t[1] in SCHEMA_SET:
            self.schema.add(*t)

    def _drop_all(self, triples: list[Triple]) -> None:
        self.txn.delete_many(triples)
        for t in triples:
            self.records.pop(t, None)
            if t[1] in SCHEMA_SET:
                self.schema.remove(*t)

    def _write_back(self, changed: Iterable[Triple]) -> None:
        records = self.records
        self.txn.set_records((t, records[t]) for t in changed)

    # --- insertion --------------------------------------------------------
    def insert(self, triples: Iterable[Triple]) -> UpdateReport:
        requested = list(dict.fromkeys(triples))
        if len(requested) >= INSERT_BATCH_MIN and self._schema_fixed(requested):
            return self._insert_batched(requested)
        rep = self.report
        queue: deque[Triple] = deque()
        pending: set[Triple] = set()
        seeds: list[Triple] = []
        changed: set[Triple] = set()
        for t in requested:
            rep.requested += 1
            rec = self.record(t)
            if rec is None:
                self._store_new(t, Record(True, 1, 0))
                queue.append(t)
                pending.add(t)
                rep.explicit_added += 1
            elif rec.explicit:
                rep.already_explicit += 1
                continue
            else:
                self.records[t] = Record(True, rec.count + 1, 0)
                rep.made_explicit += 1
            seeds.append(t)
            changed.add(t)

        while queue:
            t = queue.popleft()
            pending.discard(t)
            # Enumerate before writing: no cursor is iterated across a put.
            for b1, b2, h in list(forward_instances(t, self)):
                if (b2 if b1 == t else b1) in pending:
                    continue  # counted when that atom is processed
                rec = self.record(h)
                if rec is None:
                    self._store_new(h, Record(False, 1, INF))
                    queue.append(h)
                    pending.add(h)
                    rep.derived_added += 1
                else:
                    self.records[h] = rec._replace(count=rec.count + 1)
                changed.add(h)

        heap = [(0, t) for t in seeds]
        heapq.heapify(heap)
        while heap:
            d, t = heapq.heappop(heap)
            if d > self.step(t):
                continue
            for b1, b2, h in forward_instances(t, self):
                cand = 1 + max(self.step(b1), self.step(b2))
                rec = self.record(h)
                if cand < rec.step:  # type: ignore[union-attr]
                    self.records[h] = rec._replace(step=cand)  # type: ignore[union-attr]
                    changed.add(h)
                    heapq.heappush(heap, (cand, h))
        rep.affected = len(changed)
        self._write_back(changed)
        return rep

    def _insert_batched(self, requested: list[Triple]) -> UpdateReport:
        """Semi-naive insertion of data triples that leave the schema as it is, batched.

        Every rule instance then has its first atom in the unchanging schema and
        its second among the data triples, so an instance is new exactly when its
        data atom is, and is counted when that atom is processed.  Processing
        goes by step buckets (Dijkstra with all triples of one step at once:
        an instance's step exceeds its data atom's, so a bucket's triples are
        final when it is reached); each bucket joins, in numpy, its new triples
        (whose instances are counted) and its old triples whose step fell
        (whose instances only offer lower steps) against the schema.
        """
        rep = self.report
        rep.requested += len(requested)
        a = np.array(requested, dtype=np.uint32).reshape(-1, 3)
        got = self.txn.records_array(a[:, 0], a[:, 1], a[:, 2])
        # triple -> [explicit, count, step, record before the update (None: new)]
        state: dict[Triple, list] = {}
        buckets: dict[int, list[Triple]] = {0: []}
        for t, f, e, c, st in zip(requested, got["found"].tolist(), got["explicit"].tolist(),
                                  got["count"].tolist(), got["step"].tolist()):
            if not f:
                state[t] = [True, 1, 0, None]
                rep.explicit_added += 1
            elif e:
                rep.already_explicit += 1
                continue
            else:  # derived, so its step was at least 1: it falls to 0
                state[t] = [True, c + 1, 0, Record(False, c, st)]
                rep.made_explicit += 1
            buckets[0].append(t)
        schema = self._schema_columns()
        settled: set[Triple] = set()
        while buckets:
            k = min(buckets)
            todo = [t for t in dict.fromkeys(buckets.pop(k)) if t not in settled and state[t][2] == k]
            settled.update(todo)
            for counted in (True, False):
                group = [t for t in todo if (state[t][3] is None) == counted]
                heads = _grouped_heads(group, [k] * len(group), schema) if group else None
                if heads is not None:
                    self._offer(heads, counted, state, buckets)
        new = [(t, r) for t, r in state.items() if r[3] is None]
        changed = [(t, Record(r[0], r[1], r[2])) for t, r in state.items()
                   if r[3] is not None and Record(r[0], r[1], r[2]) != r[3]]
        if new:
            self.txn.insert_many(np.array([t for t, _ in new], dtype=np.uint32),
                                 np.array([r[0] for _, r in new], dtype=np.uint8),
                                 np.array([r[1] for _, r in new], dtype=np.int64),
                                 np.array([r[2] for _, r in new], dtype=np.int64))
        self.txn.set_records(changed)
        rep.derived_added = len(new) - rep.explicit_added
        rep.affected = len(new) + len(changed)
        return rep

    def _offer(self, heads: tuple, counted: bool, state: dict[Triple, list], buckets: dict[int, list[Triple]]) -> None:
        """Apply one batch of instances (grouped by head: head columns, number
        of instances, least instance step) to the insertion's state."""
        hs, hp, ho, n_inst, min_step = heads
        unknown: list[int] = []
        keys = list(zip(hs.tolist(), hp.tolist(), ho.tolist()))
        n_inst, min_step = n_inst.tolist(), min_step.tolist()
        for i, (t, n, m) in enumerate(zip(keys, n_inst, min_step)):
            r = state.get(t)
            if r is None:
                unknown.append(i)
                continue
            if counted:
                r[1] += n
            if m < r[2]:
                r[2] = m
                buckets.setdefault(m, []).append(t)
        if not unknown:
            return
        idx = np.array(unknown)
        got = self.txn.records_array(hs[idx], hp[idx], ho[idx])
        for i, f, e, c, st in zip(unknown, got["found"].tolist(), got["explicit"].tolist(), got["count"].tolist(),
                                  got["step"].tolist()):
            t, n, m = keys[i], n_inst[i], min_step[i]
            if f:
                r = state[t] = [e, c + n if counted else c, st, Record(e, c, st)]
            else:
                assert counted, "an old instance's head is not stored"
                r = state[t] = [False, n, INF, None]
            if m < r[2]:
                r[2] = m
                buckets.setdefault(m, []).append(t)

    def _schema_columns(self) -> dict:
        """The schema triples as the rules' ``forward_data`` takes them (with steps)."""
        schema = {}
        for p in SCHEMA_PREDICATES:
            a = self.txn.match_array(None, p, None)
            steps = np.array([self.step(t) for t in map(tuple, a.tolist())], dtype=np.int64)
            schema[p] = (a[:, 0], a[:, 2], steps)
        return schema

    # --- deletion ---------------------------------------------------------
    def delete(self, triples: Iterable[Triple], algorithm: str = "counting") -> UpdateReport:
        if algorithm not in ALGORITHMS:
            raise ValueError(f"unknown deletion algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}")
        rep = self.report
        targets: list[Triple] = []
        requested = list(dict.fromkeys(triples))
        # Reading whole subjects at once pays when most of their triples go.
        if len(requested) >= BATCH_MIN and len(requested) >= 4 * len({t[0] for t in requested}):
            self._read_records(requested)
        for t in requested:
            rep.requested += 1
            rec = self.record(t)
            if rec is None or not rec.explicit:
                rep.not_explicit.append(t)
                continue
            self.records[t] = Record(False, rec.count - 1, rec.step)
            targets.append(t)
        rep.explicit_removed = len(targets)
        if not targets:
            return rep

        gone: set[Triple] = set()        # removed for certain by the counting pass
        lost: dict[Triple, int] = {}     # instances lost through `gone`, per head
        if algorithm == "dred":
            affected = self._overdelete(targets)
        elif len(targets) >= BATCH_MIN and self._schema_fixed(targets):
            gone, lost, seeds = self._count_out(targets)
            affected = self._affected(targets, gone, seeds)
        else:
            affected = self._affected(targets)
        final = self._restep(affected, gone)
        removed = [t for t in affected if t not in final]
        removed_set = set(removed)
        changed = set(targets)
        for h, n in lost.items():
            if h not in removed_set:
                rec = self.record(h)
                self.records[h] = rec._replace(count=rec.count - n)  # type: ignore[union-attr]
                changed.add(h)
        done: set[Triple] = set(gone)    # instances through them are in `lost`
        for r in removed:
            if r in gone:
                continue
            for b1, b2, h in self._forward(r):
                if (b2 if b1 == r else b1) in done or h in removed_set:
                    continue
                rec = self.record(h)
                self.records[h] = rec._replace(count=rec.count - 1)  # type: ignore[union-attr]
                changed.add(h)
            done.add(r)
        for t, d in final.items():
            rec = self.record(t)
            if rec.step != d:  # type: ignore[union-attr]
                self.records[t] = rec._replace(step=d)  # type: ignore[union-attr]
                changed.add(t)
        self._drop_all(removed)
        self._write_back(changed - removed_set)
        rep.affected = len(affected)
        rep.still_derived = sum(1 for t in targets if t in final)
        rep.derived_removed = len(removed) - (len(targets) - rep.still_derived)
        return rep

    def _affected(self, targets: list[Triple], gone: set[Triple] | None = None,
                  seeds: list[tuple[int, Triple]] | None = None) -> set[Triple]:
        """Triples whose old step is no longer supported (in old-step order).

        ``gone`` (from ``_count_out``) are known to be affected, ``seeds`` the
        (old step, triple) that lost an instance achieving their step through them.
        """
        heap = [(0, t) for t in targets if not gone or t not in gone]
        if seeds:
            heap += seeds
        heapq.heapify(heap)
        affected: set[Triple] = set(gone) if gone else set()
        decided: set[Triple] = set(affected)
        while heap:
            sigma, h = heapq.heappop(heap)
            if h in decided:
                continue
            decided.add(h)
            rec = self.record(h)
            if rec.explicit:  # type: ignore[union-attr]
                continue
            # count 0: no instance derives h at all, so nothing can support it;
            # old step 0 (a target): no instance has step 0.
            if rec.count > 0 and sigma > 0:  # type: ignore[union-attr]
                seen = []
                supported = False
                for b1, b2 in backward_instances(h, self):
                    if (b1 not in affected and b2 not in affected
                            and 1 + max(self.step(b1), self.step(b2)) == sigma):
                        supported = True
                        break
                    seen.append((b1, b2))
                if supported:
                    continue
                self._backward[h] = seen  # all of them: re-step needs no second enumeration
            affected.add(h)
            for b1, b2, h2 in self._forward(h):
                if h2 in decided:
                    continue
                r2 = self.record(h2)
                # An instance with h (old step sigma) in its body has step > sigma:
                # heads at or below sigma are not derived by it at their step.
                if r2.explicit or r2.step <= sigma:  # type: ignore[union-attr]
                    continue
                if r2.step == 1 + max(self.step(b1), self.step(b2)):  # type: ignore[union-attr]
                    heapq.heappush(heap, (r2.step, h2))  # type: ignore[union-attr]
        return affected

    def _schema_fixed(self, targets: list[Triple]) -> bool:
        """Whether no triple with a schema predicate can be removed by this deletion:
        none is a target and none is derivable from other triples than schema ones
        (no (Q spo S) with S a schema predicate and Q not)."""
        if any(t[1] in SCHEMA_SET for t in targets):
            return False
        return all(q in SCHEMA_SET for sp in SCHEMA_PREDICATES for q in self.schema.subjects(SPO, sp))

    def _count_out(self, targets: list[Triple]) -> tuple[set[Triple], dict[Triple, int], list[tuple[int, Triple]]]:
        """Counting's part of a deletion that leaves the schema as it is, batched.

        Every rule instance then has its first atom in the unchanged schema and
        at most one atom among the data triples that go, so a non-explicit
        triple all of whose instances have that atom removed is removed (plain
        counting; what it misses, such as cycles, the step-based phases find).
        Rounds of ``forward_data`` over the triples removed so far give

        * ``gone``: the triples removed this way (targets with no derivation,
          then every triple whose count of lost instances reaches its count);
        * ``lost``: per head, the instances lost through ``gone``;
        * ``seeds``: (old step, triple) for the other heads that lost an
          instance achieving their old step (where ``_affected`` goes on).
        """
        schema = self._schema_columns()
        records = self.records
        frontier = [t for t in targets if records[t].count == 0]
        steps = [0] * len(frontier)
        gone: set[Triple] = set(frontier)
        lost: dict[Triple, int] = {}
        seeds: list[tuple[int, Triple]] = []
        while frontier:
            heads = _grouped_heads(frontier, steps, schema)
            frontier, steps = [], []
            if heads is None:
                break
            hs, hp, ho, n_lost, min_step = heads
            rec = self.txn.records_array(hs, hp, ho)
            assert rec["found"].all(), "a rule instance's head is not stored"
            for t, n, m, e, c, st in zip(zip(hs.tolist(), hp.tolist(), ho.tolist()), n_lost.tolist(),
                                         min_step.tolist(), rec["explicit"].tolist(), rec["count"].tolist(),
                                         rec["step"].tolist()):
                r = records.get(t)
                if r is not None:  # a target: no longer explicit
                    e, c = r.explicit, r.count
                n += lost.get(t, 0)
                lost[t] = n
                if e:
                    continue
                if n == c:
                    gone.add(t)
                    frontier.append(t)
                    steps.append(st)
                elif m == st:
                    seeds.append((st, t))
        return gone, lost, seeds

    def _overdelete(self, targets: list[Triple]) -> set[Triple]:
        """DRed's over-deletion: every triple with a derivation through a deleted one.

        As in DynamiTE and Gupta et al., explicit triples are over-deleted too
        and come back in re-derivation (``_restep`` gives them step 0).
        """
        affected = set(targets)
        stack = list(targets)
        while stack:
            h = stack.pop()
            for _, _, h2 in self._forward(h):
                if h2 not in affected:
                    affected.add(h2)
                    stack.append(h2)
        return affected

    def _restep(self, affected: set[Triple], gone: set[Triple] | None = None) -> dict[Triple, int]:
        """New steps of the affected triples still derivable from the rest.

        ``gone`` (a part of ``affected``) are known to be underivable.
        """
        tentative: dict[Triple, int] = {}
        heap: list[tuple[int, Triple]] = []
        for h in (affected - gone) if gone else affected:
            if self.record(h).explicit:  # type: ignore[union-attr]
                tentative[h] = 0
                heap.append((0, h))
                continue
            best = INF
            if self.record(h).count == 0:  # type: ignore[union-attr]
                continue  # no instance derives it (and none can: nothing is added)
            cached = self._backward.get(h)
            for b1, b2 in cached if cached is not None else backward_instances(h, self):
                if b1 not in affected and b2 not in affected:
                    best = min(best, 1 + max(self.step(b1), self.step(b2)))
                    if best == 1:
                        break  # no derivation is shorter
            if best < INF:
                tentative[h] = best
                heap.append((best, h))
        heapq.heapify(heap)
        final: dict[Triple, int] = {}
        while heap:
            d, h = heapq.heappop(heap)
            if h in final or d != tentative[h]:
                continue
            final[h] = d
            for b1, b2, h2 in self._forward(h):
                if h2 not in affected or h2 in final:
                    continue
                other = b2 if b1 == h else b1
                if other in affected:
                    if other not in final:
                        continue
                    so = final[other]
                else:
                    so = self.step(other)
                cand = 1 + max(d, so)
                if cand < tentative.get(h2, INF):
                    tentative[h2] = cand
                    heapq.heappush(heap, (cand, h2))
        return final


def _grouped_heads(triples: list[Triple], steps: list[int], schema: dict) -> tuple | None:
    """The instances of ``forward_data`` for data triples with the given steps,
    grouped by head: (head s, p, o, number of instances, least instance step),
    heads in SPO order; None if there are none."""
    f = np.array(triples, dtype=np.uint32).reshape(-1, 3)
    heads = forward_data_instances(Delta(f[:, 0], f[:, 1], f[:, 2], np.array(steps, np.int32)), schema)
    if heads is None:
        return None
    hs, hp, ho, hstep = heads
    order = np.lexsort((ho, hp, hs))
    hs, hp, ho, hstep = hs[order], hp[order], ho[order], hstep[order]
    first = np.flatnonzero(np.concatenate(([True], (hs[1:] != hs[:-1]) | (hp[1:] != hp[:-1])
                                           | (ho[1:] != ho[:-1]))))
    return hs[first], hp[first], ho[first], np.diff(np.append(first, len(hs))), np.minimum.reduceat(hstep, first)


def insert(txn: Txn, triples: Iterable[Triple]) -> UpdateReport:
    t0 = time.perf_counter()
    with paused_gc():
        rep = Maintainer(txn).insert(triples)
    rep.seconds = time.perf_counter() - t0
    return rep


def delete(txn: Txn, triples: Iterable[Triple], algorithm: str = "counting") -> UpdateReport:
    t0 = time.perf_counter()
    with paused_gc():
        rep = Maintainer(txn).delete(triples, algorithm)
    rep.seconds = time.perf_counter() - t0
    return rep
