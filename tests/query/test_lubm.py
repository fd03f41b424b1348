"""The 14 LUBM queries on LUBM(1) + univ-bench, materialised: trine's answers
equal pyoxigraph's over trine's own dump of the same store."""

from __future__ import annotations

from collections import Counter

import pyoxigraph as ox
import pytest

from query_support import LUBM, canon_rows, from_oxigraph
from trine import Store
from trine.query import planner

QUERIES = sorted((LUBM / "queries").glob("q*.rq"), key=lambda p: int(p.stem[1:])) if LUBM.is_dir() else []
needs_lubm = pytest.mark.skipif(
    not (LUBM / "lubm1.nt.gz").exists(),
    reason=f"LUBM data not found under {LUBM} (/work/shared absent: present in CI, not in a user's clone)")


@pytest.fixture(scope="module")
def lubm(tmp_path_factory):
    if not (LUBM / "lubm1.nt.gz").exists():
        pytest.skip(f"LUBM data not found under {LUBM}")
    store = Store.open(tmp_path_factory.mktemp("lubm1") / "db")
    store.load([LUBM / "lubm1.nt.gz", LUBM / "univ-bench.nt"], engine="local")
    ref = ox.Store()
    ref.bulk_load(("\n".join(store.dump_lines()) + "\n").encode(), ox.RdfFormat.N_TRIPLES)
    yield store, ref
    store.close()


@needs_lubm
def test_fourteen_queries():
    assert len(QUERIES) == 14


@needs_lubm
@pytest.mark.parametrize("path", QUERIES, ids=lambda p: p.stem)
def test_lubm_query_same_answers_as_pyoxigraph(lubm, path):
    store, ref = lubm
    text = path.read_text()
    result = store.query(text)
    rows = list(result)
    res = ref.query(text)
    names = [v.value for v in res.variables]
    expected = [tuple(from_oxigraph(sol[n]) for n in names) for sol in res]
    assert result.variables == names
    assert Counter(canon_rows(names, rows)) == Counter(canon_rows(names, expected))
    # the answers need the materialisation for some queries: keep one non-trivial check
    if path.stem == "q6":
        assert len(rows) > 5000


@needs_lubm
def test_lubm_plans_have_no_cartesian_product(lubm):
    store, _ = lubm
    for path in QUERIES:
        r = store.query(path.read_text())
        list(r)
        kinds = [n.kind for n in planner.walk(r.plan) if isinstance(n, planner.Join)]
        assert "cross" not in kinds, path.name


@needs_lubm
def test_lubm_explain_q9(lubm):
    store, _ = lubm
    text = store.explain((LUBM / "queries" / "q9.rq").read_text())
    assert text.count("actual=") >= 7
    assert "Scan" in text and "Join" in text
