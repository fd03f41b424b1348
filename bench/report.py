"""Regenerate BENCHMARKS.md and bench/plots/*.png from bench/results/*.json.

    python -m bench.report [--results-dir DIR] [--out FILE] [--plots-dir DIR]

Reads whatever results files exist: this harness's own (load-lubm<N>.json,
updates-lubm<N>.json, scaling.json, run.json) and the other benchmarks'
(spark-*.json, queries.json, rdflib.json), whose layout it does not assume:
it looks for the numbers it can recognise (per query and system timings,
per system load times) and lists everything else as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable

from bench import common

MB = 1 << 20
GB = 1 << 30
OWN = re.compile(r"^(load-lubm\d+|updates-lubm\d+|scaling|run)$")
KNOWN_SYSTEMS = ("trine", "pyoxigraph", "oxigraph", "rdflib", "oxrdflib", "owlrl", "reasonable", "spark",
                 "local", "memory", "sqlite", "berkeleydb")
UPDATE_LABELS = {"update1": "Update 1 (1 triple)", "update2": "Update 2 (15,972 name triples)",
                 "update3": "Update 3 (8,330 emails)", "update4": "Update 4 (schema: headOf)",
                 "university": "Update 5 (one university)", "2universities": "Update 6 (two universities)"}

# Urbani et al., DynamiTE (ISWC 2013), Table 2: seconds on LUBM(1000).
DYNAMITE_TABLE2 = {"update1": (0.117, 2902.7, 0.117), "update2": (8.2, 2049.6, 25.7),
                   "update3": (3.7, 2121.9, 25.4), "update4": (31.8, 2132.2, 51.0),
                   "university": (16.8, 2196.0, 74.6), "2universities": (30.5, 3830.2, 135.8)}


# --- small formatting helpers ---------------------------------------------------------------
def s(x: float | None) -> str:
    return common.fmt_seconds(x)


def n(x: float | int | None, digits: int = 0) -> str:
    if x is None:
        return "–"
    return f"{x:,.{digits}f}"


def ratio(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}×"


def _speedup(base: float | None, t: float | None) -> str:
    """base / t, with digits that fit its size."""
    if not base or not t:
        return "–"
    r = base / t
    return f"{r:.0f}×" if r >= 10 else f"{r:.2f}×"


def short(x: float | None) -> str:
    """Seconds in 3 significant digits, for bar labels."""
    if x is None:
        return ""
    if x < 1:
        return f"{x * 1e3:.3g} ms"
    return f"{x:.3g} s"


def mem(b: int | None) -> str:
    if not b:
        return "–"
    return f"{b / GB:.2f} GB" if b >= GB else f"{b / MB:.0f} MB"


def table(headers: list[str], rows: Iterable[Iterable[Any]], align: str | None = None) -> str:
    rows = [[str(c) for c in r] for r in rows]
    align = align or ("l" + "r" * (len(headers) - 1))
    sep = ["---:" if a == "r" else "---" for a in align]
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join(sep) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def get(d: Any, *path: Any, default: Any = None) -> Any:
    for k in path:
        if isinstance(d, dict) and k in d:
            d = d[k]
        elif isinstance(d, list) and isinstance(k, int) and -len(d) <= k < len(d):
            d = d[k]
        else:
            return default
    return d


def _bpt(d: dict[str, Any], key: str) -> float | None:
    ox = get(d, "explicit", "pyoxigraph") or {}
    return ox[key] / ox["triples"] if ox.get(key) and ox.get("triples") else None


def _slope(pts: list[dict[str, Any]], key: str) -> float:
    """Least-squares exponent k of time ~ size^k over the points."""
    import math
    xy = [(math.log(p["explicit_triples"]), math.log(p[key])) for p in pts if p.get(key)]
    if len(xy) < 2:
        return float("nan")
    mx = sum(x for x, _ in xy) / len(xy)
    my = sum(y for _, y in xy) / len(xy)
    den = sum((x - mx) ** 2 for x, _ in xy)
    return sum((x - mx) * (y - my) for x, y in xy) / den if den else float("nan")


def _scale_of(name: str) -> int:
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else 0


# --- plots ------------------------------------------------------------------------------------
def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 110, "font.size": 10, "axes.grid": True,
                         "grid.alpha": 0.3, "axes.axisbelow": True})
    return plt


COLORS = {"trine": "#1f77b4", "trine (explicit)": "#1f77b4", "trine (materialised)": "#17becf",
          "pyoxigraph": "#ff7f0e", "ours (counting)": "#1f77b4", "DRed": "#d62728",
          "rematerialisation": "#7f7f7f", "insertion": "#2ca02c"}


def _bars(ax, groups: list[str], series: dict[str, list[float | None]], log: bool = False,
          fmt=None, colors: dict[str, str] | None = None) -> None:
    import numpy as np
    k = max(1, len(series))
    width = 0.8 / k
    x = np.arange(len(groups))
    for i, (label, vals) in enumerate(series.items()):
        v = [np.nan if a is None else a for a in vals]
        bars = ax.bar(x + (i - (k - 1) / 2) * width, v, width, label=label,
                      color=(colors or COLORS).get(label))
        if fmt:
            for b, a in zip(bars, vals):
                if a is not None:
                    ax.annotate(fmt(a), (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                                va="bottom", fontsize=6.5, rotation=90 if k > 3 else 0,
                                xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(x)
    ax.set_xticklabels(groups)
    if log:
        ax.set_yscale("log")
    ax.margins(y=0.15)


# --- sections ---------------------------------------------------------------------------------
class Report:
    def __init__(self, results: dict[str, dict[str, Any]], plots: Path, out: Path):
        self.r = results
        self.plots = plots
        self.out = out
        self.md: list[str] = []
        self.goals: list[tuple[str, dict[str, Any]]] = []
        plots.mkdir(parents=True, exist_ok=True)

    def w(self, *lines: str) -> None:
        self.md.extend(lines)

    def img(self, name: str, alt: str) -> str:
        rel = os.path.relpath(self.plots / name, self.out.parent)
        return f"![{alt}]({rel})"

    @staticmethod
    def on(docs: Iterable[dict[str, Any]]) -> str:
        """'On what': the machine and the load on it while these results were measured."""
        docs = list(docs)
        if not docs:
            return ""
        m = docs[0].get("machine", {})
        las = [la[0] for d in docs for la in [get(d, "params", "load_average_start") or get(d, "machine", "load_average")]
               if la]
        load = f"; 1-minute load average {min(las):.1f}–{max(las):.1f} (other work on the machine)" if las else ""
        dates = sorted(d.get("date", "")[:16].replace("T", " ") for d in docs if d.get("date"))
        when = f"; measured {dates[0]}" + (f" – {dates[-1]}" if len(dates) > 1 and dates[-1] != dates[0] else "") + " UTC" if dates else ""
        return (f"*On*: {m.get('cpu', '?')}, {m.get('logical_cores', '?')} cores, {mem(m.get('memory_bytes'))} RAM, "
                f"Python {m.get('python', '?')}{load}{when}.")

    def save(self, fig, name: str) -> str:
        fig.tight_layout()
        fig.savefig(self.plots / name)
        import matplotlib.pyplot as plt
        plt.close(fig)
        return name

    # header and machine --------------------------------------------------------------------
    def header(self) -> None:
        any_doc = next(iter(self.r.values()), {})
        m = any_doc.get("machine", {})
        v = any_doc.get("versions", {})
        self.w("# Benchmarks",
               "",
               "Generated by `python -m bench.report` from `bench/results/*.json` "
               "(`make bench` runs everything and then this; `python -m bench.run --help` lists the parts). "
               "Do not edit by hand: rerun the report.",
               "",
               "Every comparison below is a ratio of two numbers measured in the same run on the same machine; "
               "times are medians of the repetitions after a warm-up unless a section says otherwise "
               "(LUBM(50) loads run once). Peak memory is the resident set of the process and its children.",
               "")
        if m:
            self.w("**Machine** (from the results files): "
                   f"{m.get('cpu', '?')}, {m.get('logical_cores', '?')} logical cores, "
                   f"{mem(m.get('memory_bytes'))} RAM, {m.get('os', '?')}, Python {m.get('python', '?')}"
                   + (f", {m['java']}" if m.get("java") else "") + ".", "")
            vs = ", ".join(f"{k} {val}" for k, val in v.items() if val)
            self.w(f"**Versions**: {vs}.", "")
        rows = []
        for name, doc in sorted(self.r.items()):
            la = (get(doc, "params", "load_average_start") or doc.get("load_average_before")
                  or get(doc, "load_average_during", 0) or get(doc, "machine", "load_average"))
            rows.append([f"`{name}.json`", doc.get("date", "?"), str(doc.get("git", "?"))[:12],
                         "–" if not la else f"{la[0]:.1f}"])
        self.w("Results files in this report:", "",
               table(["file", "date (UTC)", "trine commit", "load avg (1 min) at start"], rows, "llll"), "")
        busy = [r for r in rows if r[3] != "–" and float(r[3]) > (m.get("logical_cores") or 1) * 0.75]
        if busy:
            self.w(f"> **Caveat.** The machine was shared with other work while these ran (1-minute load "
                   f"average above 0.75 per core at the start of {len(busy)} of {len(rows)} files, see the last "
                   "column; the harness waits for a quieter machine only up to a limit). "
                   "Absolute times are therefore pessimistic and noisy; ratios between systems measured "
                   "in the same run (interleaved) are more robust than absolute numbers.", "")

    # goals -----------------------------------------------------------------------------------
    def goals_section(self) -> None:
        rows = []
        for name, doc in sorted(self.r.items(), key=lambda kv: (kv[0].split("-")[0], _scale_of(kv[0]))):
            if not OWN.match(name):
                continue
            for g in doc.get("goals", []) or []:
                unit = g.get("unit", "x")
                val = g.get("value")
                if unit == "s":
                    shown, target = s(val), "< " + s(g.get("target"))
                elif unit == "fraction":
                    shown, target = f"{val:.2f} of remat", f"< {g.get('target'):.2f}"
                else:
                    shown = ratio(val)
                    target = ("≥ " if g["id"] != "bytes_per_triple" else "≤ ") + ratio(g.get("target"))
                rows.append([g.get("text", g.get("id")), name, shown, target,
                             "**met**" if g.get("met") else "**not met**"])
        if not rows:
            return
        self.w("## Goals at a glance", "",
               "The goals of issues 2 (load) and 3 (updates), as measured. A goal is shown per scale it was "
               "measured at; LUBM(10) is the scale the goals were set for (DynamiTE's update sets are "
               "defined on it).", "",
               table(["goal", "results", "measured", "target", ""], rows, "lllll"), "")

    # load --------------------------------------------------------------------------------------
    def load_section(self) -> None:
        loads = sorted(((k, v) for k, v in self.r.items() if k.startswith("load-lubm")),
                       key=lambda kv: _scale_of(kv[0]))
        if not loads:
            return
        self.w("## Bulk load and store size (issue 2)", "",
               "**What**: LUBM(N) (the published UBA files, read decompressed so no system pays for gunzip), "
               "explicit triples only, no reasoning: trine's in-process bulk path (`encode_files` → "
               "`unique_rows` → `TripleColumns.explicit_only` → `Database.replace(build_environment)`, "
               "i.e. parse, dictionary-encode, sort and append six indexes and the dictionary into a new LMDB "
               "environment, fsync) against `pyoxigraph.Store(dir).bulk_load` of the same file (+ `flush`; "
               "its `optimize` is timed apart and not counted). Size on disk: trine's `data.mdb`; "
               "pyoxigraph's whole directory, closed, before or after `optimize`, whichever is smaller "
               "(a full compaction can make RocksDB's bulk-loaded store larger; both are in the JSON). `trine materialised` is the full "
               "`Store.load(engine='local')` of the data plus `univ-bench.nt`, with the rho-df closure; its "
               "rate is input triples per second. Each run is a fresh interpreter.", "",
               self.on(d for _, d in loads), "")
        rows = []
        for name, d in loads:
            sc = get(d, "params", "scale")
            tr, ox, mat = get(d, "explicit", "trine"), get(d, "explicit", "pyoxigraph"), get(d, "materialised", "trine_local")
            rr = get(d, "explicit", "ratio") or {}
            rows.append([f"LUBM({sc})", "trine (explicit)", n(tr["triples"]), s(tr["seconds"]),
                         n(tr["triples_per_s"]), n(tr["bytes_per_triple"], 1), mem(tr["peak_rss_bytes"]),
                         f"rate {ratio(rr.get('load_rate'))}, size {ratio(rr.get('bytes_per_triple'))}"])
            rows.append(["", "pyoxigraph bulk_load", n(ox["triples"]), s(ox["seconds"]), n(ox["triples_per_s"]),
                         n(ox["bytes_per_triple"], 1), mem(ox["peak_rss_bytes"]), "1×"])
            rows.append(["", "trine materialised", f"{n(mat['input_triples'])} → {n(mat['triples'])}",
                         s(mat["seconds"]), n(mat["triples_per_s"]), n(mat.get("bytes_per_triple"), 1),
                         mem(mat["peak_rss_bytes"]),
                         f"time {ratio(get(d, 'materialised', 'ratio_vs_pyoxigraph_explicit'))} of pyoxigraph's"])
        self.w(table(["scale", "system", "triples", "time", "triples/s", "bytes/triple", "peak RSS",
                      "trine / pyoxigraph"], rows, "llrrrrrl"), "")
        # stage breakdown
        srows = []
        for name, d in loads:
            st = get(d, "explicit", "trine", "stages") or {}
            ms = get(d, "materialised", "trine_local", "stages") or {}
            srows.append([f"LUBM({get(d, 'params', 'scale')})", s(st.get("parse_encode")), s(st.get("unique")),
                          s(st.get("build_write")), s(ms.get("encode")), s(ms.get("closure")), s(ms.get("write")),
                          s(get(d, "explicit", "pyoxigraph", "optimize_seconds")),
                          f"{n(_bpt(d, 'bytes_before_optimize'), 1)} / {n(_bpt(d, 'bytes'), 1)}"])
        self.w("Where the time goes (trine explicit: parse+encode / dedup / build+write; trine materialised: "
               "encode / closure / write; and pyoxigraph's `optimize`, not counted above):", "",
               table(["scale", "parse+encode", "unique", "build+write", "mat. encode", "mat. closure", "mat. write",
                      "pyoxigraph optimize", "pyoxigraph bytes/triple before / after optimize"], srows), "")
        # plots
        plt = _plt()
        groups = [f"LUBM({get(d, 'params', 'scale')})" for _, d in loads]
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        series = {"trine (explicit)": [get(d, "explicit", "trine", "triples_per_s") for _, d in loads],
                  "pyoxigraph": [get(d, "explicit", "pyoxigraph", "triples_per_s") for _, d in loads],
                  "trine (materialised)": [get(d, "materialised", "trine_local", "triples_per_s") for _, d in loads]}
        _bars(axes[0], groups, series, fmt=lambda v: f"{v / 1000:.0f}k")
        axes[0].set_ylabel("input triples per second (higher is better)")
        axes[0].set_title("Load throughput")
        axes[0].legend(fontsize=8, loc="upper right", ncol=3)
        axes[0].set_ylim(top=axes[0].get_ylim()[1] * 1.25)
        series = {"trine (explicit)": [get(d, "explicit", "trine", "bytes_per_triple") for _, d in loads],
                  "pyoxigraph": [get(d, "explicit", "pyoxigraph", "bytes_per_triple") for _, d in loads],
                  "trine (materialised)": [get(d, "materialised", "trine_local", "bytes_per_triple") for _, d in loads]}
        _bars(axes[1], groups, series, fmt=lambda v: f"{v:.0f}")
        axes[1].set_ylabel("bytes on disk per stored triple (lower is better)")
        axes[1].set_title("Store size")
        axes[1].legend(fontsize=8, loc="upper right", ncol=3)
        axes[1].set_ylim(top=axes[1].get_ylim()[1] * 1.25)
        self.save(fig, "load.png")
        self.w(self.img("load.png", "load throughput and bytes per triple"), "")
        # interpretation
        notes = []
        for name, d in loads:
            rr = get(d, "explicit", "ratio") or {}
            sc = get(d, "params", "scale")
            lr, br = rr.get("load_rate"), rr.get("bytes_per_triple")
            if lr is None or br is None:
                continue
            notes.append(f"- LUBM({sc}): trine loads explicit triples at {lr:.2f}× pyoxigraph's rate "
                         f"({'faster' if lr >= 1 else 'slower'}; goal ≥ 0.75×: {'met' if lr >= 0.75 else 'not met'}) "
                         f"and stores them in {br:.2f}× pyoxigraph's bytes per triple "
                         f"(goal ≤ 1.5×: {'met' if br <= 1.5 else 'not met'}). Materialising (rho-df) as well costs "
                         f"{get(d, 'materialised', 'ratio_vs_explicit_trine'):.2f}× the explicit-only load.")
        self.w("**What it means**:", "", *notes,
               "- trine keeps six permutation indexes (every triple pattern is one range scan) plus a "
               "per-triple record (explicit flag, count, step) and a hashed dictionary, in an LMDB B-tree "
               "(pages are not compressed); pyoxigraph keeps three indexes for the default graph in RocksDB, "
               "whose SST files are compressed. Per triple, trine therefore spends more bytes on indexes and "
               "pyoxigraph spends CPU on compression. Both use every core for parsing (trine: Python worker "
               "processes above 32 MB of input, merged into one dictionary; pyoxigraph: Rust threads); "
               "trine's index writing is one LMDB write transaction, single-threaded.", "")
        # closure context
        ctx = [(k, d) for k, d in loads if d.get("closure_context")]
        if ctx:
            rows = []
            for name, d in ctx:
                c = d["closure_context"]
                sc = get(d, "params", "scale")
                t = c.get("trine_local", {})
                rows.append([f"LUBM({sc})", "trine `Store.load(engine='local')` (rho-df, into LMDB)",
                             n(t.get("input_triples")), n(t.get("triples")), s(t.get("seconds")),
                             s((t.get("stages") or {}).get("closure")), mem(t.get("peak_rss_bytes"))])
                for sys_, label in (("reasonable", "reasonable (OWL 2 RL, in memory)"),
                                    ("owlrl", "owlrl RDFS_Semantics (rdflib Graph, in memory)")):
                    e = c.get(sys_) or {}
                    if "error" in e:
                        rows.append(["", label, "–", "–", f"failed: {e['error'][:60]}", "–", "–"])
                        continue
                    lim = e.get("limit_lines_per_file")
                    rows.append(["", label + (f" — first {lim:,} lines per file only" if lim else ""),
                                 n(e.get("input_triples")), n(e.get("triples")), s(e.get("seconds")),
                                 s(e.get("closure_seconds")), mem(e.get("peak_rss_bytes"))])
            self.w("### Closure engines, for context", "",
                   "Not like for like: reasonable computes OWL 2 RL (more rules, so more triples) and keeps "
                   "everything in memory; owlrl's RDFS semantics adds RDFS axioms that rho-df omits. "
                   "Times include parsing.", "",
                   table(["scale", "engine", "input triples", "closure triples", "total time", "closure only",
                          "peak RSS"], rows, "llrrrrr"), "")

    # updates -----------------------------------------------------------------------------------
    def updates_section(self) -> None:
        ups = sorted(((k, v) for k, v in self.r.items() if k.startswith("updates-lubm")),
                     key=lambda kv: -_scale_of(kv[0]))
        if not ups:
            return
        self.w("## Incremental updates (issue 3)", "",
               "**What**: LUBM(N) + `univ-bench.nt` materialised with `Store.load(engine='local')`, then "
               "DynamiTE's update sets (`shared/data/dynamite-updates`, see its README for what each changes), "
               "each applied as two round trips that must leave the store exactly as loaded: "
               "*remove `remove_X`, re-add it*, and *add `add_X`, remove what it added*. Each with our "
               "deletion (`algorithm='counting'`: step-based support check, then counting) and with DRed "
               "(`algorithm='dred'`: over-delete every consequence, re-derive). Times are through the file "
               "API (`Store.remove_files` / `Store.add_files`, N-Triples parsing included), as a user would "
               "call it; one transaction each, committed. *Rematerialisation* is `Store.load` of the same "
               "explicit set into a fresh directory, measured in the same run. After every round trip the "
               "annotated dump (every triple with its explicit flag, count and step) is compared byte for "
               "byte (SHA-256) with the dump taken after the initial load.", "",
               self.on(d for _, d in ups), "")
        for name, d in ups:
            self._updates_one(name, d)
        self.w("For orientation only (different scale, hardware and system), DynamiTE's own Table 2 "
               "(LUBM(1000), ~138M triples, dual quad-core Xeon E5620, SSD, BerkeleyDB; mean of 5; full "
               "materialisation about 15 minutes):", "",
               table(["update", "addition", "removal: DRed", "removal: counting"],
                     [[UPDATE_LABELS[k], s(a), s(b), s(c)] for k, (a, b, c) in DYNAMITE_TABLE2.items()]), "")

    def _updates_one(self, name: str, d: dict[str, Any]) -> None:
        p = d.get("params", {})
        sc = p.get("scale")
        remat = get(d, "rematerialisation", "full", "seconds")
        ld = d.get("load", {})
        ver = d.get("verification", {})
        self.w(f"### LUBM({sc})" + (" — quick smoke run" if p.get("quick") else ""), "",
               f"Store: {n(ld.get('triples'))} triples ({n(ld.get('explicit'))} explicit), loaded and "
               f"materialised in {s(ld.get('seconds'))}; rematerialisation (fresh directory, median of "
               f"{len(get(d, 'rematerialisation', 'full', 'seconds_stats', 'runs') or [])}): **{s(remat)}**. "
               f"Small updates: median of {p.get('reps')} after {p.get('warmup')} warm-up; university "
               f"updates: {p.get('reps_large')} run(s).", "")
        ups = d.get("updates") or {}
        rows = []
        for u, e in ups.items():
            tri = e.get("triples", {})
            rr = e.get("remove_readd", {})
            ar = e.get("add_remove", {})
            c_rm = get(rr, "counting", "files", "remove", "median")
            d_rm = get(rr, "dred", "files", "remove", "median")
            re_add = get(rr, "counting", "files", "add", "median")
            add = get(ar, "counting", "files", "add", "median")
            c_un = get(ar, "counting", "files", "remove", "median")
            d_un = get(ar, "dred", "files", "remove", "median")
            aff_c = get(rr, "counting", "files", "remove_report", "affected")
            aff_d = get(rr, "dred", "files", "remove_report", "affected")
            rows.append([UPDATE_LABELS.get(u, u), n(tri.get("remove_present", tri.get("remove"))), s(c_rm), s(d_rm),
                         ratio(d_rm / c_rm if c_rm and d_rm else None, 1), f"{n(aff_c)} / {n(aff_d)}",
                         s(re_add), n(tri.get("add_new")), s(add), s(c_un), s(d_un),
                         _speedup(remat, max((x for x in (c_rm, re_add, add, c_un) if x), default=None))])
        self.w(table(["update", "removed", "remove: ours", "remove: DRed", "DRed/ours", "affected ours/DRed",
                      "re-add", "added", "add add_X", "undo: ours", "undo: DRed", "remat / slowest"], rows), "")
        self.w("*affected*: triples whose support was re-examined by the deletion (ours) or over-deleted (DRed). "
               "*undo*: removing what `add_X` added. *remat / slowest*: how many times faster than a "
               "rematerialisation the slowest of our four directions is.", "")
        # terms mode
        rows = []
        for u, e in ups.items():
            rr, ar = e.get("remove_readd", {}), e.get("add_remove", {})
            rows.append([UPDATE_LABELS.get(u, u),
                         s(get(rr, "counting", "terms", "remove", "median")),
                         s(get(rr, "dred", "terms", "remove", "median")),
                         s(get(rr, "counting", "terms", "add", "median")),
                         s(get(ar, "counting", "terms", "add", "median")),
                         s(get(ar, "counting", "terms", "remove", "median")),
                         s(get(rr, "counting", "files", "remove_report", "seconds"))])
        if rows:
            self.w("Without N-Triples parsing: the same round trips through `Store.remove(triples)` / "
                   "`Store.add(triples)` with the triples pre-parsed into rdflib terms (term conversion and "
                   "lookup still included), and the maintenance time the update report itself records:", "",
                   table(["update", "remove: ours", "remove: DRed", "re-add", "add add_X", "undo: ours",
                          "maintenance only (remove, ours)"], rows), "")
        # remat after removal
        rm = d.get("rematerialisation", {})
        extra = [(k, v) for k, v in rm.items() if k.startswith("after_remove_")]
        if extra:
            rows = []
            for k, v in extra:
                u = k[len("after_remove_"):]
                t = get(ups, u, "remove_readd", "counting", "files", "remove", "median")
                rows.append([f"remove_{u}", n(v.get("explicit")), s(v.get("seconds")), s(t),
                             f"{t / v['seconds']:.2f}" if t and v.get("seconds") else "–",
                             f"{t / remat:.2f}" if t and remat else "–"])
            self.w("Removing universities against rematerialising what is left:", "",
                   table(["removal", "explicit left", "remat of what is left", "our removal",
                          "removal / remat (left)", "removal / remat (full)"], rows), "")
        # samples
        smp = d.get("samples")
        if smp:
            rows = []
            for alg, label in (("counting", "ours (counting)"), ("dred", "DRed")):
                e = smp.get(alg) or {}
                rows.append([label, s(get(e, "delete", "mean")), s(get(e, "delete", "median")),
                             s(get(e, "insert", "mean")), n(e.get("affected_mean"), 0),
                             n(e.get("triples_removed_mean"), 0), ratio(e.get("speedup_vs_remat"), 0)])
            rows.append(["rematerialisation", s(remat), "", "", "", "", "1×"])
            self.w(f"Hu, Motik and Horrocks' small updates: {smp.get('n')} uniform random samples (seed "
                   f"{smp.get('seed')}) of {n(smp.get('size'))} explicit triples, each deleted then re-inserted "
                   "through `Store.remove`/`Store.add`:", "",
                   table(["algorithm", "delete (mean)", "delete (median)", "insert (mean)", "affected (mean)",
                          "triples removed (mean)", "remat / delete"], rows), "")
        self.w(f"**Verification**: {n(ver.get('round_trips'))} round trips, {n(ver.get('verified'))} compared, "
               f"**{n(ver.get('mismatches'))} mismatches** (annotated dump of {n(ver.get('reference_lines'))} "
               "lines).", "")
        # plot
        if ups:
            plt = _plt()
            groups = [UPDATE_LABELS.get(u, u).split(" (")[0] for u in ups]
            series = {
                "ours (counting)": [get(e, "remove_readd", "counting", "files", "remove", "median") for e in ups.values()],
                "DRed": [get(e, "remove_readd", "dred", "files", "remove", "median") for e in ups.values()],
                "insertion": [get(e, "add_remove", "counting", "files", "add", "median") for e in ups.values()],
            }
            fig, ax = plt.subplots(figsize=(11, 4.8))
            _bars(ax, groups, series, log=True, fmt=short)
            if remat:
                ax.axhline(remat, color=COLORS["rematerialisation"], ls="--",
                           label=f"rematerialisation ({s(remat)})")
                ax.axhline(remat / 20, color=COLORS["rematerialisation"], ls=":", lw=1,
                           label="1/20 of rematerialisation (goal for update 4)")
            smp = d.get("samples")
            if smp:
                ax.axhline(get(smp, "counting", "delete", "mean"), color="#9467bd", ls="-.", lw=1,
                           label=f"1,000-triple sample deletion, mean ({s(get(smp, 'counting', 'delete', 'mean'))})")
            lo, hi = ax.get_ylim()
            ax.set_ylim(lo, max(hi, remat or 0) * 30)  # room for the legend above the bars and lines
            ax.set_ylabel("seconds (log scale, lower is better)")
            ax.set_title(f"DynamiTE updates on LUBM({sc}): removal (remove_X) and insertion (add_X), through the file API")
            ax.legend(fontsize=8, loc="upper left", ncol=2)
            fname = f"updates-lubm{sc}.png"
            self.save(fig, fname)
            self.w(self.img(fname, f"update times at LUBM({sc})"), "")
        # interpretation
        goals = {g["id"]: g for g in d.get("goals", []) or []}
        notes = []
        g = goals.get("update4_vs_dred")
        if g:
            det = g.get("detail", {})
            notes.append(f"- Update 4 (removing `headOf subPropertyOf worksFor`): ours {s(det.get('counting_seconds'))}, "
                         f"DRed {s(det.get('dred_seconds'))} ({g['value']:.1f}×; goal ≥ 10×: "
                         f"{'met' if g['met'] else 'not met'}). Every head of a department also has an explicit "
                         f"`worksFor`, so the removal deletes almost nothing; ours examines "
                         f"{n(det.get('counting_affected'))} triples, DRed over-deletes {n(det.get('dred_affected'))} "
                         "and re-derives them. Our DRed re-derives locally (backward rule instances over the "
                         "indexes), not by rescanning the store as DynamiTE's did (their DRed took over 30 minutes "
                         "on LUBM(1000)), so the gap stays small when little is over-deleted.")
        g = goals.get("university_vs_remat")
        if g:
            det = g.get("detail", {})
            notes.append(f"- Removing one university takes {g['value']:.2f} of a rematerialisation of what is left "
                         f"(goal < 1/3: {'met' if g['met'] else 'not met'}). A data-only change this large runs "
                         "as batched numpy joins against the schema, like the reload; what the removal still "
                         "pays per triple is deleting entries from six B-trees (a reload appends), plus reading "
                         "the update file and looking up its terms (compare the table without N-Triples "
                         "parsing above). For updates this large (~8% of the store) the crossover is near.")
        slower = []
        for u, e in ups.items():
            c_rm = get(e, "remove_readd", "counting", "files", "remove", "median")
            d_rm = get(e, "remove_readd", "dred", "files", "remove", "median")
            if c_rm and d_rm and d_rm < c_rm:
                slower.append(f"{UPDATE_LABELS.get(u, u).split(' (')[0]} ({d_rm / c_rm:.2f}×)")
        if slower:
            notes.append("- Where ours loses: DRed removed faster on " + ", ".join(slower) + ". When nothing "
                         "else is derived from the removed triples (updates 1, 2) or everything derived from them "
                         "goes too (the university sets), DRed's over-deletion already *is* the exact answer: "
                         "both examine the same triples (the *affected* column), so what separates them is "
                         "bookkeeping (our heap ordered by step) and run-to-run noise; ours wins "
                         "where derived triples have other support (update 3: every `.edu` person keeps "
                         "`rdf:type ub:Person` from other facts; the random samples).")
        for gid in ("update1_10ms", "update2_1s", "update3_1s"):
            g = goals.get(gid)
            if g:
                notes.append(f"- {g['text']}: slowest direction {s(g['value'])} "
                             f"({'met' if g['met'] else 'not met'}).")
        for gid in ("update4_vs_remat", "samples_vs_remat"):
            g = goals.get(gid)
            if g:
                notes.append(f"- {g['text']}: {g['value']:.0f}× ({'met' if g['met'] else 'not met'}).")
        if notes:
            self.w("**What it means**:", "", *notes, "")

    # scaling -----------------------------------------------------------------------------------
    def scaling_section(self) -> None:
        sc = self.r.get("scaling")
        pts = (sc or {}).get("points") or []
        loads = {_scale_of(k): v for k, v in self.r.items() if k.startswith("load-lubm")}
        if not pts:
            return
        self.w("## Scaling with data size", "",
               "**What**: for LUBM 1, 5, 10 and 50 (LUBM(5) is the exact prefix of the LUBM(10) file that UBA "
               "would generate for 5 universities), one run each: explicit load (trine, pyoxigraph), trine's "
               "materialised load, and the mean over "
               f"{get(sc, 'params', 'samples')} random samples of {n(get(sc, 'params', 'sample_size'))} explicit "
               "triples deleted (ours, DRed) and re-inserted. Points may come from different runs; each "
               "carries its date in `scaling.json`.", "",
               self.on([sc]), "")
        rows = []
        for p in pts:
            rows.append([f"LUBM({p['scale']})", n(p.get("explicit_triples")), n(p.get("materialised_triples")),
                         s(p.get("trine_explicit_seconds")), s(p.get("pyoxigraph_seconds")),
                         s(p.get("materialised_seconds")), s(p.get("delete_counting_mean")),
                         s(p.get("delete_dred_mean")), s(p.get("insert_mean")),
                         ratio(p["materialised_seconds"] / p["delete_counting_mean"]
                               if p.get("delete_counting_mean") else None, 0),
                         "yes" if p.get("verified") else ("not checked" if p.get("verified") is None else "**NO**"),
                         f"{p['load_average_end'][0]:.1f}" if p.get("load_average_end") else "–"])
        self.w(table(["scale", "explicit", "materialised", "trine explicit load", "pyoxigraph load",
                      "trine materialised load", "delete 1k: ours", "delete 1k: DRed", "insert 1k",
                      "load / delete", "dump unchanged", "load avg"], rows), "")
        plt = _plt()
        xs = [p["explicit_triples"] for p in pts]
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        ax = axes[0]
        for key, label in (("trine_explicit_seconds", "trine (explicit)"), ("pyoxigraph_seconds", "pyoxigraph"),
                           ("materialised_seconds", "trine (materialised)")):
            ax.plot(xs, [p.get(key) for p in pts], "o-", label=label, color=COLORS.get(label))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("explicit triples")
        ax.set_ylabel("load time, s (log)")
        ax.set_title("Load time vs data size")
        ax.legend(fontsize=8)
        for p in pts:
            ax.annotate(f"LUBM({p['scale']})", (p["explicit_triples"], p.get("materialised_seconds") or 1),
                        fontsize=7, xytext=(3, 6), textcoords="offset points")
        ax = axes[1]
        for key, label in (("delete_counting_mean", "ours (counting)"), ("delete_dred_mean", "DRed"),
                           ("insert_mean", "insertion")):
            ax.plot(xs, [p.get(key) for p in pts], "o-", label=label, color=COLORS.get(label))
        ax.plot(xs, [p.get("materialised_seconds") for p in pts], "o--", label="rematerialisation",
                color=COLORS["rematerialisation"])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("explicit triples")
        ax.set_ylabel("seconds (log)")
        ax.set_title(f"{n(get(sc, 'params', 'sample_size'))}-triple update vs data size")
        ax.legend(fontsize=8)
        self.save(fig, "scaling.png")
        self.w(self.img("scaling.png", "scaling curves"), "")
        if len(pts) >= 3:
            a, b = pts[0], pts[-1]
            grow = b["explicit_triples"] / a["explicit_triples"]
            k_load = _slope(pts, "materialised_seconds")
            k_ox = _slope(pts, "pyoxigraph_seconds")
            k_del = _slope(pts, "delete_counting_mean")
            self.w(f"**What it means**: from LUBM({a['scale']}) to LUBM({b['scale']}) the data grows {grow:.0f}×. "
                   f"Fitted on all points (log-log least squares), trine's materialised load time grows as "
                   f"size^{k_load:.2f} (pyoxigraph's bulk load: size^{k_ox:.2f}; 1 is linear) and the "
                   f"1,000-triple deletion as size^{k_del:.2f}: an incremental update costs what it touches "
                   "(plus B-tree depth and cache misses), not the size of the store, so its advantage over "
                   f"rematerialising grows with the data ({pts[-1]['materialised_seconds'] / pts[-1]['delete_counting_mean']:.0f}× "
                   f"at LUBM({b['scale']})). Single runs on a shared machine: single points can be off by 2×, "
                   "the slopes less so.", "")
        del loads

    # other engineers' results ------------------------------------------------------------------
    def others_section(self) -> None:
        others = {k: v for k, v in self.r.items() if not OWN.match(k)}
        run = self.r.get("run", {}).get("parts", {})
        spark = sorted(((k, v) for k, v in others.items() if k.startswith("spark")), key=lambda kv: _scale_of(kv[0]))
        self.w("## Spark vs local load", "")
        if spark:
            self.w("From `bench/bench_spark.py` (see its docstring): `Store.load(engine='spark')` (Spark local "
                   "mode, end to end in a fresh interpreter) against the in-process `engine='local'` load, "
                   "pyoxigraph's bulk load (no reasoning: the floor), and owlrl's RDFS closure and reasonable's "
                   "OWL 2 RL closure of a sample (compare their input triples/s).", "",
                   self.on(v for _, v in spark), "")
            if all(isinstance(v.get("systems"), dict) for _, v in spark):
                self._spark(spark)
            else:
                for k, v in spark:
                    self._generic(k, v, prefer_systems=True)
                self._spark_plot(spark)
        else:
            self._missing("spark", run)
        self.w("## LUBM queries", "")
        q = others.get("queries")
        if q:
            self.w("From `bench/bench_queries.py` (see its docstring for what is timed): the 14 LUBM queries "
                   "on trine (native query engine), pyoxigraph and rdflib, over the same materialised triples.", "")
            self._queries("queries", q, "LUBM queries by system (queries.json)", "queries.png")
        else:
            self._missing("queries", run)
        self.w("## rdflib plugin", "")
        r = others.get("rdflib")
        if r:
            self.w("From `bench/bench_rdflib.py` (see its docstring): the LUBM queries through rdflib's SPARQL API "
                   "on trine's rdflib Store plugin, oxrdflib and rdflib's memory store, and `Graph.parse` into each.", "")
            self._queries("rdflib", r, "LUBM queries through rdflib (rdflib.json)", "rdflib.png")
        else:
            self._missing("rdflib", run)
        rest = {k: v for k, v in others.items() if not (k.startswith("spark") or k in ("queries", "rdflib"))}
        for k, v in sorted(rest.items()):
            self.w(f"## Other results: `{k}.json`", "")
            self._generic(k, v)

    def _missing(self, part: str, run: dict[str, Any]) -> None:
        st = run.get(part, {})
        why = {"absent": f"`bench/bench_{part}.py` was not present when the harness ran",
               "failed": "the script failed (see the log below)", "timeout": "the script timed out"}.get(
            st.get("status"), f"no `{part}` results file yet")
        self.w(f"*Not available*: {why}. Rerun `python -m bench.run --only {part}` then `python -m bench.report`.", "")
        if st.get("log_tail"):
            self.w("```", *st["log_tail"], "```", "")

    # schema-agnostic rendering ----------------------------------------------------------------
    @staticmethod
    def _flatten(o: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
        out: list[tuple[tuple, Any]] = []
        if isinstance(o, dict):
            for k, v in o.items():
                out += Report._flatten(v, path + (str(k),))
        elif isinstance(o, list):
            if o and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in o) and len(o) > 4:
                out.append((path, f"[{len(o)} values]"))
            else:
                for i, v in enumerate(o):
                    label = None
                    if isinstance(v, dict):
                        for key in ("name", "system", "query", "id", "engine", "label", "scale"):
                            if isinstance(v.get(key), (str, int)):
                                label = f"{v[key]}"
                                break
                    out += Report._flatten(v, path + (label or str(i),))
        else:
            out.append((path, o))
        return out

    @staticmethod
    def _fmt_leaf(key: str, v: Any) -> str:
        if isinstance(v, bool) or v is None:
            return str(v)
        if isinstance(v, float):
            k = key.lower()
            timey = (any(t in k for t in ("second", "elapsed", "duration")) or k.endswith(("_s", "time", "_warm", "_cold"))
                     or k in ("median", "mean", "min", "max", "time"))
            if timey and v < 1e5:
                return s(v)
            if "bytes" in k or k.endswith("rss"):
                return mem(int(v))
            return f"{v:,.4g}" if abs(v) < 1e6 else f"{v:,.0f}"
        if isinstance(v, int):
            return mem(v) if ("bytes" in key.lower() or key.lower().endswith("rss")) and v > MB else f"{v:,}"
        text = str(v)
        return text if len(text) <= 80 else text[:77] + "…"

    def _generic(self, name: str, doc: dict[str, Any], prefer_systems: bool = False) -> None:
        body = {k: v for k, v in doc.items() if k not in ("machine", "versions", "name")}
        leaves = self._flatten(body)
        m = doc.get("machine", {})
        self.w(f"`{name}.json` ({doc.get('date', '?')}"
               + (f"; {m.get('cpu')}, {m.get('logical_cores')} cores" if m else "") + "):", "")
        rows = [[" / ".join(p) or "(value)", self._fmt_leaf(p[-1] if p else "", v)] for p, v in leaves
                if p and p[0] not in ("date", "git")]
        if len(rows) > 80:
            rows = rows[:80] + [["…", f"{len(rows) - 80} more values in the file"]]
        self.w("<details><summary>all values</summary>", "", table(["key", "value"], rows, "ll"), "",
               "</details>", "")
        if prefer_systems:
            self._system_times(name, leaves)

    def _system_times(self, name: str, leaves: list[tuple[tuple, Any]]) -> None:
        """A compact system x metric table of the time-like numbers found, if any."""
        by: dict[str, dict[str, float]] = {}
        for p, v in leaves:
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                continue
            sysname = next((seg for seg in p if any(k in seg.lower() for k in KNOWN_SYSTEMS)), None)
            key = p[-1].lower()
            if sysname is None or not any(t in key for t in ("second", "time", "median", "elapsed", "per_s",
                                                                   "throughput", "rate")):
                continue
            rest = [seg for seg in p if seg != sysname]
            metric = " / ".join(rest[-2:]) if rest else key
            by.setdefault(sysname, {})[metric] = float(v)
        if not by:
            return
        metrics = sorted({m for d in by.values() for m in d})[:8]
        rows = [[sname] + [self._fmt_leaf(mt.split(" / ")[-1], by[sname].get(mt)) if mt in by[sname] else "–"
                           for mt in metrics] for sname in by]
        self.w(f"Times and rates by system (`{name}`):", "", table(["system"] + metrics, rows), "")

    def _spark(self, spark: list[tuple[str, dict[str, Any]]]) -> None:
        rows = []
        stage_rows = []
        for k, v in spark:
            sc = v.get("scale", _scale_of(k))
            for sy, e in v["systems"].items():
                if not isinstance(e, dict):
                    continue
                rate = e.get("input_triples_per_second") or (
                    e["input_triples"] / e["seconds"] if e.get("input_triples") and e.get("seconds") else None)
                rows.append([f"LUBM({sc})", sy, n(e.get("input_triples")), n(e.get("triples")), s(e.get("seconds")),
                             n(rate), mem(e.get("peak_rss_bytes")),
                             n(e.get("append_entries_per_second")) if e.get("append_entries_per_second") else "–"])
                st = e.get("stages")
                if isinstance(st, dict) and st:
                    stage_rows.append([f"LUBM({sc})", sy, ", ".join(f"{a}: {s(b)}" for a, b in st.items()
                                                                   if isinstance(b, (int, float)))])
        self.w(table(["scale", "system", "input triples", "triples", "time", "input triples/s", "peak RSS",
                      "LMDB append entries/s"], rows, "llrrrrrr"), "")
        if stage_rows:
            self.w("Stages:", "", table(["scale", "system", "stages"], stage_rows, "lll"), "")
        grows = []
        for k, v in spark:
            for rk, rv in (v.get("ratios") or {}).items():
                grows.append([f"LUBM({v.get('scale', _scale_of(k))})", rk.replace("_", " "), ratio(rv)])
            for gk, gv in (v.get("goals") or {}).items():
                if isinstance(gv, dict):
                    grows.append([f"LUBM({v.get('scale', _scale_of(k))})", f"goal: {gk.replace('_', ' ')} "
                                  f"(target {n(gv.get('goal'))}"
                                  + (f", applies at LUBM({gv['applies_at_scale']})" if gv.get("applies_at_scale") else "")
                                  + ")", f"{n(gv.get('measured'), 2)} — {'met' if gv.get('met') else 'not met'}"])
        if grows:
            self.w(table(["scale", "ratio / goal (as bench_spark reports it)", "value"], grows, "llr"), "")
        plt = _plt()
        groups = [f"LUBM({v.get('scale', _scale_of(k))})" for k, v in spark]
        systems = list(dict.fromkeys(sy for _, v in spark for sy in v["systems"]))
        fig, ax = plt.subplots(figsize=(10, 4.2))
        _bars(ax, groups, {sy: [get(v, "systems", sy, "seconds") for _, v in spark] for sy in systems}, log=True,
              fmt=short, colors={"spark": "#e377c2", "local": COLORS["trine"], "pyoxigraph": COLORS["pyoxigraph"],
                                 "owlrl": "#8c564b", "reasonable": "#bcbd22"})
        ax.set_ylabel("seconds (log, lower is better)")
        ax.set_title("Bulk load: Spark vs in-process (both materialise rho-df), pyoxigraph (no reasoning), "
                     "owlrl (sample)", fontsize=9)
        ax.legend(fontsize=8)
        self.save(fig, "spark.png")
        self.w(self.img("spark.png", "spark vs local load"), "",
               "owlrl runs on a sample (see `input triples`), so compare its rate, not its time.", "")

    def _spark_plot(self, spark: list[tuple[str, dict[str, Any]]]) -> None:
        """Bar chart of whatever per-system seconds the spark files hold (best effort)."""
        data: dict[str, dict[str, float]] = {}
        for k, v in spark:
            for p, val in self._flatten({kk: vv for kk, vv in v.items() if kk not in ("machine", "versions")}):
                if not isinstance(val, (int, float)) or isinstance(val, bool) or not p:
                    continue
                last = p[-1].lower()
                if last not in ("seconds", "median", "total_seconds", "time", "wall_seconds", "elapsed"):
                    continue
                sysname = next((seg for seg in p if any(t in seg.lower() for t in KNOWN_SYSTEMS)), None)
                if sysname is None:
                    continue
                if any(t in " ".join(p).lower() for t in ("stage", "runs", "stats", "step")):
                    continue
                data.setdefault(k, {}).setdefault(sysname, float(val))
        if not data:
            return
        plt = _plt()
        groups = list(data)
        systems = sorted({s_ for d in data.values() for s_ in d})
        fig, ax = plt.subplots(figsize=(10, 4.2))
        _bars(ax, groups, {sy: [data[g].get(sy) for g in groups] for sy in systems}, log=True, fmt=s,
              colors={})
        ax.set_ylabel("seconds (log, lower is better)")
        ax.set_title("Load with materialisation: Spark and others (from spark-*.json)")
        ax.legend(fontsize=8)
        self.save(fig, "spark.png")
        self.w(self.img("spark.png", "spark load times"), "")

    def _query_grid(self, leaves: list[tuple[tuple, Any]]):
        """(query -> system -> seconds), capped cut-offs, answer counts, from any layout that names
        queries (q1..q14) and systems in its keys."""
        grid: dict[str, dict[str, float]] = {}
        capped: dict[str, dict[str, float]] = {}
        cutoffs: dict[str, dict[str, float]] = {}
        answers: dict[str, dict[str, Any]] = {}
        for p, v in leaves:
            q = next((seg for seg in p if re.fullmatch(r"[qQ]\d{1,2}", seg)), None)
            if q is None:
                continue
            q = q.lower()
            after = p[p.index(next(seg for seg in p if seg.lower() == q)) + 1:]
            sysname = next((seg for seg in after if any(t in seg.lower() for t in KNOWN_SYSTEMS)), None)
            if sysname is None:
                continue
            last = p[-1].lower()
            if last in ("answers", "count", "rows", "solutions", "n_answers"):
                answers.setdefault(q, {})[sysname] = v
                continue
            if last in ("capped", "timed_out") and v is True:
                capped.setdefault(q, {})[sysname] = -1.0   # the time shown is a cut-off: a lower bound
                continue
            if last in ("timeout", "cutoff", "cut_off") and isinstance(v, (int, float)) and not isinstance(v, bool):
                cutoffs.setdefault(q, {})[sysname] = float(v)  # only a bound when there is no time
                continue
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                continue
            if last == "median" and len(after) == 2:
                grid.setdefault(q, {})[sysname] = float(v)
            elif last == "cold_seconds":
                grid.setdefault(q, {})[sysname + " (cold)"] = float(v)
        for q, d in cutoffs.items():
            for sy, c in d.items():
                if grid.get(q, {}).get(sy) is None:
                    capped.setdefault(q, {})[sy] = c
        return grid, capped, answers

    def _queries(self, name: str, doc: dict[str, Any], title: str, fname: str) -> None:
        body = {k: v for k, v in doc.items() if k not in ("machine", "versions", "plans")}
        leaves = self._flatten(body)
        grid, capped, answers = self._query_grid(leaves)
        if not grid:
            self._generic(name, doc)
            return
        qs = sorted(grid, key=lambda x: int(x[1:]))
        systems = sorted({sy for d in grid.values() for sy in d} | {sy for d in capped.values() for sy in d},
                         key=lambda x: (not x.startswith("trine"), x.replace(" (cold)", ""), "cold" in x))
        base_sys = systems[0]

        def cell(qq: str, sy: str) -> str:
            c = capped.get(qq, {}).get(sy)
            t = grid.get(qq, {}).get(sy)
            if c is None:
                return s(t)
            if c < 0:
                return f"≥ {s(t)}" if t is not None else "cut off"
            return f"> {s(c)} (cut off)"

        rows = []
        for qq in qs:
            row = [qq.upper()] + [cell(qq, sy) for sy in systems]
            base = grid[qq].get(base_sys)
            for sy in systems[1:]:
                if "cold" in sy:
                    continue
                o = grid[qq].get(sy)
                bound = "≥ " if capped.get(qq, {}).get(sy) is not None and o is not None else ""
                row.append(bound + ratio(o / base if base and o else None, 1))
            a = {k: v for k, v in answers.get(qq, {}).items() if v is not None}
            vals = {str(v) for v in a.values()}
            row.append(next(iter(vals)) if len(vals) == 1 else ", ".join(f"{k}: {v}" for k, v in a.items()))
            rows.append(row)
        headers = (["query"] + systems + [f"{sy} / {base_sys}" for sy in systems[1:] if "cold" not in sy]
                   + ["answers"])
        self.w(f"`{name}.json` ({doc.get('date', '?')}): median seconds per query.", "",
               table(headers, rows), "",
               f"Ratios are the other system's time over {base_sys}'s: above 1× means {base_sys} is faster. "
               "A cut-off query shows its cut-off as a lower bound.", "")
        plt = _plt()
        fig, ax = plt.subplots(figsize=(12, 4.8))
        shown = [sy for sy in systems if "cold" not in sy]
        _bars(ax, [q_.upper() for q_ in qs], {sy: [grid[q_].get(sy) for q_ in qs] for sy in shown}, log=True,
              colors={"trine": COLORS["trine"], "pyoxigraph": COLORS["pyoxigraph"], "oxrdflib": COLORS["pyoxigraph"],
                      "rdflib": "#2ca02c", "rdflib-memory": "#2ca02c", "trine+parse": "#17becf",
                      "trine-rdflib-bgp": "#9467bd"})
        ax.set_ylabel("seconds (log, lower is better)")
        ax.set_title(title)
        ax.legend(fontsize=8, ncol=len(shown))
        self.save(fig, fname)
        self.w(self.img(fname, title), "")
        wins = {sy: sum(1 for q_ in qs if grid[q_].get(sy) is not None and
                        grid[q_][sy] == min(grid[q_].get(x, float("inf")) for x in shown)) for sy in shown}
        self.w("Fastest per query: " + ", ".join(f"{sy} {k} of {len(qs)}" for sy, k in wins.items()) + ".", "")
        # everything else in the file that is not per query: totals, goals, parameters, parse times
        rest = [(p, v) for p, v in leaves if not any(re.fullmatch(r"[qQ]\d{1,2}", seg) for seg in p)
                and p and p[0] not in ("date", "git", "name") and "runs" not in p]
        if rest:
            rows = [[" / ".join(p), self._fmt_leaf(p[-1], v)] for p, v in rest]
            self.w(table(["other values in the file", ""], rows, "ll"), "")

    # ------------------------------------------------------------------------------------------
    def missing_section(self) -> None:
        notes = []
        if not any(k.startswith("load-lubm50") for k in self.r):
            notes.append("- LUBM(50) bulk load: not run yet (`python -m bench.run --only load --scales 50`).")
        if not any(k.startswith("updates-lubm10") for k in self.r):
            notes.append("- Updates at LUBM(10), the scale DynamiTE's update sets are defined on: not run yet.")
        if "scaling" not in self.r:
            notes.append("- Scaling curves: not run yet (`python -m bench.run --only scaling`).")
        if notes:
            self.w("## Not measured yet", "", *notes, "")

    def build(self) -> str:
        self.header()
        self.goals_section()
        self.load_section()
        self.updates_section()
        self.scaling_section()
        self.others_section()
        self.missing_section()
        return "\n".join(self.md).rstrip() + "\n"


def build(results_dir: Path | None = None, out: Path | None = None, plots: Path | None = None) -> Path:
    results_dir = Path(results_dir) if results_dir else common.results_dir()
    default_dir = results_dir.resolve() == (common.BENCH / "results").resolve()
    out = Path(out) if out else (common.ROOT / "BENCHMARKS.md" if default_dir else results_dir / "BENCHMARKS.md")
    plots = Path(plots) if plots else (common.plots_dir() if default_dir else results_dir / "plots")
    results = common.read_results(results_dir)
    text = Report(results, plots, out).build()
    out.write_text(text)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.splitlines()[0])
    ap.add_argument("--results-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None, help="default BENCHMARKS.md (or <results-dir>/BENCHMARKS.md)")
    ap.add_argument("--plots-dir", type=Path, default=None)
    a = ap.parse_args(argv)
    path = build(a.results_dir, a.out, a.plots_dir)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
