"""trine's benchmark harness: ``python -m bench.run`` (``make bench``), ``python -m bench.report``."""
