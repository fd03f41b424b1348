"""Exceptions raised by trine's query parser.

``QuerySyntaxError``
    The text is not valid (trine-subset) SPARQL.  Carries a 1-based ``line``
    and ``column`` and a human readable ``message`` saying what was expected
    and what was found; ``str(err)`` is ``"line L, column C: message"``.

``UnsupportedQueryError``
    The text is (probably) valid SPARQL but uses a construct trine's own query
    engine does not implement (OPTIONAL, UNION, property paths, ...).  The
    message names the construct and points at the rdflib plugin, which runs
    full SPARQL 1.1 over a trine store.
"""

from __future__ import annotations

__all__ = ["QueryError", "QuerySyntaxError", "UnsupportedQueryError"]


class QueryError(Exception):
    """Base class of all query parsing errors."""


class QuerySyntaxError(QueryError, ValueError):
    """Malformed query text.

    ``message`` says what was expected and what was found, e.g.
    ``"expected '}' or a triple pattern, found 'FOO'"``; ``line`` and
    ``column`` are 1-based.  ``source_line`` (optional) is the text of the
    offending line, for callers that want to draw a caret under the column.
    """

    def __init__(
        self, message: str, line: int, column: int, source_line: str | None = None
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.source_line = source_line
        super().__init__(f"line {line}, column {column}: {message}")

    def __reduce__(self):  # keep pickling (e.g. multiprocessing) working
        return (type(self), (self.message, self.line, self.column, self.source_line))


class UnsupportedQueryError(QueryError, NotImplementedError):
    """Valid SPARQL that trine's query engine does not handle.

    ``construct`` names the unsupported feature (e.g. ``"OPTIONAL"``); ``line``
    and ``column`` (1-based) locate it when known.
    """

    def __init__(
        self, construct: str, line: int | None = None, column: int | None = None
    ) -> None:
        self.construct = construct
        self.line = line
        self.column = column
        message = (
            f"{construct} is not supported by trine's query engine; use the rdflib "
            "plugin (rdflib.Graph(store='trine')) for full SPARQL 1.1"
        )
        if line is not None:
            message = f"line {line}, column {column}: {message}"
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.construct, self.line, self.column))
