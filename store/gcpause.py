"""Pausing Python's cyclic garbage collector around allocation-heavy work."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic collector while making many small objects that form
    no cycles (terms, tuples, records): otherwise its collections walk every
    young object again and again (measured: 15-25% of the maintenance time
    of a LUBM university update; a large share of decoding big results)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
