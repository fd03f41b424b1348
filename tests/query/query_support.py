"""Helpers for the query tests: result comparison and the W3C SPARQL harness."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import rdflib
from rdflib import RDF, BNode, Graph, Literal, Namespace, URIRef

from trine.store.terms import from_rdflib

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
W3C_SPARQL10 = SHARED / "data" / "w3c" / "sparql" / "sparql10"
LUBM = SHARED / "data" / "lubm"

MF = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
QT = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-query#")
RS = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/result-set#")
RDFS_NS = "http://www.w3.org/2000/01/rdf-schema#"
RDFS_RULE_PREDICATES = {URIRef(RDFS_NS + x) for x in ("subClassOf", "subPropertyOf", "domain", "range")}


# ---------------------------------------------------------------------------
# Comparing solution sequences
# ---------------------------------------------------------------------------

def from_oxigraph(t):
    """The rdflib term of a pyoxigraph term (None for unbound); lexical forms as given."""
    if t is None:
        return None
    import pyoxigraph as ox
    if isinstance(t, ox.NamedNode):
        return URIRef(t.value)
    if isinstance(t, ox.BlankNode):
        return BNode(t.value)
    if t.language:
        return Literal(t.value, lang=t.language)
    return Literal(t.value, datatype=URIRef(t.datatype.value), normalize=False)


def canon(t) -> str | None:
    """Canonical N-Triples string of a term (``"x"^^xsd:string`` == ``"x"``)."""
    if t is None:
        return None
    return from_rdflib(t)


def canon_rows(variables, rows) -> list[tuple]:
    """Rows as tuples of (variable, canonical term) pairs, unbound left out."""
    out = []
    for row in rows:
        out.append(tuple(sorted((v, canon(t)) for v, t in zip(variables, row) if t is not None)))
    return out


def _is_bnode(s: str | None) -> bool:
    return s is not None and s.startswith("_:")


def same_solutions(expected: list[tuple], actual: list[tuple], ordered: bool = False) -> bool:
    """Solution multisets equal up to a renaming of blank nodes (a bijection).

    Rows are tuples of (variable, canonical term) pairs.  With ``ordered`` the
    sequences must also agree position by position.
    """
    if len(expected) != len(actual):
        return False
    has_bnodes = any(_is_bnode(t) for row in expected + actual for _, t in row)
    if not has_bnodes:
        return expected == actual if ordered else Counter(expected) == Counter(actual)

    def rename(row, m):
        return tuple((v, m.get(t, t)) for v, t in row)

    if ordered:
        mapping: dict = {}
        used: set = set()
        for e, a in zip(expected, actual):
            if len(e) != len(a):
                return False
            for (ve, te), (va, ta) in zip(e, a):
                if ve != va or _is_bnode(te) != _is_bnode(ta):
                    return False
                if _is_bnode(ta):
                    if ta in mapping:
                        if mapping[ta] != te:
                            return False
                    elif te in used:
                        return False
                    else:
                        mapping[ta] = te
                        used.add(te)
                elif te != ta:
                    return False
        return True

    # unordered: backtracking search for a bijection
    exp = sorted(expected, key=lambda r: sum(_is_bnode(t) for _, t in r))
    act = list(actual)

    def compatible(e, a, m, used):
        if len(e) != len(a):
            return None
        m2 = dict(m)
        u2 = set(used)
        for (ve, te), (va, ta) in zip(e, a):
            if ve != va:
                return None
            if _is_bnode(ta) != _is_bnode(te):
                return None
            if _is_bnode(ta):
                if ta in m2:
                    if m2[ta] != te:
                        return None
                elif te in u2:
                    return None
                else:
                    m2[ta] = te
                    u2.add(te)
            elif te != ta:
                return None
        return m2, u2

    taken = [False] * len(act)

    def search(i, m, used):
        if i == len(exp):
            return True
        for j, a in enumerate(act):
            if taken[j]:
                continue
            r = compatible(exp[i], a, m, used)
            if r is None:
                continue
            taken[j] = True
            if search(i + 1, *r):
                return True
            taken[j] = False
        return False

    return search(0, {}, set())


# ---------------------------------------------------------------------------
# W3C manifests
# ---------------------------------------------------------------------------

@dataclass
class W3CTest:
    folder: str
    name: str
    query: Path
    data: list[Path]
    graph_data: list[Path]
    result: Path | None

    @property
    def id(self) -> str:
        return f"{self.folder}/{self.name}"


def _local(uri) -> Path:
    s = str(uri)
    assert s.startswith("file://"), s
    return Path(s[len("file://"):])


def manifest_tests(folder: str) -> list[W3CTest]:
    path = W3C_SPARQL10 / folder / "manifest.ttl"
    g = Graph()
    g.parse(path, format="turtle", publicID=path.as_uri())
    manifest = URIRef(path.as_uri())
    entries = g.value(manifest, MF.entries)
    out = []
    for entry in rdflib.collection.Collection(g, entries):
        if (entry, RDF.type, MF.QueryEvaluationTest) not in g:
            continue
        action = g.value(entry, MF.action)
        name = str(entry).split("#")[-1]
        out.append(W3CTest(
            folder=folder,
            name=name,
            query=_local(g.value(action, QT.query)),
            data=[_local(d) for d in g.objects(action, QT.data)],
            graph_data=[_local(d) for d in g.objects(action, QT.graphData)],
            result=_local(g.value(entry, MF.result)) if g.value(entry, MF.result) else None,
        ))
    return out


def parse_rdf(path: Path) -> Graph:
    fmt = {".ttl": "turtle", ".rdf": "xml", ".nt": "nt"}[path.suffix]
    g = Graph()
    g.parse(path, format=fmt, publicID=path.as_uri())
    return g


@dataclass
class Expected:
    variables: list[str]
    rows: list[tuple]          # canonical rows
    ask: bool | None = None
    ordered_by_index: bool = False


def expected_results(path: Path) -> Expected:
    if path.suffix in (".srx", ".srj", ".tsv"):
        from rdflib.query import Result
        fmt = {".srx": "xml", ".srj": "json", ".tsv": "tsv"}[path.suffix]
        with open(path, "rb") as f:
            res = Result.parse(f, format=fmt)
        if res.type == "ASK":
            return Expected([], [], ask=bool(res.askAnswer))
        names = [str(v) for v in res.vars]
        rows = []
        for b in res.bindings:
            rows.append(tuple(sorted((str(k), canon(v)) for k, v in b.items() if v is not None)))
        return Expected(names, rows)
    g = parse_rdf(path)
    rs = g.value(None, RDF.type, RS.ResultSet)
    boolean = g.value(rs, RS.boolean)
    if boolean is not None:
        return Expected([], [], ask=bool(boolean.toPython()))
    names = [str(v) for v in g.objects(rs, RS.resultVariable)]
    rows = []
    indexed = []
    for sol in g.objects(rs, RS.solution):
        row = []
        for b in g.objects(sol, RS.binding):
            row.append((str(g.value(b, RS.variable)), canon(g.value(b, RS.value))))
        idx = g.value(sol, RS.index)
        rows.append(tuple(sorted(row)))
        indexed.append(idx)
    ordered = all(i is not None for i in indexed) and rows
    if ordered:
        rows = [r for _, r in sorted(zip([int(i) for i in indexed], rows))]
    return Expected(names, rows, ordered_by_index=bool(ordered))


def uses_rdfs_vocabulary(g: Graph) -> bool:
    return any(p in RDFS_RULE_PREDICATES for p in g.predicates())
