"""Solutions on ids: a column (numpy ``uint32`` array) of term ids per variable.

Every stage of the executor passes :class:`Batch` es along; id 0, which no
term has, stands for "unbound" (OPTIONAL, UNION branches, projections of
variables a group does not bind).
"""

from __future__ import annotations

import numpy as np

from .algebra import Var

__all__ = ["Batch", "UNBOUND"]

UNBOUND = 0


class Batch:
    """Solutions as columns: ``cols[var]`` is a uint32 array of ``n`` ids."""

    __slots__ = ("cols", "n")

    def __init__(self, cols: dict[Var, np.ndarray], n: int):
        self.cols = cols
        self.n = n

    def take(self, idx: np.ndarray) -> "Batch":
        """The rows at integer positions ``idx``."""
        return Batch({v: c[idx] for v, c in self.cols.items()}, len(idx))

    @staticmethod
    def concat(batches: list["Batch"], variables) -> "Batch":
        n = sum(b.n for b in batches)
        cols = {}
        for v in variables:
            parts = [b.cols[v] for b in batches if v in b.cols]
            if len(parts) == len(batches) and parts:
                cols[v] = np.concatenate(parts) if len(parts) > 1 else parts[0]
        return Batch(cols, n)

    def slice(self, a: int, b: int) -> "Batch":
        b = min(b, self.n)
        return Batch({v: c[a:b] for v, c in self.cols.items()}, max(0, b - a))
