"""Running queries against a :class:`trine.Store`: text in, rdflib terms out.

``run_query(store, text, explicit_only=False) -> QueryResult``
    Parses (a small LRU cache keeps recent parse trees), plans inside one read
    snapshot, and returns a result whose rows are produced lazily: the
    snapshot stays open until the rows are exhausted or the result is closed.
    ``QueryResult.variables`` are the column names, iterating gives tuples of
    rdflib terms (``None`` for unbound), ``.ask`` is the answer of an ASK.

``explain_query(store, text, analyze=True) -> str``
    The plan tree with estimated rows per operator and, with ``analyze``, the
    actual rows after running the query to completion.

``bgp_query(patterns, projection, distinct) -> Query`` and
``prepare(txn, query, ...) -> (plan, executor)``
    The entry point for callers that hold their own transaction (the rdflib
    plugin, trine/rdflib_sparql.py): a basic graph pattern given as triples of
    rdflib terms and :class:`Var` s becomes a (cached, so plan-cacheable)
    ``Query``; ``prepare`` plans it inside the caller's transaction and
    returns the executor whose ``solutions(plan)`` yields id batches;
    :func:`decode_rows` turns those into rows of rdflib terms.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from functools import lru_cache
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np
from rdflib import Literal, URIRef
from rdflib.term import Identifier

from trine.store.gcpause import paused_gc
from trine.store.txn import Txn

from .algebra import Group, Query, TriplePattern, Var
from .batch import Batch
from .executor import Executor
from .parser import DEFAULT_PREFIXES, parse
from .planner import Aggregate, Ask, PlanNode, fresh_copy, plan_query, render

__all__ = ["QueryResult", "run_query", "explain_query", "parse_cached", "clear_caches",
           "bgp_query", "prepare", "decode_rows", "snapshot_id"]

XSD_INTEGER = URIRef("http://www.w3.org/2001/XMLSchema#integer")


@lru_cache(maxsize=256)
def _parse(text: str, prefixes: tuple, allow_bare: bool, base: str | None) -> Query:
    return parse(text, prefixes=dict(prefixes), allow_bare_patterns=allow_bare, base=base)


def parse_cached(text: str, prefixes: Mapping[str, str] | None = None,
                 allow_bare_patterns: bool = False, base: str | None = None) -> Query:
    """:func:`trine.query.parser.parse` with a small cache of recent texts
    (parse trees are immutable)."""
    return _parse(text, tuple(sorted((prefixes or {}).items())), allow_bare_patterns, base)


def _is_streaming(q: Query) -> bool:
    if q.form == "ASK":
        return True
    return (q.limit is not None and not q.order_by and not q.distinct and not q.aggregates)


class QueryResult:
    """The answer of a query.

    * ``variables``: names of the result columns (without ``?``);
    * iterating yields one tuple per solution, rdflib terms or ``None``;
      rows are computed on demand and remembered, so the result can be
      iterated again (use :meth:`stream` to avoid keeping them);
    * ``ask``: the boolean answer of an ASK query (``None`` for SELECT);
    * ``form``: ``'SELECT'`` or ``'ASK'``; ``prefixes``: the query's prefix map
      (used to abbreviate IRIs in the table output).

    A result holds a read snapshot of the store until its rows are exhausted
    or it is closed (``with store.query(...) as r:`` closes it).
    """

    def __init__(self, query: Query, variables: list[str], rows: Iterator[tuple] | None,
                 ask: bool | None = None, plan: PlanNode | None = None,
                 closer=None):
        self.query = query
        self.form = query.form
        self.variables = variables
        self.ask = ask
        self.plan = plan
        self.prefixes = dict(query.prefixes)
        self._rows = rows
        self._cache: list[tuple] = []
        self._closer = closer
        self._streamed = False
        if rows is None:
            self._finish()

    def _finish(self) -> None:
        self._rows = None
        closer, self._closer = self._closer, None
        if closer is not None:
            closer()

    def close(self) -> None:
        """Release the read snapshot (remaining rows are dropped)."""
        rows = self._rows
        self._rows = None
        if rows is not None and hasattr(rows, "close"):
            rows.close()
        self._finish()

    def __enter__(self) -> "QueryResult":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass

    def _next_chunk(self) -> list[tuple] | None:
        if self._rows is None:
            return None
        try:
            return next(self._rows)
        except StopIteration:
            self._finish()
            return None
        except BaseException:
            self.close()
            raise

    def __iter__(self) -> Iterator[tuple]:
        if self._streamed:
            raise RuntimeError("the rows of this result were streamed already")
        i = 0
        while True:
            if i < len(self._cache):
                chunk = self._cache[i:]
                i += len(chunk)
                yield from chunk
                continue
            chunk = self._next_chunk()
            if chunk is None:
                return
            self._cache.extend(chunk)

    def stream(self) -> Iterator[tuple]:
        """Iterate the rows once without remembering them."""
        chunks = self.chunks()
        try:
            for chunk in chunks:
                yield from chunk
        finally:
            chunks.close()  # an abandoned stream closes the result now, not at collection

    def chunks(self) -> Iterator[list[tuple]]:
        """Iterate the rows once, a list of rows at a time (not remembered)."""
        if self._cache:
            yield self._cache
            self._cache = []
        self._streamed = True
        try:
            while True:
                chunk = self._next_chunk()
                if chunk is None:
                    return
                if chunk:
                    yield chunk
        finally:
            self.close()

    def __bool__(self) -> bool:
        if self.form == "ASK":
            return bool(self.ask)
        return True

    def bindings(self) -> Iterator[dict[str, Identifier]]:
        """Rows as dicts (unbound variables left out)."""
        for row in self:
            yield {v: t for v, t in zip(self.variables, row) if t is not None}

    def __repr__(self) -> str:
        if self.form == "ASK":
            return f"<QueryResult ASK {self.ask}>"
        return f"<QueryResult SELECT {' '.join('?' + v for v in self.variables)}>"


# --- caches shared by the queries of one process ------------------------------------
#
# * plans, per store snapshot (environment + LMDB transaction id): a query run
#   again on an unchanged store reuses its plan (copied: run-time counters are
#   per run); any write makes a new snapshot;
# * decoded terms (id -> rdflib term), per environment: ids are never reused
#   within an environment (a bulk load builds a new one), so decoded terms stay
#   valid across writes.

_CACHE_LOCK = threading.Lock()
_PLANS: OrderedDict = OrderedDict()
_PLANS_MAX = 256
_TERMS: dict[tuple, dict] = {}


_ENV_KEYS: dict[int, tuple] = {}


def _env_key(env) -> tuple | None:
    """Identity of an LMDB environment (path and inode)."""
    try:
        hit = _ENV_KEYS.get(id(env))
        if hit is not None and hit[0] is env:
            return hit[1]
        path = env.path()
        st = os.stat(path)
        # the directory's ctime changes only when entries are added or removed:
        # a store deleted and created again at the same path gets a new key
        key = (path, st.st_dev, st.st_ino, st.st_ctime_ns)
        if len(_ENV_KEYS) > 64:
            _ENV_KEYS.clear()
        _ENV_KEYS[id(env)] = (env, key)
        return key
    except Exception:  # pragma: no cover - then nothing is shared between queries
        return None


def snapshot_id(env, txn: Txn) -> tuple | None:
    """Identity of a committed store state (environment + LMDB transaction id)
    for the plan and statistics caches.  Only for read transactions: a write
    transaction changes the store under one id."""
    key = _env_key(env)
    if key is None:
        return None
    return (key, txn.txn.id())


def _snapshot_id(store, txn: Txn) -> tuple | None:
    return snapshot_id(store.db.env, txn)


_TERMS_MAX = 500_000   # decoded terms kept per environment
_TERMS_ENVS = 4        # environments whose terms are kept


def _shared_terms(snapshot: tuple | None) -> dict | None:
    """The decoded-term cache of the snapshot's environment.  A full cache is
    replaced by a new one (never cleared in place: running queries keep
    using the dict they were given)."""
    if snapshot is None:
        return None
    with _CACHE_LOCK:
        d = _TERMS.get(snapshot[0])
        if d is None or len(d) > _TERMS_MAX:
            if d is None and len(_TERMS) >= _TERMS_ENVS:
                _TERMS.pop(next(iter(_TERMS)))
            d = _TERMS[snapshot[0]] = {}
        return d


def _cached_plan(query: Query, snapshot: tuple | None, explicit_only: bool) -> PlanNode | None:
    if snapshot is None:
        return None
    with _CACHE_LOCK:
        hit = _PLANS.get((snapshot, id(query), explicit_only))
        if hit is None or hit[0] is not query:
            return None
        _PLANS.move_to_end((snapshot, id(query), explicit_only))
    return fresh_copy(hit[1])


def _remember_plan(query: Query, snapshot: tuple | None, explicit_only: bool, plan: PlanNode) -> None:
    if snapshot is None:
        return
    template = fresh_copy(plan)
    with _CACHE_LOCK:
        _PLANS[(snapshot, id(query), explicit_only)] = (query, template)
        while len(_PLANS) > _PLANS_MAX:
            _PLANS.popitem(last=False)


def clear_caches() -> None:
    """Forget cached parse trees, plans, decoded terms and predicate statistics."""
    from . import planner
    _parse.cache_clear()
    with _CACHE_LOCK:
        _PLANS.clear()
        _TERMS.clear()
        _BGP_QUERIES.clear()
    with planner._STATS_LOCK:
        planner._STATS.clear()


def decode_rows(ex: Executor, batches: Iterator[Batch], names: Sequence[Var]) -> Iterator[list[tuple]]:
    """Lists of rows (tuples of rdflib terms, ``None`` for unbound), one list
    per batch of ``ex.solutions(plan)``; each batch's ids are decoded in one
    dictionary read."""
    for b in batches:
        if not b.n:
            continue
        if not names:
            yield [()] * b.n
            continue
        cols = [b.cols[v] for v in names]
        with paused_gc():
            get = ex.dict.terms.__getitem__
            try:  # a query run again finds every term decoded already
                columns = [list(map(get, c.tolist())) for c in cols]
            except KeyError:
                get = ex.dict.load_terms(cols[0] if len(cols) == 1 else np.concatenate(cols)).__getitem__
                columns = [list(map(get, c.tolist())) for c in cols]
            rows = [(t,) for t in columns[0]] if len(columns) == 1 else list(zip(*columns))
        yield rows


def run_query(store, text: str | Query, explicit_only: bool = False,
              prefixes: Mapping[str, str] | None = None,
              allow_bare_patterns: bool = False, base: str | None = None) -> QueryResult:
    """Run a SELECT or ASK query (text or a parsed :class:`Query`) on a Store.

    ``prefixes`` are predeclared prefixes, ``base`` the initial base IRI,
    ``allow_bare_patterns`` accepts a bare group body (``?x a ex:C``) as
    ``SELECT *``; ``explicit_only`` matches explicit triples only.
    """
    if isinstance(text, Query):
        query = text
    else:
        query = parse_cached(text, prefixes, allow_bare_patterns, base)
    ctx = store.db.read()
    txn = ctx.__enter__()
    closed = False

    def closer() -> None:
        nonlocal closed
        if not closed:
            closed = True
            ctx.__exit__(None, None, None)

    try:
        snapshot = _snapshot_id(store, txn)
        plan, ex = prepare(txn, query, explicit_only=explicit_only, snapshot=snapshot,
                           terms=_shared_terms(snapshot))
        vars_ = query.result_variables()
        names = [v.name for v in vars_]
        if isinstance(plan, Ask):
            ans = ex.ask(plan)
            closer()
            return QueryResult(query, [], None, ask=ans, plan=plan)
        if query.aggregates:
            rows = _aggregate_rows(ex, plan, query)
            closer()
            return QueryResult(query, names, iter([rows]), plan=plan)
        rows_it = decode_rows(ex, ex.solutions(plan), vars_)
        return QueryResult(query, names, rows_it, plan=plan, closer=closer)
    except BaseException:
        closer()
        raise


def prepare(txn: Txn, query: Query, *, explicit_only: bool = False, snapshot: tuple | None = None,
            terms: dict | None = None) -> tuple[PlanNode, Executor]:
    """The plan of a query (cached per ``snapshot``, see :func:`snapshot_id`)
    and an executor for it, inside the caller's transaction ``txn``.

    ``terms`` is a cache of decoded terms (id -> rdflib term) the caller
    shares between queries; it must not outlive the ids (see ``_shared_terms``).
    The executor's ``solutions(plan)`` / ``ask(plan)`` read ``txn`` lazily:
    it must stay open until they are exhausted.
    """
    ex = Executor(txn, explicit_only=explicit_only, streaming=_is_streaming(query), terms=terms)
    plan = _cached_plan(query, snapshot, explicit_only)
    if plan is None:
        plan = plan_query(query, txn, snapshot, explicit_only, fetcher=ex.fetch)
        _remember_plan(query, snapshot, explicit_only, plan)
    return plan, ex


# Queries built by bgp_query, by value: the same BGP asked again is the same
# object, so the plan cache (keyed by object identity) serves it.
_BGP_QUERIES: OrderedDict = OrderedDict()
_BGP_QUERIES_MAX = 1024


def bgp_query(patterns: Iterable[tuple], projection: Sequence[Var], distinct: bool = False,
              ask: bool = False) -> Query:
    """The query ``SELECT [DISTINCT] projection WHERE { patterns }`` (or ``ASK``).

    ``patterns`` are triples of rdflib constants (URIRef, Literal, BNode) and
    :class:`Var` s (blank nodes of the pattern are ``Var(name, bnode=True)``);
    ``projection`` may name any variables, also blank-node ones and ones the
    patterns do not bind (those are unbound in every row).  Equal arguments
    give the same object (a small cache), so :func:`prepare` reuses its plan.
    """
    key = (tuple(tuple(t) for t in patterns), tuple(projection), distinct, ask)
    with _CACHE_LOCK:
        q = _BGP_QUERIES.get(key)
        if q is not None:
            _BGP_QUERIES.move_to_end(key)
            return q
    q = Query(form="ASK" if ask else "SELECT", projection=None if ask else key[1], distinct=distinct,
              where=Group(patterns=tuple(TriplePattern(*t) for t in key[0])))
    with _CACHE_LOCK:
        _BGP_QUERIES[key] = q
        while len(_BGP_QUERIES) > _BGP_QUERIES_MAX:
            _BGP_QUERIES.popitem(last=False)
    return q


def _aggregate_rows(ex: Executor, plan: PlanNode, query: Query) -> list[tuple]:
    """Run an aggregate plan: Aggregate, optionally under Distinct / Slice."""
    chain = []
    node = plan
    while not isinstance(node, Aggregate):
        chain.append(node)
        node = node.children()[0]
    values = ex.aggregate(node)
    rows = [tuple(Literal(str(v), datatype=XSD_INTEGER) for v in values)]
    for n in reversed(chain):  # Distinct (one row stays one row), then Slice
        if hasattr(n, "offset"):
            rows = rows[n.offset:]
            if n.limit is not None:
                rows = rows[: n.limit]
        n.actual = len(rows)
    return rows


def explain_query(store, text: str | Query, analyze: bool = True, explicit_only: bool = False,
                  prefixes: Mapping[str, str] | None = None,
                  allow_bare_patterns: bool = False) -> str:
    """The plan of a query; with ``analyze`` it is run and actual rows shown."""
    query = text if isinstance(text, Query) else parse_cached(text, prefixes, allow_bare_patterns)
    pfx = dict(DEFAULT_PREFIXES)
    try:
        pfx.update(dict(store.namespaces()))
    except Exception:  # pragma: no cover
        pass
    pfx.update(query.prefixes)
    if not analyze:
        with store.db.read() as txn:
            plan = plan_query(query, txn, _snapshot_id(store, txn), explicit_only)
        return render(plan, pfx, analyze=False)
    t0 = time.perf_counter()
    result = run_query(store, query, explicit_only=explicit_only)
    n = 0
    for _ in result.stream() if result.form == "SELECT" else ():
        n += 1
    elapsed = time.perf_counter() - t0
    plan = result.plan
    text_out = render(plan, pfx, analyze=True)  # type: ignore[arg-type]
    if result.form == "ASK":
        summary = f"answer: {'true' if result.ask else 'false'}"
    else:
        summary = f"{n:,} row{'s' if n != 1 else ''}"
    return f"{text_out}\n({summary}, {elapsed * 1000:.1f} ms)"
