"""The same job on a real Spark standalone cluster (a master and one worker
on 127.0.0.1, started with the launcher shipped in the pyspark package)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sparkutil import diff, local_dump, spark_dump

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.cluster]

START_TIMEOUT = 90


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(pred, timeout: float, what: str, logs: list[Path]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.25)
    tail = "\n".join(f"--- {p.name}:\n" + p.read_text(errors="replace")[-2000:] for p in logs if p.exists())
    pytest.fail(f"timed out after {timeout}s waiting for {what}\n{tail}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


@pytest.fixture
def standalone(tmp_path):
    import pyspark

    from trine.reasoning.spark.session import java_executable
    if java_executable() is None:
        pytest.skip("no Java: the cluster test needs a JVM")
    home = Path(pyspark.__file__).parent
    spark_class = home / "bin" / "spark-class"
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               SPARK_WORKER_DIR=str(tmp_path / "worker-work"), SPARK_LOG_DIR=str(tmp_path / "logs"))
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    master_log, worker_log = tmp_path / "master.log", tmp_path / "worker.log"
    procs = []
    try:
        with open(master_log, "wb") as out:
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", "0"], stdout=out, stderr=subprocess.STDOUT, env=env))
        _wait_for(lambda: "I have been elected leader" in master_log.read_text(errors="replace")
                  or procs[0].poll() is not None, START_TIMEOUT, "the Spark master", [master_log])
        assert procs[0].poll() is None, master_log.read_text(errors="replace")
        with open(worker_log, "wb") as out:
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--webui-port", "0", "--cores", "1", "--memory", "2g",
                 "--work-dir", str(tmp_path / "worker-work")], stdout=out, stderr=subprocess.STDOUT, env=env))
        _wait_for(lambda: "Successfully registered with master" in worker_log.read_text(errors="replace")
                  or procs[1].poll() is not None, START_TIMEOUT, "the Spark worker", [master_log, worker_log])
        assert procs[1].poll() is None, worker_log.read_text(errors="replace")
        yield url
    finally:
        from trine.reasoning.spark.session import stop_session
        stop_session()  # the next Spark user gets a fresh local session
        for p in reversed(procs):
            _stop(p)


def test_lubm1_on_a_standalone_cluster(standalone, tmp_path, bundled_lubm1):
    shared = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "lubm"
    files = ([shared / "lubm1.nt.gz", shared / "univ-bench.nt"]
             if (shared / "lubm1.nt.gz").exists() else bundled_lubm1)
    expected = local_dump(tmp_path / "local", files)
    conf = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.memory": "1g", "spark.cores.max": "1"}
    got = spark_dump(tmp_path / "cluster", files, master=standalone, conf=conf,
                     work_dir=tmp_path / "shared-work")
    assert got == expected, diff(got, expected)
    assert not any((tmp_path / "shared-work").iterdir())  # the work dir is cleaned up
