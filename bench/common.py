"""Shared helpers of the benchmark harness.

Every benchmark writes one JSON file ``bench/results/<name>.json`` through
:func:`write_results`, which stamps it with the machine, package versions,
git commit and date.  Timings are the median of ``reps`` runs after
``warmup`` unrecorded runs (:func:`measure`); every comparison the report
shows is a ratio of two numbers measured in the same run on the same machine.

Peak memory is sampled (:class:`PeakMemory`) from the process *and all its
children* (Spark's JVM, a spawned worker), so it is comparable across
systems that do their work in different processes.  Loads whose memory
matters run in a fresh interpreter (:func:`run_isolated`), so one system's
heap does not inflate the next one's figure.
"""

from __future__ import annotations

import datetime as _dt
import gc
import gzip
import importlib
import json
import math
import multiprocessing
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
SHARED = Path(os.environ.get("TRINE_SHARED", ROOT.parent / "shared"))
LUBM_DIR = SHARED / "data" / "lubm"
UPDATES_DIR = SHARED / "data" / "dynamite-updates"
FIXTURES = ROOT / "fixtures"

PACKAGES = ("trine", "lmdb", "numpy", "pyoxigraph", "rdflib", "oxrdflib", "owlrl", "reasonable",
            "pyspark", "matplotlib", "psutil")


# --- locations ------------------------------------------------------------------
def results_dir() -> Path:
    """Where results go: ``$TRINE_BENCH_RESULTS`` or ``bench/results``."""
    return Path(os.environ.get("TRINE_BENCH_RESULTS", BENCH / "results"))


def plots_dir() -> Path:
    return Path(os.environ.get("TRINE_BENCH_PLOTS", BENCH / "plots"))


def work_dir() -> Path:
    """Scratch space (stores, decompressed inputs): ``$TRINE_BENCH_WORK`` or ``bench/work`` (git-ignored)."""
    p = Path(os.environ.get("TRINE_BENCH_WORK", BENCH / "work"))
    p.mkdir(parents=True, exist_ok=True)
    return p


def fresh_dir(name: str) -> Path:
    """An empty directory under the work dir (removed first if it exists)."""
    p = work_dir() / name
    shutil.rmtree(p, ignore_errors=True)
    p.mkdir(parents=True)
    return p


def dir_bytes(path: Path) -> int:
    """Sum of file sizes under ``path`` (apparent sizes)."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def dir_allocated_bytes(path: Path) -> int:
    """Sum of allocated blocks under ``path`` (what ``du`` says)."""
    path = Path(path)
    files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]
    return sum(f.stat().st_blocks * 512 for f in files)


# --- timing ------------------------------------------------------------------------
def summarise(runs: Sequence[float]) -> dict[str, Any]:
    runs = list(runs)
    if not runs:
        return {"median": None, "mean": None, "min": None, "max": None, "runs": []}
    return {"median": statistics.median(runs), "mean": statistics.fmean(runs), "min": min(runs),
            "max": max(runs), "runs": runs}


def measure(fn: Callable[[], Any], reps: int = 3, warmup: int = 1,
            setup: Callable[[], Any] | None = None, teardown: Callable[[Any], Any] | None = None,
            ) -> dict[str, Any]:
    """Time ``fn()``: ``warmup`` unrecorded runs, then ``reps`` timed runs.

    ``setup()`` (untimed) runs before every run and ``teardown(result)`` after.
    Returns :func:`summarise` of the timed runs plus ``last`` (fn's last result).
    """
    last = None
    runs = []
    for i in range(warmup + max(1, reps)):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        last = fn()
        dt = time.perf_counter() - t0
        if teardown is not None:
            teardown(last)
        if i >= warmup:
            runs.append(dt)
    out = summarise(runs)
    out["last"] = last
    return out


#: A timed run of a short call repeats it until the run lasts about this
#: long, as ``timeit`` does: one call of a fraction of a millisecond is mostly
#: timer and scheduler noise.  Every system in a comparison is timed alike.
RUN_SECONDS = 0.05
MAX_CALLS_PER_RUN = 1000


def calls_per_run(seconds_per_call: float) -> int:
    """How many calls of this duration make one timed run of ``RUN_SECONDS``."""
    return max(1, min(MAX_CALLS_PER_RUN, int(RUN_SECONDS / max(seconds_per_call, 1e-9))))


@contextmanager
def gc_off() -> Iterator[None]:
    """No garbage collection while timing, as ``timeit`` does: other data in
    the process (a peer's graph) would make each collection slow."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def time_per_call(fn: Callable[[], Any], calls: int) -> float:
    """Seconds per call of ``calls`` calls in a row, garbage collection off."""
    with gc_off():
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - t0) / calls


@contextmanager
def stopwatch() -> Iterator[dict[str, float]]:
    """``with stopwatch() as t: ...`` then ``t["seconds"]``."""
    box: dict[str, float] = {}
    t0 = time.perf_counter()
    try:
        yield box
    finally:
        box["seconds"] = time.perf_counter() - t0


# --- memory ------------------------------------------------------------------------
def tree_rss(pid: int | None = None) -> int:
    """Resident set size of a process plus all its descendants, in bytes."""
    import psutil
    try:
        p = psutil.Process(pid)
        procs = [p] + p.children(recursive=True)
    except psutil.Error:
        return 0
    total = 0
    for q in procs:
        try:
            total += q.memory_info().rss
        except psutil.Error:
            pass
    return total


def _vm_hwm() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class PeakMemory:
    """Samples RSS of this process and its children every ``interval`` seconds.

    ``with PeakMemory() as m: ...`` then ``m.peak`` (bytes, process tree),
    ``m.baseline`` (RSS when entered) and ``m.peak_delta`` (= peak - baseline).
    """

    def __init__(self, interval: float = 0.02, pid: int | None = None, fresh_process: bool = False):
        self.interval = interval
        self.fresh_process = fresh_process
        self.pid = pid
        self.peak = 0
        self.baseline = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(self.pid))
            self._stop.wait(self.interval)

    def __enter__(self) -> "PeakMemory":
        self.baseline = tree_rss(self.pid)
        self.peak = self.baseline
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak = max(self.peak, tree_rss(self.pid))
        if self.pid is None:
            # VmHWM (this address space's high-water mark) catches peaks shorter than the
            # sampling interval.  Not ru_maxrss: Linux carries it across exec, so a spawned
            # worker would report its parent's size.  Only trusted when this context saw the
            # whole life of the process's memory (a fresh worker): compare with the baseline.
            hwm = _vm_hwm()
            if hwm is not None and self.fresh_process:
                self.peak = max(self.peak, hwm)

    @property
    def peak_delta(self) -> int:
        return max(0, self.peak - self.baseline)

    def as_dict(self) -> dict[str, int]:
        return {"peak_rss_bytes": self.peak, "baseline_rss_bytes": self.baseline,
                "peak_delta_bytes": self.peak_delta}


def _isolated_entry(target: str, args: tuple, kwargs: dict, conn) -> None:
    try:
        mod, _, fn = target.rpartition(".")
        result = getattr(importlib.import_module(mod), fn)(*args, **kwargs)
        conn.send(("ok", result))
    except BaseException as e:  # report anything, including KeyboardInterrupt in the child
        import traceback
        conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    finally:
        conn.close()


def run_isolated(target: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
    """Call ``module.function(*args, **kwargs)`` in a fresh interpreter (spawn) and return its result.

    The function's result must be picklable.  Import time of the child is not
    part of anything the function measures itself.
    """
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_isolated_entry, args=(target, args, kwargs, child))
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            raise TimeoutError(f"{target} did not finish in {timeout} s")
        status, value = parent.recv()
    except EOFError:
        proc.join()
        raise RuntimeError(f"{target} died (exit code {proc.exitcode})") from None
    finally:
        if proc.is_alive():
            proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()
    if status != "ok":
        raise RuntimeError(f"{target} failed in its worker:\n{value}")
    return value


# --- machine and versions ------------------------------------------------------------
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = None
    return out


def java_version() -> str | None:
    java = shutil.which("java") or (os.path.join(os.environ["JAVA_HOME"], "bin", "java")
                                    if os.environ.get("JAVA_HOME") else None)
    if not java:
        return None
    try:
        r = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
        return (r.stderr or r.stdout).splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def machine_info() -> dict[str, Any]:
    import psutil
    disk = psutil.disk_usage(str(work_dir()))
    return {
        "cpu": _cpu_model(),
        "logical_cores": psutil.cpu_count(logical=True),
        "physical_cores": psutil.cpu_count(logical=False),
        "memory_bytes": psutil.virtual_memory().total,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "java": java_version(),
        "work_dir_disk_bytes": disk.total,
        # Other work on the machine skews absolute timings: recorded, and shown by the report.
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def load_average() -> list[float] | None:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def wait_for_quiet(max_load: float, max_wait: float, poll: float = 15.0) -> float:
    """Wait (up to ``max_wait`` s) until the 1-minute load average is below ``max_load``; returns it."""
    t0 = time.monotonic()
    while True:
        la = load_average()
        if la is None or la[0] < max_load or time.monotonic() - t0 >= max_wait:
            return la[0] if la else 0.0
        log(f"machine busy (load average {la[0]:.2f} >= {max_load}); waiting")
        time.sleep(poll)


def git_commit() -> str | None:
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=30)
        sha = r.stdout.strip()
        d = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "store", "reasoning",
                            "trine", "query"], cwd=ROOT, capture_output=True, text=True, timeout=30)
        return sha + ("+dirty" if d.stdout.strip() else "") if sha else None
    except (OSError, subprocess.SubprocessError):
        return None


def stamp() -> dict[str, Any]:
    """The provenance every results file carries."""
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "versions": package_versions(),
        "git": git_commit(),
    }


def _json_default(o: Any) -> Any:
    try:
        import numpy as np
        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            return float(o)
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:
        pass
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, set):
        return sorted(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _clean(o: Any) -> Any:
    """NaN/inf -> None, so the files are strict JSON."""
    if isinstance(o, float) and (math.isnan(o) or math.isinf(o)):
        return None
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def write_results(name: str, data: dict[str, Any], directory: Path | None = None) -> Path:
    """Write ``<directory>/<name>.json`` with ``data`` plus :func:`stamp` (keys not overwritten)."""
    directory = Path(directory) if directory is not None else results_dir()
    directory.mkdir(parents=True, exist_ok=True)
    doc = {"name": name, **stamp(), **data}
    path = directory / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(_clean(json.loads(json.dumps(doc, default=_json_default))), indent=1) + "\n")
    os.replace(tmp, path)
    return path


def read_results(directory: Path | None = None) -> dict[str, dict[str, Any]]:
    """Every ``*.json`` of the results directory, by file stem; unreadable files are skipped."""
    directory = Path(directory) if directory is not None else results_dir()
    out: dict[str, dict[str, Any]] = {}
    for p in sorted(directory.glob("*.json")):
        try:
            out[p.stem] = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
    return out


# --- data -------------------------------------------------------------------------------
def ontology_file() -> Path:
    p = LUBM_DIR / "univ-bench.nt"
    return p if p.exists() else FIXTURES / "univ-bench.nt"


def count_lines(path: Path) -> int:
    opener = gzip.open if str(path).endswith(".gz") else open
    n = 0
    with opener(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            n += chunk.count(b"\n")
    return n


_UNIV_START = re.compile(rb"^<http://www\.University(\d+)\.edu> <http://swat\.cse\.lehigh\.edu/onto/univ-bench\.owl#name> ")


def _lubm_prefix(source: Path, universities: int, dest: Path) -> None:
    """LUBM(n) as the prefix of a larger LUBM(m) file, m > n.

    UBA seeds each university independently and the published files keep the
    first occurrence of each triple in (university, department) order, so
    LUBM(n,0) is exactly the lines of LUBM(m,0) before University<n>'s own
    section, which starts with its ``ub:name`` triple (preceded by its
    ``rdf:type ub:University`` triple when that was not stated earlier).
    """
    stop_type = f"<http://www.University{universities}.edu> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> ".encode()
    tmp = dest.with_suffix(".tmp")
    with gzip.open(source, "rb") as fin, open(tmp, "wb") as out:
        pending: bytes | None = None
        for line in fin:
            m = _UNIV_START.match(line)
            if m and int(m.group(1)) == universities:
                pending = None  # a type triple right before the name line belongs to University<n>
                break
            if pending is not None:
                out.write(pending)
            pending = line if line.startswith(stop_type) else None
            if pending is None:
                out.write(line)
        if pending is not None:
            out.write(pending)
    os.replace(tmp, dest)


def lubm_source(scale: int) -> tuple[Path, str]:
    """A (possibly gzipped) N-Triples file with LUBM(scale) data and how it was obtained.

    The published UBA files when present (``shared/data/lubm/lubm<N>.nt.gz``);
    smaller scales as a prefix of a larger published file; otherwise our
    deterministic generator (``fixtures/lubm_generator.py``, seed 0).
    """
    p = LUBM_DIR / f"lubm{scale}.nt.gz"
    if p.exists():
        return p, "uba"
    bigger = sorted(int(m.group(1)) for q in LUBM_DIR.glob("lubm*.nt.gz")
                    if (m := re.fullmatch(r"lubm(\d+)\.nt\.gz", q.name)) and int(m.group(1)) > scale)
    if bigger:
        dest = work_dir() / "data" / f"lubm{scale}-prefix.nt"
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            _lubm_prefix(LUBM_DIR / f"lubm{bigger[0]}.nt.gz", scale, dest)
        return dest, f"uba-prefix-of-lubm{bigger[0]}"
    if scale == 1 and (FIXTURES / "lubm1-gen.nt.gz").exists():
        return FIXTURES / "lubm1-gen.nt.gz", "generator"
    dest = work_dir() / "data" / f"lubm{scale}-gen.nt.gz"
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        sys.path.insert(0, str(FIXTURES))
        try:
            import lubm_generator  # type: ignore[import-not-found]
        finally:
            sys.path.remove(str(FIXTURES))
        lubm_generator.write(str(dest), scale, 0)
    return dest, "generator"


def plain_copy(path: Path) -> Path:
    """A decompressed copy of ``path`` in the work dir (``path`` itself when not gzipped)."""
    path = Path(path)
    if not path.name.endswith(".gz"):
        return path
    dest = work_dir() / "data" / path.name[:-3]
    if not dest.exists() or dest.stat().st_mtime < path.stat().st_mtime:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(".tmp")
        with gzip.open(path, "rb") as fin, open(tmp, "wb") as out:
            shutil.copyfileobj(fin, out, 1 << 22)
        os.replace(tmp, dest)
    return dest


def lubm_plain(scale: int) -> tuple[Path, str]:
    """LUBM(scale) as a plain (not gzipped) N-Triples file, so no system pays for gunzip."""
    src, how = lubm_source(scale)
    return plain_copy(src), how


def update_file(name: str) -> Path | None:
    """``shared/data/dynamite-updates/<name>.nt.gz`` or None when absent."""
    p = UPDATES_DIR / f"{name}.nt.gz"
    return p if p.exists() else None


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "–"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    if s < 100:
        return f"{s:.2f} s"
    return f"{s:.0f} s"


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
