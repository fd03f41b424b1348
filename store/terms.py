"""RDF terms in their canonical N-Triples form.

Every term in trine is a ``str`` holding its canonical N-Triples text:

* IRI: ``<http://example/a>`` with UCHAR escapes decoded (an escaped character
  that may not stand raw in an IRIREF stays escaped as ``\\uXXXX``);
* blank node: ``_:label`` (labels are store-wide, see docs/reasoning.md);
* literal: ``"lexical"`` with the RDF 1.2 canonical escapes (``\\" \\\\ \\n \\r
  \\t \\b \\f`` as ECHAR, other control characters and DEL as ``\\u00XX``),
  followed by ``@lang`` (lower-cased) or ``^^<datatype>``; ``xsd:string`` is
  dropped because ``"a"`` and ``"a"^^xsd:string`` are the same term.

Equal terms therefore have equal strings, and the dictionary can map strings
to ids.  rdflib terms are converted only at the edges (API, plugin, results).
"""

from __future__ import annotations

import re

from rdflib import BNode, Literal, URIRef
from rdflib.term import Identifier

XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"

# Kinds are also encoded in the low bits of every term id (store/keys.py).
IRI, BLANK, LITERAL = 0, 1, 2

_UCHAR = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_ECHAR = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|([tbnrf\"'\\]))")
_ECHAR_MAP = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}

# Canonical literal escaping as a translate table (fast, one pass in C).
_LITERAL_ESCAPES = {c: "\\u%04X" % c for c in list(range(0x20)) + [0x7F]}
_LITERAL_ESCAPES.update({
    ord('"'): '\\"', ord("\\"): "\\\\", ord("\n"): "\\n", ord("\r"): "\\r",
    ord("\t"): "\\t", ord("\b"): "\\b", ord("\f"): "\\f",
})
# Characters that may not stand raw inside an IRIREF.
_IRI_ESCAPES = {c: "\\u%04X" % c for c in list(range(0x21)) + [ord(x) for x in '<>"{}|^`\\']}

# (a lone surrogate also takes the slow path, where it is refused: it is not
# Unicode text, and could not be stored as UTF-8)
_SURROGATES = "\ud800-\udfff"
_NEEDS_LITERAL_ESCAPE = re.compile(r'[\x00-\x1f\x7f"\\' + _SURROGATES + "]")
_NEEDS_IRI_ESCAPE = re.compile(r'[\x00-\x20<>"{}|^`\\' + _SURROGATES + "]")
_SURROGATE = re.compile("[" + _SURROGATES + "]")


class TermError(ValueError):
    """A term that cannot be represented in RDF 1.1."""


def kind_of(term: str) -> int:
    """IRI, BLANK or LITERAL for a canonical term string."""
    c = term[0]
    if c == "<":
        return IRI
    if c == "_":
        return BLANK
    return LITERAL


def _decode_uchar(m: re.Match) -> str:
    return chr(int(m.group(1) or m.group(2), 16))


def _decode_echar(m: re.Match) -> str:
    if m.group(3):
        return _ECHAR_MAP[m.group(3)]
    return chr(int(m.group(1) or m.group(2), 16))


def unescape_iri(body: str) -> str:
    """Decode the UCHAR escapes of an IRIREF body (the text between < and >)."""
    return _UCHAR.sub(_decode_uchar, body) if "\\" in body else body


def unescape_literal(body: str) -> str:
    """Decode the ECHAR/UCHAR escapes of a quoted literal body."""
    return _ECHAR.sub(_decode_echar, body) if "\\" in body else body


def _refuse_surrogates(text: str, what: str) -> None:
    m = _SURROGATE.search(text)
    if m:
        raise TermError(f"{what} {text!r} holds a lone surrogate (U+{ord(m.group()):04X}), "
                        "which is not Unicode text")


def iri(value: str) -> str:
    """Canonical form of an IRI given as its (unescaped) value."""
    if _NEEDS_IRI_ESCAPE.search(value):
        _refuse_surrogates(value, "IRI")
        value = value.translate(_IRI_ESCAPES)
    return "<" + value + ">"


def literal(lexical: str, lang: str | None = None, datatype: str | None = None) -> str:
    """Canonical form of a literal from its lexical form, language and datatype."""
    if _NEEDS_LITERAL_ESCAPE.search(lexical):
        _refuse_surrogates(lexical, "literal")
        lexical = lexical.translate(_LITERAL_ESCAPES)
    if lang:
        return '"' + lexical + '"@' + lang.lower()
    if datatype is None or datatype == XSD_STRING:
        return '"' + lexical + '"'
    return '"' + lexical + '"^^' + iri(datatype)


def blank(label: str) -> str:
    return "_:" + label


def from_rdflib(term: Identifier) -> str:
    """Canonical string of an rdflib URIRef, BNode or Literal."""
    if isinstance(term, URIRef):
        return iri(str(term))
    if isinstance(term, BNode):
        return "_:" + str(term)
    if isinstance(term, Literal):
        dt = str(term.datatype) if term.datatype is not None else None
        if dt == RDF_LANGSTRING:
            dt = None
        return literal(str(term), term.language, dt)
    raise TermError(f"not an RDF term: {term!r}")


def split_literal(term: str) -> tuple[str, str | None, str | None]:
    """(lexical, lang, datatype IRI) of a canonical literal string."""
    end = term.rindex('"')
    lexical = unescape_literal(term[1:end])
    rest = term[end + 1:]
    if rest.startswith("@"):
        return lexical, rest[1:], None
    if rest.startswith("^^"):
        return lexical, None, unescape_iri(rest[3:-1])
    return lexical, None, None


def to_rdflib(term: str) -> Identifier:
    """rdflib term for a canonical string; lexical forms are kept as stored."""
    c = term[0]
    if c == "<":
        return URIRef(unescape_iri(term[1:-1]))
    if c == "_":
        return BNode(term[2:])
    lexical, lang, datatype = split_literal(term)
    if lang:
        return Literal(lexical, lang=lang)
    if datatype:
        return Literal(lexical, datatype=URIRef(datatype), normalize=False)
    return Literal(lexical)
