"""Run the benchmarks and regenerate BENCHMARKS.md (``make bench``).

    python -m bench.run                          # everything: load 1,10,50; updates 1,10; scaling 1,5,10,50; others
    python -m bench.run --scales 1,10 --only load,updates
    python -m bench.run --quick                  # smoke run: LUBM(1), 1 repetition, small updates only

Parts (``--only``):

* ``load``     bench/bench_load.py      trine vs pyoxigraph bulk load, materialised load  -> load-lubm<N>.json
* ``updates``  bench/bench_updates.py   DynamiTE's updates, Hu et al.'s samples, remat     -> updates-lubm<N>.json
* ``scaling``  bench/bench_updates.py   load and sample-deletion time vs LUBM 1/5/10/50    -> scaling.json
* ``spark``, ``queries``, ``rdflib``: bench/bench_<part>.py, run as subprocesses when
  present (their ``--help`` decides which options they get); they write their own
  results files (spark-<N>.json, queries.json, rdflib.json).

Then ``bench.report`` rebuilds BENCHMARKS.md and bench/plots/ from every results
file present.  A record of what ran (``run.json``) goes next to the results.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import common
from bench.common import log

OWN_PARTS = ("load", "updates", "scaling")
EXTERNAL_PARTS = ("spark", "queries", "rdflib")
PARTS = OWN_PARTS + EXTERNAL_PARTS


def _ints(text: str | None) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()] if text else []


def external_command(part: str, scales: list[int], quick: bool, results_dir: Path | None,
                     help_text: str) -> list[list[str]]:
    """The command line(s) for another engineer's bench script, from the options its --help shows."""
    base = [sys.executable, "-m", f"bench.bench_{part}"]
    opts = set(re.findall(r"(--[a-z][a-z0-9-]*)", help_text))
    extra: list[str] = []
    if quick and "--quick" in opts:
        extra.append("--quick")
    if results_dir is not None:
        for o in ("--results-dir", "--results", "--out-dir", "--output-dir"):
            if o in opts:
                extra += [o, str(results_dir)]
                break
    if quick and "--quick" not in opts:
        for o in ("--reps", "--repeat", "--repeats", "--runs"):
            if o in opts:
                extra += [o, "1"]
                break
    if "--scales" in opts and scales:
        return [base + ["--scales", ",".join(map(str, scales))] + extra]
    if "--scale" in opts and scales:
        return [base + ["--scale", str(s)] + extra for s in scales]
    return [base + extra]


def external_scales(part: str, a: argparse.Namespace) -> list[int]:
    """Scales to pass to another bench script (empty: let it use its own default).

    spark writes one file per scale (spark-<N>.json), so it gets each of
    ``--spark-scales``; queries.json and rdflib.json hold one scale each, so
    those scripts run at their own default scale unless one is given.
    """
    if a.quick:
        return []
    if part == "spark":
        return _ints(a.spark_scales)
    return _ints(getattr(a, f"{part}_scale", None))


def run_external(part: str, scales: list[int], quick: bool, results_dir: Path | None,
                 timeout: float) -> dict[str, Any]:
    script = common.BENCH / f"bench_{part}.py"
    if not script.exists():
        log(f"{part}: {script.relative_to(common.ROOT)} not present; skipped")
        return {"status": "absent"}
    env = dict(os.environ)
    if results_dir is not None:
        env["TRINE_BENCH_RESULTS"] = str(results_dir)
    env.setdefault("PYTHONPATH", str(common.ROOT))
    try:
        h = subprocess.run([sys.executable, "-m", f"bench.bench_{part}", "--help"], cwd=common.ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
        help_text = h.stdout + h.stderr
    except subprocess.TimeoutExpired:
        help_text = ""
    cmds = external_command(part, scales, quick, results_dir, help_text)
    logs = common.work_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"{part}.log"
    status, rc = "ok", 0
    t0 = time.perf_counter()
    with open(log_path, "w") as lf:
        for cmd in cmds:
            log(f"{part}: {' '.join(cmd[1:])}  (log: {log_path})")
            lf.write(f"$ {' '.join(cmd)}\n")
            lf.flush()
            try:
                r = subprocess.run(cmd, cwd=common.ROOT, env=env, stdout=lf, stderr=subprocess.STDOUT,
                                   timeout=timeout)
                rc = r.returncode
            except subprocess.TimeoutExpired:
                status, rc = "timeout", None
                break
            if rc != 0:
                status = "failed"
                break
    secs = time.perf_counter() - t0
    log(f"{part}: {status} after {secs:.0f} s")
    tail = log_path.read_text(errors="replace").splitlines()[-15:]
    return {"status": status, "returncode": rc, "seconds": secs, "commands": [c[1:] for c in cmds],
            "log": str(log_path), "log_tail": tail if status != "ok" else []}


def _record(results_dir: Path | None, part: str, entry: dict[str, Any], args: dict[str, Any]) -> None:
    """Merge this part's outcome into run.json (the latest run of each part)."""
    d = Path(results_dir) if results_dir else common.results_dir()
    path = d / "run.json"
    parts: dict[str, Any] = {}
    if path.exists():
        try:
            parts = json.loads(path.read_text()).get("parts", {})
        except ValueError:
            parts = {}
    parts[part] = {**entry, "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "args": args}
    common.write_results("run", {"parts": parts}, d)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--scales", default="1,10,50", help="LUBM scales of the load benchmark (default 1,10,50)")
    ap.add_argument("--update-scales", default=None,
                    help="LUBM scales for the update benchmark (default: the --scales up to 10)")
    ap.add_argument("--scaling-scales", default="1,5,10,50", help="scales of the scaling curves (default 1,5,10,50)")
    ap.add_argument("--only", default=",".join(PARTS), help=f"comma-separated parts: {','.join(PARTS)}")
    ap.add_argument("--quick", action="store_true", help="smoke run: LUBM(1), 1 repetition, small updates only")
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions (after 1 warm-up); scales >= 50 run once")
    ap.add_argument("--reps-large", type=int, default=1, help="repetitions of the university updates")
    ap.add_argument("--samples", type=int, default=None, help="random 1,000-triple samples (Hu et al.; default 10, --quick 2)")
    ap.add_argument("--update-sets", default=None,
                    help="subset of the update benchmark: update1..update4, university, 2universities, samples")
    ap.add_argument("--spark-scales", default="10,50", help="scales for bench_spark (default 10,50)")
    ap.add_argument("--queries-scale", default=None, help="scale for bench_queries (default: its own, LUBM(10))")
    ap.add_argument("--rdflib-scale", default=None, help="scale for bench_rdflib (default: its own, LUBM(1))")
    ap.add_argument("--results-dir", type=Path, default=None, help="default bench/results")
    ap.add_argument("--timeout", type=float, default=6 * 3600, help="per external script, seconds")
    ap.add_argument("--wait-idle", type=float, default=None, metavar="LOAD",
                    help="before each part, wait until the 1-minute load average is below LOAD")
    ap.add_argument("--max-wait", type=float, default=1800, help="longest wait for --wait-idle, seconds")
    ap.add_argument("--no-report", action="store_true")
    a = ap.parse_args(argv)

    parts = [p.strip() for p in a.only.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        ap.error(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    if a.results_dir is not None:
        os.environ["TRINE_BENCH_RESULTS"] = str(a.results_dir)
    scales = [1] if a.quick else _ints(a.scales)
    update_scales = [1] if a.quick else (_ints(a.update_scales) or [s for s in scales if s <= 10])
    scaling_scales = [1] if a.quick else _ints(a.scaling_scales)
    reps = 1 if a.quick else a.reps
    args = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()}

    from bench import bench_load, bench_updates
    failed = False
    for part in parts:
        if a.wait_idle is not None:
            common.wait_for_quiet(a.wait_idle, a.max_wait)
        t0 = time.perf_counter()
        try:
            if part == "load":
                for s in scales:
                    big = s >= 50
                    bench_load.run(s, reps=1 if big else reps, warmup=0 if (big or a.quick) else 1,
                                   owlrl_limit=5000 if a.quick else None, results_dir=a.results_dir, quick=a.quick)
                entry: dict[str, Any] = {"status": "ok", "scales": scales}
            elif part == "updates":
                for s in update_scales:
                    sets = set(a.update_sets.split(",")) if a.update_sets else None
                    if a.quick:
                        bench_updates.run(s, reps=1, reps_large=1, warmup=0,
                                          n_samples=2 if a.samples is None else a.samples,
                                          only=sets or bench_updates.QUICK_ONLY, results_dir=a.results_dir, quick=True)
                    else:
                        bench_updates.run(s, reps=reps, reps_large=a.reps_large,
                                          n_samples=10 if a.samples is None else a.samples,
                                          only=sets, results_dir=a.results_dir)
                entry = {"status": "ok", "scales": update_scales}
            elif part == "scaling":
                bench_updates.run_scaling(scaling_scales, n_samples=1 if a.quick else 3, results_dir=a.results_dir)
                entry = {"status": "ok", "scales": scaling_scales}
            else:
                entry = run_external(part, external_scales(part, a), a.quick, a.results_dir, a.timeout)
        except Exception as e:  # noqa: BLE001 - one broken part must not stop the others
            import traceback
            traceback.print_exc()
            entry = {"status": "failed", "error": f"{type(e).__name__}: {e}"}
        entry["seconds"] = time.perf_counter() - t0
        failed |= entry["status"] in ("failed", "timeout")
        _record(a.results_dir, part, entry, args)

    if not a.no_report:
        from bench import report
        path = report.build(a.results_dir)
        log(f"report: {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
