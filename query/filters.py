"""FILTER evaluation over batches: vectorised on ids where the answer does not
need the terms (``bound``, ``isIRI`` and friends from an id's kind bits,
``=`` / ``!=`` between non-literals), otherwise once per distinct combination
of the expression's variables with :mod:`values` (SPARQL's three-valued
logic: true, false, error).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from rdflib import BNode, Literal, URIRef

from trine.store import arrays
from trine.store.keys import KIND_MASK
from trine.store.terms import BLANK, IRI, LITERAL, from_rdflib
from trine.store.txn import Txn

from .algebra import And, Call, Compare, Expr, Not, Or, Var, expression_variables
from .batch import UNBOUND, Batch
from .decoding import TermDecoder
from .values import EvalError, Term, ebv, evaluate, term_of_rdflib

__all__ = ["FilterEvaluator"]

T, F, E = 1, 0, 2   # three-valued results (E = error)
_KIND_BITS = np.uint32(KIND_MASK)
_KIND_TESTS = {"isiri": IRI, "isblank": BLANK, "isliteral": LITERAL}


class FilterEvaluator:
    """FILTER expressions over a batch, inside one read transaction."""

    def __init__(self, txn: Txn, dictionary: TermDecoder):
        self.txn = txn
        self.dict = dictionary
        self._const_ids: dict = {}
        self._const_terms: dict = {}

    def const_id(self, c) -> int | None:
        if c not in self._const_ids:
            self._const_ids[c] = self.txn.term_id(from_rdflib(c))
        return self._const_ids[c]

    def const_term(self, c) -> Term:
        t = self._const_terms.get(c)
        if t is None:
            t = self._const_terms[c] = term_of_rdflib(c)
        return t

    def mask(self, expr: Expr, batch: Batch) -> np.ndarray:
        """Rows whose FILTER value is true."""
        return self.tri(expr, batch) == T

    def tri(self, expr: Expr, b: Batch) -> np.ndarray:
        """Three-valued EBV of ``expr`` for every row (T, F or E)."""
        n = b.n
        if isinstance(expr, (And, Or)):
            # false decides a conjunction and true a disjunction, whatever the
            # other operands; short of that an error wins (SPARQL 17.2)
            decisive = F if isinstance(expr, And) else T
            decided = np.zeros(n, bool)
            erred = np.zeros(n, bool)
            for item in expr.items:
                r = self.tri(item, b)
                decided |= r == decisive
                erred |= r == E
            return np.where(decided, decisive, np.where(erred, E, 1 - decisive)).astype(np.int8)
        if isinstance(expr, Not):
            r = self.tri(expr.expr, b)
            return np.where(r == E, E, 1 - r).astype(np.int8)
        if isinstance(expr, Call):
            if expr.name == "bound":
                v = expr.args[0]
                col = b.cols.get(v)  # type: ignore[arg-type]
                if col is None:
                    return np.full(n, F, np.int8)
                return np.where(col != UNBOUND, T, F).astype(np.int8)
            if expr.name in _KIND_TESTS and isinstance(expr.args[0], Var):
                col = b.cols.get(expr.args[0])
                if col is None:
                    return np.full(n, E, np.int8)
                r = np.where((col & _KIND_BITS) == _KIND_TESTS[expr.name], T, F).astype(np.int8)
                r[col == UNBOUND] = E
                return r
        if isinstance(expr, Compare) and expr.op in ("=", "!=") and self._simple(expr.left) \
                and self._simple(expr.right) and Var in (type(expr.left), type(expr.right)):
            # (two constants compare once, on values: one the store lacks has no id)
            return self._equality(expr, b)
        return self._scalar(expr, b)

    @staticmethod
    def _simple(x) -> bool:
        return isinstance(x, (Var, URIRef, Literal, BNode))

    def _ids_and_kinds(self, x, b: Batch) -> tuple[np.ndarray | None, np.ndarray | None, object]:
        """(ids, kinds) of a Var or constant as arrays (None ids for a constant
        absent from the dictionary: then its kind is the third value)."""
        n = b.n
        if isinstance(x, Var):
            col = b.cols.get(x)
            if col is None:
                col = np.zeros(n, np.uint32)
            return col, (col & _KIND_BITS), None
        tid = self.const_id(x)
        kind = IRI if isinstance(x, URIRef) else (LITERAL if isinstance(x, Literal) else BLANK)
        if tid is None:
            return None, np.full(n, kind, np.uint32), kind
        return np.full(n, tid, np.uint32), np.full(n, kind, np.uint32), None

    def _equality(self, expr: Compare, b: Batch) -> np.ndarray:
        a_ids, a_kind, _ = self._ids_and_kinds(expr.left, b)
        b_ids, b_kind, _ = self._ids_and_kinds(expr.right, b)
        n = b.n
        out = np.empty(n, np.int8)
        both_lit = (a_kind == LITERAL) & (b_kind == LITERAL)
        if a_ids is not None and b_ids is not None:
            eq = a_ids == b_ids
        else:
            eq = np.zeros(n, bool)
        eq_t, eq_f = (T, F) if expr.op == "=" else (F, T)
        out[:] = np.where(eq, eq_t, eq_f)
        unbound = np.zeros(n, bool)
        if a_ids is not None:
            unbound |= a_ids == UNBOUND
        if b_ids is not None:
            unbound |= b_ids == UNBOUND
        # literals compare by value: decide those rows per distinct pair
        todo = both_lit & ~unbound
        if todo.any():
            sub = b.take(np.nonzero(todo)[0])
            out[todo] = self._scalar(expr, sub)
        out[unbound] = E
        return out

    def _scalar(self, expr: Expr, b: Batch) -> np.ndarray:
        """Three-valued EBV per row, evaluated once per distinct combination
        of the expression's variables."""
        if b.n == 0:
            return np.zeros(0, np.int8)
        consts = _ConstMap(self)
        inv, res = self._per_combination(expr, b, lambda lookup: _tri_scalar(expr, lookup, consts))
        return np.asarray(res, dtype=np.int8)[inv]

    def values_for(self, expr: Expr, b: Batch) -> tuple[np.ndarray, list]:
        """(inverse index per row, list of values per distinct combination) of
        an expression (errors become None): for ORDER BY keys."""
        consts = _ConstMap(self)
        return self._per_combination(expr, b, lambda lookup: _value_or_none(expr, lookup, consts))

    def _per_combination(self, expr: Expr, b: Batch, fn: Callable[[Callable], object]
                         ) -> tuple[np.ndarray, list]:
        """``fn(lookup)`` once per distinct combination of the ids of the
        expression's variables (``lookup(var)`` gives that combination's
        value); returns the row -> combination index and the results."""
        vars_ = [v for v in dict.fromkeys(expression_variables(expr)) if v in b.cols]
        if not vars_:
            return np.zeros(b.n, np.int64), [fn(lambda v: None)]
        if len(vars_) == 1:
            uniq, inv = arrays.unique_inverse(b.cols[vars_[0]])
            combos = uniq.reshape(-1, 1)
        else:
            stacked = np.stack([b.cols[v] for v in vars_], axis=1)
            combos, inv = np.unique(stacked, axis=0, return_inverse=True)
        self.dict.load_strings(arrays.unique(combos))
        value = self.dict.value
        out = []
        for combo in combos.tolist():
            env = dict(zip(vars_, combo))
            out.append(fn(lambda v, env=env: value(env.get(v, UNBOUND))))
        return inv.reshape(-1), out


class _ConstMap:
    """Mapping rdflib constant -> Term for :func:`values.evaluate`."""

    def __init__(self, ev: FilterEvaluator):
        self.ev = ev

    def get(self, c):
        return self.ev.const_term(c)


def _tri_scalar(expr: Expr, lookup: Callable, consts) -> int:
    try:
        return T if ebv(evaluate(expr, lookup, consts)) else F
    except EvalError:
        return E


def _value_or_none(expr: Expr, lookup: Callable, consts) -> Term | None:
    try:
        return evaluate(expr, lookup, consts)
    except EvalError:
        return None
