"""trine as an rdflib Store: ``rdflib.Graph(store="trine")``.

    >>> import rdflib
    >>> g = rdflib.Graph(store="trine")
    >>> g.open("my.db", create=True)
    >>> g.parse("data.ttl")
    >>> g.commit()                          # one LMDB write transaction
    >>> g.query("SELECT ?x WHERE { ?x a <http://example/B> }")
    >>> g.close()                           # commits what is pending

Design (docs/rdflib.md has the long form):

* **One default graph.**  ``context_aware = graph_aware = False``: a trine
  store holds one set of triples (plus its materialisation).  rdflib's
  ``Dataset`` and ``ConjunctiveGraph`` refuse such stores when they are built,
  and this store refuses context-free (union) calls as well, so named-graph
  code fails loudly instead of silently merging graphs.  Every
  ``Graph(store=s, identifier=...)`` over one store sees the same triples.
* **A view.**  By default the graph shows the explicit and the derived
  (rho-df) triples; ``TrineStore(inferred=False)`` (or ``?inferred=false`` in
  the open configuration) shows the explicit triples only.  ``add``,
  ``remove`` and ``len`` follow the view; reasoning runs in both.
* **Transactions.**  ``transaction_aware = True``: every change made between
  two commits is one LMDB write transaction, held open (with the store's
  writer lock) from the first change until ``commit()`` or ``close()``;
  ``rollback()`` aborts it and the store is exactly as before.  Reads during a
  pending transaction see its changes.  Without a pending transaction reads
  use a fresh read snapshot each time and never block.  A process that ends
  without ``commit()``/``close()`` loses the pending changes.
* **Batched reasoning.**  ``add``/``addN`` only buffer canonical triples; the
  buffer is reasoned over in one pass before the next read, remove, or
  commit (``Graph.parse`` is one pass).  Into an empty store the pass is the
  bulk materialisation (numpy) written into the pending transaction; else it
  is the incremental insertion.  Both give exactly the records of the
  native API (count and step are functions of the explicit triples).
* **Removal.**  ``remove`` takes patterns; it removes the matching explicit
  triples through the incremental deletion.  A derived triple cannot be
  removed: asking to do so changes nothing and warns
  (:class:`DerivedTripleWarning`), as does a removal after which derived
  triples still match.
* **SPARQL.**  rdflib's SPARQL engine runs unchanged, but basic graph
  patterns are handed to trine's planner and executor (trine/query, joins on
  ids): whole ``SELECT``/``ASK`` queries over one BGP through ``query()``
  (which ``Graph.query`` tries first), and the BGPs inside any other query
  through a custom evaluation (``CUSTOM_EVALS["trine"]``); the glue is
  trine/rdflib_sparql.py.  ``TrineStore(accelerate=False)`` or
  ``trine.rdflib.ACCELERATE = False`` turns both off.
* **Literals** are kept exactly as given (the store's canonical N-Triples form,
  ``"a"`` and ``"a"^^xsd:string`` being one term).  rdflib itself normalises
  literal lexical forms when it builds them (``"01"^^xsd:integer`` becomes
  ``"1"``) unless ``rdflib.NORMALIZE_LITERALS = False``.

Not thread-safe: use one TrineStore per thread (or a lock).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import warnings
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping
from urllib.parse import parse_qsl

import lmdb
import numpy as np
from rdflib import Literal, URIRef
from rdflib.graph import ConjunctiveGraph, Graph
from rdflib.plugins.sparql import CUSTOM_EVALS
from rdflib.plugins.sparql.sparql import FrozenBindings, QueryContext
from rdflib.query import Result
from rdflib.store import NO_STORE, VALID_STORE, Store
from rdflib.term import Identifier

from trine.query import access
from trine.query.api import prepare, snapshot_id

from trine.reasoning import maintenance
from trine.reasoning.materialise import materialise, to_columns
from trine.store.bulk import append_index, permutation_runs, unique_rows
from trine.store.database import Database, StoreError, WriterBusy
from trine.store.keys import PERMUTATIONS, make_id
from trine.store.terms import (
    _NEEDS_IRI_ESCAPE, _NEEDS_LITERAL_ESCAPE, RDF_LANGSTRING, XSD_STRING, TermError, from_rdflib, kind_of,
    to_rdflib,
)
from trine.store.txn import Txn, term_hash
from trine.store.vocab import FIRST_FREE_SERIAL, FIXED_IDS

from . import rdflib_sparql

__all__ = ["TrineStore", "DerivedTripleWarning", "ACCELERATE", "evaluate_bgp"]

#: Module-wide switch for the BGP acceleration (each store also has ``accelerate``).
ACCELERATE = True
#: A reasoning pass into an empty store uses the bulk materialisation from this many triples.
BULK_MIN = 64
#: Decoded terms kept per store (id -> rdflib term); cleared when full.
TERM_CACHE_MAX = 1 << 21

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

# Stores of this process that hold a pending write transaction, by store path:
# a second one would wait forever on the writer lock the first one holds.
_WRITERS: "weakref.WeakValueDictionary[str, TrineStore]" = weakref.WeakValueDictionary()
_WRITERS_LOCK = threading.Lock()


class DerivedTripleWarning(UserWarning):
    """A removal that left (or could not touch) derived triples."""


class _Pending:
    """The open write transaction and what has been done in it."""

    __slots__ = ("lock", "ltxn", "txn", "log", "buffer")

    def __init__(self, lock: Any, ltxn: lmdb.Transaction, txn: Txn):
        self.lock = lock
        self.ltxn = ltxn
        self.txn = txn
        self.log: list[Callable[[Txn], Any]] = []       # applied operations, for replay
        self.buffer: list[tuple[str, str, str]] = []   # added, not yet reasoned over


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"trine: configuration option {name}={value!r} is not a boolean")


def canonical(term: Any, _uri: type = URIRef, _lit: type = Literal, _iri_bad: Any = _NEEDS_IRI_ESCAPE.search,
              _lit_bad: Any = _NEEDS_LITERAL_ESCAPE.search, _join: Any = "".join,
              _str_eq: Any = str.__eq__) -> str:
    """``trine.store.terms.from_rdflib`` with a fast path for the common cases.

    ``"".join`` rather than ``+`` (URIRef's ``__radd__`` would make a URIRef) and
    ``str.__eq__`` rather than ``==`` (a URIRef never equals a plain str).
    """
    tt = type(term)
    if tt is _uri:
        if _iri_bad(term) is None:
            return _join(("<", term, ">"))
    elif tt is _lit:
        lang = term._language
        dt = term._datatype
        if _lit_bad(term) is None:
            if lang:
                return _join(('"', term, '"@', lang.lower()))
            if dt is None or _str_eq(dt, XSD_STRING):
                return _join(('"', term, '"'))
            if not _str_eq(dt, RDF_LANGSTRING) and _iri_bad(dt) is None:
                return _join(('"', term, '"^^<', dt, ">"))
    return from_rdflib(term)


def _canon(term: Any) -> str | None:
    """Canonical string of a pattern term; None for a term trine cannot hold."""
    try:
        return canonical(term)
    except (TermError, TypeError, ValueError):
        return None


def _canon_pattern(pattern: tuple[Any, Any, Any]) -> tuple[str | None, ...] | None:
    """Canonical strings of a triple pattern (None = any position); None when
    a term is one trine cannot hold, so nothing can match."""
    canon = []
    for x in pattern:
        if x is None:
            canon.append(None)
            continue
        c = _canon(x)
        if c is None:
            return None
        canon.append(c)
    return tuple(canon)


class TrineStore(Store):
    """An rdflib Store over a trine store directory (see the module docstring).

    ``TrineStore(path)`` opens (creating if needed) the store at ``path``;
    ``TrineStore()`` is opened later with ``Graph.open(path, create=True)``.
    ``inferred`` picks the view (explicit + derived, or explicit only),
    ``accelerate`` the id-level BGP evaluation, ``readonly`` opens the store
    without ever taking its writer lock (namespace bindings then stay in memory).
    """

    context_aware = False
    formula_aware = False
    transaction_aware = True
    graph_aware = False

    def __init__(self, configuration: Any = None, identifier: Identifier | None = None, *,
                 inferred: bool = True, accelerate: bool = True, readonly: bool = False):
        super().__init__(None, identifier)
        self.identifier = identifier
        self.inferred = inferred
        self.accelerate = accelerate
        self.readonly = readonly
        self._db: Database | None = None
        self._w: _Pending | None = None
        self._key: str | None = None
        self._terms: dict[int, Identifier] = {}
        self._terms_env: Any = None
        self._ns_changes: dict[str, str | None] = {}   # uncommitted bindings (None = unbound)
        self._ns_cache: tuple[Any, dict[str, str]] | None = None
        self._ns_uris: dict[str, URIRef] = {}
        self._ns_list: tuple[dict, tuple, list[tuple[str, URIRef]]] | None = None
        if configuration:
            self.open(configuration, create=not readonly)

    # --- lifecycle ---------------------------------------------------------------
    def _parse_configuration(self, configuration: Any) -> Path:
        opts: dict[str, Any] = {}
        if isinstance(configuration, Mapping):
            opts = dict(configuration)
            path = opts.pop("path", None)
        elif isinstance(configuration, tuple):
            path = configuration[0]
        else:
            path = configuration
            if isinstance(path, str) and "?" in path:
                path, query = path.split("?", 1)
                opts = dict(parse_qsl(query, keep_blank_values=True))
        if path is None or str(path) == "":
            raise ValueError("trine: the open configuration must name a store directory")
        for name, value in opts.items():
            if name not in ("inferred", "accelerate", "readonly"):
                raise ValueError(f"trine: unknown configuration option {name!r} "
                                 "(known: inferred, accelerate, readonly)")
            setattr(self, name, _flag(value, name))
        return Path(os.fspath(path))

    def open(self, configuration: Any, create: bool = False) -> int:
        """Open the store directory named by ``configuration``.

        ``configuration`` is a path, optionally followed by options
        (``"db?inferred=false&accelerate=false&readonly=true"``), or a mapping
        ``{"path": ..., "inferred": False, ...}``.  Returns ``VALID_STORE``, or
        ``NO_STORE`` when there is no store there and ``create`` is false.
        """
        if self._db is not None:
            self.close()
        path = self._parse_configuration(configuration)
        if not (path / "CURRENT").exists() and not create:
            return NO_STORE
        self._db = Database(path, create=create and not self.readonly, readonly=self.readonly)
        self._key = os.path.realpath(path)
        self._ns_changes = {}
        self._ns_cache = None
        return VALID_STORE

    def close(self, commit_pending_transaction: bool = True) -> None:
        """Commit what is pending and close the store.

        rdflib's ``Graph.close()`` passes ``commit_pending_transaction=False``
        by default; trine commits anyway (call ``rollback()`` first to discard).
        """
        if self._db is None:
            return
        try:
            if self.in_transaction:
                self.commit()
        finally:
            if self._w is not None:       # the commit failed: abort, release the writer lock
                self.rollback()
            self._db.close()
            self._db = None
            self._clear_terms()

    def destroy(self, configuration: Any) -> None:
        """Delete a store directory (only one that holds a trine store)."""
        path = self._parse_configuration(configuration)
        if self._db is not None and os.path.realpath(path) == self._key:
            self.rollback()
            self.close()
        if (path / "CURRENT").exists():
            shutil.rmtree(path)

    def __repr__(self) -> str:
        where = self._db.path if self._db is not None else "not open"
        return f"<TrineStore {where} inferred={self.inferred} accelerate={self.accelerate}>"

    @property
    def database(self) -> Database:
        if self._db is None:
            raise StoreError("trine: the store is not open; call graph.open(path, create=True)")
        return self._db

    @property
    def path(self) -> Path:
        return self.database.path

    # --- transactions --------------------------------------------------------------
    def _begin(self) -> _Pending:
        db = self.database
        if self.readonly:
            raise StoreError(f"{db.path}: opened read-only")
        with _WRITERS_LOCK:
            self._check_other_writer()
            _WRITERS[self._key] = self  # type: ignore[index]
        lock = db.writer_lock(wait=True, on_wait=lambda: print(
            f"trine: {db.path}: waiting for another process to finish writing...", file=sys.stderr))
        try:
            lock.__enter__()
        except BaseException:
            self._forget_writer()
            raise
        try:
            ltxn, txn = self._new_txn()
        except BaseException:
            lock.__exit__(*sys.exc_info())
            self._forget_writer()
            raise
        self._w = _Pending(lock, ltxn, txn)
        return self._w

    def _check_other_writer(self) -> None:
        holder = _WRITERS.get(self._key) if self._key is not None else None
        if holder is not None and holder is not self:
            raise WriterBusy(f"{self.database.path}: another TrineStore of this process has "
                             "uncommitted changes in this store; commit() or rollback() it first")

    def _new_txn(self) -> tuple[lmdb.Transaction, Txn]:
        db = self.database
        with db.read() as t:      # also reopens the environment if a bulk load swapped it
            dbs = t.dbs
        env = db.env
        while True:
            try:
                ltxn = env.begin(write=True)
                break
            except lmdb.MapResizedError:
                env.set_mapsize(0)
        return ltxn, Txn(ltxn, dbs, write=True)

    def _forget_writer(self) -> None:
        with _WRITERS_LOCK:
            if self._key is not None and _WRITERS.get(self._key) is self:
                del _WRITERS[self._key]

    def _end(self) -> None:
        w, self._w = self._w, None
        if w is not None:
            try:
                w.lock.__exit__(None, None, None)
            finally:
                self._forget_writer()

    def _replay(self, w: _Pending, grow: bool) -> None:
        """Abort the LMDB transaction and redo the logged operations in a new one."""
        _abort(w.ltxn)
        env = self.database.env
        while True:
            if grow:
                env.set_mapsize(env.info()["map_size"] * 2)
            w.ltxn, w.txn = self._new_txn()
            try:
                for op in w.log:
                    op(w.txn)
                return
            except lmdb.MapFullError:
                _abort(w.ltxn)
                grow = True

    def _apply(self, op: Callable[[Txn], Any]) -> Any:
        """Run one operation in the pending transaction (begun if needed).

        An operation is all or nothing: if it fails, the transaction is rebuilt
        from the operations before it.  A full map is grown and the
        operation retried.
        """
        w = self._w or self._begin()
        while True:
            try:
                result = op(w.txn)
            except lmdb.MapFullError:
                self._replay(w, grow=True)
                continue
            except BaseException:
                self._replay(w, grow=False)
                raise
            w.log.append(op)
            return result

    def commit(self) -> None:
        """Commit the pending transaction (if any): one LMDB write transaction.

        Namespace bindings made since the last commit are written with it (on
        a read-only store they stay in memory).
        """
        if self._ns_changes and not self.readonly:
            op = _BindOp(tuple(self._ns_changes.items()))
            if self._w is None:
                self._check_other_writer()
                self.database.write(op)
            else:
                self._apply(op)
            self._ns_changes = {}
        w = self._w
        if w is None:
            return
        self._flush()       # if reasoning fails, the transaction stays pending without that batch
        while True:
            try:
                w.txn.flush()
                w.ltxn.commit()
                break
            except lmdb.MapFullError:
                self._replay(w, grow=True)
            except BaseException:
                _abort(w.ltxn)
                self._end()
                self._clear_terms()
                raise
        self._end()

    def rollback(self) -> None:
        """Abort the pending transaction: the store is as at the last commit."""
        if not self.readonly:
            self._ns_changes = {}
        w = self._w
        if w is None:
            return
        try:
            _abort(w.ltxn)
        finally:
            self._end()
            self._clear_terms()   # ids allocated in the aborted transaction will be reused

    @property
    def in_transaction(self) -> bool:
        """True while changes (triples or namespace bindings) are not yet committed."""
        return self._w is not None or (bool(self._ns_changes) and not self.readonly)

    @contextmanager
    def _reading(self, flush: bool = True) -> Iterator[Txn]:
        """The pending write transaction (after reasoning over the buffer), or a read snapshot."""
        if self._w is not None:
            if flush:
                self._flush()
            yield self._w.txn
            return
        with self.database.read() as txn:
            yield txn

    # --- reasoning over buffered additions -------------------------------------------
    def _flush(self) -> None:
        w = self._w
        if w is None or not w.buffer:
            return
        batch, w.buffer = w.buffer, []
        self._apply(_AddOp(batch))

    # --- rdflib Store API: triples --------------------------------------------------
    def _check_context(self, context: Any) -> None:
        if context is None or isinstance(context, ConjunctiveGraph):
            raise TypeError(
                "trine: this store holds a single default graph (context_aware=False); use "
                "rdflib.Graph, not Dataset/ConjunctiveGraph or context-free store calls")

    def add(self, triple: tuple[Any, Any, Any], context: Any = None, quoted: bool = False) -> None:
        """Add an explicit triple; reasoning runs before the next read or commit."""
        if quoted:
            raise TypeError("trine: the store is not formula-aware (no quoted graphs)")
        self._check_context(context)
        s, p, o = triple
        canon = (canonical(s), canonical(p), canonical(o))
        w = self._w or self._begin()
        w.buffer.append(canon)
        if getattr(self.dispatcher, "_dispatch_map", None):
            Store.add(self, triple, context, quoted)

    def addN(self, quads: Iterable[tuple[Any, Any, Any, Any]]) -> None:  # noqa: N802
        """Add many triples (the context of each quad must be a plain Graph)."""
        w = None
        for s, p, o, c in quads:
            self._check_context(c)
            canon = (canonical(s), canonical(p), canonical(o))
            if w is None:
                w = self._w or self._begin()
            w.buffer.append(canon)

    def remove(self, triple: tuple[Any, Any, Any], context: Any = None) -> None:
        """Remove the explicit triples matching a pattern (None = any).

        Derived triples are not removed: a pattern that names only derived
        triples changes nothing and warns (:class:`DerivedTripleWarning`), as
        does a removal after which derived triples still match the pattern.
        """
        self._check_context(context)
        canon = _canon_pattern(triple)
        if canon is None:
            return
        if self._w is None and not self._matches_any(canon):
            return          # nothing to do: do not take the writer lock
        self._flush()
        res = self._apply(_RemoveOp(canon, self.inferred))
        if getattr(self.dispatcher, "_dispatch_map", None):
            Store.remove(self, triple, context)
        _warn_removal(triple, res, self.inferred)

    def _matches_any(self, canon: tuple[str | None, ...]) -> bool:
        with self._reading() as txn:
            ids = _lookup(txn, canon)
            if ids is None:
                return False
            return txn.count(*ids) > 0

    def triples(self, triple_pattern: tuple[Any, Any, Any], context: Any = None
                ) -> Iterator[tuple[tuple[Identifier, Identifier, Identifier], Iterator[Any]]]:
        """Triples of the view matching a pattern, as ``((s, p, o), contexts)``.

        The store has no named graphs, so ``contexts`` is always an empty iterator.
        """
        self._check_context(context)
        canon = _canon_pattern(triple_pattern)
        if canon is None:
            return
        if self._w is not None:
            # rows of the pending write transaction are decoded at once: the
            # caller may change the store (or commit) while iterating
            with self._reading() as txn:
                found = list(self._match(txn, canon))
            for t in found:
                yield t, iter(())
            return
        with self._reading() as txn:
            for t in self._match(txn, canon):
                yield t, iter(())

    def _match(self, txn: Txn, canon: tuple[str | None, ...]) -> Iterator[tuple[Identifier, Identifier, Identifier]]:
        ids = _lookup(txn, canon)
        if ids is None:
            return
        s, p, o = ids
        explicit_only = not self.inferred
        if s is not None and p is not None and o is not None:
            rec = txn.record(s, p, o)
            if rec is None or (explicit_only and not rec.explicit):
                return
            arr = [(s, p, o)]
        else:
            arr = access.fetch(txn, s, p, o, explicit_only=explicit_only)[0].tolist()
        decode = self._decoder(txn)
        for a, b, c in arr:
            yield decode(a), decode(b), decode(c)

    def __len__(self, context: Any = None) -> int:
        self._check_context(context)
        with self._reading() as txn:
            return txn.n_triples() if self.inferred else txn.n_explicit()

    def contexts(self, triple: Any = None) -> Iterator[Any]:
        return iter(())

    # --- decoding --------------------------------------------------------------------
    def _term_cache(self) -> dict[int, Identifier]:
        """Decoded terms (id -> rdflib term) of this store's environment.

        Ids are never reused within an environment except after a rollback
        (which clears the cache); a bulk load builds a new environment.
        """
        env = self.database.env
        if env is not self._terms_env or len(self._terms) > TERM_CACHE_MAX:
            self._terms = {}
            self._terms_env = env
        return self._terms

    def _decoder(self, txn: Txn) -> Callable[[int], Identifier]:
        cache = self._term_cache()
        term = txn.term

        def decode(tid: int) -> Identifier:
            t = cache.get(tid)
            if t is None:
                t = cache[tid] = to_rdflib(term(tid))
            return t
        return decode

    def _clear_terms(self) -> None:
        self._terms = {}
        self._terms_env = None

    # --- namespaces ----------------------------------------------------------------
    def _ns_table(self) -> dict[str, str]:
        table = dict(self._stored_namespaces())
        for p, n in self._ns_changes.items():
            if n is None:
                table.pop(p, None)
            else:
                table[p] = n
        return table

    def _stored_namespaces(self) -> dict[str, str]:
        """The committed bindings, cached until the environment sees another commit.

        (A pending transaction never changes them: bindings are written at commit.)
        """
        env = self.database.env
        stamp = (env, env.info()["last_txnid"])
        if self._ns_cache is None or self._ns_cache[0] != stamp:
            with self._reading(flush=False) as txn:
                table = dict(txn.namespaces())
            self._ns_cache = (stamp, table)
        return self._ns_cache[1]

    def bind(self, prefix: str, namespace: URIRef, override: bool = True) -> None:
        """Bind ``prefix`` to ``namespace`` (rdflib 7's override semantics).

        With ``override`` the prefix is (re)bound and any other prefix of the
        namespace dropped; without it an existing binding of either wins.
        Bindings are kept in the store, written at the next ``commit()`` (or
        ``close()``) and dropped by ``rollback()``: binding alone never takes
        the writer lock.
        """
        prefix = "" if prefix is None else str(prefix)
        namespace = str(namespace)
        table = self._ns_table()
        bound_ns = table.get(prefix)
        bound_prefixes = [p for p, n in table.items() if n == namespace]
        if override:
            drop = [p for p in bound_prefixes if p != prefix]
            if bound_ns == namespace and not drop:
                return
            for p in drop:
                self._ns_changes[p] = None
            self._ns_changes[prefix] = namespace
        elif not bound_prefixes and bound_ns is None:
            self._ns_changes[prefix] = namespace

    def unbind(self, prefix: str) -> None:
        """Remove a prefix binding (not part of rdflib's Store API; committed like ``bind``)."""
        prefix = "" if prefix is None else str(prefix)
        if prefix in self._ns_table():
            self._ns_changes[prefix] = None

    def namespace(self, prefix: str) -> URIRef | None:
        ns = self._ns_table().get(prefix)
        return URIRef(ns) if ns is not None else None

    def prefix(self, namespace: URIRef) -> str | None:
        namespace = str(namespace)
        for p, n in self._ns_table().items():
            if n == namespace:
                return p
        return None

    def namespaces(self) -> Iterator[tuple[str, URIRef]]:
        # rdflib's Graph.query lists the namespaces on every call: the sorted
        # list is kept until the committed table or the pending changes differ
        stored = self._stored_namespaces()
        changes = tuple(self._ns_changes.items())
        hit = self._ns_list
        if hit is None or hit[0] is not stored or hit[1] != changes:
            uris = self._ns_uris
            pairs = []
            for p, n in sorted(self._ns_table().items()):
                u = uris.get(n)
                if u is None:
                    u = uris[n] = URIRef(n)
                pairs.append((p, u))
            hit = self._ns_list = (stored, changes, pairs)
        return iter(hit[2])

    # --- SPARQL: BGPs handed to trine.query (trine/rdflib_sparql.py) -------------------
    @contextmanager
    def prepared(self, query: Any) -> Iterator[tuple[Any, Any]]:
        """``(plan, executor)`` of a trine.query ``Query`` in this store's current
        transaction (the pending write transaction, after reasoning over the
        buffer, or a fresh read snapshot), in the graph's view."""
        with self._reading() as txn:
            # plans and statistics are cached per committed snapshot only: a
            # pending write transaction changes under one LMDB transaction id
            snapshot = None if self._w is not None else snapshot_id(self.database.env, txn)
            yield prepare(txn, query, explicit_only=not self.inferred, snapshot=snapshot,
                          terms=self._term_cache())

    def evaluate_bgp(self, ctx: QueryContext, bgp: Any, project: list[Any] | None = None,
                     distinct: bool = False) -> Iterator[FrozenBindings]:
        """Solutions of an rdflib BGP merged with ``ctx``'s bindings; with
        ``project`` (and ``distinct``) projected (and without duplicates)."""
        return rdflib_sparql.bgp_solutions(self, ctx, bgp, project, distinct)

    def query(self, query: Any, initNs: Mapping[str, Any], initBindings: Mapping[str, Any],  # noqa: N803
              queryGraph: Any, **kwargs: Any) -> Result:
        """A whole SELECT/ASK query over one BGP, answered by trine.query.

        ``Graph.query`` calls this first; NotImplementedError hands the query
        back to rdflib's own evaluation (which still gives its BGPs to trine).
        """
        if not (ACCELERATE and self.accelerate) or self._db is None or initBindings \
                or queryGraph == "__UNION__" or not set(kwargs) <= {"base", "DEBUG"}:
            raise NotImplementedError
        wq = rdflib_sparql.whole_query(query, initNs, kwargs.get("base"))
        if wq is None:
            raise NotImplementedError
        return rdflib_sparql.run_whole_query(self, wq)


def _abort(ltxn: lmdb.Transaction) -> None:
    try:
        ltxn.abort()
    except lmdb.Error:
        pass


def _lookup(txn: Txn, canon: tuple[str | None, ...]) -> tuple[int | None, ...] | None:
    """Ids of a canonical pattern (None = any); None if a term is unknown."""
    out = []
    for c in canon:
        if c is None:
            out.append(None)
            continue
        tid = txn.term_id(c)
        if tid is None:
            return None
        out.append(tid)
    return tuple(out)


# --- operations run in the pending transaction (replayable) --------------------------

class _AddOp:
    """Intern and reason over a batch of added canonical triples."""

    __slots__ = ("batch",)

    def __init__(self, batch: list[tuple[str, str, str]]):
        self.batch = batch

    def __call__(self, txn: Txn) -> None:
        ids = intern_batch(txn, self.batch)
        if txn.n_triples() == 0 and len(ids) >= BULK_MIN:
            _bulk_insert(txn, ids)
        else:
            maintenance.insert(txn, [tuple(r) for r in ids.tolist()])


def intern_batch(txn: Txn, triples: list[tuple[str, str, str]]) -> np.ndarray:
    """Ids of canonical triples as an (n, 3) array, adding new terms to the dictionary.

    New terms get consecutive serials in order of first appearance, exactly
    as ``Txn.intern`` one term at a time would give them.
    """
    flat = [x for t in triples for x in t]
    distinct = dict.fromkeys(flat)
    first_free = txn.allocate_serials(0)
    new: list[str] = []
    if first_free <= FIRST_FREE_SERIAL:          # only the fixed vocabulary exists
        for term in distinct:
            tid = FIXED_IDS.get(term)
            if tid is None:
                new.append(term)
            else:
                distinct[term] = tid
    else:
        term_id = txn.term_id
        for term in distinct:
            tid = term_id(term)
            if tid is None:
                new.append(term)
            else:
                distinct[term] = tid
    if new:
        first = txn.allocate_serials(len(new))
        new_ids = [make_id(first + k, kind_of(term)) for k, term in enumerate(new)]
        for term, tid in zip(new, new_ids):
            distinct[term] = tid
        _put_terms(txn, new, new_ids)
    return np.fromiter(map(distinct.__getitem__, flat), dtype=np.uint32, count=len(flat)).reshape(-1, 3)


def _put_terms(txn: Txn, terms: list[str], ids: list[int]) -> None:
    """``Txn.put_term`` for many new terms whose ids exceed every id in the store."""
    data = [t.encode("utf-8") for t in terms]
    keys = np.array(ids, dtype=">u4").view("V4").tolist()
    cur = txn.txn.cursor(db=txn.dbs["i2t"])
    consumed, added = cur.putmulti(zip(keys, data), append=True)
    if consumed != added:
        raise RuntimeError("trine: new term ids are not above the existing ones")
    cur = txn.txn.cursor(db=txn.dbs["t2i"])
    cur.putmulti(zip(map(term_hash, data), keys), dupdata=True)


def _bulk_insert(txn: Txn, ids: np.ndarray) -> None:
    """Materialise explicit triples into an empty store within ``txn``.

    The same closure, counts and steps as the bulk load (reasoning/load.py),
    appended in key order into the six empty indexes.
    """
    cols = to_columns(materialise(unique_rows(ids)))
    runs = permutation_runs(cols)
    for name in PERMUTATIONS:
        for chunk in runs(name):
            append_index(txn.txn, txn.dbs[name], name, chunk)
    txn.flush()
    n_explicit = int(np.count_nonzero(cols.explicit))
    txn.set_meta("n_triples", (txn.meta_int("n_triples") + len(cols)).to_bytes(8, "big"))
    txn.set_meta("n_explicit", (txn.meta_int("n_explicit") + n_explicit).to_bytes(8, "big"))


class _RemoveResult:
    __slots__ = ("removed", "derived_only", "remaining", "pattern")

    def __init__(self, removed: int = 0, derived_only: int = 0, remaining: int = 0, pattern: bool = False):
        self.removed, self.derived_only, self.remaining, self.pattern = removed, derived_only, remaining, pattern


class _RemoveOp:
    """Remove the explicit triples matching a canonical pattern."""

    __slots__ = ("canon", "inferred")

    def __init__(self, canon: tuple[str | None, ...], inferred: bool):
        self.canon = canon
        self.inferred = inferred

    def __call__(self, txn: Txn) -> _RemoveResult:
        res = _RemoveResult(pattern=None in self.canon)
        ids = _lookup(txn, self.canon)
        if ids is None:
            return res
        s, p, o = ids
        if not res.pattern:
            rec = txn.record(s, p, o)          # type: ignore[arg-type]
            if rec is None:
                return res
            if not rec.explicit:
                res.derived_only = 1
                res.remaining = 1
                return res
            targets = [(s, p, o)]
        else:
            targets = [tuple(r) for r in access.fetch(txn, s, p, o, explicit_only=True)[0].tolist()]
        if targets:
            maintenance.delete(txn, targets)
        res.removed = len(targets)
        res.remaining = txn.count(s, p, o)
        return res


class _BindOp:
    __slots__ = ("changes",)

    def __init__(self, changes: tuple[tuple[str, str | None], ...]):
        self.changes = changes

    def __call__(self, txn: Txn) -> None:
        for prefix, ns in self.changes:
            if ns is None:
                txn.unbind(prefix)
            else:
                txn.bind(prefix, ns)


def _warn_removal(triple: tuple, res: _RemoveResult, inferred: bool) -> None:
    if not res.pattern:
        if res.derived_only:
            warnings.warn(f"trine: {_show(triple)} is derived, not explicit: removing it changes "
                          "nothing (remove the triples it is derived from)", DerivedTripleWarning,
                          stacklevel=3)
        elif res.removed and res.remaining and inferred:
            warnings.warn(f"trine: {_show(triple)} is no longer explicit but is still derived, "
                          "so the graph still contains it", DerivedTripleWarning, stacklevel=3)
    elif inferred and res.remaining:
        warnings.warn(f"trine: {res.remaining} derived triple(s) still match {_show(triple)}; "
                      "derived triples cannot be removed (remove their premises)",
                      DerivedTripleWarning, stacklevel=3)


def _show(triple: tuple) -> str:
    return "(" + " ".join("*" if x is None else x.n3() for x in triple) + ")"


# --- the SPARQL hook ------------------------------------------------------------------

def evaluate_bgp(ctx: QueryContext, part: Any) -> Any:
    """rdflib custom evaluation: BGPs over a TrineStore graph go to trine.query.

    Handles ``BGP``, ``Project(BGP)`` and ``Distinct(Project(BGP))``.  Raises
    NotImplementedError (so rdflib evaluates the part itself) for anything
    else: other algebra parts, graphs over other stores, a disabled
    acceleration, and BGPs with property paths.
    """
    if not ACCELERATE:
        raise NotImplementedError
    graph = ctx.graph
    store = getattr(graph, "store", None)
    if not isinstance(store, TrineStore) or not store.accelerate or store._db is None \
            or isinstance(graph, ConjunctiveGraph) or not isinstance(graph, Graph):
        raise NotImplementedError
    found = rdflib_sparql.bgp_part(part)
    if found is None:
        raise NotImplementedError
    return store.evaluate_bgp(ctx, *found)


CUSTOM_EVALS["trine"] = evaluate_bgp
