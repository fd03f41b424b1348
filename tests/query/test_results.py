"""query/results.py: what it writes is read back as the same terms by an
independent parser (pyoxigraph's SPARQL results parsers, CSV's lossy form
by the rules of the CSV format), for any term a store can hold."""

from __future__ import annotations

import csv
import io
import json

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rdflib import BNode, Literal, URIRef

from query_support import from_oxigraph
from trine.query.results import write_results

XSD = "http://www.w3.org/2001/XMLSchema#"
# rdflib warns about ill-typed lexical forms (kept as written, as the store keeps them)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# text with everything the formats must escape: quotes, backslashes, tabs,
# line ends, commas, non-ASCII (surrogates cannot be encoded)
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
iri_chars = st.text(st.characters(whitelist_categories=("L", "Nd"), whitelist_characters="-._~/#?=&"),
                    max_size=8)
iris = iri_chars.map(lambda s: URIRef("http://example.org/" + s))
bnodes = st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,6}", fullmatch=True).map(BNode)
datatypes = st.sampled_from([XSD + "integer", XSD + "decimal", XSD + "double", XSD + "boolean",
                             XSD + "dateTime", "http://example.org/dt"])
lexical = st.one_of(text, st.from_regex(r"[+-]?[0-9]{1,3}(\.[0-9]{0,2})?([eE][+-]?[0-9])?", fullmatch=True),
                    st.sampled_from(["true", "false", ".5", "1.", "01"]))
literals = st.one_of(
    text.map(Literal),
    st.tuples(text, st.from_regex(r"[a-z]{2}(-[A-Z]{2}|-[a-z0-9]{5,8})?", fullmatch=True)).map(
        lambda x: Literal(x[0], lang=x[1])),
    st.tuples(lexical, datatypes).map(lambda x: Literal(x[0], datatype=URIRef(x[1]), normalize=False)),
)
terms = st.one_of(iris, bnodes, literals, st.none())
VARS = ["x", "y", "z"]
tables = st.lists(st.tuples(terms, terms, terms), max_size=5)


class Rows:
    """The part of a QueryResult that write_results reads."""

    form = "SELECT"
    variables = VARS

    def __init__(self, rows):
        self.rows = rows

    def chunks(self):
        if self.rows:
            yield self.rows


def written(rows, fmt: str) -> str:
    out = io.StringIO()
    assert write_results(Rows(rows), fmt, out) == len(rows)
    return out.getvalue()


def read_back(data: str, fmt) -> list[tuple]:
    res = ox.parse_query_results(data.encode("utf-8"), fmt)
    assert [v.value for v in res.variables] == VARS
    return [tuple(from_oxigraph(sol[v]) for v in VARS) for sol in res]


def same(t) -> tuple:
    """A term as the formats carry it: a plain literal is an xsd:string."""
    if isinstance(t, Literal) and t.language is None and t.datatype is None:
        return ("literal", str(t), XSD + "string")
    if isinstance(t, Literal):  # (language tags are case-insensitive)
        return ("literal", str(t), t.language.lower() if t.language else str(t.datatype))
    return (type(t).__name__, str(t)) if t is not None else None


@settings(max_examples=200, deadline=None)
@given(tables)
@pytest.mark.parametrize("fmt", ["json", "tsv"])
def test_json_and_tsv_read_back_as_the_same_terms(fmt, rows):
    data = written(rows, fmt)
    if fmt == "json":
        json.loads(data)                                  # valid JSON, streamed or not
    got = read_back(data, ox.QueryResultsFormat.JSON if fmt == "json" else ox.QueryResultsFormat.TSV)
    assert [tuple(map(same, r)) for r in got] == [tuple(map(same, r)) for r in rows]


@settings(max_examples=200, deadline=None)
@given(tables)
def test_csv_reads_back_as_its_lossy_form(rows):
    data = written(rows, "csv")
    assert data.endswith("\r\n")
    parsed = list(csv.reader(io.StringIO(data, newline="")))
    assert parsed[0] == VARS
    want = [["" if t is None else ("_:" + str(t) if isinstance(t, BNode) else str(t)) for t in r]
            for r in rows]
    assert parsed[1:] == want


def test_ask_in_every_format():
    class Ask:
        form = "ASK"
        ask = True
    for fmt in ("json", "tsv", "csv", "table"):
        out = io.StringIO()
        write_results(Ask(), fmt, out)
        assert out.getvalue().strip() in ('{"head": {}, "boolean": true}', "true")
