"""Fixtures of the Spark tests: one SparkSession per test run, inputs, dumps.

Every test here is marked ``spark``; they are skipped (with the reason)
when Java or pyspark is missing.  The cluster test is also ``slow`` and runs
last, since it switches the process's SparkContext to a standalone master.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
BUNDLED = ROOT / "fixtures" / "lubm1-gen.nt.gz"
ONTOLOGY = ROOT / "fixtures" / "univ-bench.nt"


def pytest_collection_modifyitems(config, items):
    """Run the cluster test(s) after every other test (they switch masters)."""
    last = [it for it in items if it.get_closest_marker("cluster")]
    if last:
        rest = [it for it in items if not it.get_closest_marker("cluster")]
        items[:] = rest + last


def pytest_configure(config):
    config.addinivalue_line("markers", "cluster: starts a Spark standalone cluster (runs last)")


@pytest.fixture(scope="session")
def spark():
    """The test run's SparkSession (skips when Spark cannot run here)."""
    from trine.reasoning.spark.session import SparkUnavailable, check_spark, get_session, stop_session

    try:
        check_spark()
    except SparkUnavailable as e:
        pytest.skip(f"{e} (the Spark tests need a JVM)")
    session = get_session()
    yield session
    stop_session()


@pytest.fixture(scope="session")
def shared_lubm1() -> list[Path]:
    lubm = SHARED / "data" / "lubm"
    files = [lubm / "lubm1.nt.gz", lubm / "univ-bench.nt"]
    if not all(f.exists() for f in files):
        pytest.skip(f"{lubm} not found: this test needs ../shared/data/lubm (present in CI, absent "
                    "from a user's clone; the bundled-fixture test covers the same path)")
    return files


@pytest.fixture(scope="session")
def bundled_lubm1() -> list[Path]:
    return [BUNDLED, ONTOLOGY]
