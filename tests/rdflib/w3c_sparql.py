"""A manifest-driven runner of the W3C SPARQL query-evaluation tests over rdflib graphs.

Used by test_rdflib_w3c.py to run the SPARQL 1.0 and 1.1 suites through
rdflib on a trine graph (accelerated or not) and on rdflib's memory store in
the same session.  For each ``mf:QueryEvaluationTest``:

1. load each ``qt:data`` into the (default) graph; tests with ``qt:graphData``
   (named graphs) or a query ``FROM`` clause are skipped: the trine store has
   one default graph;
2. run ``qt:query`` with the query file's IRI as the base;
3. compare with ``mf:result`` (.srx, .srj, .tsv, or an ``rs:ResultSet`` /
   CONSTRUCT graph in .ttl/.rdf): solutions as multisets, blank nodes renamed
   consistently, in order only when the query has a top-level ORDER BY (and
   then only the ORDER BY variables' values are compared position by
   position, so ties may come in any order).

Terms are compared as RDF 1.1 says: ``"x"^^xsd:string`` is ``"x"``, language
tags ignore case, and numeric literals compare by (datatype, value) -- the
baseline described in /work/shared/data/w3c/README.md.
"""

from __future__ import annotations

import re
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Callable

from rdflib import RDF, BNode, Graph, Literal, Namespace, URIRef, Variable
from rdflib.collection import Collection
from rdflib.compare import isomorphic
from rdflib.namespace import XSD
from rdflib.plugins.sparql import prepareQuery
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.query import Result
from rdflib.util import guess_format

MF = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
QT = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-query#")
RS = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/result-set#")

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
SPARQL_ROOT = SHARED / "data" / "w3c" / "sparql"

_INTEGER_TYPES = {XSD[t] for t in (
    "integer", "int", "long", "short", "byte", "nonNegativeInteger", "nonPositiveInteger",
    "positiveInteger", "negativeInteger", "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte")}
_DECIMAL_TYPES = {XSD.decimal}
_FLOAT_TYPES = {XSD.double, XSD.float}


@dataclass
class Case:
    """One mf:QueryEvaluationTest."""

    suite: str                 # "sparql10/basic"
    name: str                  # local name of the test IRI
    query: Path
    data: list[Path]
    graph_data: list[Path]
    result: Path | None

    @property
    def id(self) -> str:
        return f"{self.suite}/{self.name}"


@dataclass
class Outcome:
    status: str                # "pass", "fail", "error", "skip"
    detail: str = ""
    seconds: float = 0.0
    answer: Any = None         # the normalised answer (for comparing configurations)


@dataclass
class Run:
    """Outcomes of one configuration over all cases."""

    label: str
    outcomes: dict[str, Outcome] = field(default_factory=dict)

    def ids(self, status: str) -> set[str]:
        return {k for k, o in self.outcomes.items() if o.status == status}

    def counts(self) -> Counter:
        return Counter(o.status for o in self.outcomes.values())


def _file_path(iri: str) -> str:
    from urllib.parse import unquote, urlparse
    return unquote(urlparse(iri).path)


def manifests(root: Path = SPARQL_ROOT) -> list[Path]:
    return sorted(root.glob("sparql1*/*/manifest.ttl"))


def load_cases(root: Path = SPARQL_ROOT) -> list[Case]:
    cases: list[Case] = []
    for mpath in manifests(root):
        g = Graph()
        g.parse(mpath, format="turtle", publicID=mpath.resolve().as_uri())
        suite = f"{mpath.parent.parent.name}/{mpath.parent.name}"
        for m in g.subjects(RDF.type, MF.Manifest):
            for lst in g.objects(m, MF.entries):
                for test in Collection(g, lst):
                    if (test, RDF.type, MF.QueryEvaluationTest) not in g:
                        continue
                    action = g.value(test, MF.action)
                    result = g.value(test, MF.result)
                    name = str(test).rsplit("#", 1)[-1]
                    cases.append(Case(
                        suite=suite, name=name,
                        query=Path(_file_path(str(g.value(action, QT.query)))),
                        data=sorted(Path(_file_path(str(d))) for d in g.objects(action, QT.data)),
                        graph_data=sorted(Path(_file_path(str(d))) for d in g.objects(action, QT.graphData)),
                        result=Path(_file_path(str(result))) if result is not None else None,
                    ))
    return cases


def skip_reason(case: Case) -> str | None:
    if case.graph_data:
        return "named graphs (qt:graphData)"
    text = case.query.read_text(encoding="utf-8")
    if re.search(r"\bFROM\b", _strip_comments_and_strings(text), re.IGNORECASE):
        return "query names its dataset (FROM)"
    return None


def _strip_comments_and_strings(text: str) -> str:
    text = re.sub(r'"""(?:.|\n)*?"""|\'\'\'(?:.|\n)*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'', '""', text)
    text = re.sub(r"<[^<>\s]*>", "<>", text)
    return re.sub(r"#[^\n]*", "", text)


# --- term and solution normalisation ---------------------------------------------

def norm(term: Any) -> Any:
    """A hashable comparison key of an RDF term (bnodes keep their label)."""
    if term is None:
        return None
    if isinstance(term, BNode):
        return ("B", str(term))
    if isinstance(term, URIRef):
        return ("U", str(term))
    if isinstance(term, Literal):
        lex = str(term)
        if term.language:
            return ("L", lex, "@" + term.language.lower())
        dt = term.datatype
        if dt is None or dt == XSD.string:
            return ("L", lex, None)
        try:
            if dt in _INTEGER_TYPES:
                return ("N", str(dt), int(lex.strip()))
            if dt in _DECIMAL_TYPES:
                return ("N", str(dt), Decimal(lex.strip()).normalize())
            if dt in _FLOAT_TYPES:
                v = float(lex.strip().replace("INF", "inf"))
                return ("N", str(dt), "NaN" if v != v else v)
        except (ValueError, InvalidOperation):
            pass
        return ("L", lex, str(dt))
    return ("?", str(term))


Solution = dict  # variable name -> normalised term


def _rows(result: Result) -> list[Solution]:
    out = []
    for row in result.bindings:
        out.append({str(k): norm(v) for k, v in row.items() if v is not None})
    return out


def _has_bnode(sol: Solution) -> bool:
    return any(v is not None and v[0] == "B" for v in sol.values())


def _shape(sol: Solution) -> frozenset:
    return frozenset((k, ("B",) if v[0] == "B" else v) for k, v in sol.items())


def same_solutions(actual: list[Solution], expected: list[Solution], order_vars: list[str] | None) -> str | None:
    """None if the solution sequences agree, else a short description."""
    if len(actual) != len(expected):
        return f"{len(actual)} solutions, expected {len(expected)}"
    if Counter(map(_shape, actual)) != Counter(map(_shape, expected)):
        missing = Counter(map(_shape, expected)) - Counter(map(_shape, actual))
        extra = Counter(map(_shape, actual)) - Counter(map(_shape, expected))
        return f"solutions differ: missing {_show(missing)}, unexpected {_show(extra)}"
    if any(map(_has_bnode, actual)) or any(map(_has_bnode, expected)):
        if not _bnode_match(actual, expected):
            return "no consistent renaming of blank nodes"
    if order_vars:
        def key(sol: Solution) -> tuple:
            return tuple(("B",) if sol.get(v) and sol[v][0] == "B" else sol.get(v) for v in order_vars)
        if [key(s) for s in actual] != [key(s) for s in expected]:
            return f"order differs on {order_vars}"
    return None


def _show(c: Counter, n: int = 3) -> str:
    items = list(c.elements())[:n]
    return "[" + "; ".join(str(sorted(dict(x).items())) for x in items) + (" ..." if sum(c.values()) > n else "") + "]"


def _bnode_match(actual: list[Solution], expected: list[Solution]) -> bool:
    """Backtracking search for a bijection of blank nodes making the multisets equal."""
    exp_by_shape: dict[frozenset, list[int]] = {}
    for j, e in enumerate(expected):
        exp_by_shape.setdefault(_shape(e), []).append(j)
    order = sorted(range(len(actual)), key=lambda i: len(exp_by_shape[_shape(actual[i])]))
    used = [False] * len(expected)
    fwd: dict[str, str] = {}
    bwd: dict[str, str] = {}

    def try_map(a: Solution, e: Solution) -> list[str] | None:
        added: list[str] = []
        for k, v in a.items():
            if v[0] != "B":
                continue
            w = e[k]
            if v[1] in fwd:
                if fwd[v[1]] != w[1]:
                    break
            elif w[1] in bwd:
                break
            else:
                fwd[v[1]] = w[1]
                bwd[w[1]] = v[1]
                added.append(v[1])
        else:
            return added
        for x in added:
            del bwd[fwd.pop(x)]
        return None

    def go(k: int) -> bool:
        if k == len(order):
            return True
        a = actual[order[k]]
        for j in exp_by_shape[_shape(a)]:
            if used[j]:
                continue
            added = try_map(a, expected[j])
            if added is None:
                continue
            used[j] = True
            if go(k + 1):
                return True
            used[j] = False
            for x in added:
                del bwd[fwd.pop(x)]
        return False

    return go(0)


def _norm_graph(g: Graph) -> Graph:
    out = Graph()
    for s, p, o in g:
        if isinstance(o, Literal):
            key = norm(o)
            if key[0] == "N":
                o = Literal(str(key[2]), datatype=URIRef(key[1]))
            elif key[2] is None:
                o = Literal(str(o))
            elif key[2].startswith("@"):
                o = Literal(str(o), lang=key[2][1:])
        out.add((s, p, o))
    return out


# --- expected results ---------------------------------------------------------------

@dataclass
class Expected:
    ask: bool | None = None
    rows: list[Solution] | None = None
    graph: Graph | None = None


def expected_results(path: Path) -> Expected:
    suffix = path.suffix
    if suffix in (".srx", ".srj", ".tsv", ".csv"):
        fmt = {".srx": "xml", ".srj": "json", ".tsv": "tsv", ".csv": "csv"}[suffix]
        with open(path, "rb") as f:
            res = Result.parse(f, format=fmt)
        if res.type == "ASK":
            return Expected(ask=bool(res.askAnswer))
        return Expected(rows=_rows(res))
    g = Graph()
    g.parse(path, format=guess_format(str(path)) or "turtle", publicID=path.resolve().as_uri())
    rs = g.value(predicate=RDF.type, object=RS.ResultSet)
    if rs is None:
        return Expected(graph=g)
    boolean = g.value(rs, RS.boolean)
    if boolean is not None:
        return Expected(ask=bool(boolean.toPython()))
    solutions = []
    for sol in g.objects(rs, RS.solution):
        idx = g.value(sol, RS["index"])
        row = {}
        for b in g.objects(sol, RS.binding):
            row[str(g.value(b, RS.variable))] = norm(g.value(b, RS.value))
        solutions.append((int(idx) if idx is not None else 0, row))
    solutions.sort(key=lambda x: x[0])
    return Expected(rows=[r for _, r in solutions])


# --- running ------------------------------------------------------------------------------

def order_variables(query_text: str, base: str) -> list[str]:
    """Variables of a top-level ORDER BY (empty if the query has none)."""
    q = prepareQuery(query_text, base=base)
    node = q.algebra.get("p")
    while isinstance(node, CompValue):
        if node.name == "OrderBy":
            out: list[str] = []
            _collect_vars(node.get("expr"), out)
            return out
        if node.name in ("Slice", "Distinct", "Reduced", "Project", "Extend", "ToMultiSet"):
            node = node.get("p")
            continue
        break
    return []


def _collect_vars(x: Any, out: list[str]) -> None:
    if isinstance(x, Variable):
        if str(x) not in out:
            out.append(str(x))
    elif isinstance(x, CompValue):
        for v in x.values():
            _collect_vars(v, out)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _collect_vars(v, out)


def load_data(graph: Graph, case: Case) -> None:
    for d in case.data:
        graph.parse(d, format=guess_format(str(d)) or "turtle", publicID=d.resolve().as_uri())


def run_case(case: Case, make_graph: Callable[[], Graph], after_load: Callable[[Graph], None] | None = None
             ) -> Outcome:
    """Load, query and compare one case on a fresh graph from ``make_graph``."""
    reason = skip_reason(case)
    if reason:
        return Outcome("skip", reason)
    return run_variants(case, make_graph(), {"": lambda g: None}, after_load)[""]


def run_variants(case: Case, graph: Graph, variants: dict[str, Callable[[Graph], None]],
                 after_load: Callable[[Graph], None] | None = None) -> dict[str, Outcome]:
    """Load a case into ``graph`` once, then query it once per variant.

    Each variant is a function that prepares the graph before its query
    (for instance, turns acceleration on or off).
    """
    reason = skip_reason(case)
    if reason:
        return {k: Outcome("skip", reason) for k in variants}
    t0 = time.perf_counter()
    try:
        load_data(graph, case)
        if after_load is not None:
            after_load(graph)
    except Exception:  # noqa: BLE001 - a test that raises is reported, not propagated
        err = traceback.format_exc(limit=4)
        return {k: Outcome("error", err, time.perf_counter() - t0) for k in variants}
    load_seconds = time.perf_counter() - t0
    text = case.query.read_text(encoding="utf-8")
    base = case.query.resolve().as_uri()
    outcomes = {}
    for label, prepare in variants.items():
        t1 = time.perf_counter()
        out = Outcome("error")
        try:
            prepare(graph)
            result = graph.query(text, base=base)
            detail = compare(result, case, text, base, out)
            out.status = "pass" if detail is None else "fail"
            out.detail = detail or ""
        except Exception:  # noqa: BLE001
            out.detail = traceback.format_exc(limit=4)
        out.seconds = load_seconds + time.perf_counter() - t1
        outcomes[label] = out
    return outcomes


def compare(result: Result, case: Case, text: str, base: str, out: Outcome | None = None) -> str | None:
    out = out if out is not None else Outcome("error")
    if case.result is None:
        return "no mf:result"
    expected = expected_results(case.result)
    if expected.ask is not None:
        if result.type != "ASK":
            return f"expected ASK, got {result.type}"
        out.answer = bool(result.askAnswer)
        return None if bool(result.askAnswer) == expected.ask else f"ASK gave {result.askAnswer}"
    if expected.graph is not None:
        if result.type not in ("CONSTRUCT", "DESCRIBE"):
            return f"expected a graph, got {result.type}"
        got = Graph()
        for t in result.graph:
            got.add(t)
        out.answer = _norm_graph(got)
        return None if isomorphic(_norm_graph(got), _norm_graph(expected.graph)) else "graphs differ"
    if result.type != "SELECT":
        return f"expected solutions, got {result.type}"
    rows = _rows(result)
    out.answer = rows
    return same_solutions(rows, expected.rows or [], order_variables(text, base) or None)


def summary(runs: list[Run]) -> str:
    lines = []
    for r in runs:
        c = r.counts()
        lines.append(f"{r.label:<22} pass {c['pass']:>3}  fail {c['fail']:>3}  error {c['error']:>3}  skip {c['skip']:>3}")
    return "\n".join(lines)


def same_answer(a: Any, b: Any) -> bool:
    """Two configurations' answers to one query agree (bnodes renamed)."""
    if isinstance(a, Graph) and isinstance(b, Graph):
        return isomorphic(a, b)
    if isinstance(a, list) and isinstance(b, list):
        return same_solutions(a, b, None) is None
    return a == b


__all__ = ["Case", "Outcome", "Run", "load_cases", "run_case", "run_variants", "summary", "SPARQL_ROOT", "same_answer",
           "same_solutions", "norm", "expected_results", "order_variables", "skip_reason"]
