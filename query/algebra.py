"""The query algebra: plain, immutable data produced by :mod:`trine.query.parser`.

Constants are rdflib terms (:class:`rdflib.URIRef`, :class:`rdflib.Literal`);
variables are :class:`Var`.  A blank node written in a pattern (``_:b``,
``[]``, ``[ :p :o ]``, the nodes of a collection ``( ... )``) is a
*non-distinguished* variable: it is a ``Var`` with ``bnode=True``.  It joins
like any other variable but is never projected (``SELECT *`` skips it).

Shape of a parsed query::

    Query(form='SELECT', projection=(Var('x'), Aggregate(...)) | None,   # None = *
          distinct=False, reduced=False,
          where=Group(patterns=(TriplePattern(s, p, o), ...), filters=(Expr, ...)),
          order_by=(OrderKey(expr, descending), ...), limit=None, offset=0,
          prefixes={...}, base=None)

Filter expressions (``Expr``) are built from:

* constants (``URIRef``/``Literal``) and ``Var``;
* ``Compare(op, left, right)`` with ``op`` one of ``= != < <= > >=``;
* ``And(items)``, ``Or(items)`` (always two or more items), ``Not(expr)``;
* ``Call(name, args)`` with ``name`` lower-cased and one of ``bound``,
  ``isiri`` (also used for ``isURI``), ``isliteral``, ``isblank``, ``regex``
  (2 or 3 args), ``lang``, ``datatype``, ``str``, ``langmatches`` (2 args).
  Every ``Call`` is a SPARQL built-in; ``bound`` always has one ``Var`` arg.

All classes are frozen dataclasses, so they compare by value and (except for
``Query.prefixes``, excluded from hashing) hash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, NamedTuple, Union

from rdflib import Literal, URIRef

__all__ = [
    "Var",
    "Term",
    "TriplePattern",
    "Expr",
    "Compare",
    "And",
    "Or",
    "Not",
    "Call",
    "Group",
    "Aggregate",
    "OrderKey",
    "Query",
    "COMPARISON_OPERATORS",
    "FUNCTIONS",
    "expression_variables",
]


class Var(NamedTuple):
    """A query variable.  ``?x`` and ``$x`` are both ``Var('x')``.

    ``bnode=True`` marks a blank node of the pattern (``_:b`` is
    ``Var('b', bnode=True)``; anonymous ones such as ``[]`` get generated
    names like ``'#1'`` that cannot clash with written labels).  Such variables
    join normally but are never projected.

    A named tuple: equality and hashing are by (name, bnode) and run in C,
    which matters because the executor keys its columns by variable (a
    Python-level ``__hash__`` was a few percent of a small query's time).
    """

    name: str
    bnode: bool = False

    def __str__(self) -> str:
        return f"_:{self.name}" if self.bnode else f"?{self.name}"


#: A position in a triple pattern.
Term = Union[Var, URIRef, Literal]


@dataclass(frozen=True)
class TriplePattern:
    s: Term
    p: Term
    o: Term

    def __iter__(self) -> Iterator[Term]:
        yield self.s
        yield self.p
        yield self.o

    def variables(self) -> Iterator[Var]:
        for t in (self.s, self.p, self.o):
            if isinstance(t, Var):
                yield t


#: Comparison operators of ``Compare``.
COMPARISON_OPERATORS = ("=", "!=", "<", "<=", ">", ">=")

#: Lower-cased names of the built-ins that may appear in ``Call``, with their
#: allowed argument counts.
FUNCTIONS: dict[str, tuple[int, ...]] = {
    "bound": (1,),
    "isiri": (1,),
    "isliteral": (1,),
    "isblank": (1,),
    "regex": (2, 3),
    "lang": (1,),
    "datatype": (1,),
    "str": (1,),
    "langmatches": (2,),
}


@dataclass(frozen=True)
class Compare:
    op: str
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class And:
    items: tuple["Expr", ...]


@dataclass(frozen=True)
class Or:
    items: tuple["Expr", ...]


@dataclass(frozen=True)
class Not:
    expr: "Expr"


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple["Expr", ...]


Expr = Union[Var, URIRef, Literal, Compare, And, Or, Not, Call]


def expression_variables(expr: Expr) -> Iterator[Var]:
    """The variables of an expression, in order (duplicates included)."""
    if isinstance(expr, Var):
        yield expr
    elif isinstance(expr, Compare):
        yield from expression_variables(expr.left)
        yield from expression_variables(expr.right)
    elif isinstance(expr, (And, Or)):
        for item in expr.items:
            yield from expression_variables(item)
    elif isinstance(expr, Not):
        yield from expression_variables(expr.expr)
    elif isinstance(expr, Call):
        for arg in expr.args:
            yield from expression_variables(arg)


@dataclass(frozen=True)
class Group:
    """A basic graph pattern plus the filters that apply to all of it."""

    patterns: tuple[TriplePattern, ...] = ()
    filters: tuple[Expr, ...] = ()

    def variables(self, include_bnodes: bool = False) -> tuple[Var, ...]:
        """Variables of the triple patterns in order of first appearance.

        Filter-only variables are not included (they are never bound).
        """
        seen: dict[Var, None] = {}
        for tp in self.patterns:
            for v in tp.variables():
                if include_bnodes or not v.bnode:
                    seen.setdefault(v, None)
        return tuple(seen)


@dataclass(frozen=True)
class Aggregate:
    """``(COUNT([DISTINCT] ?x | *) AS ?alias)``; ``arg=None`` means ``*``."""

    func: str
    arg: Var | None
    distinct: bool
    alias: Var


@dataclass(frozen=True)
class OrderKey:
    expr: Expr
    descending: bool = False


@dataclass(frozen=True)
class Query:
    form: str  # 'SELECT' or 'ASK'
    projection: tuple[Var | Aggregate, ...] | None  # None means SELECT *
    distinct: bool
    where: Group
    order_by: tuple[OrderKey, ...] = ()
    limit: int | None = None
    offset: int = 0
    #: effective prefix map (caller-supplied defaults updated by PREFIX)
    prefixes: dict[str, str] = field(default_factory=dict, hash=False)
    base: str | None = None
    #: REDUCED was given: duplicates *may* be removed (treating it as
    #: DISTINCT, or ignoring it, are both correct).
    reduced: bool = False

    def variables(self) -> tuple[Var, ...]:
        """Variables of the WHERE patterns in order of first appearance,
        excluding blank-node variables: the columns of ``SELECT *``."""
        return self.where.variables()

    @property
    def aggregates(self) -> tuple[Aggregate, ...]:
        return tuple(p for p in self.projection or () if isinstance(p, Aggregate))

    def result_variables(self) -> tuple[Var, ...]:
        """The columns of the result: ``variables()`` for ``SELECT *``, the
        projected variables and aggregate aliases otherwise, ``()`` for ASK."""
        if self.form == "ASK":
            return ()
        if self.projection is None:
            return self.variables()
        return tuple(p.alias if isinstance(p, Aggregate) else p for p in self.projection)
