"""Query planning: a parsed :class:`~trine.query.algebra.Query` -> a plan tree.

A plan is a small tree of plain dataclasses.  The basic graph pattern becomes
a left-deep chain ``Join(Join(Scan, p2), p3) ...`` with each FILTER placed
right after the step that binds the last of its variables; the solution
modifiers sit on top (``OrderBy``, ``Project``, ``Distinct``, ``Slice``, or
``Aggregate`` / ``Ask``).  Every node carries ``est`` (estimated rows out) and,
after an analysed run, ``actual``.

Join order (greedy, from index range counts):

1. every constant is looked up in the dictionary; a constant the store has
   never seen means no answers (``Empty``), and so does a pattern whose exact
   range count is 0;
2. the first step is the pattern with the smallest range count (``count``:
   one O(1) ``key_count`` for a single constant, one bulk read of the rarer key
   for two constants);
3. then, repeatedly, the pattern *connected* to the variables bound so far
   with the smallest estimated output, where joining ``n`` rows on variables
   ``J`` with a pattern of ``c`` matches gives
   ``n * c / prod(max(d_left(v), d_pattern(v)) for v in J)`` (the textbook
   estimate: distinct values from predicate statistics, ``d_left`` capped by
   the rows so far); a pattern whose variables are all bound is a semi-join
   (a check) and never grows the result;
4. a pattern sharing no variable with the bound ones (a cartesian product) is
   taken only when no connected pattern is left.

The executor (:mod:`trine.query.executor`) decides at run time, per join and
per batch, between index probes and a bulk merge join; the chosen methods and
the actual row counts are recorded on the nodes for EXPLAIN ANALYZE.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
from rdflib import Literal, URIRef

from trine.store.terms import from_rdflib
from trine.store.txn import Txn

from . import access
from .algebra import (
    Aggregate as AggregateSpec,
    Expr,
    OrderKey,
    Query,
    TriplePattern,
    Var,
    expression_variables,
)

__all__ = [
    "PlanNode", "Unit", "Empty", "Scan", "Join", "Filter", "OrderBy", "Project", "Distinct",
    "Slice", "Aggregate", "Ask", "plan_query", "render", "walk", "fresh_copy", "Statistics",
]

PatternIds = tuple  # (int | Var, int | Var, int | Var)


# ---------------------------------------------------------------------------
# Plan nodes
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class PlanNode:
    est: float = 0.0
    actual: int | None = None

    def children(self) -> tuple["PlanNode", ...]:
        child = getattr(self, "child", None)
        return (child,) if child is not None else ()


@dataclass(eq=False)
class Unit(PlanNode):
    """One empty solution (a WHERE group without triple patterns)."""


@dataclass(eq=False)
class Empty(PlanNode):
    """No solutions, known before reading any index."""

    reason: str = ""


@dataclass(eq=False)
class Scan(PlanNode):
    """The first triple pattern: one range of the index chosen for it."""

    pattern: TriplePattern | None = None
    ids: PatternIds = ()
    count: int = 0
    exact: bool = True
    index: str = ""


@dataclass(eq=False)
class Join(PlanNode):
    """Join the rows of ``left`` with the matches of one more pattern.

    ``kind`` is ``join`` (binds new variables), ``semi-join`` (every
    variable of the pattern is bound already: a check) or ``cross`` (no
    shared variable).  ``methods`` counts, per batch, which algorithm the
    executor used: ``probe`` (index nested loop: one multi-key read of the
    distinct bound values) or ``merge`` (the pattern's whole range read once,
    sorted ids joined by binary search).
    """

    left: PlanNode | None = None
    pattern: TriplePattern | None = None
    ids: PatternIds = ()
    count: int = 0
    exact: bool = True
    join_vars: tuple[Var, ...] = ()
    new_vars: tuple[Var, ...] = ()
    kind: str = "join"
    methods: dict = field(default_factory=dict)
    probed_keys: int = 0
    fetched_rows: int = 0

    def children(self) -> tuple[PlanNode, ...]:
        return (self.left,) if self.left is not None else ()


@dataclass(eq=False)
class Filter(PlanNode):
    child: PlanNode | None = None
    expr: Expr | None = None


@dataclass(eq=False)
class OrderBy(PlanNode):
    child: PlanNode | None = None
    keys: tuple[OrderKey, ...] = ()


@dataclass(eq=False)
class Project(PlanNode):
    child: PlanNode | None = None
    vars: tuple[Var, ...] = ()


@dataclass(eq=False)
class Distinct(PlanNode):
    child: PlanNode | None = None


@dataclass(eq=False)
class Slice(PlanNode):
    child: PlanNode | None = None
    offset: int = 0
    limit: int | None = None


@dataclass(eq=False)
class Aggregate(PlanNode):
    child: PlanNode | None = None
    aggregates: tuple[AggregateSpec, ...] = ()


@dataclass(eq=False)
class Ask(PlanNode):
    child: PlanNode | None = None


def fresh_copy(node: PlanNode) -> PlanNode:
    """A copy of a plan with the run-time fields (actual rows, join methods)
    reset: a cached plan is run through copies."""
    n = object.__new__(type(node))
    n.__dict__.update(node.__dict__)
    n.actual = None
    if isinstance(n, Join):
        n.methods = {}
        n.probed_keys = 0
        n.fetched_rows = 0
        if n.left is not None:
            n.left = fresh_copy(n.left)
    elif getattr(n, "child", None) is not None:
        n.child = fresh_copy(n.child)  # type: ignore[attr-defined]
    return n


def walk(node: PlanNode) -> Iterator[PlanNode]:
    yield node
    for c in node.children():
        yield from walk(c)


# ---------------------------------------------------------------------------
# Statistics: distinct subjects / objects per predicate, cached per snapshot
# ---------------------------------------------------------------------------

_STATS_LOCK = threading.Lock()
_STATS: dict[tuple, int] = {}
_STATS_MAX = 4096


class Statistics:
    """Range counts and distinct-value estimates inside one read transaction.

    Predicate statistics (how many distinct subjects and objects a predicate
    has) come from one bulk read of its PSO and POS ranges and are cached per
    store snapshot (environment path + LMDB transaction id), so a store that
    does not change computes each predicate's once.
    """

    def __init__(self, txn: Txn, snapshot: tuple | None = None, explicit_only: bool = False,
                 fetcher=None):
        self.txn = txn
        self.snapshot = snapshot
        self.explicit_only = explicit_only
        self.fetcher = fetcher
        self._counts: dict[tuple, tuple[int, bool]] = {}
        self._n_predicates: int | None = None

    def count(self, s: int | None, p: int | None, o: int | None) -> tuple[int, bool]:
        key = (s, p, o)
        r = self._counts.get(key)
        if r is None:
            if self.explicit_only and self.fetcher is not None and (s, p, o).count(None) < 3:
                c, exact = access.count_pattern(self.txn, s, p, o, fetcher=self.fetcher)
                if exact and c:  # an exact explicit count when the range is read anyway
                    c = len(self.fetcher(s, p, o)[0])
                r = (c, exact)
            else:
                r = access.count_pattern(self.txn, s, p, o, fetcher=self.fetcher)
            self._counts[key] = r
        return r

    def n_predicates(self) -> int:
        if self._n_predicates is None:
            self._n_predicates = max(1, len(access.predicates(self.txn)))
        return self._n_predicates

    def predicate_distinct(self, p: int, pos: int) -> int:
        """Distinct subjects (``pos`` 0) or objects (``pos`` 2) of predicate
        ``p``: one bulk read of its PSO (or POS) range, whose first free
        column is sorted."""
        key = (self.snapshot, p, pos) if self.snapshot is not None else None
        if key is not None:
            with _STATS_LOCK:
                r = _STATS.get(key)
            if r is not None:
                return r
        if self.txn.key_count("pso", p) == 0:
            r = 0
        else:
            rows, _ = access.fetch(self.txn, None, p, None, sort_by=pos)
            r = _distinct_sorted(rows[:, pos])
        if key is not None:
            with _STATS_LOCK:
                if len(_STATS) >= _STATS_MAX:
                    _STATS.clear()
                _STATS[key] = r
        return r

    def distinct(self, ids: PatternIds, pos: int, count: int) -> float:
        """Estimated distinct values at position ``pos`` (a variable) among
        the ``count`` matches of a pattern."""
        consts = [i for i in range(3) if not isinstance(ids[i], Var)]
        same = [i for i in range(3) if ids[i] == ids[pos]]
        if count <= 1:
            return max(count, 1)
        free = [i for i in range(3) if isinstance(ids[i], Var)]
        if len(free) == 1 or len(set(ids[i] for i in free)) == 1:
            return count
        if consts == [1] and pos in (0, 2) and len(same) == 1:
            return max(1, min(count, self.predicate_distinct(ids[1], pos)))
        if pos == 1:
            return min(count, self.n_predicates())
        if len(consts) == 1:
            # (s ?p ?o) / (?s ?p o): few predicates, so the other end is nearly all distinct
            return max(1, count / 2)
        # (?s ?p ?o)
        return max(1, count / 8)


def _distinct_sorted(col: np.ndarray) -> int:
    if len(col) == 0:
        return 0
    return int(np.count_nonzero(col[1:] != col[:-1])) + 1


# ---------------------------------------------------------------------------
# Planning
# ---------------------------------------------------------------------------


def resolve_constants(txn: Txn, query: Query) -> tuple[list[PatternIds], list]:
    """Pattern positions as ids (constants) or Vars; plus constants not in
    the dictionary (which make the BGP empty)."""
    out, missing = [], []
    cache: dict = {}
    for tp in query.where.patterns:
        ids = []
        for t in tp:
            if isinstance(t, Var):
                ids.append(t)
                continue
            if t not in cache:
                cache[t] = txn.term_id(from_rdflib(t))
            tid = cache[t]
            if tid is None:
                missing.append(t)
                tid = -1
            ids.append(tid)
        out.append(tuple(ids))
    return out, missing


def _const_args(ids: PatternIds) -> tuple:
    return tuple(None if isinstance(x, Var) else x for x in ids)


def _pattern_vars(ids: PatternIds) -> list[Var]:
    seen: dict[Var, None] = {}
    for x in ids:
        if isinstance(x, Var):
            seen.setdefault(x, None)
    return list(seen)


def _fmt_term(t) -> str:
    if isinstance(t, Var):
        return str(t)
    if isinstance(t, URIRef):
        return f"<{t}>"
    if isinstance(t, Literal):
        return t.n3()
    return str(t)


def plan_bgp(query: Query, stats: Statistics, ids_list: list[PatternIds], missing: list) -> PlanNode:
    """The left-deep join chain (with FILTERs placed) of the WHERE group."""
    patterns = list(query.where.patterns)
    filters = list(query.where.filters)
    pattern_vars = set(query.where.variables(include_bnodes=True))
    if missing:
        names = ", ".join(_fmt_term(t) for t in dict.fromkeys(missing))
        return Empty(est=0, reason=f"{names} does not occur in the store")
    if not patterns:
        node: PlanNode = Unit(est=1)
        for f in filters:
            node = Filter(est=node.est, child=node, expr=f)
        return node

    counts = []
    for i, ids in enumerate(ids_list):
        c, exact = stats.count(*_const_args(ids))
        counts.append((c, exact))
        if c == 0:
            tp = patterns[i]
            return Empty(est=0, reason=f"pattern ({' '.join(_fmt_term(t) for t in tp)}) matches no triple")

    remaining = list(range(len(patterns)))
    # filters waiting for their variables; filters without pattern variables go first
    pending = []
    for f in filters:
        fv = {v for v in expression_variables(f) if v in pattern_vars}
        pending.append((f, fv))

    def nconst(i):
        return sum(not isinstance(x, Var) for x in ids_list[i])

    first = min(remaining, key=lambda i: (counts[i][0], -nconst(i), i))
    remaining.remove(first)
    ids = ids_list[first]
    node = Scan(est=counts[first][0], pattern=patterns[first], ids=ids, count=counts[first][0],
                exact=counts[first][1])
    bound: dict[Var, float] = {}
    for v in _pattern_vars(ids):
        pos = ids.index(v)
        bound[v] = stats.distinct(ids, pos, counts[first][0])
    node = _place_filters(node, pending, bound)

    while remaining:
        best = None
        for i in remaining:
            ids = ids_list[i]
            pv = _pattern_vars(ids)
            shared = [v for v in pv if v in bound]
            if not shared:
                continue
            est = _join_estimate(node.est, bound, ids, shared, counts[i][0], stats)
            key = (est, counts[i][0], i)
            if best is None or key < best[0]:
                best = (key, i, shared, est)
        if best is None:  # disconnected: cartesian product with the smallest pattern
            i = min(remaining, key=lambda j: (counts[j][0], j))
            shared, est = [], node.est * counts[i][0]
        else:
            _, i, shared, est = best
        remaining.remove(i)
        ids = ids_list[i]
        pv = _pattern_vars(ids)
        new = [v for v in pv if v not in bound]
        kind = "cross" if not shared else ("semi-join" if not new else "join")
        node = Join(est=est, left=node, pattern=patterns[i], ids=ids, count=counts[i][0],
                    exact=counts[i][1], join_vars=tuple(shared), new_vars=tuple(new), kind=kind)
        for v in pv:
            d = stats.distinct(ids, ids.index(v), counts[i][0])
            bound[v] = max(1.0, min(est, d, bound.get(v, math.inf)))
        for v in bound:
            bound[v] = max(1.0, min(bound[v], est))
        node = _place_filters(node, pending, bound)
    for f, _ in pending:  # pragma: no cover - every filter is placed above
        node = Filter(est=node.est, child=node, expr=f)
    return node


def _join_estimate(n: float, bound: dict, ids: PatternIds, shared: list[Var], count: int,
                   stats: Statistics) -> float:
    est = n * count
    for v in shared:
        d_pat = stats.distinct(ids, ids.index(v), count)
        est /= max(bound[v], d_pat, 1.0)
    if len(shared) == len(_pattern_vars(ids)):
        est = min(est, n)  # a check never adds rows
    return max(est, 0.0)


def _filter_selectivity(expr: Expr) -> float:
    from .algebra import Compare
    if isinstance(expr, Compare) and expr.op == "=":
        return 0.1
    return 0.5


def _place_filters(node: PlanNode, pending: list, bound: dict) -> PlanNode:
    keep = []
    for f, fv in pending:
        if fv <= bound.keys():
            node = Filter(est=node.est * _filter_selectivity(f), child=node, expr=f)
        else:
            keep.append((f, fv))
    pending[:] = keep
    return node


def plan_query(query: Query, txn: Txn, snapshot: tuple | None = None,
               explicit_only: bool = False, fetcher=None) -> PlanNode:
    """The whole plan of a query, estimates filled in.  ``fetcher(s, p, o)``
    (the executor's cached range reader) lets planning and execution share
    the ranges read for exact counts."""
    stats = Statistics(txn, snapshot, explicit_only, fetcher)
    ids_list, missing = resolve_constants(txn, query)
    node = plan_bgp(query, stats, ids_list, missing)
    if query.form == "ASK":
        return Ask(est=1, child=node)
    if query.aggregates:
        node = Aggregate(est=1, child=node, aggregates=query.aggregates)
    else:
        if query.order_by:
            node = OrderBy(est=node.est, child=node, keys=query.order_by)
        node = Project(est=node.est, child=node, vars=query.result_variables())
    if query.distinct or query.reduced:
        node = Distinct(est=node.est, child=node)
    if query.offset or query.limit is not None:
        est = max(0.0, node.est - query.offset)
        if query.limit is not None:
            est = min(est, query.limit)
        node = Slice(est=est, child=node, offset=query.offset, limit=query.limit)
    return node


# ---------------------------------------------------------------------------
# Rendering (EXPLAIN)
# ---------------------------------------------------------------------------


def _fmt_num(x: float | int | None) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if x >= 100 or x == int(x):
            return f"{int(round(x)):,}"
        return f"{x:.1f}"
    return f"{x:,}"


def _fmt_pattern(tp: TriplePattern | None, prefixes: dict | None) -> str:
    if tp is None:
        return ""
    return "(" + " ".join(_short(t, prefixes) for t in tp) + ")"


def _short(t, prefixes: dict | None) -> str:
    if isinstance(t, URIRef) and prefixes:
        s = str(t)
        if s == "http://www.w3.org/1999/02/22-rdf-syntax-ns#type":
            return "a"
        best = None
        for p, ns in prefixes.items():
            if s.startswith(ns) and (best is None or len(ns) > len(best[1])):
                best = (p, ns)
        if best is not None:
            local = s[len(best[1]):]
            if local and all(c.isalnum() or c in "_-." for c in local) and not local.endswith("."):
                return f"{best[0]}:{local}"
    return _fmt_term(t)


def _fmt_expr(e, prefixes) -> str:
    from .algebra import And, Call, Compare, Not, Or
    if isinstance(e, Compare):
        return f"{_fmt_expr(e.left, prefixes)} {e.op} {_fmt_expr(e.right, prefixes)}"
    if isinstance(e, And):
        return " && ".join(f"({_fmt_expr(i, prefixes)})" for i in e.items)
    if isinstance(e, Or):
        return " || ".join(f"({_fmt_expr(i, prefixes)})" for i in e.items)
    if isinstance(e, Not):
        return f"!({_fmt_expr(e.expr, prefixes)})"
    if isinstance(e, Call):
        return f"{e.name.upper()}({', '.join(_fmt_expr(a, prefixes) for a in e.args)})"
    return _short(e, prefixes)


def describe(node: PlanNode, prefixes: dict | None = None) -> str:
    """One line naming the operator and its arguments."""
    if isinstance(node, Unit):
        return "Unit (one empty solution)"
    if isinstance(node, Empty):
        return f"Empty: {node.reason}"
    if isinstance(node, Scan):
        exact = "" if node.exact else " (upper bound)"
        idx = f" via {node.index}" if node.index else ""
        return f"Scan {_fmt_pattern(node.pattern, prefixes)}{idx}  range={_fmt_num(node.count)}{exact}"
    if isinstance(node, Join):
        on = ", ".join(str(v) for v in node.join_vars) or "-"
        methods = ""
        if node.methods:
            parts = [f"{m} x{n}" for m, n in sorted(node.methods.items())]
            extra = []
            if node.probed_keys:
                extra.append(f"{node.probed_keys:,} keys probed")
            if node.fetched_rows:
                extra.append(f"{node.fetched_rows:,} rows read in bulk")
            methods = "  [" + ", ".join(parts + extra) + "]"
        title = {"join": "Join", "semi-join": "SemiJoin", "cross": "CrossProduct"}[node.kind]
        return (f"{title} on {on} with {_fmt_pattern(node.pattern, prefixes)}  "
                f"range={_fmt_num(node.count)}{'' if node.exact else ' (upper bound)'}{methods}")
    if isinstance(node, Filter):
        return f"Filter {_fmt_expr(node.expr, prefixes)}"
    if isinstance(node, OrderBy):
        keys = ", ".join(("DESC(" if k.descending else "ASC(") + _fmt_expr(k.expr, prefixes) + ")"
                         for k in node.keys)
        return f"OrderBy {keys}"
    if isinstance(node, Project):
        return "Project " + (" ".join(str(v) for v in node.vars) or "(no variables)")
    if isinstance(node, Distinct):
        return "Distinct"
    if isinstance(node, Slice):
        lim = "" if node.limit is None else f" limit={node.limit}"
        return f"Slice offset={node.offset}{lim}"
    if isinstance(node, Aggregate):
        items = []
        for a in node.aggregates:
            arg = "*" if a.arg is None else str(a.arg)
            items.append(f"COUNT({'DISTINCT ' if a.distinct else ''}{arg}) AS {a.alias}")
        return "Aggregate " + ", ".join(items)
    if isinstance(node, Ask):
        return "Ask (stops at the first solution)"
    return type(node).__name__


def render(node: PlanNode, prefixes: dict | None = None, analyze: bool = True) -> str:
    """The plan as an indented tree with estimated (and actual) rows."""
    lines: list[tuple[str, str]] = []

    def rec(n: PlanNode, depth: int) -> None:
        text = "  " * depth + ("-> " if depth else "") + describe(n, prefixes)
        card = f"est={_fmt_num(n.est)}"
        if analyze:
            card += f" actual={_fmt_num(n.actual)}"
        lines.append((text, card))
        for c in n.children():
            rec(c, depth + 1)

    rec(node, 0)
    width = min(max(len(t) for t, _ in lines), 110)
    return "\n".join(f"{t.ljust(width)}  {c}" for t, c in lines)
