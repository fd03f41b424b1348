"""A strict RDF 1.1 N-Triples reader that yields canonical term strings.

Written by hand (not rdflib's parser) because loading is the hot path: one
compiled regular expression per line, and terms come out already canonical
(store/terms.py) so the dictionary can encode them without building objects.
Lines that do not match are re-scanned by a slower diagnostic that says what
is wrong and where, so an error names the file, the line and the column.
"""

from __future__ import annotations

import gzip
import io
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from .terms import iri, literal, unescape_iri, unescape_literal

_HEX = "[0-9A-Fa-f]"
# an escape must encode a Unicode scalar value: at most U+10FFFF, not a surrogate
_NOT_SURROGATE = "(?![dD][89a-fA-F])"
_UCHAR = (rf"\\u{_NOT_SURROGATE}{_HEX}{{4}}"
          rf"|\\U(?:0010{_HEX}{{4}}|000[1-9a-fA-F]{_HEX}{{4}}|0000{_NOT_SURROGATE}{_HEX}{{4}})")
_ANY_UCHAR = rf"\\u{_HEX}{{4}}|\\U{_HEX}{{8}}"   # the grammar's form, for diagnostics
_IRIREF = rf'<(?:[^\x00-\x20<>"{{}}|^`\\]|{_UCHAR})*>'
_PN_CHARS_BASE = (
    "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff"
    "\u200c-\u200d\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd"
    "\U00010000-\U000effff"
)
_PN_CHARS_U = _PN_CHARS_BASE + "_"  # the W3C tests reject ":" in labels
_PN_CHARS = _PN_CHARS_U + r"\-0-9\u00b7\u0300-\u036f\u203f-\u2040"
_BNODE = rf"_:[{_PN_CHARS_U}0-9](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?"
_STRING = rf'"(?:[^"\\\n\r]|\\[tbnrf"\'\\]|{_UCHAR})*"'
_LANGTAG = r"@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*"

_LINE = re.compile(
    rf"[ \t]*({_IRIREF}|{_BNODE})[ \t]*({_IRIREF})[ \t]*"
    rf"({_IRIREF}|{_BNODE}|({_STRING})(?:[ \t]*\^\^[ \t]*({_IRIREF})|[ \t]*({_LANGTAG}))?)"
    rf"[ \t]*\.[ \t]*(?:#.*)?"
)
_BLANK_LINE = re.compile(r"[ \t]*(?:#.*)?")

# The common case (absolute ASCII IRIs, no escapes, single spaces, lower-case
# language tags) is already canonical; one cheap expression recognises it.
_FAST_IRI = r'<[A-Za-z][A-Za-z0-9+.\-]*:[^\x00-\x20<>"{}|^`\\]*>'
_FAST_BNODE = r"_:[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?"
_FAST_LITERAL = rf'"[^"\\\x00-\x1f\x7f]*"(?:@[a-z]+(?:-[a-z0-9]+)*|\^\^{_FAST_IRI})?'
_FAST_LINE = re.compile(
    rf"({_FAST_IRI}|{_FAST_BNODE}) ({_FAST_IRI}) ({_FAST_IRI}|{_FAST_BNODE}|{_FAST_LITERAL}) \."
)
_XSD_STRING_SUFFIX = '"^^<http://www.w3.org/2001/XMLSchema#string>'

_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_RAW_LITERAL_OK = re.compile(r'[^\x00-\x1f\x7f\\]*')


@dataclass
class ParseError(ValueError):
    """A line of an N-Triples input that is not valid N-Triples."""

    source: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}: {self.message}"


Triple = tuple[str, str, str]


def _canonical_iri(token: str) -> str | None:
    """Canonical IRI for an IRIREF token, or None when it is not absolute."""
    if "\\" not in token:
        return token if _ABSOLUTE.match(token, 1) else None
    value = unescape_iri(token[1:-1])
    return iri(value) if _ABSOLUTE.match(value) else None


def parse_line(text: str) -> Triple | None:
    """The canonical triple on one line, None for a blank or comment line.

    Raises ValueError(column, message) style errors through ``_diagnose``.
    """
    m = _FAST_LINE.fullmatch(text)
    if m is not None:
        s, p, o = m.groups()
        if o[-1] == ">" and o[0] == '"' and o.endswith(_XSD_STRING_SUFFIX):
            o = o[:-len(_XSD_STRING_SUFFIX) + 1]
        return s, p, o
    m = _LINE.fullmatch(text)
    if m is None:
        if _BLANK_LINE.fullmatch(text):
            return None
        col, msg = _diagnose(text)
        raise _LineError(col, msg)
    s, p, o, body, dt, lang = m.groups()
    if s[0] == "<":
        s2 = _canonical_iri(s)
        if s2 is None:
            raise _LineError(m.start(1) + 1, f"relative IRI {s} (N-Triples needs absolute IRIs)")
        s = s2
    p2 = _canonical_iri(p)
    if p2 is None:
        raise _LineError(m.start(2) + 1, f"relative IRI {p} (N-Triples needs absolute IRIs)")
    p = p2
    c = o[0]
    if c == "<":
        o2 = _canonical_iri(o)
        if o2 is None:
            raise _LineError(m.start(3) + 1, f"relative IRI {o} (N-Triples needs absolute IRIs)")
        o = o2
    elif c == '"':
        if dt is not None:
            dtc = _canonical_iri(dt)
            if dtc is None:
                raise _LineError(m.start(5) + 1, f"relative datatype IRI {dt}")
            o = literal(unescape_literal(body[1:-1]), None, dtc[1:-1])
        elif (not _RAW_LITERAL_OK.fullmatch(body, 1, len(body) - 1) or (lang and not lang.islower())
              or len(o) != len(body) + len(lang or "")):   # (a space before the tag)
            o = literal(unescape_literal(body[1:-1]), lang[1:] if lang else None)
    return s, p, o


class _LineError(Exception):
    def __init__(self, column: int, message: str):
        super().__init__(message)
        self.column = column
        self.message = message


# --- diagnostics for lines the fast expression rejected -------------------

_TOKEN_IRI = re.compile(_IRIREF)
_TOKEN_BNODE = re.compile(_BNODE)
_TOKEN_STRING = re.compile(_STRING)
_TOKEN_LANG = re.compile(_LANGTAG)
_WS = re.compile(r"[ \t]*")


def _diagnose(text: str) -> tuple[int, str]:
    """(1-based column, message) for a line that is not a valid triple."""
    pos = _WS.match(text).end()

    def term(what: str, allowed: str) -> int:
        nonlocal pos
        pos = _WS.match(text, pos).end()
        if pos >= len(text):
            raise _Found(pos, f"expected {what}, found end of line")
        c = text[pos]
        if c == "<" and "iri" in allowed:
            m = _TOKEN_IRI.match(text, pos)
            if not m:
                return _bad_iri(text, pos)
            return m.end()
        if c == "_" and "bnode" in allowed:
            m = _TOKEN_BNODE.match(text, pos)
            if not m:
                raise _Found(pos, "bad blank node label")
            end = m.end()
            if end < len(text) and text[end] not in " \t<\"._" and text[end] != "#":
                raise _Found(end, f"bad character {text[end]!r} in blank node label")
            return end
        if c == '"' and "literal" in allowed:
            m = _TOKEN_STRING.match(text, pos)
            if not m:
                return _bad_string(text, pos)
            end = m.end()
            after = _WS.match(text, end).end()
            if text.startswith("^^", after):
                iri_at = _WS.match(text, after + 2).end()
                m2 = _TOKEN_IRI.match(text, iri_at)
                if not m2:
                    if text.startswith("<", iri_at):
                        return _bad_iri(text, iri_at)
                    raise _Found(iri_at, "expected a datatype IRI after ^^")
                return m2.end()
            if text.startswith("@", after):
                m2 = _TOKEN_LANG.match(text, after)
                if not m2:
                    raise _Found(after + 1, "bad language tag")
                return m2.end()
            return end
        if c in "'":
            raise _Found(pos, "single-quoted strings are not N-Triples (use \"...\")")
        if c.isdigit() or c in "+-":
            raise _Found(pos, "bare numbers are not N-Triples (write a quoted literal with a datatype)")
        if c == "@":
            raise _Found(pos, "directives (@prefix, @base) are Turtle, not N-Triples")
        raise _Found(pos, f"expected {what}, found {text[pos:pos + 12]!r}")

    try:
        if text[pos:pos + 1].lower() in ("@", "p", "b") and re.match(r"(@?prefix|@?base)\b", text[pos:], re.I):
            raise _Found(pos, "directives (@prefix, @base) are Turtle, not N-Triples")
        pos = term("a subject (IRI or blank node)", "iri bnode")
        pos = term("a predicate IRI", "iri")
        pos = term("an object (IRI, blank node or literal)", "iri bnode literal")
        pos = _WS.match(text, pos).end()
        if pos >= len(text):
            raise _Found(pos, "expected '.' at the end of the triple, found end of line")
        if text[pos] != ".":
            if text[pos] in ",;":
                raise _Found(pos, f"'{text[pos]}' lists are Turtle, not N-Triples; expected '.'")
            raise _Found(pos, f"expected '.' at the end of the triple, found {text[pos:pos + 12]!r}")
        rest = text[pos + 1:]
        if not _BLANK_LINE.fullmatch(rest):
            raise _Found(pos + 1, f"unexpected text after '.': {rest.strip()[:20]!r}")
    except _Found as f:
        return f.pos + 1, f.message
    return pos + 1, "invalid triple"


class _Found(Exception):
    def __init__(self, pos: int, message: str):
        self.pos, self.message = pos, message


def _bad_iri(text: str, pos: int) -> int:
    end = text.find(">", pos)
    body = text[pos + 1:end] if end > 0 else text[pos + 1:]
    for i, ch in enumerate(body):
        if ch == "\\":
            esc = body[i:i + 10]
            if not re.match(_UCHAR, esc):
                raise _Found(pos + 1 + i, _escape_problem(esc, "IRI", "only \\uXXXX and \\UXXXXXXXX are allowed"))
        elif ord(ch) <= 0x20 or ch in '<"{}|^`':
            raise _Found(pos + 1 + i, f"character {ch!r} is not allowed in an IRI")
    raise _Found(pos, "unterminated IRI (missing '>')")


def _escape_problem(esc: str, where: str, hint: str = "") -> str:
    m = re.match(_ANY_UCHAR, esc)
    if m:
        return (f"escape '{m.group()}' in {where} is not a Unicode character "
                "(above U+10FFFF, or a surrogate)")
    return f"bad escape {esc[:6]!r} in {where}" + (f" ({hint})" if hint else "")


def _bad_string(text: str, pos: int) -> int:
    i = pos + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if not re.match(rf"\\[tbnrf\"'\\]|{_UCHAR}", text[i:i + 10]):
                raise _Found(i, _escape_problem(text[i:i + 10], "string"))
            i += 2
            continue
        if ch == '"':
            break
        i += 1
    raise _Found(pos, "unterminated string literal")


# --- reading files ----------------------------------------------------------

def open_input(path: str | Path) -> BinaryIO:
    """A binary stream for a path, '-' (standard input) or a .gz file.

    Gzip streams are wrapped in a 1 MiB ``BufferedReader``: GzipFile's own
    line iteration goes through Python code per line (25% slower reads).
    """
    if str(path) == "-":
        raw = sys.stdin.buffer
        head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        return io.BufferedReader(gzip.GzipFile(fileobj=raw), 1 << 20) if head == b"\x1f\x8b" else raw
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    if gz:
        return io.BufferedReader(gzip.open(path, "rb"), 1 << 20)  # type: ignore[arg-type]
    return open(path, "rb")


def expand_inputs(paths: Iterable[str | Path]) -> list[str]:
    """Files to read for a list of inputs: directories become their files
    (recursively, sorted, hidden files skipped); '-' stays standard input."""
    out: list[str] = []
    for p in paths:
        if str(p) != "-" and Path(p).is_dir():
            out.extend(str(f) for f in sorted(Path(p).rglob("*"))
                       if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts))
        else:
            out.append(str(p))
    return out


def source_name(path: str | Path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    # N-Triples ends lines with CR, LF or both; bytes.splitlines would also
    # split on other separators, and text mode would translate them.
    for chunk in stream:
        if b"\r" in chunk:
            for part in chunk.split(b"\r"):
                if part and part != b"\n":
                    yield part.rstrip(b"\n")
        else:
            yield chunk[:-1] if chunk.endswith(b"\n") else chunk


def read_triples(path: str | Path, skip_invalid: bool = False,
                 errors: list[ParseError] | None = None) -> Iterator[Triple]:
    """Canonical triples of one N-Triples input, in file order.

    With ``skip_invalid`` bad lines are appended to ``errors`` and skipped;
    otherwise the first bad line raises ParseError.
    """
    name = source_name(path)
    with open_input(path) if str(path) != "-" else _stdin_ctx() as stream:
        yield from parse_stream(stream, name, skip_invalid, errors)


class _stdin_ctx:
    def __enter__(self) -> BinaryIO:
        return open_input("-")

    def __exit__(self, *exc) -> None:
        return None


def parse_stream(stream: Iterable[bytes], name: str, skip_invalid: bool = False,
                 errors: list[ParseError] | None = None) -> Iterator[Triple]:
    line_no = 0
    for raw in _lines(stream):
        line_no += 1
        try:
            text = raw.decode("utf-8")
            t = parse_line(text)
        except UnicodeDecodeError as e:
            err = ParseError(name, line_no, e.start + 1, "invalid UTF-8")
        except _LineError as e:
            err = ParseError(name, line_no, e.column, e.message)
        else:
            if t is not None:
                yield t
            continue
        if not skip_invalid:
            raise err
        if errors is not None:
            errors.append(err)


def parse_text(text: str, name: str = "<string>") -> list[Triple]:
    """All triples of an N-Triples document given as a string."""
    return list(parse_stream(io.BytesIO(text.encode("utf-8")), name))
