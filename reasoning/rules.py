"""The rho-df rule set: the one place where rules are written down.

Every rule has two body atoms, the first of which has a schema predicate
(rdfs:subPropertyOf, rdfs:subClassOf, rdfs:domain or rdfs:range)::

    R1 spo-trans  (A spo B) (B spo C)   -> (A spo C)
    R2 sco-trans  (A sco B) (B sco C)   -> (A sco C)
    R3 spo-inh    (Q spo P) (A Q B)     -> (A P B)      P must be an IRI
    R4 type-sco   (B sco C) (A type B)  -> (A type C)
    R5 domain     (P dom D) (A P B)     -> (A type D)
    R6 range      (P range R) (B P A)   -> (A type R)   A must not be a literal

A rule instance is identified by its rule and its two body triples (which
fix the substitution).  Each rule is written in three forms that must agree:

* ``forward(t, view)``: the instances in which triple ``t`` is a body atom
  and the other atom is in the view (incremental insertion and deletion);
* ``backward(h, view)``: the instances whose head is ``h`` (support checks);
* ``apply(closure, n)``: vectorised, the heads of all instances that fire
  at naive stage ``n`` (bulk materialisation, reasoning/materialise.py);
* ``forward_data(delta, schema)``: vectorised ``forward`` for a batch of
  data triples (no schema predicate) in the second body atom, against a
  schema that does not change (large insertions and deletions,
  reasoning/maintenance.py).

A new rule is a new subclass of ``Rule`` added to ``RULES``; the engines
iterate over ``RULES`` and know nothing of individual rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Protocol

import numpy as np

from trine.store.keys import KIND_MASK
from trine.store.terms import IRI, LITERAL
from trine.store.vocab import DOM, RNG, SCO, SPO, TYPE

if TYPE_CHECKING:
    from .materialise import Closure

Triple = tuple[int, int, int]
Instance = tuple[Triple, Triple, Triple]  # (schema atom, other atom, head)
Heads = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # head s, p, o (uint32), instance step
SchemaColumns = dict  # schema predicate -> (subjects, objects, steps) arrays of its triples

RULESET_NAME = "rhodf"
SCHEMA_PREDICATES = (SPO, SCO, DOM, RNG)
LOW32 = np.uint64(0xFFFFFFFF)
SHIFT = np.uint64(32)


class View(Protocol):
    """What a rule needs to see of the current materialisation."""

    def contains(self, t: Triple) -> bool: ...
    def objects(self, s: int, p: int) -> Iterator[int]: ...
    def subjects(self, p: int, o: int) -> Iterator[int]: ...
    def pairs(self, p: int) -> Iterator[tuple[int, int]]: ...
    def subject_triples(self, s: int) -> Iterator[tuple[int, int]]: ...
    def object_triples(self, o: int) -> Iterator[tuple[int, int]]: ...


def _is_iri(x: int) -> bool:
    return x & KIND_MASK == IRI


def _not_literal(x: int) -> bool:
    return x & KIND_MASK != LITERAL


class Rule:
    name = ""
    text = ""

    def forward(self, t: Triple, view: View) -> Iterator[Instance]:
        raise NotImplementedError

    def backward(self, h: Triple, view: View) -> Iterator[tuple[Triple, Triple]]:
        raise NotImplementedError

    def apply(self, closure: "Closure", n: int) -> Iterator[tuple[int, np.ndarray]]:
        """(head predicate, head keys) of instances firing at stage n, with multiplicity.

        Head keys are ``s << 32 | o`` as uint64.  An instance fires at stage
        n when the larger of its body atoms' steps is n - 1.
        """
        raise NotImplementedError

    def forward_data(self, delta: "Delta", schema: "SchemaColumns") -> Iterator[Heads]:
        """The instances whose second atom is a row of ``delta`` and whose first
        atom is in ``schema``, one row per instance: (head s, p, o, instance step),
        the step being 1 + the larger body step.

        ``delta`` holds no triple with a schema predicate, so no instance has
        both atoms in it, and these are all its instances whenever no triple
        with a schema predicate can be derived from it.
        """
        raise NotImplementedError


class Transitive(Rule):
    """(A r B) (B r C) -> (A r C) for r = spo or sco."""

    def __init__(self, name: str, r: int, label: str):
        self.name, self.r = name, r
        self.text = f"(A {label} B) (B {label} C) -> (A {label} C)"

    def forward(self, t, view):
        s, p, o = t
        if p != self.r:
            return
        r = self.r
        for c in view.objects(o, r):  # t as the first atom
            yield t, (o, r, c), (s, r, c)
        for a in view.subjects(r, s):  # t as the second atom
            if (a, r, s) != t:  # the self-join instance (t, t) was yielded above
                yield (a, r, s), t, (a, r, o)

    def backward(self, h, view):
        a, p, c = h
        if p != self.r:
            return
        r = self.r
        for b in view.objects(a, r):
            if view.contains((b, r, c)):
                yield (a, r, b), (b, r, c)

    def apply(self, closure, n):
        rel = closure.get(self.r)
        if rel is None or len(rel.keys) == 0:
            return
        s, o = rel.subjects(), rel.objects()
        li, ri = join(o, s)  # (A r B) with B = subject of (B r C)
        if len(li) == 0:
            return
        fire = np.maximum(rel.step[li], rel.step[ri]) == n - 1
        li, ri = li[fire], ri[fire]
        yield self.r, pack(s[li], o[ri])

    def forward_data(self, delta, schema):
        return iter(())  # both atoms have the schema predicate r: never a data atom


class SubPropertyInheritance(Rule):
    name = "R3"
    text = "(Q spo P) (A Q B) -> (A P B)"

    def forward(self, t, view):
        s, p, o = t
        if p == SPO and _is_iri(o):  # t = (Q spo P) as the schema atom
            for a, b in view.pairs(s):
                yield t, (a, s, b), (a, o, b)
        for sup in view.objects(p, SPO):  # t = (A Q B) as the data atom
            if _is_iri(sup) and (p, SPO, sup) != t:
                yield (p, SPO, sup), t, (s, sup, o)

    def backward(self, h, view):
        a, p, b = h
        for q in view.subjects(SPO, p):
            if view.contains((a, q, b)):
                yield (q, SPO, p), (a, q, b)

    def apply(self, closure, n):
        spo = closure.get(SPO)
        if spo is None:
            return
        for q, sup, step in spo.rows():
            if not _is_iri(sup):
                continue
            data = closure.get(q)
            if data is None:
                continue
            keys = data.upto(n - 1) if step == n - 1 else data.at(n - 1)
            if len(keys):
                yield sup, keys

    def forward_data(self, delta, schema):
        for q, sup, step in _rows(schema, SPO):
            rows = delta.of(q)
            if rows is None or not _is_iri(sup):
                continue
            s = delta.s[rows]
            yield s, np.full(len(s), sup, np.uint32), delta.o[rows], 1 + np.maximum(delta.step[rows], step)


class TypeBySubClass(Rule):
    name = "R4"
    text = "(B sco C) (A type B) -> (A type C)"

    def forward(self, t, view):
        s, p, o = t
        if p == SCO:  # t = (B sco C)
            for a in view.subjects(TYPE, s):
                yield t, (a, TYPE, s), (a, TYPE, o)
        if p == TYPE:  # t = (A type B)
            for c in view.objects(o, SCO):
                if (o, SCO, c) != t:
                    yield (o, SCO, c), t, (s, TYPE, c)

    def backward(self, h, view):
        a, p, c = h
        if p != TYPE:
            return
        for b in view.subjects(SCO, c):
            if view.contains((a, TYPE, b)):
                yield (b, SCO, c), (a, TYPE, b)

    def apply(self, closure, n):
        sco, typ = closure.get(SCO), closure.get(TYPE)
        if sco is None or typ is None or len(sco.keys) == 0 or len(typ.keys) == 0:
            return
        b_sco, c_sco = sco.subjects(), sco.objects()
        # Pairs whose larger step is n-1: (delta type x sco<=n-1) + (type<n-1 x delta sco).
        d = typ.at_index(n - 1)
        if len(d):
            ts, to = typ.subjects()[d], typ.objects()[d]
            li, ri = join(to, b_sco)
            keep = sco.step[ri] <= n - 1
            yield TYPE, pack(ts[li[keep]], c_sco[ri[keep]])
        ds = sco.at_index(n - 1)
        if len(ds):
            old = typ.below_index(n - 1)
            ts, to = typ.subjects()[old], typ.objects()[old]
            li, ri = join(to, b_sco[ds])
            yield TYPE, pack(ts[li], c_sco[ds][ri])

    def forward_data(self, delta, schema):
        rows, sco = delta.of(TYPE), schema.get(SCO)
        if rows is None or sco is None:
            return
        b, c, sco_step = sco
        li, ri = join(delta.o[rows], b)
        if len(li):
            yield (delta.s[rows][li], np.full(len(li), TYPE, np.uint32), c[ri],
                   1 + np.maximum(delta.step[rows][li], sco_step[ri]))


class Typing(Rule):
    """Domain and range typing: (P dom D) (A P B) -> (A type D), and range."""

    def __init__(self, name: str, schema_p: int, by_object: bool, label: str):
        self.name, self.schema_p, self.by_object = name, schema_p, by_object
        self.text = (f"(P {label} R) (B P A) -> (A type R)" if by_object
                     else f"(P {label} D) (A P B) -> (A type D)")

    def _typed(self, s: int, o: int) -> int | None:
        if self.by_object:
            return o if _not_literal(o) else None
        return s

    def forward(self, t, view):
        s, p, o = t
        sp = self.schema_p
        if p == sp:  # t = (P dom D)
            for a, b in view.pairs(s):
                x = self._typed(a, b)
                if x is not None:
                    yield t, (a, s, b), (x, TYPE, o)
        x = self._typed(s, o)
        if x is not None:  # t = (A P B) as the data atom
            for cls in view.objects(p, sp):
                if (p, sp, cls) != t:
                    yield (p, sp, cls), t, (x, TYPE, cls)

    def backward(self, h, view):
        x, p, cls = h
        if p != TYPE:
            return
        sp = self.schema_p
        for prop in view.subjects(sp, cls):
            if self.by_object:
                for b in view.subjects(prop, x):
                    yield (prop, sp, cls), (b, prop, x)
            else:
                for b in view.objects(x, prop):
                    yield (prop, sp, cls), (x, prop, b)

    def apply(self, closure, n):
        schema = closure.get(self.schema_p)
        if schema is None:
            return
        for prop, cls, step in schema.rows():
            data = closure.get(prop)
            if data is None:
                continue
            idx = data.upto_index(n - 1) if step == n - 1 else data.at_index(n - 1)
            if len(idx) == 0:
                continue
            x = data.objects()[idx] if self.by_object else data.subjects()[idx]
            if self.by_object:
                x = x[(x & KIND_MASK) != LITERAL]
            yield TYPE, pack(x, np.full(len(x), cls, dtype=np.uint32))

    def forward_data(self, delta, schema):
        for prop, cls, step in _rows(schema, self.schema_p):
            rows = delta.of(prop)
            if rows is None:
                continue
            x, st = (delta.o[rows], delta.step[rows]) if self.by_object else (delta.s[rows], delta.step[rows])
            if self.by_object:
                keep = (x & KIND_MASK) != LITERAL
                x, st = x[keep], st[keep]
            if len(x):
                yield x, np.full(len(x), TYPE, np.uint32), np.full(len(x), cls, np.uint32), 1 + np.maximum(st, step)


RULES: tuple[Rule, ...] = (
    Transitive("R1", SPO, "spo"),
    Transitive("R2", SCO, "sco"),
    SubPropertyInheritance(),
    TypeBySubClass(),
    Typing("R5", DOM, False, "dom"),
    Typing("R6", RNG, True, "range"),
)


def forward_instances(t: Triple, view: View) -> Iterator[Instance]:
    """All instances (over all rules) with t as a body atom, each once."""
    for rule in RULES:
        yield from rule.forward(t, view)


def backward_instances(h: Triple, view: View) -> Iterator[tuple[Triple, Triple]]:
    for rule in RULES:
        yield from rule.backward(h, view)


def forward_data_instances(delta: "Delta", schema: SchemaColumns) -> Heads | None:
    """forward_data over all rules, concatenated (None if there are no instances)."""
    parts = [h for rule in RULES for h in rule.forward_data(delta, schema) if len(h[0])]
    if not parts:
        return None
    return tuple(np.concatenate([h[i] for h in parts]) for i in range(4))  # type: ignore[return-value]


class Delta:
    """Data triples as columns (s, p, o uint32; step), grouped by predicate."""

    def __init__(self, s: np.ndarray, p: np.ndarray, o: np.ndarray, step: np.ndarray):
        order = np.argsort(p, kind="stable")
        self.s, self.p, self.o, self.step = s[order], p[order], o[order], step[order]
        bounds = (np.flatnonzero(np.diff(self.p)) + 1).tolist()
        starts, ends = [0] + bounds, bounds + [len(self.p)]
        self._rows = {int(self.p[i]): slice(i, j) for i, j in zip(starts, ends) if j > i}

    def of(self, p: int) -> slice | None:
        """The rows with predicate p."""
        return self._rows.get(p)


def _rows(schema: SchemaColumns, p: int) -> Iterator[tuple[int, int, int]]:
    cols = schema.get(p)
    if cols is None:
        return iter(())
    return zip(cols[0].tolist(), cols[1].tolist(), cols[2].tolist())


# --- vectorised helpers used by apply() --------------------------------------

def pack(s: np.ndarray, o: np.ndarray) -> np.ndarray:
    return (s.astype(np.uint64) << SHIFT) | o.astype(np.uint64)


def join(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j) with left[i] == right[j] (a sort-merge equi-join)."""
    if len(left) == 0 or len(right) == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e
    order = np.argsort(right, kind="stable")
    rs = right[order]
    lo = np.searchsorted(rs, left, "left")
    hi = np.searchsorted(rs, left, "right")
    cnt = hi - lo
    total = int(cnt.sum())
    if total == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e
    li = np.repeat(np.arange(len(left)), cnt)
    starts = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt)
    ri = order[np.arange(total) + starts]
    return li, ri
