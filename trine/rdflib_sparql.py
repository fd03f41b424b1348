"""SPARQL on a TrineStore graph: rdflib's algebra handed to trine.query.

rdflib evaluates a basic graph pattern (BGP) as a nested loop in Python, one
``triples()`` call per partial solution.  The plugin hands BGPs to trine's
planner and executor instead (trine/query: joins on term ids, terms decoded
only for the answers), at two levels:

* **whole queries**: rdflib's ``Graph.query`` first offers the query to the
  store (``TrineStore.query``).  ``SELECT [DISTINCT] ... WHERE { triples }``
  and ``ASK { triples }`` without a dataset clause or initial bindings are run
  here from start to finish: rdflib's ``evalQuery``, its solution mappings and
  its ``ResultRow`` construction are skipped (:func:`run_whole_query`);
* **BGPs inside any other query** (``CUSTOM_EVALS``): ``BGP``,
  ``Project(BGP)`` and ``Distinct(Project(BGP))`` parts, with the variables
  rdflib has already bound (VALUES, BIND, OPTIONAL's left side,
  ``initBindings``) substituted as constants (:func:`bgp_solutions`).

Both translate to the same :func:`trine.query.api.bgp_query`, so both get
the same answers: blank nodes of the query are variables, terms match by the
store's canonical form.  Anything else (FILTER, OPTIONAL, property paths,
aggregates, ...) is rdflib's own evaluation around the BGPs.

The caller (trine/rdflib.py) checks that acceleration is on and provides
``store.prepared(query)``: a context manager giving ``(plan, executor)``
inside the store's current transaction.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any, Iterator, Mapping, Sequence

from rdflib import BNode, Literal, URIRef, Variable
from rdflib.plugins.sparql.algebra import translateQuery
from rdflib.plugins.sparql.parser import parseQuery
from rdflib.plugins.sparql.processor import SPARQLResult
from rdflib.plugins.sparql.sparql import FrozenBindings, Query as RdflibQuery, QueryContext
from rdflib.query import ResultRow

from trine.query.algebra import Var
from trine.query.api import bgp_query, decode_rows
from trine.query.planner import Ask

__all__ = ["bgp_solutions", "run_whole_query", "WholeQuery"]


# --- rdflib triples -> trine patterns ------------------------------------------------

def translate_bgp(triples: Sequence[tuple], ctx: QueryContext | None = None
                  ) -> tuple[list[tuple], dict[Var, Any]] | None:
    """trine patterns of rdflib BGP triples, and the rdflib Variable/BNode of each Var.

    With ``ctx``, variables it binds become constants.  None when a triple
    holds something else than terms (a property path).
    """
    patterns = []
    names: dict[Var, Any] = {}
    for t in triples:
        row = []
        for x in t:
            if isinstance(x, (Variable, BNode)):
                if ctx is not None:
                    value = ctx[x]
                    if value is not None:
                        row.append(value)
                        continue
                v = Var(str(x), bnode=isinstance(x, BNode))
                names[v] = x
                row.append(v)
            elif isinstance(x, (URIRef, Literal)):
                row.append(x)
            else:
                return None
        patterns.append(tuple(row))
    return patterns, names


# --- BGPs inside rdflib's evaluation (CUSTOM_EVALS) ----------------------------------

def bgp_part(part: Any) -> tuple[Any, list | None, bool] | None:
    """(BGP, projection, distinct) of a ``BGP``, ``Project(BGP)`` or
    ``Distinct(Project(BGP))`` algebra part; None for any other part.

    (Not ``Reduced``: which duplicates rdflib's REDUCED drops depends on the
    order of the solutions, and answers must not change.)
    """
    name = part.name
    distinct = False
    if name == "Distinct":
        part = part.p
        name = getattr(part, "name", None)
        if name != "Project":
            return None
        distinct = True
    if name == "Project":
        bgp = part.p
        if getattr(bgp, "name", None) != "BGP":
            return None
        return bgp, list(part.PV), distinct
    if name == "BGP":
        return part, None, False
    return None


def bgp_solutions(store: Any, ctx: QueryContext, bgp: Any, project: list | None,
                  distinct: bool) -> Iterator[FrozenBindings]:
    """Solutions of a BGP merged with ``ctx``'s bindings (rdflib's evalBGP /
    evalProject / evalDistinct over it); NotImplementedError for property paths."""
    if not bgp.triples:
        sol = ctx.solution()
        return iter([sol.project(project) if project is not None else sol])
    translated = translate_bgp(bgp.triples, ctx)
    if translated is None:
        raise NotImplementedError
    patterns, names = translated
    base = dict(ctx.bindings.items()) if len(ctx.bindings) else {}
    if project is None:
        keys = list(names.values())
    else:
        keep = set(project)
        base = {k: v for k, v in base.items() if k in keep}
        keys = [x for x in project if isinstance(x, Variable) and Var(str(x)) in names]
    query = bgp_query(patterns, [Var(str(k), bnode=isinstance(k, BNode)) for k in keys], distinct)
    with store.prepared(query) as (plan, ex):
        # decoded inside the transaction; solutions are built lazily after it
        chunks = list(decode_rows(ex, ex.solutions(plan), query.projection))
    return _bindings(ctx, base, keys, chunks)


class _Solution(FrozenBindings):
    """rdflib's FrozenBindings with direct lookups of bound variables.

    rdflib reads every solution through ``Mapping.get``/``__getitem__``
    (isinstance checks, then the dict); this answers bound variables from
    the dict first and defers to FrozenBindings for anything else.
    """

    def __getitem__(self, key: Any) -> Any:
        try:
            return self._d[key]
        except KeyError:
            return FrozenBindings.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self._d[key]
        except KeyError:
            pass
        try:
            return FrozenBindings.__getitem__(self, key)
        except KeyError:
            return default

    def __contains__(self, key: Any) -> bool:
        if key in self._d:
            return True
        try:
            FrozenBindings.__getitem__(self, key)
            return True
        except KeyError:
            return False

    def items(self) -> Any:
        return self._d.items()

    def project(self, vars: Any) -> FrozenBindings:
        return _Solution(self.ctx, [(k, v) for k, v in self._d.items() if k in vars])


def _bindings(ctx: QueryContext, base: dict, keys: list, chunks: list[list[tuple]]) -> Iterator[FrozenBindings]:
    """One ``_Solution`` per row (built without the Python-level ``__init__`` chain)."""
    new = object.__new__
    for rows in chunks:
        if not keys:
            for _ in rows:
                yield _Solution(ctx, base)
            continue
        for row in rows:
            sol = new(_Solution)
            if base:
                d = dict(base)
                d.update(zip(keys, row))
                sol._d = d
            else:
                sol._d = dict(zip(keys, row))
            sol._hash = None
            sol.ctx = ctx
            yield sol


# --- whole queries (TrineStore.query) ---------------------------------------------------

class WholeQuery:
    """A query rdflib would answer with one BGP: trine's ``Query`` and rdflib's variables."""

    __slots__ = ("query", "variables", "binds_any")

    def __init__(self, query: Any, variables: list | None, binds_any: bool):
        self.query = query            # trine.query.algebra.Query
        self.variables = variables    # rdflib's PV list (None for ASK)
        self.binds_any = binds_any    # some projected variable occurs in the BGP


def translate_query(algebra: Any) -> WholeQuery | None:
    """The :class:`WholeQuery` of rdflib's algebra, or None when rdflib must evaluate it."""
    name = algebra.name
    if name not in ("SelectQuery", "AskQuery") or algebra.get("datasetClause"):
        return None
    part = bgp_part(algebra.p)
    if part is None or part[1] is None:
        return None
    bgp, pv, distinct = part
    translated = translate_bgp(bgp.triples)
    if translated is None:
        return None
    patterns, names = translated
    if name == "AskQuery":
        return WholeQuery(bgp_query(patterns, (), ask=True), None, True)
    projection = [Var(str(v)) for v in pv]
    return WholeQuery(bgp_query(patterns, projection, distinct), algebra.PV,
                      any(v in names for v in projection))


#: Words of query texts that are never a whole BGP query: such texts go to
#: rdflib at once instead of being parsed twice (here and by rdflib).  A word
#: inside an IRI or a literal only costs that shortcut.
_NOT_WHOLE = re.compile(r"\b(?:FILTER|OPTIONAL|UNION|MINUS|GRAPH|SERVICE|BIND|VALUES|GROUP|HAVING|ORDER|"
                        r"LIMIT|OFFSET|REDUCED|FROM|AS|CONSTRUCT|DESCRIBE|INSERT|DELETE|LOAD|CLEAR|"
                        r"DROP|CREATE|WITH)\b", re.IGNORECASE)
_CACHE_MAX = 256
_TEXTS: OrderedDict = OrderedDict()      # (text, base) -> (initNs, WholeQuery | None)
_PREPARED: OrderedDict = OrderedDict()   # id(rdflib Query) -> (the Query, WholeQuery | None)
_LOCK = threading.Lock()


def _remember(cache: OrderedDict, key: Any, value: Any) -> None:
    with _LOCK:
        cache[key] = value
        while len(cache) > _CACHE_MAX:
            cache.popitem(last=False)


def whole_query(query_object: Any, init_ns: Mapping[str, Any], base: str | None) -> WholeQuery | None:
    """The :class:`WholeQuery` of a query text or prepared query (cached), or None."""
    if isinstance(query_object, RdflibQuery):
        hit = _PREPARED.get(id(query_object))
        if hit is not None and hit[0] is query_object:
            return hit[1]
        wq = translate_query(query_object.algebra)
        # the entry keeps the prepared query alive, so its id cannot be reused
        _remember(_PREPARED, id(query_object), (query_object, wq))
        return wq
    if not isinstance(query_object, str):
        return None
    key = (query_object, base)
    hit = _TEXTS.get(key)
    if hit is not None and hit[0] == init_ns:
        return hit[1]
    wq = None
    if not _NOT_WHOLE.search(query_object):
        # parsed exactly as rdflib's SPARQLProcessor would (prefixes, base)
        wq = translate_query(translateQuery(parseQuery(query_object), base, init_ns).algebra)
    _remember(_TEXTS, key, (dict(init_ns), wq))
    return wq


class TrineResult(SPARQLResult):
    """A SELECT result whose rows are built straight from trine's.

    Iterating yields rdflib ``ResultRow`` s without building rdflib's
    solution mappings (one label map is shared by all rows); ``bindings``
    (dicts) are built on first use.  Everything observable is rdflib's
    ``Result``: rows that bind no projected variable are skipped by iteration,
    and -- as rdflib's generator-fed results do -- dropped from ``bindings``
    and ``len`` once iterated past, but kept if ``bindings`` is read first.
    """

    def __init__(self, variables: list, rows: list[tuple], binds_any: bool):
        SPARQLResult.__init__(self, {"type_": "SELECT", "vars_": variables, "bindings": []})
        self._rows: list[tuple] | None = rows   # not yet consumed (rdflib's _genbindings)
        self._pos = 0
        self._kept: list[tuple] = []            # consumed, not yet turned into bindings
        self._binds_any = binds_any             # every row binds something (else none does)

    def _drain(self) -> None:
        """What rdflib does to its solution generator on ``len`` or ``bindings``:
        every remaining solution joins the bindings list."""
        if self._rows is not None:
            self._kept.extend(self._rows[self._pos:])
            self._rows = None

    @property  # type: ignore[override]
    def bindings(self) -> Any:
        self._drain()
        if self._kept:
            names = self.vars
            self._bindings.extend({v: t for v, t in zip(names, row) if t is not None}  # type: ignore[arg-type]
                                  for row in self._kept)
            self._kept = []
        return self._bindings

    @bindings.setter
    def bindings(self, b: Any) -> None:
        SPARQLResult.bindings.fset(self, b)  # type: ignore[attr-defined]

    def __len__(self) -> int:
        # (list(result) asks for the length first: as in rdflib, that drains the solutions)
        self._drain()
        return len(self._bindings) + len(self._kept)

    def __iter__(self) -> Iterator[ResultRow]:  # type: ignore[override]
        labels = {str(v): i for i, v in enumerate(self.vars)}  # type: ignore[arg-type]
        new = tuple.__new__
        binds_any = self._binds_any
        if self._rows is None:
            # rdflib iterates its bindings list: the mappings built so far, then the rest
            for b in self._bindings:
                if b:
                    yield ResultRow(b, self.vars)  # type: ignore[arg-type]
            if binds_any:
                for row in self._kept:
                    r = new(ResultRow, row)
                    r.labels = labels
                    yield r
            return
        rows = self._rows
        kept = self._kept
        while self._rows is not None and self._pos < len(rows):   # len/bindings drain the rest
            row = rows[self._pos]
            self._pos += 1
            if binds_any:               # rdflib keeps (and yields) only solutions that bind something
                kept.append(row)
                r = new(ResultRow, row)
                r.labels = labels
                yield r
        self._rows = None


def run_whole_query(store: Any, wq: WholeQuery) -> SPARQLResult:
    """Answer a :class:`WholeQuery` in the store's current transaction."""
    query = wq.query
    with store.prepared(query) as (plan, ex):
        if isinstance(plan, Ask):
            return SPARQLResult({"type_": "ASK", "askAnswer": ex.ask(plan)})
        rows = [r for chunk in decode_rows(ex, ex.solutions(plan), query.projection) for r in chunk]
    return TrineResult(wq.variables, rows, wq.binds_any)
