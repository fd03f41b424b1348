"""Writing query results: an aligned table, SPARQL 1.1 CSV / TSV and JSON.

``write_results(result, fmt, stream)`` with ``fmt`` one of:

* ``table``: a box-drawn table for terminals, IRIs abbreviated with the
  query's prefixes, literals in Turtle's short forms; column widths come from
  the first rows (the output streams), over-long cells are cut with ``…``;
* ``csv``: *SPARQL 1.1 Query Results CSV Format*: header of variable names,
  CRLF line ends, IRIs bare, literals as their lexical form, blank nodes as
  ``_:label``, unbound as an empty field, RFC 4180 quoting;
* ``tsv``: *SPARQL 1.1 Query Results TSV Format*: header ``?x\\t?y``, terms in
  Turtle/SPARQL syntax (``<iri>``, ``"lex"@lang``, ``"lex"^^<dt>``, bare
  integers/decimals/doubles/booleans), unbound as an empty field, LF line ends;
* ``json``: *SPARQL 1.1 Query Results JSON Format*
  (``application/sparql-results+json``), streamed binding by binding.

ASK results: JSON ``{"head": {}, "boolean": true}``; the other formats
print ``true`` or ``false`` on one line (the CSV/TSV formats define no ASK form).
"""

from __future__ import annotations

import json
import re
import shutil
from typing import IO, Iterable, Iterator

from rdflib import BNode, Literal, URIRef

__all__ = ["write_results", "FORMATS", "term_csv", "term_tsv", "term_json", "term_short"]

FORMATS = ("table", "csv", "tsv", "json")

XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
_TURTLE_NUMBER = {
    XSD + "integer": re.compile(r"^[+-]?[0-9]+$"),
    XSD + "decimal": re.compile(r"^[+-]?[0-9]*\.[0-9]+$"),
    XSD + "double": re.compile(r"^[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)[eE][+-]?[0-9]+$"),
    XSD + "boolean": re.compile(r"^(?:true|false)$"),
}
_STRING_ESCAPES = {ord("\\"): "\\\\", ord('"'): '\\"', ord("\n"): "\\n", ord("\r"): "\\r",
                   ord("\t"): "\\t", ord("\b"): "\\b", ord("\f"): "\\f"}
_IRI_ESCAPES = {c: "\\u%04X" % c for c in list(range(0x21)) + [ord(x) for x in '<>"{}|^`\\']}
_PN_LOCAL_SIMPLE = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?$")


def _quote(lex: str) -> str:
    return '"' + lex.translate(_STRING_ESCAPES) + '"'


def _iri(value: str) -> str:
    return "<" + value.translate(_IRI_ESCAPES) + ">"


def _datatype(t: Literal) -> str | None:
    dt = t.datatype
    if dt is None or str(dt) in (XSD + "string", RDF_LANGSTRING):
        return None
    return str(dt)


# --- one term in each format --------------------------------------------------

def term_csv(t) -> str:
    if t is None:
        return ""
    if isinstance(t, BNode):
        return "_:" + str(t)
    return str(t)  # IRIs bare, literals by lexical form


def term_tsv(t) -> str:
    if t is None:
        return ""
    if isinstance(t, URIRef):
        return _iri(str(t))
    if isinstance(t, BNode):
        return "_:" + str(t)
    lex = str(t)
    if t.language:
        return _quote(lex) + "@" + t.language
    dt = _datatype(t)
    if dt is None:
        return _quote(lex)
    rx = _TURTLE_NUMBER.get(dt)
    if rx is not None and rx.match(lex):
        return lex
    return _quote(lex) + "^^" + _iri(dt)


def term_json(t) -> dict:
    if isinstance(t, URIRef):
        return {"type": "uri", "value": str(t)}
    if isinstance(t, BNode):
        return {"type": "bnode", "value": str(t)}
    out = {"type": "literal", "value": str(t)}
    if t.language:
        out["xml:lang"] = t.language
    else:
        dt = _datatype(t)
        if dt is not None:
            out["datatype"] = dt
    return out


def term_short(t, prefixes: dict | None = None) -> str:
    """Compact human form: prefixed names, Turtle literal short forms."""
    if t is None:
        return ""
    if isinstance(t, URIRef):
        s = str(t)
        if prefixes:
            best = None
            for p, ns in prefixes.items():
                if ns and s.startswith(ns) and (best is None or len(ns) > len(best[1])):
                    best = (p, ns)
            if best is not None:
                local = s[len(best[1]):]
                if local == "" or _PN_LOCAL_SIMPLE.match(local):
                    return f"{best[0]}:{local}"
        return _iri(s)
    if isinstance(t, Literal):
        dt = _datatype(t)
        if dt is not None and not t.language:
            rx = _TURTLE_NUMBER.get(dt)
            if rx is not None and rx.match(str(t)):
                return str(t)
            return _quote(str(t)) + "^^" + term_short(URIRef(dt), prefixes)
    return term_tsv(t)


# --- writers -------------------------------------------------------------------

def _chunks(result) -> Iterator[list[tuple]]:
    if hasattr(result, "chunks"):
        yield from result.chunks()
        return
    rows = list(result)  # pragma: no cover - plain iterables
    if rows:
        yield rows


def write_results(result, fmt: str, stream: IO[str]) -> int:
    """Write a :class:`~trine.query.api.QueryResult`; returns the number of rows."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown result format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if getattr(result, "form", "SELECT") == "ASK":
        if fmt == "json":
            stream.write(json.dumps({"head": {}, "boolean": bool(result.ask)}) + "\n")
        else:
            stream.write(("true" if result.ask else "false") + "\n")
        return 1
    writer = {"table": _write_table, "csv": _write_csv, "tsv": _write_tsv, "json": _write_json}[fmt]
    return writer(result, stream)


def _csv_field(s: str) -> str:
    if any(c in s for c in ',"\r\n'):
        return '"' + s.replace('"', '""') + '"'
    return s


def _write_csv(result, stream: IO[str]) -> int:
    stream.write(",".join(_csv_field(v) for v in result.variables) + "\r\n")
    n = 0
    for chunk in _chunks(result):
        stream.write("".join(",".join(_csv_field(term_csv(t)) for t in row) + "\r\n" for row in chunk))
        n += len(chunk)
    return n


def _write_tsv(result, stream: IO[str]) -> int:
    stream.write("\t".join("?" + v for v in result.variables) + "\n")
    n = 0
    for chunk in _chunks(result):
        stream.write("".join("\t".join(term_tsv(t) for t in row) + "\n" for row in chunk))
        n += len(chunk)
    return n


def _write_json(result, stream: IO[str]) -> int:
    names = list(result.variables)
    stream.write('{"head": {"vars": ' + json.dumps(names) + '},\n "results": {"bindings": [')
    n = 0
    dumps = json.dumps
    for chunk in _chunks(result):
        parts = []
        for row in chunk:
            b = {v: term_json(t) for v, t in zip(names, row) if t is not None}
            parts.append(("\n  " if n == 0 else ",\n  ") + dumps(b, ensure_ascii=False))
            n += 1
        stream.write("".join(parts))
    stream.write("\n]}}\n" if n else "]}}\n")
    return n


def _cut(s: str, width: int) -> str:
    s = s.replace("\n", "\\n").replace("\t", "\\t")
    if len(s) <= width:
        return s
    return s[: max(width - 1, 0)] + "…"


def _write_table(result, stream: IO[str], sample: int = 1000) -> int:
    names = ["?" + v for v in result.variables]
    prefixes = dict(getattr(result, "prefixes", {}) or {})
    chunks = _chunks(result)
    first: list[tuple] = []
    pending: list[list[tuple]] = []
    for chunk in chunks:
        pending.append(chunk)
        first.extend(chunk)
        if len(first) >= sample:
            break
    first = first[:sample]
    isatty = getattr(stream, "isatty", lambda: False)()
    total_width = shutil.get_terminal_size((160, 24)).columns if isatty else 1 << 30
    ncols = max(len(names), 1)
    cap = max(12, (total_width - 3 * ncols - 1) // ncols)
    widths = [len(n) for n in names]
    for row in first:
        for i, t in enumerate(row):
            widths[i] = max(widths[i], len(term_short(t, prefixes)))
    widths = [min(w, cap) for w in widths]
    if not names:
        widths = []

    def line(left: str, mid: str, right: str) -> str:
        return left + mid.join("─" * (w + 2) for w in widths) + right + "\n"

    def cells(values: Iterable[str]) -> str:
        return "│" + "│".join(" " + _cut(v, w).ljust(w) + " " for v, w in zip(values, widths)) + "│\n"

    n = 0
    if names:
        stream.write(line("┌", "┬", "┐"))
        stream.write(cells(names))
        stream.write(line("├", "┼", "┤"))

    def emit(chunk: list[tuple]) -> None:
        nonlocal n
        if names:
            stream.write("".join(cells(term_short(t, prefixes) for t in row) for row in chunk))
        n += len(chunk)

    for chunk in pending:
        emit(chunk)
    for chunk in chunks:
        emit(chunk)
    if names:
        stream.write(line("└", "┴", "┘"))
    stream.write(f"{n:,} row{'s' if n != 1 else ''}\n")
    return n
