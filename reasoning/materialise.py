"""Full materialisation in-process, column at a time (VLog-style, seed 004).

The closure is kept per predicate as sorted unique ``uint64`` keys
``s << 32 | o`` with parallel step / count / explicit columns.  Evaluation
is semi-naive by naive stages: stage n fires exactly the rule instances whose
body atoms' larger step is n - 1 (rules.py ``apply``), so

* a triple first produced at stage n gets step n (its naive stage), and
* every instance fires in exactly one stage, so adding up the heads of the
  fired instances gives each triple's count of instances (plus one if it is
  explicit) with no separate counting pass.

This is the reference implementation of the contract in docs/reasoning.md;
incremental maintenance (maintenance.py) and the Spark job must agree with
it byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from trine.store.arrays import unique, unique_counts
from trine.store.bulk import TripleColumns
from trine.store.keys import MAX_STEP

from .rules import LOW32, RULES, SHIFT


@dataclass
class Relation:
    """All triples of one predicate: sorted keys and their records."""

    keys: np.ndarray       # uint64, sorted, unique
    step: np.ndarray       # int32
    count: np.ndarray      # int64
    explicit: np.ndarray   # bool

    def subjects(self) -> np.ndarray:
        return (self.keys >> SHIFT).astype(np.uint32)

    def objects(self) -> np.ndarray:
        return (self.keys & LOW32).astype(np.uint32)

    def rows(self) -> Iterator[tuple[int, int, int]]:
        """(subject, object, step) per triple, as Python ints (schema loops)."""
        return zip(self.subjects().tolist(), self.objects().tolist(), self.step.tolist())

    def at_index(self, n: int) -> np.ndarray:
        return np.flatnonzero(self.step == n)

    def upto_index(self, n: int) -> np.ndarray:
        return np.flatnonzero(self.step <= n)

    def below_index(self, n: int) -> np.ndarray:
        return np.flatnonzero(self.step < n)

    def at(self, n: int) -> np.ndarray:
        return self.keys[self.step == n]

    def upto(self, n: int) -> np.ndarray:
        return self.keys[self.step <= n]


class Closure(dict):
    """predicate id -> Relation."""

    def add_stage(self, p: int, heads: np.ndarray, n: int) -> int:
        """Count fired instance heads into relation p; returns how many triples are new."""
        uniq, mult = unique_counts(heads)
        rel = self.get(p)
        if rel is None:
            self[p] = Relation(uniq, np.full(len(uniq), n, np.int32), mult.astype(np.int64),
                               np.zeros(len(uniq), bool))
            return len(uniq)
        pos = np.searchsorted(rel.keys, uniq)
        pos_c = np.minimum(pos, len(rel.keys) - 1)
        found = rel.keys[pos_c] == uniq if len(rel.keys) else np.zeros(len(uniq), bool)
        np.add.at(rel.count, pos_c[found], mult[found])
        new = ~found
        if not new.any():
            return 0
        keys = np.concatenate((rel.keys, uniq[new]))
        order = np.argsort(keys, kind="stable")
        self[p] = Relation(
            keys[order],
            np.concatenate((rel.step, np.full(int(new.sum()), n, np.int32)))[order],
            np.concatenate((rel.count, mult[new].astype(np.int64)))[order],
            np.concatenate((rel.explicit, np.zeros(int(new.sum()), bool)))[order],
        )
        return int(new.sum())


def closure_from_explicit(ids: np.ndarray) -> Closure:
    """Stage 0: the explicit triples (distinct rows of an (n, 3) array)."""
    c = Closure()
    if len(ids) == 0:
        return c
    p = ids[:, 1]
    order = np.argsort(p, kind="stable")
    ps = p[order]
    bounds = np.flatnonzero(np.diff(ps)) + 1
    for chunk in np.split(order, bounds):
        pred = int(p[chunk[0]])
        keys = unique((ids[chunk, 0].astype(np.uint64) << SHIFT) | ids[chunk, 2].astype(np.uint64))
        n = len(keys)
        c[pred] = Relation(keys, np.zeros(n, np.int32), np.ones(n, np.int64), np.ones(n, bool))
    return c


def materialise(ids: np.ndarray, on_stage: Callable[[int, int], None] | None = None) -> Closure:
    """The rho-df closure of the explicit triples ``ids`` with counts and steps."""
    closure = closure_from_explicit(ids)
    n = 1
    while True:
        fired: dict[int, list[np.ndarray]] = {}
        for rule in RULES:
            for p, heads in rule.apply(closure, n):
                if len(heads):
                    fired.setdefault(p, []).append(heads)
        new = 0
        for p, parts in fired.items():
            new += closure.add_stage(p, np.concatenate(parts), n)
        if on_stage is not None:
            on_stage(n, new)
        if new == 0:
            break
        if n >= MAX_STEP:
            raise OverflowError(f"materialisation needs more than {MAX_STEP} stages")
        n += 1
    return closure


def to_columns(closure: Closure) -> TripleColumns:
    """The closure as TripleColumns (the store's bulk input)."""
    parts = [(p, rel) for p, rel in closure.items() if len(rel.keys)]
    if not parts:
        z = np.zeros(0, np.uint32)
        return TripleColumns(z, z, z, np.zeros(0, np.uint8), np.zeros(0, np.uint32), np.zeros(0, np.uint16))
    s = np.concatenate([rel.subjects() for _, rel in parts])
    o = np.concatenate([rel.objects() for _, rel in parts])
    p = np.concatenate([np.full(len(rel.keys), pred, np.uint32) for pred, rel in parts])
    explicit = np.concatenate([rel.explicit for _, rel in parts]).astype(np.uint8)
    count = np.concatenate([rel.count for _, rel in parts])
    step = np.concatenate([rel.step for _, rel in parts])
    if len(count) and count.max() > np.iinfo(np.uint32).max:
        raise OverflowError("a derivation count exceeds 2**32 - 1")
    return TripleColumns(s, p, o, explicit, count.astype(np.uint32), step.astype(np.uint16))
