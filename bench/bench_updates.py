"""Issue 3: incremental maintenance on DynamiTE's update sets and Hu et al.'s samples.

On LUBM(N) + ``univ-bench.nt`` materialised with ``Store.load(engine='local')``
(``updates-lubm<N>.json``):

* **DynamiTE's updates** (``shared/data/dynamite-updates``), each as two
  round trips that must leave the store as it was:

  - ``remove_readd``: remove ``remove_X`` then add the same file back;
  - ``add_remove``: add ``add_X`` then remove what it added (``add_X`` minus
    the triples that were explicit already -- the university sets restate
    ~1,000 ``rdf:type ub:University`` facts that LUBM(10) has).

  Each with our deletion (``algorithm='counting'``) and with DRed
  (``algorithm='dred'``); each timed two ways: through the file API as a user
  would (``Store.remove_files`` / ``Store.add_files``: parsing included), and
  through ``Store.remove`` / ``Store.add`` with the triples pre-parsed into
  rdflib terms (the in-transaction maintenance plus term lookup).
* **Hu, Motik and Horrocks' methodology** (seed 001): 10 uniform random
  samples (seeded) of 1,000 explicit triples, each deleted and re-inserted;
  means over the samples, counting vs DRed.
* **Rematerialisation** in the same run: ``Store.load`` of the same explicit
  set into a fresh directory (in a fresh interpreter), and of the explicit
  sets left after removing one and two universities.

After every round trip the annotated dump (``Store.dump_lines(annotate=True)``:
every triple with explicit/count/step) is compared, byte for byte via
SHA-256, with the dump taken right after the initial load; mismatches are
counted in the results (they should be 0).

``run_scaling`` measures load time and the 1,000-sample deletion against the
data size (LUBM 1, 5, 10, 50) into ``scaling.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import time
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Callable

from bench import common
from bench.bench_load import pyoxigraph_once, trine_explicit_once  # noqa: F401 (used via run_isolated)
from bench.common import PeakMemory, log, run_isolated, summarise

UPDATES = ("update1", "update2", "update3", "update4", "university", "2universities")
LARGE = ("university", "2universities")
# --quick: the small updates and the samples (the university sets take minutes even at LUBM(1)).
QUICK_ONLY = {"update1", "update2", "update3", "update4", "samples"}
ALGORITHMS = ("counting", "dred")
MODES = ("files", "terms")

GOALS = {
    "update1_ms": 0.010,        # update 1 under 10 ms through the API
    "update23_s": 1.0,          # updates 2-3 under 1 s each way
    "remat_speedup": 20.0,      # update 4 and 1,000-sample deletions >= 20x faster than rematerialisation
    "university_fraction": 1 / 3,  # removing a university < 1/3 of a rematerialisation
    "dred_speedup": 10.0,       # our deletion >= 10x faster than DRed on update 4
}


def report_dict(rep: Any) -> dict[str, Any]:
    """An UpdateReport as plain numbers (lists become their lengths)."""
    out: dict[str, Any] = {}
    for f in fields(rep):
        v = getattr(rep, f.name)
        out[f.name] = len(v) if isinstance(v, list) else v
    for prop in ("triples_added", "triples_removed"):
        if hasattr(rep, prop):
            out[prop] = getattr(rep, prop)
    return out


def dump_digest(st: Any) -> tuple[str, int]:
    """SHA-256 and line count of the annotated dump (the byte-for-byte comparison)."""
    lines = st.dump_lines(annotate=True)
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest(), len(lines)


def parse_terms(path: Path) -> list[tuple]:
    """The triples of an N-Triples file as rdflib terms (done outside any timing)."""
    from trine.store import ntriples
    from trine.store.terms import to_rdflib
    return [tuple(to_rdflib(x) for x in t) for t in dict.fromkeys(ntriples.read_triples(path))]


def not_yet_explicit(st: Any, path: Path) -> list[tuple[str, str, str]]:
    """Canonical triples of ``path`` that are not explicit in the store now."""
    from trine.store import ntriples
    out = []
    with st.db.read() as txn:
        for t in dict.fromkeys(ntriples.read_triples(path)):
            ids = [txn.term_id(x) for x in t]
            rec = None if None in ids else txn.record(*ids)
            if rec is None or not rec.explicit:
                out.append(t)
    return out


def write_nt(triples: list[tuple[str, str, str]], path: Path) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for s, p, o in triples:
            f.write(f"{s} {p} {o} .\n")
    return path


class Session:
    """A materialised store plus the digest of its annotated dump right after loading."""

    def __init__(self, store_dir: Path, paths: list[Path], verify: str = "every"):
        from trine import Store
        self.paths = [str(p) for p in paths]
        self.store_dir = store_dir
        self.verify_mode = verify
        shutil.rmtree(store_dir, ignore_errors=True)
        self.st = Store.open(store_dir)
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            rep = self.st.load(self.paths, engine="local")
            self.load_seconds = time.perf_counter() - t0
        self.load_report = {"seconds": self.load_seconds, "input_triples": rep.input_triples,
                            "explicit": rep.explicit, "triples": rep.triples, "stages": dict(rep.seconds),
                            "peak_delta_bytes": mem.peak_delta}
        t0 = time.perf_counter()
        self.ref = dump_digest(self.st)
        self.dump_seconds = time.perf_counter() - t0
        self.round_trips = 0
        self.mismatches = 0
        self.verified = 0
        self.restores = 0

    def close(self) -> None:
        self.st.close()

    def check(self, force: bool = False) -> bool | None:
        """Compare the annotated dump with the reference; restore the store if it differs."""
        self.round_trips += 1
        if self.verify_mode == "none" or (self.verify_mode != "every" and not force):
            return None
        self.verified += 1
        ok = dump_digest(self.st) == self.ref
        if not ok:
            self.mismatches += 1
            log("  MISMATCH: annotated dump differs from the original; reloading the store")
            self._reload()
        return ok

    def _reload(self) -> None:
        from trine import Store
        self.st.close()
        shutil.rmtree(self.store_dir, ignore_errors=True)
        self.st = Store.open(self.store_dir)
        self.st.load(self.paths, engine="local")
        self.restores += 1

    def case(self, first: Callable[[], Any], second: Callable[[], Any], reps: int, warmup: int) -> dict[str, Any]:
        """Time ``first`` and ``second`` (a round trip) ``warmup + reps`` times, verifying each round trip."""
        t_first, t_second = [], []
        r1 = r2 = None
        mism = 0
        for i in range(warmup + reps):
            t0 = time.perf_counter()
            r1 = first()
            t1 = time.perf_counter()
            r2 = second()
            t2 = time.perf_counter()
            if self.check() is False:
                mism += 1
            if i >= warmup:
                t_first.append(t1 - t0)
                t_second.append(t2 - t1)
        return {"first": summarise(t_first), "second": summarise(t_second),
                "first_report": report_dict(r1), "second_report": report_dict(r2),
                "round_trips": warmup + reps, "mismatches": mism}


def _dynamite_updates(sess: Session, reps: int, reps_large: int, warmup: int, only: set[str] | None,
                      wd: Path) -> dict[str, Any]:
    st = sess.st
    out: dict[str, Any] = {}
    for name in UPDATES:
        if only is not None and name not in only:
            continue
        rfile, afile = common.update_file(f"remove_{name}"), common.update_file(f"add_{name}")
        if rfile is None or afile is None:
            log(f"  {name}: update files absent, skipped")
            continue
        large = name in LARGE
        n_reps, n_warm = (reps_large, 0) if large else (reps, warmup)
        from trine.store import ntriples
        from trine.store.terms import to_rdflib
        r_terms = parse_terms(rfile)
        a_terms = parse_terms(afile)
        # Re-adding must restore exactly what was removed: only the triples that were explicit.
        r_absent = set(not_yet_explicit(st, rfile))
        r_present = [t for t in dict.fromkeys(ntriples.read_triples(rfile)) if t not in r_absent]
        if r_absent:
            readd_file = write_nt(r_present, wd / f"remove_{name}.present.nt")
            readd_terms = [tuple(to_rdflib(x) for x in t) for t in r_present]
        else:
            readd_file, readd_terms = rfile, r_terms
        # Undoing an add must remove only what it added (not the facts that were explicit already).
        a_new = not_yet_explicit(st, afile)
        a_new_file = write_nt(a_new, wd / f"add_{name}.new.nt")
        a_new_terms = [tuple(to_rdflib(x) for x in t) for t in a_new]
        entry: dict[str, Any] = {
            "files": {"remove": rfile.name, "add": afile.name},
            "triples": {"remove": len(r_terms), "remove_present": len(r_present), "add": len(a_terms),
                        "add_new": len(a_new)},
            "reps": n_reps, "warmup": n_warm,
            "remove_readd": {}, "add_remove": {},
        }
        for alg in ALGORITHMS:
            entry["remove_readd"][alg] = {}
            entry["add_remove"][alg] = {}
            for mode in MODES:
                if mode == "files":
                    rm = lambda: st.remove_files([rfile], algorithm=alg)  # noqa: E731
                    readd = lambda: st.add_files([readd_file])  # noqa: E731
                    add = lambda: st.add_files([afile])  # noqa: E731
                    unadd = lambda: st.remove_files([a_new_file], algorithm=alg)  # noqa: E731
                else:
                    rm = lambda: st.remove(r_terms, algorithm=alg)  # noqa: E731
                    readd = lambda: st.add(readd_terms)  # noqa: E731
                    add = lambda: st.add(a_terms)  # noqa: E731
                    unadd = lambda: st.remove(a_new_terms, algorithm=alg)  # noqa: E731
                c = sess.case(rm, readd, n_reps, n_warm)
                entry["remove_readd"][alg][mode] = {
                    "remove": c["first"], "add": c["second"], "remove_report": c["first_report"],
                    "add_report": c["second_report"], "round_trips": c["round_trips"], "mismatches": c["mismatches"]}
                log(f"  {name} remove/re-add {alg:8s} {mode:5s}: remove {common.fmt_seconds(c['first']['median'])}, "
                    f"re-add {common.fmt_seconds(c['second']['median'])}")
                c = sess.case(add, unadd, n_reps, n_warm)
                entry["add_remove"][alg][mode] = {
                    "add": c["first"], "remove": c["second"], "add_report": c["first_report"],
                    "remove_report": c["second_report"], "round_trips": c["round_trips"], "mismatches": c["mismatches"]}
                log(f"  {name} add/remove     {alg:8s} {mode:5s}: add {common.fmt_seconds(c['first']['median'])}, "
                    f"remove {common.fmt_seconds(c['second']['median'])}")
        out[name] = entry
    return out


def _remat_after_removal(sess: Session, name: str, reps: int, wd: Path) -> dict[str, Any] | None:
    """Rematerialisation of the explicit set left after removing ``remove_<name>``."""
    rfile = common.update_file(f"remove_{name}")
    if rfile is None:
        return None
    st = sess.st
    from trine.store import ntriples
    absent = set(not_yet_explicit(st, rfile))
    if absent:
        rfile = write_nt([t for t in dict.fromkeys(ntriples.read_triples(rfile)) if t not in absent],
                         wd / f"remove_{name}.present.nt")
    st.remove_files([rfile], algorithm="counting")
    left = wd / f"explicit-after-remove_{name}.nt"
    with open(left, "w", encoding="utf-8") as f:
        n = st.dump(f, explicit_only=True)
    st.add_files([rfile])
    sess.check()
    runs = []
    for _ in range(reps):
        d = wd / "remat"
        shutil.rmtree(d, ignore_errors=True)
        runs.append(run_isolated("bench.bench_load.trine_materialised_once", [str(left)], str(d)))
        shutil.rmtree(d, ignore_errors=True)
    left.unlink()
    s = summarise([r["seconds"] for r in runs])
    return {"seconds": s["median"], "seconds_stats": s, "explicit": n, "triples": runs[-1]["triples"],
            "peak_rss_bytes": max(r["peak_rss_bytes"] for r in runs)}


def pick_samples(paths: list[Path], n_samples: int, size: int, seed: int) -> list[list[tuple]]:
    """``n_samples`` uniform samples of ``size`` explicit triples (rdflib terms), seeded.

    The explicit set is the distinct triples of ``paths`` in file order.
    """
    from trine.store import ntriples
    from trine.store.terms import to_rdflib
    seen: dict[tuple, None] = {}
    for p in paths:
        for t in ntriples.read_triples(p):
            seen[t] = None
    universe = list(seen)
    rng = random.Random(seed)
    size = min(size, len(universe))
    return [[tuple(to_rdflib(x) for x in universe[i]) for i in sorted(rng.sample(range(len(universe)), size))]
            for _ in range(n_samples)]


def _samples(sess: Session, samples: list[list[tuple]]) -> dict[str, Any]:
    st = sess.st
    res: dict[str, Any] = {"n": len(samples), "size": len(samples[0]) if samples else 0}
    mism = 0
    for alg in ALGORITHMS:
        dels, ins, affected, removed = [], [], [], []
        for sample in samples:
            t0 = time.perf_counter()
            r = st.remove(sample, algorithm=alg)
            t1 = time.perf_counter()
            st.add(sample)
            t2 = time.perf_counter()
            dels.append(t1 - t0)
            ins.append(t2 - t1)
            affected.append(r.affected)
            removed.append(r.triples_removed)
            if sess.check() is False:
                mism += 1
        res[alg] = {"delete": summarise(dels), "insert": summarise(ins),
                    "affected_mean": sum(affected) / len(affected) if affected else None,
                    "triples_removed_mean": sum(removed) / len(removed) if removed else None}
        log(f"  samples {alg:8s}: delete mean {common.fmt_seconds(res[alg]['delete']['mean'])}, "
            f"insert mean {common.fmt_seconds(res[alg]['insert']['mean'])}")
    res["mismatches"] = mism
    return res


def _goals(updates: dict[str, Any], samples: dict[str, Any] | None, remat: dict[str, Any]) -> list[dict[str, Any]]:
    goals: list[dict[str, Any]] = []
    full = remat.get("full", {}).get("seconds")

    def med(name: str, kind: str, op: str, alg: str = "counting", mode: str = "files") -> float | None:
        try:
            return updates[name][kind][alg][mode][op]["median"]
        except KeyError:
            return None

    def directions(name: str, alg: str = "counting") -> dict[str, float | None]:
        return {"remove (remove_X)": med(name, "remove_readd", "remove", alg),
                "re-add (remove_X)": med(name, "remove_readd", "add", alg),
                "add (add_X)": med(name, "add_remove", "add", alg),
                "remove (add_X)": med(name, "add_remove", "remove", alg)}

    if "update1" in updates:
        d = directions("update1")
        worst = max(v for v in d.values() if v is not None)
        goals.append({"id": "update1_10ms", "text": "update 1 under 10 ms through the API (every direction, counting)",
                      "value": worst, "unit": "s", "target": GOALS["update1_ms"], "detail": d,
                      "met": worst < GOALS["update1_ms"]})
    for name in ("update2", "update3"):
        if name in updates:
            d = directions(name)
            worst = max(v for v in d.values() if v is not None)
            goals.append({"id": f"{name}_1s", "text": f"{name.replace('update', 'update ')} under 1 s each way (API, counting)",
                          "value": worst, "unit": "s", "target": GOALS["update23_s"], "detail": d,
                          "met": worst < GOALS["update23_s"]})
    if "update4" in updates and full:
        d = directions("update4")
        worst = max(v for v in d.values() if v is not None)
        goals.append({"id": "update4_vs_remat", "text": "update 4 >= 20x faster than rematerialisation (every direction)",
                      "value": full / worst, "unit": "x", "target": GOALS["remat_speedup"],
                      "detail": {k: (full / v if v else None) for k, v in d.items()},
                      "met": full / worst >= GOALS["remat_speedup"]})
    if samples and full and "counting" in samples:
        mean_del = samples["counting"]["delete"]["mean"]
        goals.append({"id": "samples_vs_remat", "text": "1,000-triple sample deletion (mean) >= 20x faster than rematerialisation",
                      "value": full / mean_del, "unit": "x", "target": GOALS["remat_speedup"],
                      "met": full / mean_del >= GOALS["remat_speedup"]})
    left = remat.get("after_remove_university") or {}
    full_explicit = remat.get("full", {}).get("explicit") or 0
    # Only meaningful where a university is a small part of the data (LUBM(1) *is* one university).
    if "university" in updates and left.get("explicit", 0) >= full_explicit / 2:
        t = med("university", "remove_readd", "remove")
        base = left.get("seconds") or full
        if t and base:
            goals.append({"id": "university_vs_remat",
                          "text": "removing a university < 1/3 of a rematerialisation (of the explicit set left)",
                          "value": t / base, "unit": "fraction", "target": GOALS["university_fraction"],
                          "detail": {"remove_seconds": t, "remat_seconds": base,
                                     "fraction_of_full_remat": t / full if full else None},
                          "met": t / base < GOALS["university_fraction"]})
    if "update4" in updates:
        ours = med("update4", "remove_readd", "remove", "counting")
        dred = med("update4", "remove_readd", "remove", "dred")
        if ours and dred:
            goals.append({"id": "update4_vs_dred", "text": "our deletion >= 10x faster than DRed on update 4 (remove_update4)",
                          "value": dred / ours, "unit": "x", "target": GOALS["dred_speedup"],
                          "detail": {"counting_seconds": ours, "dred_seconds": dred,
                                     "counting_affected": updates["update4"]["remove_readd"]["counting"]["files"]["remove_report"]["affected"],
                                     "dred_affected": updates["update4"]["remove_readd"]["dred"]["files"]["remove_report"]["affected"]},
                          "met": dred / ours >= GOALS["dred_speedup"]})
    return goals


def run(scale: int = 10, reps: int = 3, reps_large: int = 1, warmup: int = 1, n_samples: int = 10,
        sample_size: int = 1000, seed: int = 0, verify: str = "every", only: set[str] | None = None,
        results_dir: Path | None = None, quick: bool = False, name: str | None = None) -> dict[str, Any]:
    la0 = common.load_average()
    data, how = common.lubm_plain(scale)
    onto = common.ontology_file()
    paths = [data, onto]
    wd = common.fresh_dir(f"updates-lubm{scale}")
    log(f"updates: LUBM({scale}) from {data} ({how}) + {onto.name}")
    sess = Session(wd / "store", paths, verify=verify)
    log(f"  materialised: {sess.load_report['triples']:,} triples in {sess.load_seconds:.2f} s; "
        f"annotated dump {sess.dump_seconds:.2f} s")
    try:
        remat: dict[str, Any] = {}
        runs = []
        for _ in range(max(1, reps)):
            d = wd / "remat"
            shutil.rmtree(d, ignore_errors=True)
            runs.append(run_isolated("bench.bench_load.trine_materialised_once", [str(p) for p in paths], str(d)))
            shutil.rmtree(d, ignore_errors=True)
        s = summarise([r["seconds"] for r in runs])
        remat["full"] = {"seconds": s["median"], "seconds_stats": s, "explicit": runs[-1]["explicit"],
                         "triples": runs[-1]["triples"], "stages": runs[-1]["stages"],
                         "peak_rss_bytes": max(r["peak_rss_bytes"] for r in runs)}
        log(f"  rematerialisation: {s['median']:.2f} s (median of {len(runs)})")

        updates = _dynamite_updates(sess, reps, reps_large, warmup, only, wd)
        for name_ in LARGE:
            if name_ in updates:
                r = _remat_after_removal(sess, name_, max(1, reps_large), wd)
                if r:
                    remat[f"after_remove_{name_}"] = r
                    log(f"  rematerialisation after remove_{name_}: {r['seconds']:.2f} s")

        samples = None
        if n_samples > 0 and (only is None or "samples" in only):
            sample_sets = pick_samples(paths, n_samples, sample_size, seed)
            samples = _samples(sess, sample_sets)
            samples["seed"] = seed
            full = remat["full"]["seconds"]
            for alg in ALGORITHMS:
                samples[alg]["speedup_vs_remat"] = full / samples[alg]["delete"]["mean"]
                samples[alg]["insert_speedup_vs_remat"] = full / samples[alg]["insert"]["mean"]
        result = {
            "params": {"scale": scale, "dataset": str(data), "source": how, "ontology": str(onto),
                       "reps": reps, "reps_large": reps_large, "warmup": warmup, "verify": verify,
                       "samples": n_samples, "sample_size": sample_size, "seed": seed, "quick": quick,
                       "load_average_start": la0},
            "load": sess.load_report,
            "dump_seconds": sess.dump_seconds,
            "rematerialisation": remat,
            "updates": updates,
            "samples": samples,
            "verification": {"round_trips": sess.round_trips, "verified": sess.verified,
                             "mismatches": sess.mismatches, "restores": sess.restores,
                             "reference_sha256": sess.ref[0], "reference_lines": sess.ref[1]},
        }
        result["goals"] = _goals(updates, samples, remat)
    finally:
        sess.close()
    shutil.rmtree(wd, ignore_errors=True)
    common.write_results(name or f"updates-lubm{scale}", result, results_dir)
    for g in result["goals"]:
        log(f"  goal {g['id']}: {g['value']:.4g} {g.get('unit', '')} (target {g['target']:.4g}) "
            f"{'MET' if g['met'] else 'NOT MET'}")
    return result


# --- scaling curves ------------------------------------------------------------------------
def run_scaling(scales: list[int], n_samples: int = 3, sample_size: int = 1000, seed: int = 0,
                results_dir: Path | None = None, name: str = "scaling") -> dict[str, Any]:
    """Load time (explicit and materialised) and 1,000-sample deletion time against data size.

    One run per point; points are merged by scale into ``scaling.json``, and
    each point carries its own date (ratios inside a point are same-run).
    """
    import datetime as dt
    import json
    path = (Path(results_dir) if results_dir else common.results_dir()) / f"{name}.json"
    points: dict[int, dict[str, Any]] = {}
    if path.exists():
        try:
            points = {int(p["scale"]): p for p in json.loads(path.read_text()).get("points", [])}
        except (ValueError, KeyError, TypeError):
            points = {}
    onto = common.ontology_file()
    for scale in scales:
        data, how = common.lubm_plain(scale)
        log(f"scaling: LUBM({scale}) from {data} ({how})")
        wd = common.fresh_dir(f"scaling-lubm{scale}")
        tr = run_isolated("bench.bench_load.trine_explicit_once", str(data), str(wd / "trine"))
        shutil.rmtree(wd / "trine", ignore_errors=True)
        ox = run_isolated("bench.bench_load.pyoxigraph_once", str(data), str(wd / "ox"))
        shutil.rmtree(wd / "ox", ignore_errors=True)
        log(f"  explicit load: trine {tr['seconds']:.2f} s, pyoxigraph {ox['seconds']:.2f} s")
        sess = Session(wd / "store", [data, onto], verify="end")
        log(f"  materialised load: {sess.load_seconds:.2f} s ({sess.load_report['triples']:,} triples)")
        try:
            sets = pick_samples([data, onto], n_samples, sample_size, seed)
            smp = _samples(sess, sets)
            ok = sess.check(force=True)
        finally:
            sess.close()
        shutil.rmtree(wd, ignore_errors=True)
        points[scale] = {
            "scale": scale, "load_average_end": common.load_average(), "source": how, "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "explicit_triples": tr["triples"], "materialised_triples": sess.load_report["triples"],
            "trine_explicit_seconds": tr["seconds"], "trine_explicit_bytes_per_triple": tr["bytes"] / tr["triples"],
            "trine_explicit_peak_rss_bytes": tr["peak_rss_bytes"],
            "pyoxigraph_seconds": ox["seconds"],
            "pyoxigraph_bytes_per_triple": min(ox["bytes"], ox["bytes_before_optimize"]) / ox["triples"],
            "pyoxigraph_peak_rss_bytes": ox["peak_rss_bytes"],
            "materialised_seconds": sess.load_seconds, "materialised_stages": sess.load_report["stages"],
            "samples": smp["n"], "sample_size": smp["size"],
            "delete_counting_mean": smp["counting"]["delete"]["mean"],
            "insert_mean": smp["counting"]["insert"]["mean"],
            "delete_dred_mean": smp["dred"]["delete"]["mean"],
            "verified": ok,
        }
    doc = {"points": [points[k] for k in sorted(points)],
           "params": {"samples": n_samples, "sample_size": sample_size, "seed": seed}}
    common.write_results(name, doc, results_dir)
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--reps-large", type=int, default=1, help="repetitions of the university updates")
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--sample-size", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verify", choices=("every", "end", "none"), default="every")
    ap.add_argument("--only", default=None, help="comma-separated subset of: " + ",".join(UPDATES) + ",samples")
    ap.add_argument("--scaling", default=None, help="instead: scaling curves at these scales, e.g. 1,5,10,50")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--results-dir", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.scaling:
        run_scaling([int(s) for s in a.scaling.split(",")], n_samples=1 if a.quick else 3,
                    sample_size=a.sample_size, seed=a.seed, results_dir=a.results_dir)
        return 0
    only = set(a.only.split(",")) if a.only else None
    if a.quick:
        run(1, reps=1, reps_large=1, warmup=0, n_samples=2, sample_size=a.sample_size, seed=a.seed,
            verify=a.verify, only=only or QUICK_ONLY, results_dir=a.results_dir, quick=True)
    else:
        run(a.scale, reps=a.reps, reps_large=a.reps_large, n_samples=a.samples, sample_size=a.sample_size,
            seed=a.seed, verify=a.verify, only=only, results_dir=a.results_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
