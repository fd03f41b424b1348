"""Smoke tests of the benchmark harness (bench/): it runs at a small scale and the report renders.

No timing assertions: only that the results have the expected shape, that
every update round trip left the store as loaded, and that BENCHMARKS.md and
its plots are produced -- into a temporary directory, never over the
repository's own results.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # bench/ is a top-level folder of the repository, not installed

from bench import common, report, run  # noqa: E402


@pytest.fixture()
def bench_dirs(tmp_path, monkeypatch):
    res, work = tmp_path / "results", tmp_path / "work"
    monkeypatch.setenv("TRINE_BENCH_RESULTS", str(res))
    monkeypatch.setenv("TRINE_BENCH_WORK", str(work))
    monkeypatch.setenv("TRINE_BENCH_PLOTS", str(tmp_path / "plots"))
    return res


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_quick_run_writes_results_and_report(bench_dirs):
    res = bench_dirs
    rc = run.main(["--quick", "--only", "load,updates", "--results-dir", str(res),
                   "--update-sets", "update1,update4,samples", "--samples", "1"])
    assert rc == 0

    load = _load(res / "load-lubm1.json")
    for key in ("date", "machine", "versions", "git", "params", "explicit", "materialised", "goals"):
        assert key in load
    assert {"cpu", "logical_cores", "memory_bytes", "python"} <= set(load["machine"])
    assert {"trine", "lmdb", "pyoxigraph", "rdflib"} <= set(load["versions"])
    for system in ("trine", "pyoxigraph"):
        e = load["explicit"][system]
        assert e["triples"] > 0 and e["seconds"] > 0
        assert e["triples_per_s"] > 0 and e["bytes_per_triple"] > 0 and e["peak_rss_bytes"] > 0
    assert load["explicit"]["trine"]["triples"] == load["explicit"]["pyoxigraph"]["triples"]
    assert {"load_rate", "bytes_per_triple"} <= set(load["explicit"]["ratio"])
    mat = load["materialised"]["trine_local"]
    assert mat["triples"] > mat["explicit"] > 0
    assert {g["id"] for g in load["goals"]} == {"load_rate", "bytes_per_triple"}
    assert "closure_context" in load

    up = _load(res / "updates-lubm1.json")
    for key in ("params", "load", "rematerialisation", "updates", "samples", "verification", "goals"):
        assert key in up
    assert up["rematerialisation"]["full"]["seconds"] > 0
    assert up["samples"]["n"] == 1 and up["samples"]["counting"]["delete"]["mean"] > 0
    assert up["samples"]["dred"]["delete"]["mean"] > 0
    if common.update_file("remove_update1") is not None:
        u1 = up["updates"]["update1"]
        for kind, ops in (("remove_readd", ("remove", "add")), ("add_remove", ("add", "remove"))):
            for alg in ("counting", "dred"):
                for mode in ("files", "terms"):
                    case = u1[kind][alg][mode]
                    assert all(case[op]["median"] > 0 for op in ops)
                    assert case["mismatches"] == 0
        assert {"update1_10ms", "update4_vs_remat", "update4_vs_dred", "samples_vs_remat"} <= {
            g["id"] for g in up["goals"]}
    assert up["verification"]["round_trips"] > 0
    assert up["verification"]["verified"] == up["verification"]["round_trips"]
    assert up["verification"]["mismatches"] == 0  # every round trip restored the annotated dump

    manifest = _load(res / "run.json")
    assert manifest["parts"]["load"]["status"] == "ok"
    assert manifest["parts"]["updates"]["status"] == "ok"

    md = (res / "BENCHMARKS.md").read_text()
    assert "## Bulk load and store size" in md and "## Incremental updates" in md
    assert "## Goals at a glance" in md
    for png in ("load.png", "updates-lubm1.png"):
        p = res / "plots" / png
        assert p.exists() and p.stat().st_size > 1000
        assert f"(plots/{png})" in md


def test_report_renders_foreign_results(tmp_path):
    """Other benchmarks' files: whatever their layout, the report shows them and does not fail."""
    res = tmp_path / "results"
    common.write_results("queries", {
        "scale": 1,
        "queries": {f"q{i}": {"trine": {"median": 0.01 * i, "answers": i},
                              "pyoxigraph": {"median": 0.005 * i, "answers": i},
                              "rdflib": {"median": 0.2 * i, "answers": i}} for i in range(1, 15)},
    }, res)
    common.write_results("spark-10", {"systems": [{"system": "spark", "seconds": 120.0},
                                                  {"system": "local", "seconds": 30.0},
                                                  {"system": "pyoxigraph", "seconds": 10.0}]}, res)
    common.write_results("rdflib", {"results": [[1, 2], {"odd": None}], "note": "x" * 200}, res)
    (res / "broken.json").write_text("{not json")
    out = report.build(res)
    md = out.read_text()
    assert "## LUBM queries" in md and "Q14" in md and "pyoxigraph / trine" in md
    assert "## Spark vs local load" in md and "spark-10" in md
    assert "## rdflib plugin" in md
    assert (res / "plots" / "queries.png").exists()
    assert (res / "plots" / "spark.png").exists()


def test_report_with_no_results(tmp_path):
    res = tmp_path / "empty"
    res.mkdir()
    md = report.build(res).read_text()
    assert md.startswith("# Benchmarks")
    assert "Not available" in md


def test_external_command_follows_help():
    cmds = run.external_command("spark", [10, 50], False, None, "usage: x [--scale N] [--quick]")
    assert [c[-2:] for c in cmds] == [["--scale", "10"], ["--scale", "50"]]
    cmds = run.external_command("queries", [1, 10], True, Path("/r"), "--scales S --quick --results-dir D")
    assert len(cmds) == 1 and "--quick" in cmds[0] and cmds[0][cmds[0].index("--scales") + 1] == "1,10"
    assert cmds[0][cmds[0].index("--results-dir") + 1] == "/r"
    cmds = run.external_command("rdflib", [1], False, None, "usage: bench_rdflib.py [-h]")
    assert cmds == [cmds[0][:3]]


def test_lubm_prefix(tmp_path):
    """LUBM(n) is cut from a bigger file right before University<n>'s own section."""
    ub = "<http://swat.cse.lehigh.edu/onto/univ-bench.owl#"
    typ = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
    lines = [
        f"<http://www.University0.edu> {typ} {ub}University> .",
        f"<http://www.University0.edu> {ub}name> \"University0\" .",
        f"<http://www.University2.edu> {typ} {ub}University> .",  # mentioned early: stays
        f"<http://www.Department0.University0.edu/P0> {ub}degreeFrom> <http://www.University2.edu> .",
        f"<http://www.University1.edu> {typ} {ub}University> .",  # University1's own section starts here
        f"<http://www.University1.edu> {ub}name> \"University1\" .",
        f"<http://www.Department0.University1.edu> {typ} {ub}Department> .",
    ]
    src = tmp_path / "big.nt.gz"
    with gzip.open(src, "wt") as f:
        f.write("\n".join(lines) + "\n")
    dest = tmp_path / "lubm1.nt"
    common._lubm_prefix(src, 1, dest)
    assert dest.read_text().splitlines() == lines[:4]


def test_report_renders_spark_systems(tmp_path):
    res = tmp_path / "results"
    for scale in (10, 50):
        common.write_results(f"spark-{scale}", {
            "scale": scale, "load_average_before": [1.0, 1.0, 1.0],
            "systems": {"spark": {"seconds": 100.0 * scale, "input_triples": 1000 * scale, "triples": 1200 * scale,
                                  "input_triples_per_second": 10.0, "stages": {"encode": 1.0, "closure": 2.0},
                                  "append_entries_per_second": 1e6, "peak_rss_bytes": 2 << 30},
                        "local": {"seconds": 10.0 * scale, "input_triples": 1000 * scale, "triples": 1200 * scale}},
            "ratios": {"spark_over_local_seconds": 10.0},
            "goals": {"input_triples_per_second": {"goal": 60000, "measured": 10.0, "met": False,
                                                   "applies_at_scale": 50}},
        }, res)
    md = report.build(res).read_text()
    assert "LUBM(50)" in md and "spark over local seconds" in md and "not met" in md
    assert (res / "plots" / "spark.png").exists()
