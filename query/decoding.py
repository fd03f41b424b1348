"""From term ids back to terms, for answers and FILTER / ORDER BY values only.

Ids are decoded in bulk (one ``getmulti`` on the id-to-term database per
batch of missing ids) and cached: rdflib terms in a cache shared by the
queries of one environment (ids are never reused within one), canonical
strings and parsed values (:mod:`values`) for the length of a query.
"""

from __future__ import annotations

import numpy as np
from rdflib import Literal, URIRef
from rdflib.term import Identifier

from trine.store import arrays
from trine.store.terms import to_rdflib
from trine.store.txn import Txn

from .batch import UNBOUND
from .values import Term, parse_term

__all__ = ["TermDecoder"]


def _bytes_to_term(b: bytes, _new=str.__new__, _U=URIRef, _L=Literal) -> Identifier:
    """rdflib term of canonical term bytes; IRIs without escapes skip
    URIRef's validation (stored IRIs are valid already)."""
    if b[0] == 60 and 92 not in b:  # '<' and no backslash
        return _new(_U, b[1:-1].decode("utf-8"))
    if b[0] == 34 and b[-1] == 34 and 92 not in b:  # a plain '"..."' literal
        return _L(b[1:-1].decode("utf-8"))
    return to_rdflib(b.decode("utf-8"))


class TermDecoder:
    """Bulk, cached decoding of term ids within one read transaction."""

    def __init__(self, txn: Txn, terms: dict | None = None):
        """``terms``: a cache of decoded terms shared with other queries on
        the same environment (ids are never reused within one)."""
        self.txn = txn
        self.strings: dict[int, str] = {}
        if terms is None:
            terms = {}
        terms[UNBOUND] = None
        self.terms: dict[int, Identifier | None] = terms
        self.values: dict[int, Term | None] = {UNBOUND: None}
        self._i2t_cursor = None

    @property
    def _i2t(self):
        if self._i2t_cursor is None:
            self._i2t_cursor = self.txn.txn.cursor(db=self.txn.dbs["i2t"])
        return self._i2t_cursor

    def _read(self, ids: list[int]) -> list[bytes]:
        """Canonical term bytes of ``ids`` (ascending), one getmulti call."""
        keys = np.asarray(ids, dtype=">u4").view("V4").tolist()
        res = self._i2t.getmulti(keys)
        if len(res) != len(ids):
            found = {int.from_bytes(k, "big") for k, _ in res}
            bad = next(i for i in ids if i not in found)
            raise KeyError(f"term id {bad} is not in the dictionary")
        return [v for _, v in res]

    def load_strings(self, ids: np.ndarray) -> None:
        """Make sure the canonical strings of ``ids`` (unique, sorted) are cached."""
        have = self.strings
        want = [i for i in ids.tolist() if i not in have and i != UNBOUND]
        if want:
            have.update(zip(want, [v.decode("utf-8") for v in self._read(want)]))

    def load_terms(self, ids: np.ndarray) -> dict:
        """rdflib terms for the ids of an array (cached); returns the cache."""
        terms = self.terms
        if len(ids) <= 256:
            missing = sorted({i for i in ids.tolist() if i not in terms})
        else:
            missing = [i for i in arrays.unique(ids).tolist() if i not in terms]
        if missing:
            terms.update(zip(missing, map(_bytes_to_term, self._read(missing))))
        return terms

    def value(self, tid: int) -> Term | None:
        v = self.values.get(tid)
        if v is None and tid != UNBOUND:
            s = self.strings.get(tid)
            if s is None:
                s = self.strings[tid] = self.txn.term(tid)
            v = self.values[tid] = parse_term(s)
        return v

    def load_values(self, ids: np.ndarray) -> None:
        uniq = arrays.unique(ids)
        self.load_strings(uniq)
