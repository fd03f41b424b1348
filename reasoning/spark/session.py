"""The one place where trine creates (and configures) its SparkSession.

Configuration, in increasing precedence:

* defaults for a small machine: ``local[*]``, 8g of driver memory, the Spark
  UI off, log level WARN, ``spark.sql.shuffle.partitions`` = 8;
* the environment: ``TRINE_SPARK_MASTER`` (a Spark master URL) and
  ``TRINE_SPARK_CONF`` (``key=value`` entries separated by ``;`` or newlines);
* the caller: ``master=`` and ``conf=`` (a mapping, or ``key=value`` strings as
  given to the repeatable ``--spark-conf`` option).

The JVM's own settings (driver memory, extra JVM options) only take effect
when the first session of the process starts the JVM; later sessions with a
different master or conf stop the old SparkContext and start a new one in
the same JVM.  The driver JVM maps a class-data archive that trine records
once per machine (``class_archive_options``; ``TRINE_SPARK_CDS=off`` turns
it off).

pyspark is imported lazily: importing this module (for ``SparkUnavailable``)
works on a machine without Spark or Java.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from trine.store.database import StoreError

JAVA_MESSAGE = "trine: Spark needs Java 17+ (JAVA_HOME or java on PATH); use --engine local"
PYSPARK_MESSAGE = "trine: Spark needs pyspark (pip install 'trine[spark]'); use --engine local"

DEFAULT_MASTER = "local[*]"
DEFAULT_CONF: dict[str, str] = {
    "spark.driver.memory": "8g",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "false",
    # Let explicit broadcast hints decide; never broadcast by (unreliable) size estimates.
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.ansi.enabled": "false",
    "spark.python.worker.reuse": "true",
    "spark.driver.maxResultSize": "4g",
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    # Throughput collector for the short batch JVMs (only at JVM start).
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
    "spark.executor.extraJavaOptions": "-XX:+UseParallelGC",
}
# Local mode: no network, and shuffle files stay in the page cache, so
# compressing them only costs CPU.
_LOCAL_ONLY = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
               "spark.shuffle.compress": "false", "spark.shuffle.spill.compress": "false"}


class SparkUnavailable(StoreError):
    """Spark cannot run here (no Java, or no pyspark); use the local engine."""


_lock = threading.RLock()
_java_checked: str | None = None
_java_ids: dict[str, str] = {}     # java executable -> id of its path and version (archive names)
#: How this process's driver JVM uses the class-data archive: "mapped",
#: "recording", "off", or "" before the JVM starts.
jvm_class_archive = ""
_active_key: tuple | None = None


def java_executable() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        cand = os.path.join(home, "bin", "java")
        if os.access(cand, os.X_OK):
            return cand
    return shutil.which("java")


def _java_version(java: str) -> tuple[int | None, str]:
    """(major version, the full ``java -version`` text)."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None, ""
    text = out.stderr + out.stdout
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        return None, text
    major = int(m.group(1))
    return (int(m.group(2) or 0) if major == 1 else major), text


def check_spark() -> None:
    """Raise SparkUnavailable with one clear line if Spark cannot run here."""
    global _java_checked
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailable(PYSPARK_MESSAGE) from None
    java = java_executable()
    if java is None:
        raise SparkUnavailable(JAVA_MESSAGE)
    if _java_checked == java:
        return
    major, text = _java_version(java)
    if major is None or major < 17:
        raise SparkUnavailable(JAVA_MESSAGE)
    _java_checked = java
    _java_ids[java] = hashlib.sha1(f"{os.path.realpath(java)}\n{text}".encode()).hexdigest()[:12]


def parse_conf(entries: Mapping[str, Any] | Iterable[str] | str | None) -> dict[str, str]:
    """``key=value`` entries (a mapping, strings, or one ``;``/newline separated string)."""
    if entries is None:
        return {}
    if isinstance(entries, Mapping):
        return {str(k): str(v) for k, v in entries.items()}
    if isinstance(entries, str):
        entries = [e for e in re.split(r"[;\n]", entries)]
    out: dict[str, str] = {}
    for e in entries:
        e = e.strip()
        if not e:
            continue
        if "=" not in e:
            raise ValueError(f"Spark configuration entry {e!r} is not key=value")
        k, v = e.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def effective_settings(master: str | None = None,
                       conf: Mapping[str, Any] | Iterable[str] | str | None = None) -> tuple[str, dict[str, str]]:
    """The master URL and the Spark configuration a session would get."""
    m = master or os.environ.get("TRINE_SPARK_MASTER") or DEFAULT_MASTER
    c = dict(DEFAULT_CONF)
    if m.startswith("local"):
        c.update(_LOCAL_ONLY)
    # Executors run the driver's interpreter (trine and its dependencies must be installed there).
    c.setdefault("spark.pyspark.python", sys.executable)
    c.setdefault("spark.pyspark.driver.python", sys.executable)
    c.update(parse_conf(os.environ.get("TRINE_SPARK_CONF")))
    c.update(parse_conf(conf))
    return m, c


def get_session(master: str | None = None, conf: Mapping[str, Any] | Iterable[str] | str | None = None):
    """The process's SparkSession for these settings (created or reused)."""
    global _active_key, jvm_class_archive
    check_spark()
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    m, c = effective_settings(master, conf)
    key = (m, tuple(sorted(c.items())))
    with _lock:
        active = SparkSession.getActiveSession()
        if active is None:
            sc = SparkContext._active_spark_context
            if sc is not None and _active_key == key:
                active = SparkSession(sc)
        if active is not None and _active_key == key:
            return active
        if SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.stop()
            SparkSession._instantiatedSession = None
            SparkSession._activeSession = None
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if m.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        if SparkContext._gateway is None:   # options for the JVM about to start
            opts = c.get("spark.driver.extraJavaOptions", "")
            if "-Dlog4j.configurationFile" not in opts:
                # Quiet JVM start: WARN and above, without Spark's banner lines.
                opts += f" -Dlog4j.configurationFile={_log4j_file()}"
            java = java_executable()
            archive = class_archive_options(_java_ids.get(java or "", ""), opts)
            opts += " " + archive
            c["spark.driver.extraJavaOptions"] = opts.strip()
            jvm_class_archive = ("mapped" if "SharedArchiveFile" in archive
                                 else "recording" if "ArchiveClassesAtExit" in archive else "off")
        builder = SparkSession.builder.master(m).appName("trine")
        for k, v in c.items():
            builder = builder.config(k, v)
        try:
            spark = builder.getOrCreate()
        except Exception as e:  # a JVM that cannot start
            if "JAVA_GATEWAY_EXITED" in str(e) or "Java gateway process exited" in str(e):
                raise SparkUnavailable(JAVA_MESSAGE) from e
            raise
        spark.sparkContext.setLogLevel("WARN")
        _active_key = key
        return spark


_LOG4J = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n%ex
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.shell.name = org.apache.spark.repl.Main
logger.shell.level = error
"""


def _log4j_file() -> str:
    import tempfile
    path = os.path.join(tempfile.gettempdir(), f"trine-spark-log4j2-{os.getuid()}.properties")
    if not os.path.exists(path) or open(path).read() != _LOG4J:
        tmp = path + f".{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(_LOG4J)
        os.replace(tmp, path)
    return path


def stop_session() -> None:
    """Stop the process's Spark session, if any (the JVM stays up)."""
    global _active_key
    with _lock:
        try:
            from pyspark import SparkContext
            from pyspark.sql import SparkSession
        except ImportError:
            return
        if SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.stop()
        SparkSession._instantiatedSession = None
        SparkSession._activeSession = None
        _active_key = None


def whole_waves(n: int, cores: int, most: int) -> int:
    """``n`` tasks rounded to a whole number of waves on ``cores`` (7 tasks
    on 2 cores leave one core idle for the last), staying within ``most``."""
    if n <= cores:
        return n
    up = -(-n // cores) * cores
    return up if up <= most else max(cores, n // cores * cores)


# --- class-data archive -----------------------------------------------------------------
#: ``off`` (or 0/false/no) disables the archive.
CDS_ENV = "TRINE_SPARK_CDS"
#: 0xf00baba8, the magic of a dynamic archive; HotSpot writes the header after
#: every region, so a file that starts with it is complete.
_DYNAMIC_MAGIC = bytes.fromhex("a8ab0bf0")
_STALE_SECONDS = 3600


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "trine"


def class_archive_options(java_id: str, jvm_options: str = "") -> str:
    """JVM options for an application class-data archive (AppCDS) of the driver.

    A Spark JVM spends seconds loading and verifying its classes, and the
    code of every first job runs cold.  The first session on a machine
    records its classes when its JVM exits (``-XX:ArchiveClassesAtExit``,
    into a file of its own); a later session promotes that file once it is
    complete and maps it (``-XX:SharedArchiveFile``): start 5 s -> 2.5 s,
    a LUBM(50) load 77 s -> 70 s, LUBM(1) 19 s -> 14 s.  The recording
    session itself is slower (LUBM(1) 25 s).  The archive (about 190 MB)
    lives in ``~/.cache/trine``, one per pyspark version and Java build.
    Nothing is added when ``TRINE_SPARK_CDS=off``, when ``jvm_options``
    already name an archive, or when the cache cannot be written.
    """
    setting = os.environ.get(CDS_ENV, "").strip()
    if setting.lower() in ("0", "off", "false", "no") or not java_id:
        return ""
    if any(o in jvm_options for o in ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare")):
        return ""
    try:
        import pyspark
        path = cache_dir() / f"spark-{pyspark.__version__}-{java_id}.jsa"
        quiet = "-Xlog:cds=off -Xlog:cds+dynamic=off"
        _promote_recording(path)
        if path.is_file():
            return f"-XX:SharedArchiveFile={path} {quiet}"
        if _recordings(path):
            return ""   # another session is recording (its JVM writes at exit)
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"-XX:ArchiveClassesAtExit={path}.new-{os.getpid()} {quiet}"
    except OSError:
        return ""


def _recordings(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".new-*")) if path.parent.is_dir() else []


def _promote_recording(path: Path) -> None:
    """Move a complete recorded archive into place when there is none (and
    drop archives of other pyspark versions or Java builds); remove other
    complete recordings, and incomplete ones nobody finished in an hour."""
    for f in _recordings(path):
        try:
            with open(f, "rb") as r:
                complete = r.read(4) == _DYNAMIC_MAGIC
            if complete and not path.is_file():
                os.replace(f, path)
                for old in path.parent.glob("spark-*.jsa"):
                    if old != path:
                        old.unlink(missing_ok=True)
            elif complete or time.time() - f.stat().st_mtime > _STALE_SECONDS:
                f.unlink(missing_ok=True)
        except FileNotFoundError:   # another session moved or removed it
            continue
