"""SPARQL values for FILTER and ORDER BY: canonical term strings -> comparable values.

Terms reach this module as trine's canonical N-Triples strings (store/terms.py)
and are parsed once per distinct id (the executor caches them).  A value is a
:class:`Term` (kind, lexical form / IRI / label, language, datatype IRI) or a
Python ``bool`` produced by an operator.

Evaluation follows SPARQL 1.1 section 17: an error (type error, unbound
variable, ill-typed literal in an operator) raises :class:`EvalError`; a FILTER
keeps a solution only when its effective boolean value is true, so errors
reject it; ``||`` and ``&&`` use the three-valued logic of section 17.2.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Callable, Mapping, NamedTuple

from rdflib import Literal, URIRef

from trine.store.terms import split_literal, unescape_iri

from .algebra import And, Call, Compare, Expr, Not, Or, Var

__all__ = [
    "Term", "EvalError", "parse_term", "term_of_rdflib", "evaluate", "ebv", "filter_value",
    "order_key", "compare", "XSD", "NUMERIC_TYPES",
]

XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
XSD_STRING = XSD + "string"
XSD_BOOLEAN = XSD + "boolean"
XSD_DATETIME = XSD + "dateTime"
XSD_INTEGER = XSD + "integer"
XSD_DECIMAL = XSD + "decimal"
XSD_FLOAT = XSD + "float"
XSD_DOUBLE = XSD + "double"

_INTEGER_TYPES = {
    XSD + n: rng for n, rng in {
        "integer": None, "int": (-2**31, 2**31 - 1), "long": (-2**63, 2**63 - 1),
        "short": (-2**15, 2**15 - 1), "byte": (-128, 127),
        "nonNegativeInteger": (0, None), "positiveInteger": (1, None),
        "nonPositiveInteger": (None, 0), "negativeInteger": (None, -1),
        "unsignedLong": (0, 2**64 - 1), "unsignedInt": (0, 2**32 - 1),
        "unsignedShort": (0, 2**16 - 1), "unsignedByte": (0, 255),
    }.items()
}
NUMERIC_TYPES = frozenset(_INTEGER_TYPES) | {XSD_DECIMAL, XSD_FLOAT, XSD_DOUBLE}

IRI, BLANK, LITERAL = 0, 1, 2

_INT_RE = re.compile(r"^[+-]?[0-9]+$")
_DEC_RE = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$")
_DBL_RE = re.compile(r"^(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?INF|NaN)$")
_DT_RE = re.compile(
    r"^(-?[0-9]{4,})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})?$"
)


class EvalError(Exception):
    """A SPARQL expression error (type error, unbound variable, ...)."""


class Term(NamedTuple):
    kind: int          # IRI, BLANK or LITERAL
    text: str          # IRI, blank node label or lexical form
    lang: str | None = None
    datatype: str | None = None   # None for simple literals (xsd:string)

    # -- classification ---------------------------------------------------
    @property
    def is_literal(self) -> bool:
        return self.kind == LITERAL

    @property
    def is_string(self) -> bool:
        """A simple literal or xsd:string (one term in RDF 1.1)."""
        return self.kind == LITERAL and self.lang is None and self.datatype is None

    def __str__(self) -> str:  # for messages and debugging
        if self.kind == IRI:
            return f"<{self.text}>"
        if self.kind == BLANK:
            return f"_:{self.text}"
        if self.lang:
            return f'"{self.text}"@{self.lang}'
        if self.datatype:
            return f'"{self.text}"^^<{self.datatype}>'
        return f'"{self.text}"'


TRUE = Term(LITERAL, "true", None, XSD_BOOLEAN)
FALSE = Term(LITERAL, "false", None, XSD_BOOLEAN)


def parse_term(canonical: str) -> Term:
    """A :class:`Term` from trine's canonical N-Triples string."""
    c = canonical[0]
    if c == "<":
        return Term(IRI, unescape_iri(canonical[1:-1]))
    if c == "_":
        return Term(BLANK, canonical[2:])
    lex, lang, dt = split_literal(canonical)
    if dt == XSD_STRING:
        dt = None
    return Term(LITERAL, lex, lang, dt)


def term_of_rdflib(t) -> Term:
    if isinstance(t, URIRef):
        return Term(IRI, str(t))
    if isinstance(t, Literal):
        dt = str(t.datatype) if t.datatype is not None else None
        if dt in (XSD_STRING, RDF_LANGSTRING):
            dt = None
        return Term(LITERAL, str(t), t.language.lower() if t.language else None, dt)
    return Term(BLANK, str(t))


# ---------------------------------------------------------------------------
# Typed values of literals
# ---------------------------------------------------------------------------

_NO_VALUE = object()


@lru_cache(maxsize=65536)
def numeric_value(t: Term):
    """int / Decimal / float for a numeric literal; None if not numeric;
    ``_NO_VALUE`` if numeric but ill-typed."""
    dt = t.datatype
    if t.kind != LITERAL or dt not in NUMERIC_TYPES:
        return None
    lex = t.text.strip()
    if dt in _INTEGER_TYPES:
        if not _INT_RE.match(lex):
            return _NO_VALUE
        v = int(lex)
        rng = _INTEGER_TYPES[dt]
        if rng is not None and ((rng[0] is not None and v < rng[0]) or (rng[1] is not None and v > rng[1])):
            return _NO_VALUE
        return v
    if dt == XSD_DECIMAL:
        if not _DEC_RE.match(lex):
            return _NO_VALUE
        try:
            return Decimal(lex)
        except InvalidOperation:  # pragma: no cover - regex guards it
            return _NO_VALUE
    if not _DBL_RE.match(lex):
        return _NO_VALUE
    return float(lex.replace("INF", "inf"))


def boolean_value(t: Term):
    if t.datatype != XSD_BOOLEAN:
        return None
    lex = t.text.strip()
    if lex in ("true", "1"):
        return True
    if lex in ("false", "0"):
        return False
    return _NO_VALUE


def datetime_value(t: Term):
    if t.datatype != XSD_DATETIME:
        return None
    m = _DT_RE.match(t.text.strip())
    if not m:
        return _NO_VALUE
    y, mo, d, h, mi, s, frac, tz = m.groups()
    try:
        extra = _dt.timedelta(0)
        if h == "24":
            if mi != "00" or s != "00" or (frac and int(frac[1:]) != 0):
                return _NO_VALUE
            h, extra = "00", _dt.timedelta(days=1)
        micro = int((frac[1:] + "000000")[:6]) if frac else 0
        tzinfo = None
        if tz:
            if tz == "Z":
                tzinfo = _dt.timezone.utc
            else:
                sign = 1 if tz[0] == "+" else -1
                tzinfo = _dt.timezone(sign * _dt.timedelta(hours=int(tz[1:3]), minutes=int(tz[4:6])))
        return _dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), micro, tzinfo) + extra
    except (ValueError, OverflowError):
        return _NO_VALUE


# ---------------------------------------------------------------------------
# Operators
# ---------------------------------------------------------------------------

def _as_term(v) -> Term:
    if v is True:
        return TRUE
    if v is False:
        return FALSE
    return v


_OPS: dict[str, Callable] = {
    "=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def compare(op: str, a, b) -> bool:
    """SPARQL ``a op b`` for two values; raises EvalError on type errors."""
    a, b = _as_term(a), _as_term(b)
    fn = _OPS[op]
    if a.kind == LITERAL and b.kind == LITERAL:
        na, nb = numeric_value(a), numeric_value(b)
        if na is not None and nb is not None:
            if na is _NO_VALUE or nb is _NO_VALUE:
                return _term_equal_or_error(op, a, b)
            if isinstance(na, float) or isinstance(nb, float):
                na, nb = float(na), float(nb)
            return fn(na, nb)
        if a.is_string and b.is_string:
            return fn(a.text, b.text)
        ba, bb = boolean_value(a), boolean_value(b)
        if ba is not None and bb is not None and ba is not _NO_VALUE and bb is not _NO_VALUE:
            return fn(ba, bb)
        da, db = datetime_value(a), datetime_value(b)
        if da is not None and db is not None and da is not _NO_VALUE and db is not _NO_VALUE:
            if (da.tzinfo is None) != (db.tzinfo is None):
                raise EvalError("dateTime comparison with and without time zone is indeterminate")
            return fn(da, db)
        if a.lang is not None and b.lang is not None and op in ("=", "!="):
            return fn((a.text, a.lang.lower()), (b.text, b.lang.lower()))
        return _term_equal_or_error(op, a, b)
    if op in ("=", "!="):
        return fn(a, b)  # RDFterm-equal: different kinds are simply different terms
    raise EvalError(f"cannot compare {a} {op} {b}")


def _known_value(t: Term) -> bool:
    """A literal of a datatype trine understands, with a valid lexical form."""
    if t.datatype is None:
        return True  # simple literal, xsd:string or language-tagged string
    for f in (numeric_value, boolean_value, datetime_value):
        v = f(t)
        if v is not None:
            return v is not _NO_VALUE
    return False


def _term_equal_or_error(op: str, a: Term, b: Term) -> bool:
    """RDFterm-equal: same term -> equal; two literals whose values are known
    to differ (different value spaces) -> not equal; otherwise (an unknown
    datatype, an ill-typed literal) the values cannot be compared: an error."""
    if op not in ("=", "!="):
        raise EvalError(f"cannot compare {a} {op} {b}")
    if a == b:
        return op == "="
    if _known_value(a) and _known_value(b):
        return op == "!="
    raise EvalError(f"{a} and {b} cannot be compared")


def ebv(v) -> bool:
    """Effective boolean value (SPARQL 17.2.2)."""
    if v is True or v is False:
        return v
    if v is None or v.kind != LITERAL:
        raise EvalError("no effective boolean value")
    b = boolean_value(v)
    if b is not None:
        return False if b is _NO_VALUE else b
    n = numeric_value(v)
    if n is not None:
        if n is _NO_VALUE:
            return False
        return not (n == 0 or (isinstance(n, float) and math.isnan(n)))
    if v.is_string:
        return len(v.text) > 0
    raise EvalError(f"no effective boolean value for {v}")


_REGEX_FLAGS = {"i": re.IGNORECASE, "s": re.DOTALL, "m": re.MULTILINE, "x": re.VERBOSE}


@lru_cache(maxsize=256)
def _compile_regex(pattern: str, flags: str):
    f = 0
    quote = False
    for ch in flags:
        if ch == "q":
            quote = True
        elif ch in _REGEX_FLAGS:
            f |= _REGEX_FLAGS[ch]
        else:
            raise EvalError(f"invalid regex flag {ch!r}")
    try:
        return re.compile(re.escape(pattern) if quote else pattern, f)
    except re.error as e:
        raise EvalError(f"invalid regular expression: {e}") from None


def _string_arg(v, allow_lang: bool = True) -> Term:
    v = _as_term(v)
    if v.kind != LITERAL or v.datatype is not None or (v.lang is not None and not allow_lang):
        raise EvalError(f"{v} is not a string literal")
    return v


def _simple(text: str) -> Term:
    return Term(LITERAL, text)


def _call(name: str, args: list):
    if name in ("isiri", "isblank", "isliteral"):
        v = args[0]
        if v is None:
            raise EvalError("unbound")
        v = _as_term(v)
        return v.kind == {"isiri": IRI, "isblank": BLANK, "isliteral": LITERAL}[name]
    if any(a is None for a in args):
        raise EvalError("unbound variable")
    if name == "str":
        v = _as_term(args[0])
        if v.kind == BLANK:
            raise EvalError("str() of a blank node")
        return _simple(v.text)
    if name == "lang":
        v = _as_term(args[0])
        if v.kind != LITERAL:
            raise EvalError("lang() of a non-literal")
        return _simple(v.lang or "")
    if name == "datatype":
        v = _as_term(args[0])
        if v.kind != LITERAL:
            raise EvalError("datatype() of a non-literal")
        if v.lang is not None:
            return Term(IRI, RDF_LANGSTRING)
        return Term(IRI, v.datatype or XSD_STRING)
    if name == "regex":
        text = _string_arg(args[0])
        pattern = _string_arg(args[1], allow_lang=False)
        flags = _string_arg(args[2], allow_lang=False).text if len(args) > 2 else ""
        return _compile_regex(pattern.text, flags).search(text.text) is not None
    if name == "langmatches":
        tag = _string_arg(args[0], allow_lang=False).text.lower()
        rng = _string_arg(args[1], allow_lang=False).text.lower()
        if rng == "*":
            return tag != ""
        return tag == rng or tag.startswith(rng + "-")
    raise EvalError(f"unknown function {name}")  # pragma: no cover - parser guards it


def evaluate(expr: Expr, lookup: Callable[[Var], Term | None], consts: Mapping | None = None):
    """Value of an expression for one solution.

    ``lookup(var)`` gives the variable's value (None when unbound).  Raises
    :class:`EvalError` for SPARQL errors.  ``And``/``Or``/``Not`` return bools.
    """
    if isinstance(expr, Var):
        v = lookup(expr)
        if v is None:
            raise EvalError(f"{expr} is unbound")
        return v
    if isinstance(expr, Compare):
        return compare(expr.op, evaluate(expr.left, lookup, consts), evaluate(expr.right, lookup, consts))
    if isinstance(expr, And):
        error = False
        for item in expr.items:
            try:
                if not ebv(evaluate(item, lookup, consts)):
                    return False
            except EvalError:
                error = True
        if error:
            raise EvalError("error in &&")
        return True
    if isinstance(expr, Or):
        error = False
        for item in expr.items:
            try:
                if ebv(evaluate(item, lookup, consts)):
                    return True
            except EvalError:
                error = True
        if error:
            raise EvalError("error in ||")
        return False
    if isinstance(expr, Not):
        return not ebv(evaluate(expr.expr, lookup, consts))
    if isinstance(expr, Call):
        if expr.name == "bound":
            return lookup(expr.args[0]) is not None  # type: ignore[arg-type]
        return _call(expr.name, [evaluate(a, lookup, consts) for a in expr.args])
    # a constant
    if consts is not None:
        t = consts.get(expr)
        if t is not None:
            return t
    return term_of_rdflib(expr)


def filter_value(expr: Expr, lookup: Callable[[Var], Term | None], consts: Mapping | None = None) -> bool:
    """True when the FILTER keeps the solution (EBV true; errors are false)."""
    try:
        return ebv(evaluate(expr, lookup, consts))
    except EvalError:
        return False


# ---------------------------------------------------------------------------
# ORDER BY
# ---------------------------------------------------------------------------

def order_key(v) -> tuple:
    """Sort key of a value for ORDER BY (SPARQL 15.1): unbound (or error) <
    blank nodes < IRIs < literals; numbers by value, strings by code point,
    then booleans, dateTimes and other literals by datatype and lexical form."""
    if v is None:
        return (0,)
    v = _as_term(v)
    if v.kind == BLANK:
        return (1, v.text)
    if v.kind == IRI:
        return (2, v.text)
    n = numeric_value(v)
    if n is not None and n is not _NO_VALUE:
        if isinstance(n, float) and math.isnan(n):
            return (3, 0, 0, float("-inf"), v.text, v.datatype)
        return (3, 0, 1, n, v.text, v.datatype)
    if v.datatype is None:
        return (3, 1, v.text, v.lang or "")
    b = boolean_value(v)
    if b is not None and b is not _NO_VALUE:
        return (3, 2, b, v.text)
    d = datetime_value(v)
    if d is not None and d is not _NO_VALUE:
        if d.tzinfo is None:
            d = d.replace(tzinfo=_dt.timezone.utc)
        return (3, 3, d, v.text)
    return (3, 4, v.datatype, v.text)
