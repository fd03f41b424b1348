"""SPARQL-subset parser: query text -> :mod:`trine.query.algebra` tree.

Entry point::

    parse(text, *, prefixes=None, base=None, allow_bare_patterns=False) -> Query

The grammar (pyparsing) is built once at import time and follows the SPARQL
1.1 grammar for the subset trine executes itself: PREFIX/BASE, SELECT
(variables, ``*``, DISTINCT/REDUCED, COUNT aggregates) and ASK, a WHERE group
of triple patterns (full Turtle-style term syntax) with FILTERs, ORDER BY,
LIMIT and OFFSET.  Constructs outside the subset raise
:class:`~trine.query.errors.UnsupportedQueryError`; malformed text raises
:class:`~trine.query.errors.QuerySyntaxError` with line and column.

Per-parse context (prefix map, BASE, blank-node counter) lives in a
thread-local, so the module-level grammar is safe to use from several threads.
"""

from __future__ import annotations

import re
import threading
from typing import Iterable, Mapping

import pyparsing as pp
from rdflib import RDF, XSD, Literal, URIRef

from .algebra import (
    FUNCTIONS,
    Aggregate,
    And,
    Call,
    Compare,
    Expr,
    Group,
    Not,
    Or,
    OrderKey,
    Query,
    TriplePattern,
    Var,
    expression_variables,
)
from .errors import QuerySyntaxError, UnsupportedQueryError

__all__ = ["parse", "resolve_iri", "DEFAULT_PREFIXES"]

#: Handy defaults a caller (e.g. the REPL) may pass as ``prefixes=``.
DEFAULT_PREFIXES: dict[str, str] = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "owl": "http://www.w3.org/2002/07/owl#",
}


# --------------------------------------------------------------------------
# RFC 3986 reference resolution (section 5.2); urllib.parse.urljoin only
# resolves for a fixed list of schemes, so it is done here.
# --------------------------------------------------------------------------

_URI_RE = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.S)


def _remove_dot_segments(path: str) -> str:
    out: list[str] = []
    while path:
        if path.startswith("../"):
            path = path[3:]
        elif path.startswith("./"):
            path = path[2:]
        elif path.startswith("/./"):
            path = path[2:]
        elif path == "/.":
            path = "/"
        elif path.startswith("/../"):
            path = path[3:]
            if out:
                out.pop()
        elif path == "/..":
            path = "/"
            if out:
                out.pop()
        elif path in (".", ".."):
            path = ""
        else:
            start = 1 if path.startswith("/") else 0
            i = path.find("/", start)
            if i < 0:
                i = len(path)
            out.append(path[:i])
            path = path[i:]
    return "".join(out)


def resolve_iri(base: str | None, ref: str) -> str:
    """Resolve IRI reference ``ref`` against ``base`` (RFC 3986, 5.2.2)."""
    if base is None:
        return ref
    m = _URI_RE.match(ref)
    r_scheme, r_auth, r_path, r_query, r_frag = m.groups()  # type: ignore[union-attr]
    if r_scheme is not None:
        return ref if "." not in r_path else _recompose(
            r_scheme, r_auth, _remove_dot_segments(r_path), r_query, r_frag
        )
    b_scheme, b_auth, b_path, b_query, _ = _URI_RE.match(base).groups()  # type: ignore[union-attr]
    if r_auth is not None:
        auth, path, query = r_auth, _remove_dot_segments(r_path), r_query
    else:
        auth = b_auth
        if r_path == "":
            path = b_path
            query = r_query if r_query is not None else b_query
        else:
            if r_path.startswith("/"):
                path = _remove_dot_segments(r_path)
            else:
                if b_auth is not None and b_path == "":
                    merged = "/" + r_path
                else:
                    merged = b_path[: b_path.rfind("/") + 1] + r_path
                path = _remove_dot_segments(merged)
            query = r_query
    return _recompose(b_scheme, auth, path, query, r_frag)


def _recompose(scheme, auth, path, query, frag) -> str:
    out = []
    if scheme is not None:
        out.append(scheme + ":")
    if auth is not None:
        out.append("//" + auth)
    out.append(path)
    if query is not None:
        out.append("?" + query)
    if frag is not None:
        out.append("#" + frag)
    return "".join(out)


# --------------------------------------------------------------------------
# Per-parse state
# --------------------------------------------------------------------------


class _State:
    def __init__(self, prefixes: Mapping[str, str], base: str | None) -> None:
        self.prefixes: dict[str, str] = dict(prefixes)
        self.base = base
        self.anon = 0
        self.triple_end = -1  # loc right after the last complete triple
        self.seen_order = False
        self.seen_limit = False
        self.seen_offset = False

    def fresh(self) -> Var:
        self.anon += 1
        return Var(f"#{self.anon}", bnode=True)


_local = threading.local()
_PARSE_LOCK = threading.RLock()


def _state() -> _State:
    return _local.state


# Small internal token wrappers (parse actions must not return tuples/lists,
# which pyparsing would splice into the token list).


class _Node:
    """A graph node: its term plus the triples that its syntax implies."""

    __slots__ = ("term", "triples")

    def __init__(self, term, triples=()) -> None:
        self.term = term
        self.triples = list(triples)


class _PO:
    __slots__ = ("verb", "objects")

    def __init__(self, verb, objects) -> None:
        self.verb = verb
        self.objects = objects


class _Triples:
    __slots__ = ("triples",)

    def __init__(self, triples) -> None:
        self.triples = triples


class _Filter:
    __slots__ = ("expr",)

    def __init__(self, expr) -> None:
        self.expr = expr


class _GroupBody:
    __slots__ = ("patterns", "filters", "loc")

    def __init__(self, patterns, filters, loc) -> None:
        self.patterns = patterns
        self.filters = filters
        self.loc = loc


class _Located:
    __slots__ = ("value", "loc")

    def __init__(self, value, loc) -> None:
        self.value = value
        self.loc = loc


class _Modifier:
    __slots__ = ("kind", "value")

    def __init__(self, kind, value) -> None:
        self.kind = kind
        self.value = value


def _unsupported(construct: str, s: str, loc: int) -> UnsupportedQueryError:
    return UnsupportedQueryError(construct, pp.lineno(loc, s), pp.col(loc, s))


def _fatal(s: str, loc: int, msg: str) -> pp.ParseFatalException:
    return pp.ParseFatalException(s, loc, msg)


# --------------------------------------------------------------------------
# Lexical rules (SPARQL 1.1 section 19.8)
# --------------------------------------------------------------------------

_PN_CHARS_BASE = (
    "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff"
    "\u200c-\u200d\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf"
    "\ufdf0-\ufffd\U00010000-\U000effff"
)
_PN_CHARS_U = _PN_CHARS_BASE + "_"
_PN_CHARS = _PN_CHARS_U + "\\-0-9\u00b7\u0300-\u036f\u203f-\u2040"
_PN_PREFIX = f"[{_PN_CHARS_BASE}](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?"
_PLX = r"%[0-9A-Fa-f]{2}|\\[_~.\-!$&'()*+,;=/?#@%]"
_PN_LOCAL = (
    f"(?:[{_PN_CHARS_U}:0-9]|{_PLX})"
    f"(?:(?:[{_PN_CHARS}.:]|{_PLX})*(?:[{_PN_CHARS}:]|{_PLX}))?"
)
_VARNAME = f"[{_PN_CHARS_U}0-9][{_PN_CHARS_U}0-9\u00b7\u0300-\u036f\u203f-\u2040]*"
_BNODE_LABEL = f"[{_PN_CHARS_U}0-9](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?"
_UCHAR = r"\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}"
_ECHAR = r"""\\[tbnrf"'\\]"""
_ESC = f"{_ECHAR}|{_UCHAR}"
_IRIREF = f"<(?:[^<>\"{{}}|^`\\\\\\x00-\\x20]|{_UCHAR})*>"
_STRING = (
    f"'''(?:(?:'|'')?(?:[^'\\\\]|{_ESC}))*'''"
    f'|"""(?:(?:"|"")?(?:[^"\\\\]|{_ESC}))*"""'
    f"|'(?:[^'\\\\\\n\\r]|{_ESC})*'"
    f'|"(?:[^"\\\\\\n\\r]|{_ESC})*"'
)
_EXP = r"[eE][+-]?[0-9]+"
_NUMBER = (
    rf"[+-]?(?:[0-9]+\.[0-9]*{_EXP}|\.[0-9]+{_EXP}|[0-9]+{_EXP}|[0-9]*\.[0-9]+|[0-9]+)"
)
_NOT_NAME = r"(?![\w\-:])"

_ECHAR_MAP = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_ESC_RE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_SURROGATES_RE = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_BAD_IRI_CHARS = re.compile(r'[<>"{}|^`\\\x00-\x20]')


def _unescape(text: str, s: str, loc: int, iri: bool = False) -> str:
    if "\\" not in text:
        return text

    def repl(m: re.Match) -> str:
        if m.group(1) or m.group(2):
            cp = int(m.group(1) or m.group(2), 16)
            if cp > 0x10FFFF:
                raise _fatal(s, loc, f"invalid escape {m.group(0)!r}: code point out of range")
            return chr(cp)
        return _ECHAR_MAP[m.group(3)]

    out = _ESC_RE.sub(repl, text)
    if _SURROGATES_RE.search(out):  # \uD83D\uDE00 -> one code point
        out = _SURROGATES_RE.sub(
            lambda m: m.group(0).encode("utf-16-le", "surrogatepass").decode("utf-16-le"), out
        )
    if iri and _BAD_IRI_CHARS.search(out):
        raise _fatal(s, loc, f"the escaped IRI <{out}> contains a character not allowed in IRIs")
    return out


def _regex(pattern: str, name: str, flags: int = 0) -> pp.Regex:
    return pp.Regex(pattern, flags).set_name(name)


def _kw(*words: str, name: str | None = None) -> pp.Regex:
    alts = "|".join(w.replace(" ", r"\s+") for w in words)
    return _regex(f"(?i:{alts}){_NOT_NAME}", name or " or ".join(words))


def _punct(text: str) -> pp.Suppress:
    return pp.Suppress(pp.Literal(text).set_name(f"'{text}'"))


def _refuse(element: pp.ParserElement, construct) -> pp.ParserElement:
    """Make ``element`` raise UnsupportedQueryError when it matches.
    ``construct`` is a string or a function of the matched text."""

    def action(s, loc, toks):
        text = " ".join(str(t) for t in toks)
        what = construct(text) if callable(construct) else construct
        raise _unsupported(what, s, loc)

    return element.copy().set_parse_action(action)


LBRACE, RBRACE = _punct("{"), _punct("}")
LPAR, RPAR = _punct("("), _punct(")")
LBRACK, RBRACK = _punct("["), _punct("]")
DOT, COMMA, SEMI = _punct("."), _punct(","), _punct(";")
STAR = pp.Literal("*").set_name("'*'")


# --------------------------------------------------------------------------
# Terms
# --------------------------------------------------------------------------


def _iriref_action(s, loc, toks):
    raw = _unescape(toks[0][1:-1], s, loc, iri=True)
    return URIRef(resolve_iri(_state().base, raw))


def _pname_action(s, loc, toks):
    prefix, local = toks[0].split(":", 1)
    ns = _state().prefixes.get(prefix)
    if ns is None:
        raise _fatal(s, loc, f"undefined prefix '{prefix}:' (declare it with PREFIX {prefix}: <...>)")
    if "\\" in local:
        local = re.sub(r"\\(.)", r"\1", local)
    return URIRef(ns + local)


IRIREF = _regex(_IRIREF, "an IRI <...>").set_parse_action(_iriref_action)
PNAME = _regex(f"(?:{_PN_PREFIX})?:(?:{_PN_LOCAL})?", "a prefixed name").set_parse_action(_pname_action)
PNAME_NS = _regex(f"(?:{_PN_PREFIX})?:(?![^\\s<])", "a prefix name such as 'ex:'")
iri = (IRIREF | PNAME).set_name("an IRI")

VAR = _regex(f"[?$]{_VARNAME}", "a variable").set_parse_action(lambda t: Var(t[0][1:]))
BNODE_LABEL = _regex(f"_:{_BNODE_LABEL}", "a blank node").set_parse_action(
    lambda t: Var(t[0][2:], bnode=True)
)
ANON = _regex(r"\[(?:\s|#[^\n\r]*)*\]", "'[]'").set_parse_action(lambda: _state().fresh())
NIL = _regex(r"\((?:\s|#[^\n\r]*)*\)", "'()'").set_parse_action(lambda: RDF.nil)

STRING = _regex(_STRING, "a string")
LANGTAG = _regex(r"@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*", "a language tag")
DTYPE = pp.Suppress(pp.Literal("^^").set_name("'^^'")) - iri.copy().set_name("a datatype IRI")


def _string_value(s, loc, text: str) -> str:
    q = 3 if text[:3] in ('"""', "'''") else 1
    return _unescape(text[q:-q], s, loc)


def _make_literal(lex: str, lang: str | None = None, datatype: URIRef | None = None) -> Literal:
    if lang is not None:
        return Literal(lex, lang=lang)
    if datatype is None or datatype == XSD.string:
        return Literal(lex)
    return Literal(lex, datatype=datatype, normalize=False)


def _rdf_literal_action(s, loc, toks):
    lex = _string_value(s, loc, toks[0])
    if len(toks) == 1:
        return _make_literal(lex)
    extra = toks[1]
    if isinstance(extra, str) and not isinstance(extra, URIRef):
        return _make_literal(lex, lang=extra[1:])
    return _make_literal(lex, datatype=extra)


def _number_action(t):
    lex = t[0]
    if "e" in lex or "E" in lex:
        dt = XSD.double
    elif "." in lex:
        dt = XSD.decimal
    else:
        dt = XSD.integer
    return _make_literal(lex, datatype=dt)


rdf_literal = (STRING + pp.Optional(LANGTAG | DTYPE)).set_name("a literal")
rdf_literal.set_parse_action(_rdf_literal_action)
NUMBER = _regex(_NUMBER, "a number").set_parse_action(_number_action)
BOOLEAN = _regex(f"(?i:true|false){_NOT_NAME}", "true or false").set_parse_action(
    lambda t: _make_literal(t[0].lower(), datatype=XSD.boolean)
)
literal = (rdf_literal | NUMBER | BOOLEAN).set_name("a literal")


# --------------------------------------------------------------------------
# Triple patterns
# --------------------------------------------------------------------------

var_or_term = (VAR | iri | literal | BNODE_LABEL | ANON | NIL).set_name("an RDF term or variable")
var_or_term.add_parse_action(lambda t: _Node(t[0]))

graph_node = pp.Forward()
property_list_ne = pp.Forward()

A = _regex(f"a{_NOT_NAME}", "'a'").set_parse_action(lambda: RDF.type)
PATH_MOD = _refuse(
    _regex(rf"[/|*^]|\+(?![0-9.])|\?(?![{_PN_CHARS_U}0-9])|\{{", "a path operator"),
    lambda op: f"property paths ('{op}')",
)
PATH_START = _refuse(_regex(r"[\^!(]", "a path"), lambda op: f"property paths ('{op}')")
verb = (VAR | ((iri | A) + pp.Optional(PATH_MOD)) | PATH_START).set_name(
    "a predicate (IRI, variable or 'a')"
)

object_list = (graph_node + pp.ZeroOrMore(COMMA - graph_node)).set_parse_action(lambda t: [list(t)])
verb_objects = (verb - object_list).set_parse_action(lambda t: _PO(t[0], t[1]))
property_list_ne <<= verb_objects + pp.ZeroOrMore(SEMI + pp.Optional(verb_objects))
property_list_ne.set_parse_action(lambda t: [list(t)])


def _collection_action(s, loc, toks):
    st = _state()
    items = list(toks)
    heads = [st.fresh() for _ in items]
    triples: list[TriplePattern] = []
    for i, item in enumerate(items):
        rest = heads[i + 1] if i + 1 < len(items) else RDF.nil
        triples.append(TriplePattern(heads[i], RDF.first, item.term))
        triples.extend(item.triples)
        triples.append(TriplePattern(heads[i], RDF.rest, rest))
    return _Node(heads[0], triples)


def _expand(subject: _Node, pos: Iterable[_PO]) -> list[TriplePattern]:
    triples = list(subject.triples)
    for po in pos:
        for obj in po.objects:
            triples.append(TriplePattern(subject.term, po.verb, obj.term))
            triples.extend(obj.triples)
    return triples


def _bnode_plist_action(s, loc, toks):
    node = _Node(_state().fresh())
    node.triples = _expand(node, toks[0])
    return node


collection = (LPAR + pp.OneOrMore(graph_node) - RPAR.copy().set_name("')' or an object"))
collection.set_parse_action(_collection_action)
bnode_plist = (LBRACK - property_list_ne - RBRACK.copy().set_name("']', ';' or ','"))
bnode_plist.set_parse_action(_bnode_plist_action)
triples_node = (collection | bnode_plist).set_name("a collection or '[ ... ]'")
graph_node <<= (var_or_term | triples_node).set_name("an object")


def _tss_action(s, loc, toks):
    subject = toks[0]
    pos = toks[1] if len(toks) > 1 else []
    return _Triples(_expand(subject, pos))


def _mark_triple_end(s, loc, toks):
    _state().triple_end = loc


triples_same_subject = (
    (var_or_term - property_list_ne) | (triples_node + pp.Optional(property_list_ne))
).set_name("a triple pattern")
triples_same_subject.set_parse_action(_tss_action)
tss = triples_same_subject + pp.Empty().set_parse_action(_mark_triple_end)
triples_block = tss + pp.ZeroOrMore(DOT + tss) + pp.Optional(DOT)


# --------------------------------------------------------------------------
# Expressions (FILTER, ORDER BY)
# --------------------------------------------------------------------------

expression = pp.Forward().set_name("an expression")
bracketted = (LPAR - expression - RPAR.copy().set_name("')'")).set_name("'(' expression ')'")

_FUNC_ALIASES = {"isuri": "isiri"}


def _builtin_action(s, loc, toks):
    name = _FUNC_ALIASES.get(toks[0].lower(), toks[0].lower())
    args = tuple(toks[1:])
    allowed = FUNCTIONS[name]
    if len(args) not in allowed:
        want = " or ".join(str(n) for n in allowed)
        plural = "s" if allowed[-1] != 1 else ""
        raise _fatal(s, loc, f"{toks[0]}() takes {want} argument{plural}, got {len(args)}")
    if name == "bound" and not (isinstance(args[0], Var) and not args[0].bnode):
        raise _fatal(s, loc, "BOUND() takes a variable")
    return Call(name, args)


_BUILTIN_NAMES = "bound|isiri|isuri|isliteral|isblank|regex|langmatches|lang|datatype|str"
builtin_call = (
    _regex(rf"(?i:{_BUILTIN_NAMES})(?=\s*\()", "a function")
    + LPAR
    - pp.Optional(pp.DelimitedList(expression))
    - RPAR.copy().set_name("')' or ','")
).set_parse_action(_builtin_action)

_UNSUPPORTED_FUNCTIONS = (
    "sameTerm|STRLEN|SUBSTR|UCASE|LCASE|STRSTARTS|STRENDS|CONTAINS|STRBEFORE|STRAFTER"
    "|ENCODE_FOR_URI|CONCAT|REPLACE|ABS|ROUND|CEIL|FLOOR|RAND|NOW|YEAR|MONTH|DAY|HOURS"
    "|MINUTES|SECONDS|TIMEZONE|TZ|MD5|SHA1|SHA256|SHA384|SHA512|COALESCE|IF|STRLANG|STRDT"
    "|isNumeric|IRI|URI|BNODE|UUID|STRUUID|TRIPLE|SUBJECT|PREDICATE|OBJECT|isTRIPLE"
)
_CANONICAL = {n.lower(): n for n in _UNSUPPORTED_FUNCTIONS.split("|")}
_AGGREGATES = "COUNT|SUM|MIN|MAX|AVG|SAMPLE|GROUP_CONCAT"
unsupported_function = _refuse(
    _regex(rf"(?i:{_UNSUPPORTED_FUNCTIONS})(?=\s*\()", "a function"),
    lambda name: f"the {_CANONICAL.get(name.lower(), name.upper())}() function",
) | _refuse(
    _regex(rf"(?i:{_AGGREGATES})(?=\s*\()", "an aggregate"),
    lambda name: f"the {name.upper()} aggregate outside SELECT",
) | _refuse(
    _regex(rf"(?i:not\s+exists|exists){_NOT_NAME}", "EXISTS"),
    lambda kw: re.sub(r"\s+", " ", kw.upper()),
)
extension_call = _refuse(
    iri + pp.FollowedBy(LPAR), lambda name: f"extension function calls (<{name}>(...))"
)
unary_arith = _refuse(_regex(r"[+-]", "an operator"), lambda op: f"arithmetic ('{op}')")

unary = pp.Forward()
primary = (
    bracketted
    | builtin_call
    | unsupported_function
    | extension_call
    | iri
    | literal
    | VAR
    | unary_arith
).set_name("an expression")
BANG = pp.Suppress(_regex(r"!(?!=)", "'!'"))
unary <<= ((BANG - unary).set_parse_action(lambda t: Not(t[0])) | primary).set_name(
    "an expression"
)
ARITH = _refuse(_regex(r"[*/+-]", "an operator"), lambda op: f"arithmetic ('{op}')")
numeric_expr = unary + pp.Optional(ARITH)
COMPARE_OP = _regex(r"!=|<=|>=|=|<|>", "a comparison operator")
IN_OP = _refuse(_kw("not in", "in"), lambda kw: re.sub(r"\s+", " ", kw.upper()))
relational = (numeric_expr + pp.Optional((COMPARE_OP - numeric_expr) | IN_OP)).set_parse_action(
    lambda t: Compare(t[1], t[0], t[2]) if len(t) == 3 else t[0]
)


def _nary(cls):
    return lambda t: cls(tuple(t)) if len(t) > 1 else t[0]


AND_OP = pp.Suppress(pp.Literal("&&").set_name("'&&'"))
OR_OP = pp.Suppress(pp.Literal("||").set_name("'||'"))
and_expr = (relational + pp.ZeroOrMore(AND_OP - relational)).set_parse_action(_nary(And))
expression <<= (and_expr + pp.ZeroOrMore(OR_OP - and_expr)).set_parse_action(_nary(Or))

constraint = (bracketted | builtin_call | unsupported_function | extension_call).set_name(
    "'(' or a function call"
)


# --------------------------------------------------------------------------
# Group graph patterns
# --------------------------------------------------------------------------

FILTER = _kw("filter", name="FILTER")
filter_ = (pp.Suppress(FILTER) - constraint).set_parse_action(lambda t: _Filter(t[0]))

_GROUP_KEYWORDS = ("OPTIONAL", "UNION", "MINUS", "GRAPH", "SERVICE", "BIND", "VALUES")
unsupported_group_kw = _refuse(
    _kw(*_GROUP_KEYWORDS, name="a graph pattern keyword"), lambda kw: kw.upper()
)

group = pp.Forward()
subquery = _refuse(_kw("select", name="SELECT"), "subqueries (SELECT inside a group)")
not_triples = (filter_ | group | unsupported_group_kw).set_name("FILTER or '{'")
group_tail = not_triples + pp.Optional(DOT) + pp.Optional(triples_block)
group_body = pp.Optional(triples_block) + pp.ZeroOrMore(group_tail)
bare_body = (triples_block + pp.ZeroOrMore(group_tail)) | pp.OneOrMore(group_tail)


def _close_group_fail(s, loc, expr, err):
    if not isinstance(err, pp.ParseBaseException):
        raise err
    if _state().triple_end == loc:
        raise _fatal(s, loc, "Expected '.' or '}'")
    raise _fatal(s, loc, "Expected '}' or a triple pattern")


RBRACE_GROUP = RBRACE.copy().set_fail_action(_close_group_fail)


def _flatten(s: str, loc: int, items) -> _GroupBody:
    patterns: list[TriplePattern] = []
    filters: list[Expr] = []
    for item in items:
        if isinstance(item, _Triples):
            patterns.extend(item.triples)
        elif isinstance(item, _Filter):
            filters.append(item.expr)
        elif isinstance(item, _GroupBody):
            # { ... { P FILTER(F) } ... } == { ... P ... FILTER(F) } only if F's
            # variables are all bound by P (triple patterns bind every variable).
            inner_vars = {v for tp in item.patterns for v in tp.variables()}
            for f in item.filters:
                if any(v not in inner_vars for v in expression_variables(f)):
                    raise _unsupported(
                        "a FILTER in a nested group that uses variables not bound in that group",
                        s,
                        item.loc,
                    )
            patterns.extend(item.patterns)
            filters.extend(item.filters)
        else:  # pragma: no cover - grammar guarantees the item kinds
            raise AssertionError(item)
    return _GroupBody(patterns, filters, loc)


group <<= LBRACE + (subquery | group_body) + RBRACE_GROUP
group.set_name("'{'")
group.set_parse_action(lambda s, loc, t: _flatten(s, loc, t))


# --------------------------------------------------------------------------
# Queries
# --------------------------------------------------------------------------


def _prefix_action(s, loc, toks):
    _state().prefixes[toks[0][:-1]] = str(toks[1])


def _base_action(s, loc, toks):
    _state().base = str(toks[0])


prefix_decl = (pp.Suppress(_kw("prefix", name="PREFIX")) - PNAME_NS - IRIREF.copy().set_name("an IRI <...>"))
prefix_decl.set_parse_action(_prefix_action)
base_decl = (pp.Suppress(_kw("base", name="BASE")) - IRIREF.copy().set_name("an IRI <...>")).set_parse_action(
    _base_action
)
prologue = pp.ZeroOrMore(prefix_decl | base_decl)

DISTINCT = _kw("distinct", name="DISTINCT")
REDUCED = _kw("reduced", name="REDUCED")
AS = pp.Suppress(_kw("as", name="AS"))
located_var = VAR.copy().add_parse_action(lambda s, loc, t: _Located(t[0], loc))


def _count_action(s, loc, toks):
    toks = list(toks)  # COUNT [DISTINCT] (* | ?var) alias
    distinct = len(toks) == 4
    arg, alias = toks[-2], toks[-1]
    return _Located(
        Aggregate("COUNT", None if arg == "*" else arg, distinct, alias.value), alias.loc
    )


count_arg = (
    STAR
    | (VAR + pp.FollowedBy(RPAR))
    | _refuse(expression.copy(), "COUNT of an expression (only COUNT(*) and COUNT(?var))")
).set_name("'*' or a variable")
count_agg = (
    LPAR
    + _kw("count", name="COUNT")
    - LPAR
    - pp.Optional(DISTINCT)
    - count_arg
    - RPAR.copy().set_name("')'")
    - AS
    - located_var.copy().set_name("a variable")
    - RPAR.copy().set_name("')'")
).set_parse_action(_count_action)
other_aggregate = LPAR + _refuse(
    _kw("sum", "min", "max", "avg", "sample", "group_concat"),
    lambda name: f"the {name.upper()} aggregate",
)
projection_expression = _refuse(LPAR, "expressions in SELECT ((expr AS ?var))")
projection_item = (located_var | count_agg | other_aggregate | projection_expression).set_name(
    "a variable or '(COUNT(...) AS ?var)'"
)
projection = (
    STAR | pp.OneOrMore(projection_item).set_parse_action(lambda t: [list(t)])
).set_name("'*', a variable or '(COUNT(...) AS ?var)'")

dataset = _refuse(
    _kw("from named", "from", name="FROM"),
    lambda kw: " ".join(kw.upper().split()) + " (RDF datasets)",
)
where_clause = ((pp.Suppress(_kw("where", name="WHERE")) - group) | group).set_name("WHERE or '{'")

INTEGER = _regex(r"[0-9]+", "a non-negative integer").set_parse_action(lambda t: int(t[0]))


def _flag(attr):
    def action(s, loc, toks):
        setattr(_state(), attr, True)

    return action


order_condition = (
    (_kw("asc", "desc", name="ASC or DESC") - bracketted).set_parse_action(
        lambda t: OrderKey(t[1], t[0].upper() == "DESC")
    )
    | constraint.copy().set_parse_action(lambda t: OrderKey(t[0], False))
    | VAR.copy().add_parse_action(lambda t: OrderKey(t[0], False))
).set_name("an ORDER BY key")
order_clause = (
    _kw("order by", name="ORDER BY").set_parse_action(_flag("seen_order"))
    - pp.OneOrMore(order_condition)
).set_parse_action(lambda t: _Modifier("order", tuple(t[1:])))
limit_clause = (
    _kw("limit", name="LIMIT").set_parse_action(_flag("seen_limit")) - INTEGER
).set_parse_action(lambda t: _Modifier("limit", t[1]))
offset_clause = (
    _kw("offset", name="OFFSET").set_parse_action(_flag("seen_offset")) - INTEGER
).set_parse_action(lambda t: _Modifier("offset", t[1]))
limit_offset = (limit_clause + pp.Optional(offset_clause)) | (
    offset_clause + pp.Optional(limit_clause)
)
unsupported_modifier = _refuse(
    _kw("group by", "having", "values", name="a solution modifier"),
    lambda kw: re.sub(r"\s+", " ", kw.upper()),
)
solution_modifiers = (
    pp.Optional(unsupported_modifier) + pp.Optional(order_clause) + pp.Optional(limit_offset)
)


def _end_fail(s, loc, expr, err):
    if not isinstance(err, pp.ParseBaseException):
        raise err
    st = _state()
    expected = []
    if not (st.seen_order or st.seen_limit or st.seen_offset):
        expected.append("ORDER BY")
    if not st.seen_limit:
        expected.append("LIMIT")
    if not st.seen_offset:
        expected.append("OFFSET")
    if expected:
        msg = ", ".join(expected) + " or end of query"
    else:
        msg = "end of query"
    raise _fatal(s, loc, f"Expected {msg}")


END = (unsupported_modifier | pp.StringEnd()).set_name("end of query")
END.set_fail_action(_end_fail)
BARE_END = pp.StringEnd().set_name("end of query")


def _bare_end_fail(s, loc, expr, err):
    if not isinstance(err, pp.ParseBaseException):
        raise err
    if _state().triple_end == loc:
        raise _fatal(s, loc, "Expected '.' or end of query")
    raise _fatal(s, loc, "Expected a triple pattern, FILTER or end of query")


BARE_END.set_fail_action(_bare_end_fail)


def _select_action(s, loc, toks):
    toks = list(toks)
    distinct = reduced = False
    if isinstance(toks[1], str) and toks[1].upper() in ("DISTINCT", "REDUCED"):
        distinct = toks[1].upper() == "DISTINCT"
        reduced = not distinct
        del toks[1]
    proj = toks[1]
    return _finish("SELECT", s, None if proj == "*" else proj, distinct, reduced, toks[2:])


def _ask_action(s, loc, toks):
    return _finish("ASK", s, None, False, False, list(toks[1:]))


def _finish(form, s, proj, distinct, reduced, rest) -> Query:
    body: _GroupBody = rest[0]
    where = Group(tuple(body.patterns), tuple(body.filters))
    mods = {m.kind: m.value for m in rest[1:] if isinstance(m, _Modifier)}
    projection = None
    if proj is not None:
        projection = _check_projection(s, proj, where)
    return Query(
        form=form,
        projection=projection,
        distinct=distinct,
        reduced=reduced,
        where=where,
        order_by=mods.get("order", ()),
        limit=mods.get("limit"),
        offset=mods.get("offset", 0),
        prefixes=dict(_state().prefixes),
        base=_state().base,
    )


def _check_projection(s: str, items: list[_Located], where: Group):
    out: list[Var | Aggregate] = []
    has_agg = any(isinstance(i.value, Aggregate) for i in items)
    where_vars = set(where.variables())
    names: set[Var] = set()
    for item in items:
        value = item.value
        if isinstance(value, Aggregate):
            if value.alias in where_vars or value.alias in names:
                raise _syntax_error(
                    s, item.loc, f"the alias {value.alias} is already used in the query"
                )
            names.add(value.alias)
            out.append(value)
        else:
            if has_agg:
                raise _syntax_error(
                    s,
                    item.loc,
                    f"{value} cannot be selected together with an aggregate "
                    "(it is not grouped, and GROUP BY is not supported)",
                )
            if value not in names:
                names.add(value)
                out.append(value)
    return tuple(out)


select_query = (
    _kw("select", name="SELECT")
    - pp.Optional(DISTINCT | REDUCED)
    - projection
    - pp.Optional(dataset)
    - where_clause
    - solution_modifiers
    - END
).set_parse_action(_select_action)
ask_query = (
    _kw("ask", name="ASK") - pp.Optional(dataset) - where_clause - solution_modifiers - END
).set_parse_action(_ask_action)
unsupported_form = _refuse(
    _kw("construct", "describe", name="CONSTRUCT or DESCRIBE"),
    lambda kw: f"{kw.upper()} queries",
) | _refuse(
    _kw(
        "insert", "delete", "load", "clear", "drop", "create", "add", "move", "copy", "with",
        name="a SPARQL Update operation",
    ),
    lambda kw: f"SPARQL Update ({kw.upper()})",
)
query_form = (select_query | ask_query | unsupported_form).set_name("SELECT or ASK")


def _bare_action(s, loc, toks):
    body = _flatten(s, loc, [t for t in toks if isinstance(t, (_Triples, _Filter, _GroupBody))])
    return Query(
        form="SELECT",
        projection=None,
        distinct=False,
        where=Group(tuple(body.patterns), tuple(body.filters)),
        prefixes=dict(_state().prefixes),
        base=_state().base,
    )


bare_query = (bare_body + BARE_END).set_parse_action(_bare_action)

_COMMENT = pp.Suppress(pp.Regex(r"#[^\n\r]*"))
QUERY = (prologue + query_form).parse_with_tabs()
QUERY_OR_BARE = (
    prologue
    + (query_form | bare_query).set_name("SELECT, ASK or a triple pattern")
).parse_with_tabs()
for _top in (QUERY, QUERY_OR_BARE):
    _top.ignore(_COMMENT)
    _top.streamline()


# --------------------------------------------------------------------------
# Error reporting
# --------------------------------------------------------------------------

_SKIP_RE = re.compile(r"(?:\s|#[^\n\r]*)*")
_TOKEN_RE = re.compile(
    r"""<[^\s<>]{0,40}>?|"[^"\n]{0,30}"?|'[^'\n]{0,30}'?|[?$]?[\w:\\%.\-]{1,40}|&&|\|\||[!<>]=|\^\^|.""",
    re.S,
)


def _found(text: str, loc: int) -> tuple[str, int]:
    loc = _SKIP_RE.match(text, loc).end()  # type: ignore[union-attr]
    if loc >= len(text):
        return "end of query", loc
    tok = _TOKEN_RE.match(text, loc).group(0)  # type: ignore[union-attr]
    if len(tok) > 1 and tok.endswith(".") and not tok.startswith(("<", '"', "'")):
        tok = tok.rstrip(".")
    return repr(tok) if "'" in tok else f"'{tok}'", loc


def _syntax_error(text: str, loc: int, message: str) -> QuerySyntaxError:
    line = pp.lineno(loc, text)
    return QuerySyntaxError(message, line, pp.col(loc, text), pp.line(loc, text))


def _convert(text: str, err: pp.ParseBaseException) -> QuerySyntaxError:
    msg = err.msg
    loc = err.loc
    if msg.startswith("Expected "):
        expected = msg[len("Expected ") :]
        found, loc = _found(text, loc)
        msg = f"expected {expected}, found {found}"
    return _syntax_error(text, loc, msg)


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def parse(
    text: str,
    *,
    prefixes: Mapping[str, str] | None = None,
    base: str | None = None,
    allow_bare_patterns: bool = False,
) -> Query:
    """Parse SPARQL-subset ``text`` into a :class:`~trine.query.algebra.Query`.

    ``prefixes`` are predeclared prefixes (e.g. :data:`DEFAULT_PREFIXES`);
    ``PREFIX`` declarations in the text override them.  ``base`` is the
    initial base IRI (a ``BASE`` in the text overrides it).  With
    ``allow_bare_patterns`` the text may also be just a group body
    (``?x a ub:Student . ?x ub:name ?n``), meaning ``SELECT * WHERE { ... }``.

    Raises :class:`QuerySyntaxError` for malformed text and
    :class:`UnsupportedQueryError` for SPARQL outside trine's subset.
    """
    if not isinstance(text, str):
        raise TypeError(f"query text must be str, not {type(text).__name__}")
    grammar = QUERY_OR_BARE if allow_bare_patterns else QUERY
    # pyparsing's grammar objects are shared and not documented as thread-safe
    # (concurrent parses were seen to mix prefix maps), so parses take turns;
    # a parse is about a millisecond and holds the GIL anyway.
    with _PARSE_LOCK:
        prev = getattr(_local, "state", None)
        _local.state = _State(prefixes or {}, base)
        try:
            result = grammar.parse_string(text, parse_all=True)
        except pp.ParseBaseException as err:
            raise _convert(text, err) from None
        except RecursionError:
            raise QuerySyntaxError("query is nested too deeply", 1, 1) from None
        finally:
            _local.state = prev
    return result[-1]
