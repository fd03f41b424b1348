"""trine's Spark bulk path (``trine load --engine spark``, ``trine materialise``).

Entry points (reasoning/spark/job.py)::

    load_spark(db, paths, skip_invalid=False, progress=None, *, master=None, conf=None,
               work_dir=None, keep_work_dir=False, runs="auto", exact=False) -> SparkLoadReport
    materialise_files(paths, out, fmt="parquet", *, master=None, conf=None, work_dir=None,
                      skip_invalid=False, annotate=False, progress=None) -> int

``Store.load(paths, engine="spark", **options)`` calls ``load_spark``.  The
store it builds equals the in-process load's byte for byte in its annotated
dump (and even in its ids: new terms are numbered in first-occurrence order
from the same ``next_serial``).

Pipeline (one module each):

* session.py: the one SparkSession (``local[*]``, 8g driver, UI off, WARN,
  8 shuffle partitions; ``TRINE_SPARK_MASTER``, ``TRINE_SPARK_CONF``, ``master=``,
  ``conf=``); ``SparkUnavailable`` when there is no Java 17+ or no pyspark.
* parse.py: Python workers parse N-Triples with ``trine.store.ntriples.parse_line``
  (exact file:line:column errors; gzip files split across cores by
  interleaved chunks), encode terms task-locally and write Parquet.
* encode.py: the dictionary in Spark (group on 64-bit term hashes, join with
  the existing dictionary, number new terms by first occurrence with a
  distributed zipWithIndex), triples mapped to ids (repeats are removed by
  the closure).
* fixed_schema.py: when the data cannot change the schema (the usual case),
  the closure in two passes: the schema closed in the driver, every triple's
  step from one broadcast join of the explicit triples with least-height
  tables, counts from one aggregation over the closure's rule instances.
* closure.py: anything else by semi-naive rounds = naive stages; schema
  triples (re)collected into the driver every round and broadcast; counts
  from one aggregation over all fired rule instances.
* runs.py: the aggregation writes the SPO run sorted (range partitions);
  Spark, or the driver while Spark still counts, produces the five other
  orders; and
  ``trine.store.bulk.build_environment_from_runs`` appends them all into a fresh LMDB
  environment with ``putmulti(append=True)``; ``Database.replace`` swaps it
  in only when complete.

Progress stages reported through ``progress(stage, n)`` (n is an increment):
``parse`` (input triples), ``encode`` (new terms), ``closure`` (new triples
per round), ``runs`` (triples), ``append`` (entries per database), and for
``materialise_files`` ``export``.
"""

from .session import SparkUnavailable

__all__ = ["SparkUnavailable"]
