"""Plan execution on ids, a column (numpy array) per variable, batch at a time.

Solutions flow through the plan as :class:`Batch` es: one ``uint32`` array of
term ids per bound variable (id 0, which no term has, stands for "unbound").
The first pattern's range is read in one bulk call and cut into batches of
growing size (small first, so that LIMIT and ASK stop after little work); each
``Join`` turns a batch into zero or more output batches (output is chunked, so
a large cartesian product never needs all its rows in memory at once).

Join algorithms, chosen per join and per batch at run time:

* **index probes** (index nested loop, vectorised): the distinct values of
  one bound variable are looked up in one multi-key ``getmulti`` call on the
  index keyed by that position; the rows read are filtered on the pattern's
  constants and joined to the batch;
* **merge join**: the pattern's whole range is read once (cached for the rest
  of the query), sorted on the join key (the index order makes this a no-op
  in the common case), and the batch's keys are matched with binary search
  (``searchsorted``: a merge of two sorted id columns, done in C);
* a pattern whose variables are all bound already is a **semi-join**: a
  membership test of the batch keys (two variables packed in one ``uint64``).

The choice is a ski-rental rule: probe while the total cost of the probes so
far stays below the cost of reading the pattern's range; after that, read it
once and merge.  So a join that needs few lookups never reads a large range,
and one that needs many never does more than about twice the optimal work.

Terms are decoded only for answers (and for FILTER / ORDER BY value
comparisons, once per distinct id), in bulk (:mod:`decoding`); FILTERs are
evaluated by :mod:`filters`.
"""

from __future__ import annotations

import struct
from typing import Iterator

import numpy as np

from trine.store import arrays
from trine.store.txn import Txn

from . import access
from .algebra import Var
from .batch import UNBOUND, Batch
from .decoding import TermDecoder
from .filters import FilterEvaluator
from .planner import (
    Aggregate, Ask, Distinct, Empty, Filter, Join, OrderBy, PlanNode, Project, Scan, Slice, Unit,
)
from .values import order_key

__all__ = ["Executor"]

#: Output rows per batch a join may emit (larger outputs are split).
MAX_BATCH_ROWS = 1 << 19
#: Batch sizes of the first pattern's rows: first, growth factor, last.
FIRST_BATCH_STREAMING = 256
FIRST_BATCH = 1 << 16
MAX_SOURCE_BATCH = 1 << 18
#: Cost model of the probe/merge decision, in "index entries read" units.
KEY_COST = 40.0       # one B-tree descent of getmulti, relative to one entry
SORT_COST = 4.0       # argsort per entry, relative to reading it
#: Fan-out assumed for a key before sampling, and the batch size up to which a
#: semi-join looks each row up (one SPO seek per row) rather than reading the
#: pattern's range (if that range is no smaller than the batch).
FANOUT_GUESS = 64.0
SMALL_LOOKUP = 64
#: Batches up to this many rows join by cursor seeks (pure Python, no numpy).
SMALL_PROBE = 32
_ID_STRUCT = struct.Struct(">I")
_PAIR_STRUCT = struct.Struct(">II")
#: Probe results up to this many rows are kept for the next join of the query.
PROBE_CACHE_ROWS = 1 << 20
#: Testing hook: ``"probe"`` or ``"merge"`` forces that join algorithm.
FORCE_JOIN_METHOD: str | None = None


# ---------------------------------------------------------------------------
# Relations of one pattern
# ---------------------------------------------------------------------------


def _pattern_columns(rows: np.ndarray, ids: tuple) -> tuple[dict[Var, np.ndarray], np.ndarray | None]:
    """Columns per variable of the rows matching a pattern; repeated variables
    (``?x ?p ?x``) keep only the rows where their positions agree."""
    cols: dict[Var, np.ndarray] = {}
    mask = None
    for pos, x in enumerate(ids):
        if not isinstance(x, Var):
            continue
        if x in cols:
            m = cols[x] == rows[:, pos]
            mask = m if mask is None else (mask & m)
        else:
            cols[x] = rows[:, pos]
    if mask is not None:
        cols = {v: c[mask] for v, c in cols.items()}
    return cols, mask


def _unique(col: np.ndarray) -> np.ndarray:
    """Sorted distinct ids (a Python set is quicker than numpy for a few)."""
    if len(col) <= 64:
        return np.array(sorted(set(col.tolist())), dtype=np.uint32)
    return arrays.unique(col)


def _key(cols: list[np.ndarray]) -> np.ndarray:
    """One sortable key per row from one or two id columns."""
    if len(cols) == 1:
        return cols[0]
    return (cols[0].astype(np.uint64) << np.uint64(32)) | cols[1].astype(np.uint64)


class _Relation:
    """All matches of a pattern's constants, with a sorted join key."""

    __slots__ = ("cols", "n", "key_sorted", "order")

    def __init__(self, cols: dict[Var, np.ndarray], n: int, join_vars: tuple[Var, ...],
                 presorted: bool = False):
        self.cols = cols
        self.n = n
        if join_vars:
            key = _key([cols[v] for v in join_vars[:2]])
            if presorted:
                self.order = None
                self.key_sorted = key
            else:
                self.order = np.argsort(key, kind="stable")
                self.key_sorted = key[self.order]
        else:
            self.order = None
            self.key_sorted = None

    def column(self, v: Var, ri: np.ndarray) -> np.ndarray:
        idx = ri if self.order is None else self.order[ri]
        return self.cols[v][idx]


def _match_ranges(key_sorted: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo = np.searchsorted(key_sorted, keys, side="left")
    hi = np.searchsorted(key_sorted, keys, side="right")
    return lo, hi


def _expand(lo: np.ndarray, cnt: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(left index, right index) pairs of a join, ``MAX_BATCH_ROWS`` at a time."""
    total = int(cnt.sum())
    if total == 0:
        return
    if total <= MAX_BATCH_ROWS and total == np.count_nonzero(cnt):
        # every left row matches at most once (a functional property, a
        # semi-join-like step): no expansion needed
        li = np.flatnonzero(cnt)
        yield li, lo[li]
        return
    if total <= MAX_BATCH_ROWS:
        li = np.repeat(np.arange(len(cnt)), cnt)
        starts = np.cumsum(cnt) - cnt
        ri = np.arange(total, dtype=np.int64) - np.repeat(starts - lo, cnt)
        yield li, ri
        return
    ends = np.cumsum(cnt)
    starts = ends - cnt
    for a in range(0, total, MAX_BATCH_ROWS):
        out = np.arange(a, min(a + MAX_BATCH_ROWS, total), dtype=np.int64)
        li = np.searchsorted(ends, out, side="right")
        ri = lo[li] + (out - starts[li])
        yield li, ri


# ---------------------------------------------------------------------------
# The executor
# ---------------------------------------------------------------------------


class Executor:
    """Runs a plan inside one read transaction.

    ``streaming`` (LIMIT without ORDER BY / DISTINCT / aggregates, or ASK)
    makes the first batches small so the first answers come after little work.
    """

    def __init__(self, txn: Txn, explicit_only: bool = False, streaming: bool = False,
                 terms: dict | None = None):
        self.txn = txn
        self.explicit_only = explicit_only
        self.streaming = streaming
        self.dict = TermDecoder(txn, terms)
        self._filters: FilterEvaluator | None = None
        self._relations: dict[int, _Relation] = {}
        self._ranges: dict[tuple, tuple[np.ndarray, int | None, str]] = {}
        self._probe_cache: dict[tuple, tuple] = {}
        self._probe_spent: dict[int, float] = {}
        self._last_distinct: tuple[np.ndarray, np.ndarray] | None = None
        # (batch column, keys, rows, flags) of the last SPO probe: the next joins
        # of the same star find their subjects' triples in those rows
        self._star_read: tuple | None = None

    @property
    def filters(self) -> FilterEvaluator:
        if self._filters is None:
            self._filters = FilterEvaluator(self.txn, self.dict)
        return self._filters

    def fetch(self, s: int | None, p: int | None, o: int | None,
              sort_by: int | None = None) -> tuple[np.ndarray, int | None]:
        """:func:`access.fetch` with a per-query cache (planning reads some
        ranges for exact counts; execution reuses them)."""
        key = (s, p, o, sort_by)
        r = self._ranges.get(key)
        if r is None and sort_by is not None:
            r = self._ranges.get((s, p, o, None))
            if r is not None and r[1] != sort_by:
                r = None
        if r is None:
            info: dict = {}
            rows, sorted_pos = access.fetch(self.txn, s, p, o, sort_by=sort_by,
                                            explicit_only=self.explicit_only, info=info)
            r = self._ranges[key] = (rows, sorted_pos, info.get("index", ""))
        return r[0], r[1]

    def index_of(self, s, p, o) -> str:
        for key, r in self._ranges.items():
            if key[:3] == (s, p, o):
                return r[2]
        return ""

    # -- BGP ----------------------------------------------------------------
    def batches(self, node: PlanNode) -> Iterator[Batch]:
        """Solution batches of a BGP/filter subtree (counting ``actual``)."""
        if node.actual is None:
            node.actual = 0
        if isinstance(node, Empty):
            return
        if isinstance(node, Unit):
            node.actual += 1
            yield Batch({}, 1)
            return
        if isinstance(node, Scan):
            yield from self._scan(node)
            return
        if isinstance(node, Join):
            for b in self.batches(node.left):  # type: ignore[arg-type]
                if b.n == 0:
                    continue
                for out in self._join(node, b):
                    if out.n:
                        node.actual += out.n
                        yield out
            return
        if isinstance(node, Filter):
            for b in self.batches(node.child):  # type: ignore[arg-type]
                m = self.filters.mask(node.expr, b)  # type: ignore[arg-type]
                out = b if m.all() else b.take(np.nonzero(m)[0])
                if out.n:
                    node.actual += out.n
                    yield out
            return
        raise TypeError(f"not a BGP node: {type(node).__name__}")  # pragma: no cover

    def _scan(self, node: Scan) -> Iterator[Batch]:
        consts = tuple(None if isinstance(x, Var) else x for x in node.ids)
        size = FIRST_BATCH_STREAMING if self.streaming else FIRST_BATCH
        if consts == (None, None, None):
            # the whole store: one predicate's range at a time (LIMIT/ASK stop early)
            node.index = "pso (full scan, one predicate at a time)"
            for p in access.predicates(self.txn):
                rows, _ = access.fetch(self.txn, None, p, None, explicit_only=self.explicit_only)
                for b in self._cut(node, rows, size):
                    size = min(size * 4, MAX_SOURCE_BATCH)
                    yield b
            return
        rows, _ = self.fetch(*consts)
        node.index = self.index_of(*consts)
        yield from self._cut(node, rows, size)

    def _cut(self, node: Scan, rows: np.ndarray, size: int) -> Iterator[Batch]:
        """Batches of growing size from a pattern's rows."""
        cols, _ = _pattern_columns(rows, node.ids)
        n = len(next(iter(cols.values()))) if cols else len(rows)
        if not cols and n:  # a fully constant pattern that matched: one empty solution
            n = 1
        a = 0
        while a < n:
            b = min(n, a + size)
            node.actual += b - a  # type: ignore[operator]
            yield Batch({v: c[a:b] for v, c in cols.items()}, b - a)
            a = b
            size = min(size * 4, MAX_SOURCE_BATCH)

    def _relation(self, node: Join) -> _Relation:
        rel = self._relations.get(id(node))
        if rel is None:
            consts = tuple(None if isinstance(x, Var) else x for x in node.ids)
            sort_pos = None
            if node.join_vars:
                sort_pos = node.ids.index(node.join_vars[0])
            rows, sorted_pos = self.fetch(*consts, sort_by=sort_pos)
            node.fetched_rows += len(rows)
            cols, mask = _pattern_columns(rows, node.ids)
            n = len(next(iter(cols.values()))) if cols else len(rows)
            presorted = sorted_pos is not None and sorted_pos == sort_pos and (
                len(node.join_vars) == 1 or _key_follows_index(node))
            rel = self._relations[id(node)] = _Relation(cols, n, node.join_vars, presorted)
        return rel

    def _fanout_of(self, index: str, keys: np.ndarray) -> float:
        """Average entries per key of an index, from a small sample of keys."""
        sample = keys if len(keys) <= 8 else keys[:: len(keys) // 8][:8]
        total = 0
        for k in sample.tolist():
            total += self.txn.key_count(index, k)
        return total / max(1, len(sample))

    def _join(self, node: Join, b: Batch) -> Iterator[Batch]:
        if node.kind == "cross":
            yield from self._cross(node, b)
            return
        if self._star_read is not None and FORCE_JOIN_METHOD is None:
            out = self._star_step(node, b)
            if out is not None:
                yield out
                return
        if (node.kind == "semi-join" and b.n <= min(SMALL_LOOKUP, node.count) and FORCE_JOIN_METHOD is None
                and id(node) not in self._relations):
            node.methods["lookup"] = node.methods.get("lookup", 0) + 1
            out = self._lookup(node, b)
            if out is not None:
                yield out
            return
        if b.n <= SMALL_PROBE and FORCE_JOIN_METHOD is None and id(node) not in self._relations:
            shape = self._seek_shape(node)
            if shape is not None:
                node.methods["seek"] = node.methods.get("seek", 0) + 1
                out = self._seek(node, b, shape)
                if out is not None:
                    yield out
                return
        rel = self._relations.get(id(node))
        method = "merge"
        if rel is None:
            needs_sort = len(node.join_vars) > 1 and not _key_follows_index(node)
            bulk_cost = node.count * (1.0 + SORT_COST * needs_sort)
            if FORCE_JOIN_METHOD is None and self._probes_surely_dearer(node, b, bulk_cost):
                rel = self._relation(node)
                node.methods[method] = node.methods.get(method, 0) + 1
                yield from self._join_with(node, b, rel)
                return
            probe_var, index, keys, probe_cost = self._probe_choice(node, b, bulk_cost)
            spent = self._probe_spent.get(id(node), 0.0)
            if FORCE_JOIN_METHOD is not None:
                use_probe = FORCE_JOIN_METHOD == "probe"
            else:
                use_probe = spent + probe_cost <= bulk_cost
            if use_probe:
                self._probe_spent[id(node)] = spent + probe_cost
                method = "probe"
                rel = self._probe(node, probe_var, index, keys, b.cols[probe_var])
            else:
                rel = self._relation(node)
        node.methods[method] = node.methods.get(method, 0) + 1
        yield from self._join_with(node, b, rel)

    def _lookup(self, node: Join, b: Batch) -> Batch | None:
        """Semi-join of a few rows: one seek to the SPO entry per row."""
        s, p, o = (b.cols[x] if isinstance(x, Var) else x for x in node.ids)
        keep = self.txn.contained(s, p, o, self.explicit_only)
        node.probed_keys += b.n
        if not keep:
            return None
        return b if len(keep) == b.n else b.take(np.asarray(keep, dtype=np.int64))

    def _star_step(self, node: Join, b: Batch) -> Batch | None:
        """A join ``?x :p ?new`` answered from the SPO entries the last probe
        read for the same subjects (an earlier join of the star ``?x :q ?a .
        ?x :p ?b``), when ``:p`` gives each subject exactly one value: the
        value column is attached as it is.  None when the join is not of
        that kind; the general path then does it."""
        col, keys, rows, flags = self._star_read  # type: ignore[misc]
        s, p, o = node.ids
        if (not isinstance(s, Var) or b.cols.get(s) is not col or isinstance(p, Var)
                or not isinstance(o, Var) or node.new_vars != (o,)):
            return None
        m = rows[:, 1] == p
        if self.explicit_only:
            m &= flags
        sel = rows[m]
        # rows are in SPO order: equal to the batch column means the batch is
        # sorted, and then distinct subjects mean one value each
        if len(sel) != b.n or not bool((sel[:, 0] == col).all()) or not self._sorted_distinct(col):
            return None
        node.methods["probe"] = node.methods.get("probe", 0) + 1
        node.probed_keys += len(keys)
        cols = dict(b.cols)
        cols[o] = sel[:, 2]
        return Batch(cols, b.n)

    def _seek_shape(self, node: Join):
        """(key position, next position, third position) when a join can use
        cursor seeks: one bound variable, the other positions constants or
        distinct new variables; None otherwise."""
        ids = node.ids
        if len(node.join_vars) != 1:
            return None
        v = node.join_vars[0]
        if ids.count(v) != 1:
            return None
        new = [x for x in ids if isinstance(x, Var) and x != v]
        if len(new) != len(set(new)):
            return None
        key_pos = ids.index(v)
        others = [i for i in range(3) if i != key_pos]
        consts = [i for i in others if not isinstance(ids[i], Var)]
        next_pos = consts[0] if consts else others[0]
        third = others[1] if others[0] == next_pos else others[0]
        return key_pos, next_pos, third

    def _seek(self, node: Join, b: Batch, shape) -> Batch | None:
        """Join a few rows by cursor seeks: per distinct value of the bound
        variable, position on the index keyed by it (and by the pattern's
        constant, when there is one) and read just the matching entries.
        Less fixed cost than the vectorised probe for small batches."""
        key_pos, next_pos, third = shape
        ids = node.ids
        name = access.key_index(key_pos, next_pos)
        cur = self.txn.cursor(name)
        spo = name == "spo"
        explicit_only = self.explicit_only
        pack = _ID_STRUCT.pack
        unpack = _PAIR_STRUCT.unpack
        next_const = None if isinstance(ids[next_pos], Var) else ids[next_pos]
        third_const = None if isinstance(ids[third], Var) else ids[third]
        pfx = pack(next_const) if next_const is not None else None
        cache: dict[int, list] = {}
        out_left: list[int] = []
        out_second: list[int] = []
        out_third: list[int] = []
        for r, kv in enumerate(b.cols[ids[key_pos]].tolist()):
            entries = cache.get(kv)
            if entries is None:
                entries = []
                key = pack(kv)
                found = cur.set_range_dup(key, pfx) if pfx is not None else cur.set_key(key)
                if found:
                    for v in cur.iternext_dup():
                        if pfx is not None and v[:4] != pfx:
                            break
                        if spo and explicit_only and not v[8]:
                            continue
                        second, third_v = unpack(v[:8])
                        if third_const is not None and third_v != third_const:
                            continue
                        if explicit_only and not spo:
                            t = [0, 0, 0]
                            t[key_pos], t[next_pos], t[third] = kv, second, third_v
                            rec = self.txn.record(*t)
                            if rec is None or not rec.explicit:
                                continue
                        entries.append((second, third_v))
                cache[kv] = entries
            for second, third_v in entries:
                out_left.append(r)
                out_second.append(second)
                out_third.append(third_v)
        node.probed_keys += len(cache)
        if not out_left:
            return None
        if len(out_left) == b.n and not node.new_vars:
            return b
        out = b.take(np.asarray(out_left, dtype=np.int64))
        if next_const is None:
            out.cols[ids[next_pos]] = np.asarray(out_second, dtype=np.uint32)
        if third_const is None:
            out.cols[ids[third]] = np.asarray(out_third, dtype=np.uint32)
        return out

    def _probes_surely_dearer(self, node: Join, b: Batch, bulk_cost: float) -> bool:
        """Whether probing (at least one descent per distinct key) would cost
        more than reading the range, judged from a sample of the batch's keys
        (a large batch is not worth an exact count of its distinct keys)."""
        if b.n <= 4096 or b.n * KEY_COST <= bulk_cost:
            return False
        spent = self._probe_spent.get(id(node), 0.0)
        least = None
        for v in node.join_vars:
            col = b.cols[v]
            sample = col[:: b.n // 1024][:1024]
            distinct = b.n * len(np.unique(sample)) / len(sample)
            least = distinct if least is None else min(least, distinct)
        return spent + least * KEY_COST > 2 * bulk_cost  # type: ignore[operator]

    def _distinct(self, col: np.ndarray) -> np.ndarray:
        """:func:`_unique` of a batch column; the joins of a star pass the same
        column object along, so the last answer is kept."""
        last = self._last_distinct
        if last is not None and last[0] is col:
            return last[1]
        keys = _unique(col)
        self._last_distinct = (col, keys)
        return keys

    def _sorted_distinct(self, col: np.ndarray) -> bool:
        """Whether a sorted batch column holds no id twice; the memo of
        :meth:`_distinct` answers without a pass when it is this column."""
        last = self._last_distinct
        if last is not None and last[0] is col:
            return len(last[1]) == len(col)
        return bool((col[1:] != col[:-1]).all())

    def _probe_choice(self, node: Join, b: Batch, bulk_cost: float):
        """The bound variable whose index lookups read the fewest entries,
        and the estimated cost of probing with it."""
        best = None
        for v in node.join_vars:
            pos = node.ids.index(v)
            index = access.INDEX_FOR_KEY[pos]
            keys = self._distinct(b.cols[v])
            if len(node.join_vars) == 1 and len(keys) * (KEY_COST + FANOUT_GUESS) <= bulk_cost / 2:
                # clearly cheaper than reading the range, whatever the keys' fan-out
                return v, index, keys, len(keys) * (KEY_COST + FANOUT_GUESS)
            if len(keys) * KEY_COST > bulk_cost:
                # dearer than reading the range whatever the fan-out: not worth sampling
                if best is None:
                    best = (len(keys) * KEY_COST, v, index, keys)
                continue
            fan = self._fanout_of(index, keys)
            cost = len(keys) * (KEY_COST + fan)
            if best is None or cost < best[0]:
                best = (cost, v, index, keys)
        cost, v, index, keys = best  # type: ignore[misc]
        return v, index, keys, cost

    def _probe(self, node: Join, v: Var, index: str, keys: np.ndarray, col: np.ndarray) -> _Relation:
        """The pattern's matches among the index entries of ``keys`` (the
        distinct values of the batch column ``col`` of ``v``)."""
        node.probed_keys += len(keys)
        # joins of a star (?x :p ?a . ?x :q ?b ...) probe the same keys of the
        # same index one after the other: read them once
        ck = (index, len(keys), keys.tobytes())
        hit = self._probe_cache.get(ck)
        if hit is None:
            hit = access.fetch_keys(self.txn, index, keys, explicit=self.explicit_only)
            if len(hit[0]) <= PROBE_CACHE_ROWS:
                if len(self._probe_cache) >= 4:
                    self._probe_cache.pop(next(iter(self._probe_cache)))
                self._probe_cache[ck] = hit
        rows, flags = hit
        if index == "spo":
            self._star_read = (col, keys, rows, flags)
        mask = None
        for pos, x in enumerate(node.ids):
            if not isinstance(x, Var):
                m = rows[:, pos] == x
                mask = m if mask is None else mask & m
        if self.explicit_only:
            em = flags if flags is not None else access.explicit_mask(self.txn, rows)
            mask = em if mask is None else mask & em
        if mask is not None:
            rows = rows[mask]
        cols, _ = _pattern_columns(rows, node.ids)
        n = len(next(iter(cols.values()))) if cols else len(rows)
        presorted = len(node.join_vars) == 1 and node.join_vars[0] == v
        return _Relation(cols, n, node.join_vars, presorted)

    def _join_with(self, node: Join, b: Batch, rel: _Relation) -> Iterator[Batch]:
        jv = node.join_vars
        left_key = _key([b.cols[v] for v in jv[:2]])
        ks = rel.key_sorted
        if not node.new_vars and len(jv) <= 2:
            # semi-join: keys are unique on the pattern side
            pos = np.searchsorted(ks, left_key)
            pos_c = np.minimum(pos, max(len(ks) - 1, 0))
            found = (pos < len(ks)) & (ks[pos_c] == left_key) if len(ks) else np.zeros(b.n, bool)
            if found.all():
                yield b
            elif found.any():
                yield b.take(np.nonzero(found)[0])
            return
        extra = jv[2:]
        if (not extra and len(ks) == b.n and bool((ks == left_key).all())
                and self._sorted_distinct(left_key)):  # equal to ks, so sorted
            # the relation's keys are the batch's, row for row, and distinct
            # (a functional property of a star's subjects): its columns join
            # as they are
            cols = dict(b.cols)
            for v in node.new_vars:
                cols[v] = rel.column(v, np.arange(b.n)) if rel.order is not None else rel.cols[v]
            yield Batch(cols, b.n)
            return
        lo, hi = _match_ranges(ks, left_key)
        cnt = (hi - lo).astype(np.int64)
        if not extra and b.n <= MAX_BATCH_ROWS and bool((cnt == 1).all()):
            # every row matches exactly once (a functional property, e.g. each
            # member of a star's name): the batch's columns are kept as they are
            cols = dict(b.cols)
            for v in node.new_vars:
                cols[v] = rel.column(v, lo)
            yield Batch(cols, b.n)
            return
        for li, ri in _expand(lo, cnt):
            cols = {v: c[li] for v, c in b.cols.items()}
            for v in node.new_vars:
                cols[v] = rel.column(v, ri)
            out = Batch(cols, len(li))
            if extra:
                m = np.ones(len(li), bool)
                for v in extra:
                    m &= rel.column(v, ri) == cols[v]
                out = out.take(np.nonzero(m)[0])
            yield out

    def _cross(self, node: Join, b: Batch) -> Iterator[Batch]:
        rel = self._relation(node)
        node.methods["cross"] = node.methods.get("cross", 0) + 1
        if rel.n == 0:
            return
        cnt = np.full(b.n, rel.n, dtype=np.int64)
        lo = np.zeros(b.n, dtype=np.int64)
        for li, ri in _expand(lo, cnt):
            cols = {v: c[li] for v, c in b.cols.items()}
            for v in node.new_vars:
                cols[v] = rel.cols[v][ri]
            yield Batch(cols, len(li))

    # -- solution modifiers ---------------------------------------------------
    def solutions(self, node: PlanNode) -> Iterator[Batch]:
        """Batches of the final solutions (id columns) of a SELECT plan."""
        if node.actual is None:
            node.actual = 0
        if isinstance(node, Slice):
            skip, left = node.offset, node.limit
            if left == 0:
                return
            for b in self.solutions(node.child):  # type: ignore[arg-type]
                if skip:
                    if b.n <= skip:
                        skip -= b.n
                        continue
                    b = b.slice(skip, b.n)
                    skip = 0
                if left is not None:
                    if b.n >= left:
                        b = b.slice(0, left)
                        node.actual += b.n
                        yield b
                        return
                    left -= b.n
                node.actual += b.n
                yield b
            return
        if isinstance(node, Distinct):
            seen = _Seen()
            for b in self.solutions(node.child):  # type: ignore[arg-type]
                keep = seen.new_rows(b)
                if len(keep):
                    out = b if len(keep) == b.n else b.take(keep)
                    node.actual += out.n
                    yield out
            return
        if isinstance(node, Project):
            for b in self.solutions(node.child):  # type: ignore[arg-type]
                cols = {v: b.cols.get(v) for v in node.vars}
                for v, c in cols.items():
                    if c is None:
                        cols[v] = np.zeros(b.n, np.uint32)
                node.actual += b.n
                yield Batch(cols, b.n)
            return
        if isinstance(node, OrderBy):
            parts = list(self.batches(node.child))  # type: ignore[arg-type]
            if not parts:
                return
            variables = list(dict.fromkeys(v for p in parts for v in p.cols))
            whole = Batch.concat(parts, variables)
            order = self.order(node.keys, whole)
            for a in range(0, whole.n, MAX_SOURCE_BATCH):
                out = whole.take(order[a:a + MAX_SOURCE_BATCH])
                node.actual += out.n
                yield out
            return
        yield from self.batches(node)

    def ask(self, node: Ask) -> bool:
        node.actual = 0
        for b in self.batches(node.child):  # type: ignore[arg-type]
            if b.n:
                node.actual = 1
                return True
        return False

    def aggregate(self, node: Aggregate) -> list[int]:
        """COUNT values of an Aggregate node (one solution)."""
        node.actual = 1
        total = 0
        distinct: dict = {}
        all_rows = _Seen() if any(a.distinct and a.arg is None for a in node.aggregates) else None
        for b in self.batches(node.child):  # type: ignore[arg-type]
            total += b.n
            for a in node.aggregates:
                if a.distinct and a.arg is not None and a.arg in b.cols:
                    u = arrays.unique(b.cols[a.arg])
                    prev = distinct.get(a.arg)
                    distinct[a.arg] = u if prev is None else arrays.union(prev, u)
            if all_rows is not None:  # distinct solutions: blank-node variables are not in them
                all_rows.new_rows(Batch({v: c for v, c in b.cols.items() if not v.bnode}, b.n))
        out = []
        bound = _bound_vars(node.child)  # type: ignore[arg-type]
        for a in node.aggregates:
            if a.arg is None:
                out.append(all_rows.count if a.distinct else total)  # type: ignore[union-attr]
            elif a.arg not in bound:
                out.append(0)
            elif a.distinct:
                u = distinct.get(a.arg)
                out.append(0 if u is None else int(np.count_nonzero(u != UNBOUND)))
            else:
                out.append(total)
        return out

    def order(self, keys, batch: Batch) -> np.ndarray:
        """Row order of a batch by ORDER BY keys (SPARQL ordering)."""
        sort_cols = []
        for k in keys:
            expr = k.expr
            if isinstance(expr, Var):
                col = batch.cols.get(expr)
                if col is None:
                    inv, vals = np.zeros(batch.n, np.int64), [None]
                else:
                    uniq, inv = arrays.unique_inverse(col)
                    self.dict.load_strings(uniq)
                    vals = [self.dict.value(i) for i in uniq.tolist()]
            else:
                inv, vals = self.filters.values_for(expr, batch)
            keyed = sorted(range(len(vals)), key=lambda i: order_key(vals[i]))
            rank = np.empty(len(vals), np.int64)
            # equal keys share a rank so that later keys (and stability) decide
            prev = None
            r = -1
            for i in keyed:
                kk = order_key(vals[i])
                if kk != prev:
                    r += 1
                    prev = kk
                rank[i] = r
            rk = rank[inv.reshape(-1)]
            sort_cols.append(-rk if k.descending else rk)
        if not sort_cols:
            return np.arange(batch.n)
        return np.lexsort(tuple(reversed(sort_cols)))


def _key_follows_index(node: Join) -> bool:
    """Whether a two-variable join key comes sorted from the index: the
    pattern has one constant, so its range is read from an index keyed by it
    whose duplicates are ordered by the other two positions (first join
    variable first)."""
    jv = node.join_vars
    if len(jv) != 2:
        return False
    consts = sum(not isinstance(x, Var) for x in node.ids)
    return consts == 1 and jv[0] != jv[1] and node.ids.count(jv[0]) == 1 and node.ids.count(jv[1]) == 1


class _Seen:
    """Rows (id tuples) seen so far, for DISTINCT across batches."""

    def __init__(self) -> None:
        self.keys: list[np.ndarray] = []
        self.merged: np.ndarray | None = None
        self.tuples: set = set()
        self.count = 0

    def new_rows(self, b: Batch) -> np.ndarray:
        """Positions of the rows of ``b`` not seen before (first occurrences)."""
        cols = [b.cols[v] for v in b.cols]
        if b.n == 0:
            return np.zeros(0, np.int64)
        if not cols:
            if self.count:
                return np.zeros(0, np.int64)
            self.count = 1
            return np.zeros(1, np.int64)
        if len(cols) <= 2:
            key = _key(cols)
            _, first = arrays.unique_first(key)
            first.sort()
            if self.merged is not None and len(self.merged):
                first = first[~arrays.isin(key[first], self.merged)]
            if len(first):
                new = np.sort(key[first])
                self.merged = new if self.merged is None else arrays.union(self.merged, new)
            self.count += len(first)
            return first
        stacked = np.stack(cols, axis=1)
        _, first = np.unique(stacked, axis=0, return_index=True)
        first.sort()
        keep = []
        seen = self.tuples
        for i, row in zip(first.tolist(), map(tuple, stacked[first].tolist())):
            if row not in seen:
                seen.add(row)
                keep.append(i)
        self.count += len(keep)
        return np.asarray(keep, dtype=np.int64)


def _bound_vars(node: PlanNode) -> set:
    out: set = set()
    stack = [node]
    while stack:
        n = stack.pop()
        ids = getattr(n, "ids", ())
        out.update(x for x in ids if isinstance(x, Var))
        stack.extend(n.children())
    return out
