"""The Spark bulk path against the in-process load, owlrl and pyoxigraph.

``python -m bench.bench_spark --scale 10 [--scale 50]`` (or
``python bench/bench_spark.py ...``) writes ``bench/results/spark-<N>.json``
per scale.  For LUBM(N) + univ-bench.nt:

* ``spark``: ``Store.load(engine='spark')`` (local[*]), end to end in a fresh
  interpreter, split into Spark start, encode (parse + dictionary + encoded
  triples), closure, runs (the closure's counts aggregated into the sorted
  SPO run, plus the other runs when Spark sorts them) and LMDB append (the
  driver streaming runs into a fresh environment); input triples/s, output
  triples, peak RSS of the process tree (the JVM and the Python workers
  included) and the append rate in index entries/s (all six indexes plus
  the dictionary's two databases, over the seconds spent writing them,
  most of which overlap Spark's closure and runs: the ``append`` stage is
  only what is left after Spark ends);
* ``local``: ``Store.load(engine='local')`` of the same files, same split;
* ``pyoxigraph``: ``Store(dir).bulk_load(path=..., format=N_TRIPLES)`` of the
  data, decompressed beforehand (no reasoning: the floor);
* ``owlrl``: RDFS closure (``DeductiveClosure(RDFS_Semantics)``) of an rdflib
  graph holding a sample of the data (the first ``--owlrl-sample`` lines, LUBM(1)
  size by default) + the ontology; its input triples/s is the comparison;
* ``reasonable``: its OWL 2 RL closure (in memory, Rust; more rules than
  rho-df) of the same sample, as ``bench_load`` runs it; input triples/s.

The machine's load average is recorded before and after: other work on the
machine slows every system, so compare ratios from the same file.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import os
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = "bench"

from bench import common  # noqa: E402
from bench.common import PeakMemory, log, run_isolated  # noqa: E402

GOAL_INPUT_RATE = 60_000          # input triples/s, LUBM(50) end to end
GOAL_APPEND_RATE = 1_000_000      # index entries/s
GOAL_OWLRL_RATIO = 50


# --- workers (fresh interpreters) -----------------------------------------------------------
def spark_once(files: list[str], store_dir: str, runs: str = "auto") -> dict[str, Any]:
    from trine import Store

    with PeakMemory(fresh_process=True) as mem:
        t0 = time.perf_counter()
        with Store.open(store_dir) as s:
            rep = s.load(files, engine="spark", runs=runs)
            n = len(s)
        wall = time.perf_counter() - t0
    sec = dict(rep.seconds)
    return {
        "seconds": wall, "stages": sec, "input_triples": rep.input_triples, "explicit": rep.explicit,
        "triples": n, "rounds": rep.rounds, "new_per_round": rep.new_per_round, "new_terms": rep.new_terms,
        "runs_mode": rep.runs, "closure_method": rep.closure, "entries_appended": rep.entries_appended,
        "jvm_class_archive": rep.jvm_class_archive, "append_seconds": rep.append_seconds,
        # Writing time only: most of it now overlaps Spark's closure and runs.
        "append_entries_per_second": rep.entries_appended / rep.append_seconds if rep.append_seconds else None,
        "input_triples_per_second": rep.input_triples / wall if wall else None,
        "input_triples_per_second_after_start": (rep.input_triples / (wall - sec.get("start", 0))
                                                 if wall > sec.get("start", 0) else None),
        **mem.as_dict(),
    }


def local_once(files: list[str], store_dir: str) -> dict[str, Any]:
    from trine import Store

    with PeakMemory(fresh_process=True) as mem:
        t0 = time.perf_counter()
        with Store.open(store_dir) as s:
            rep = s.load(files, engine="local")
            n = len(s)
            terms = s.stats()["terms"]
        wall = time.perf_counter() - t0
    entries = 6 * n + 2 * terms
    return {
        "seconds": wall, "stages": dict(rep.seconds), "input_triples": rep.input_triples, "triples": n,
        "input_triples_per_second": rep.input_triples / wall if wall else None,
        "entries_written": entries,
        "write_entries_per_second": entries / rep.seconds["write"] if rep.seconds.get("write") else None,
        **mem.as_dict(),
    }


def pyoxigraph_once(path: str, store_dir: str) -> dict[str, Any]:
    """pyoxigraph's bulk load, as the load benchmark runs it (without optimize)."""
    from bench.bench_load import pyoxigraph_once as bulk_load

    r = bulk_load(path, store_dir, optimize=False)
    r["input_triples_per_second"] = r["triples"] / r["seconds"] if r["seconds"] else None
    return r


def owlrl_once(sample: str, ontology: str) -> dict[str, Any]:
    import owlrl
    import rdflib

    with PeakMemory(fresh_process=True) as mem:
        g = rdflib.Graph()
        t0 = time.perf_counter()
        g.parse(sample, format="nt")
        g.parse(ontology, format="nt")
        n_in = len(g)
        t1 = time.perf_counter()
        owlrl.DeductiveClosure(owlrl.RDFS_Semantics).expand(g)
        t2 = time.perf_counter()
    return {"seconds": t2 - t0, "parse_seconds": t1 - t0, "closure_seconds": t2 - t1, "input_triples": n_in,
            "triples": len(g), "input_triples_per_second": n_in / (t2 - t0), **mem.as_dict()}


def reasonable_once(sample: str, ontology: str, workdir: str) -> dict[str, Any]:
    from bench.bench_load import reasonable_once as closure

    r = closure([sample, ontology], workdir)
    n_in = sum(1 for f in (sample, ontology) for line in open(f, "rb") if line.strip()
               and not line.lstrip().startswith(b"#"))
    r.update(input_triples=n_in, input_triples_per_second=n_in / r["seconds"] if r["seconds"] else None)
    return r


# --- driver ----------------------------------------------------------------------------------
def _sample(src: Path, lines: int) -> Path:
    dest = common.work_dir() / "data" / f"{src.name.split('.')[0]}-first{lines}.nt"
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        opener = gzip.open if src.name.endswith(".gz") else open
        with opener(src, "rb") as f, open(dest, "wb") as out:
            out.writelines(itertools.islice(f, lines))
    return dest


def bench_scale(scale: int, a: argparse.Namespace) -> dict[str, Any]:
    src, how = common.lubm_source(scale)
    onto = common.ontology_file()
    files = [str(src), str(onto)]
    out: dict[str, Any] = {"scale": scale, "source": how, "files": files, "load_average_before": common.load_average()}
    systems: dict[str, Any] = {}
    timeout = a.timeout
    log(f"LUBM({scale}): spark")
    systems["spark"] = run_isolated("bench.bench_spark.spark_once", files,
                                    str(common.fresh_dir(f"spark-{scale}")), a.runs, timeout=timeout)
    log(f"  {systems['spark']['seconds']:.1f}s {systems['spark']['stages']}")
    if not a.skip_local:
        log(f"LUBM({scale}): local")
        systems["local"] = run_isolated("bench.bench_spark.local_once", files,
                                        str(common.fresh_dir(f"spark-local-{scale}")), timeout=timeout)
        log(f"  {systems['local']['seconds']:.1f}s")
    if not a.skip_pyoxigraph:
        log(f"LUBM({scale}): pyoxigraph bulk_load")
        plain = common.plain_copy(src)
        systems["pyoxigraph"] = run_isolated("bench.bench_spark.pyoxigraph_once", str(plain),
                                             str(common.fresh_dir(f"spark-oxi-{scale}")), timeout=timeout)
        log(f"  {systems['pyoxigraph']['seconds']:.1f}s")
    if not a.skip_owlrl:
        sample = _sample(src, a.owlrl_sample)
        log(f"owlrl RDFS closure of {a.owlrl_sample} lines + ontology")
        systems["owlrl"] = run_isolated("bench.bench_spark.owlrl_once", str(sample), str(onto), timeout=timeout)
        log(f"  {systems['owlrl']['seconds']:.1f}s")
    if not a.skip_reasonable:
        sample = _sample(src, a.owlrl_sample)
        log(f"reasonable OWL 2 RL closure of {a.owlrl_sample} lines + ontology")
        try:
            systems["reasonable"] = run_isolated("bench.bench_spark.reasonable_once", str(sample), str(onto),
                                                 str(common.fresh_dir(f"spark-reasonable-{scale}")), timeout=timeout)
            log(f"  {systems['reasonable']['seconds']:.1f}s")
        except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
            systems["reasonable"] = {"error": str(e).splitlines()[0] if str(e) else type(e).__name__}
    for d in ("spark", "spark-local", "spark-oxi", "spark-reasonable"):
        common.shutil.rmtree(common.work_dir() / f"{d}-{scale}", ignore_errors=True)
    out["systems"] = systems
    sp = systems["spark"]
    ratios: dict[str, Any] = {}
    if "local" in systems:
        ratios["spark_over_local_seconds"] = sp["seconds"] / systems["local"]["seconds"]
    if "pyoxigraph" in systems:
        ratios["spark_over_pyoxigraph_seconds"] = sp["seconds"] / systems["pyoxigraph"]["seconds"]
    if "owlrl" in systems:
        ratios["spark_over_owlrl_throughput"] = (sp["input_triples_per_second"]
                                                 / systems["owlrl"]["input_triples_per_second"])
    if systems.get("reasonable", {}).get("input_triples_per_second"):
        ratios["spark_over_reasonable_throughput"] = (sp["input_triples_per_second"]
                                                      / systems["reasonable"]["input_triples_per_second"])
    out["ratios"] = ratios
    out["goals"] = {
        "input_triples_per_second": {"goal": GOAL_INPUT_RATE, "measured": sp["input_triples_per_second"],
                                     "met": sp["input_triples_per_second"] >= GOAL_INPUT_RATE,
                                     "applies_at_scale": 50},
        "append_entries_per_second": {"goal": GOAL_APPEND_RATE, "measured": sp["append_entries_per_second"],
                                      "met": (sp["append_entries_per_second"] or 0) >= GOAL_APPEND_RATE},
    }
    if "spark_over_owlrl_throughput" in ratios:
        out["goals"]["owlrl_throughput_ratio"] = {"goal": GOAL_OWLRL_RATIO,
                                                  "measured": ratios["spark_over_owlrl_throughput"],
                                                  "met": ratios["spark_over_owlrl_throughput"] >= GOAL_OWLRL_RATIO,
                                                  "applies_at_scale": 50}
    out["load_average_after"] = common.load_average()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=int, action="append", help="LUBM scale (repeatable; default 10)")
    ap.add_argument("--quick", action="store_true", help="LUBM(1) only")
    ap.add_argument("--runs", default="auto", choices=["auto", "spo", "six"], help="how the runs are sorted")
    ap.add_argument("--owlrl-sample", type=int, default=100_000, help="lines of data for owlrl")
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--skip-pyoxigraph", action="store_true")
    ap.add_argument("--skip-owlrl", action="store_true")
    ap.add_argument("--skip-reasonable", action="store_true")
    ap.add_argument("--results-dir", type=Path, default=None)
    ap.add_argument("--timeout", type=float, default=3600)
    a = ap.parse_args(argv)
    scales = [1] if a.quick else (a.scale or [10])
    for scale in scales:
        data = bench_scale(scale, a)
        path = common.write_results(f"spark-{scale}", data, a.results_dir)
        sp = data["systems"]["spark"]
        log(f"wrote {path}: spark {sp['seconds']:.1f}s, {sp['input_triples_per_second']:,.0f} input triples/s, "
            f"append {sp['append_entries_per_second'] or 0:,.0f} entries/s; ratios {data['ratios']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
