"""Sorted runs: the driver's subject ranges put partition i before partition i + 1."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_subject_ranges_partition_in_subject_order(spark):
    from pyspark.sql import functions as F

    from trine.reasoning.spark.runs import subject_ranges

    n, parts = 20_000, 6
    rows = spark.range(0, n).select(((F.col("id") * 7919) % 4000).alias("s"))  # repeated subjects too
    label = subject_ranges(spark, rows, n, parts)
    assert label is not None
    got = rows.withColumn("range", label).repartition(parts, "range") \
        .select("s", F.spark_partition_id().alias("pid")).collect()
    spans: dict[int, tuple[int, int]] = {}
    for s, pid in got:
        lo, hi = spans.get(pid, (s, s))
        spans[pid] = (min(lo, s), max(hi, s))
    assert len(got) == n and sorted(spans) == list(range(parts))
    for i in range(1, parts):
        assert spans[i - 1][1] < spans[i][0]      # ranges in partition order, a subject in one range
    assert subject_ranges(spark, rows, n, 1) is None
