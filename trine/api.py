"""``trine.Store``: the one library API; the CLI and the rdflib plugin are thin over it.

Terms cross this boundary as rdflib terms (or N-Triples files); inside, all
work is on ids (store/) and the reasoner keeps the materialisation current
after every ``add`` and ``remove`` (reasoning/).
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Sequence

from rdflib.term import Identifier

from trine.reasoning import maintenance
from trine.reasoning.load import LoadReport, load_local
from trine.reasoning.maintenance import UpdateReport
from trine.store import ntriples
from trine.store.check import CheckReport, check_store
from trine.store.database import Database
from trine.store.terms import from_rdflib, to_rdflib
from trine.store.txn import Txn

RdfTriple = tuple[Identifier, Identifier, Identifier]
Pattern = tuple[Identifier | None, Identifier | None, Identifier | None]
ENGINES = ("auto", "local", "spark")
# `auto` picks by memory, not speed: on the 2-core benchmark machine the
# in-process engine was faster than local-mode Spark at every scale measured
# (LUBM(50): 77.5k vs 37.9k input triples/s, bench/results/spark-50.json), and
# peaked at about 400 bytes of memory per input triple.  So Spark is chosen
# when an in-process load would need more than half of the machine's memory.
LOCAL_BYTES_PER_TRIPLE = 400
INPUT_BYTES_PER_TRIPLE = 170  # N-Triples text per line, LUBM-like data


class Store:
    """An open trine store.  Use ``Store.open(path)`` as a context manager."""

    def __init__(self, db: Database):
        self.db = db

    @classmethod
    def open(cls, path: str | os.PathLike, create: bool = True, readonly: bool = False) -> "Store":
        return cls(Database(path, create=create, readonly=readonly))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def path(self) -> Path:
        return self.db.path

    # --- loading and updates ---------------------------------------------
    def load(self, paths: Sequence[str | os.PathLike], engine: str = "auto", skip_invalid: bool = False,
             progress: Callable[[str, int], None] | None = None, **spark_options: Any) -> LoadReport:
        """Bulk load N-Triples files (plain, .gz, '-' for stdin) and materialise.

        The store is replaced only when the new one is complete: a bad line
        (without ``skip_invalid``) or a crash leaves it as it was.
        """
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
        if engine == "auto":
            engine = "spark" if _needs_spark(paths) and _spark_available() else "local"
        # The writer lock covers reading the current state, building and the
        # swap, so no update can land in between and be lost.
        with self.db.writer_lock():
            if engine == "spark":
                from trine.reasoning.spark.job import load_spark
                return load_spark(self.db, [str(p) for p in paths], skip_invalid=skip_invalid,
                                  progress=progress, **spark_options)
            return load_local(self.db, [str(p) for p in paths], skip_invalid=skip_invalid, progress=progress)

    def add(self, triples: Iterable[RdfTriple]) -> UpdateReport:
        """Add explicit triples (rdflib terms) and update the materialisation."""
        canon = [_valid_triple(t) for t in triples]
        return self._update(canon, lambda txn, ids: maintenance.insert(txn, ids), intern=True)

    def remove(self, triples: Iterable[RdfTriple], algorithm: str = "counting") -> UpdateReport:
        """Remove explicit triples.  Asking to remove a triple that is not
        explicit changes nothing; it is listed in ``report.not_explicit``."""
        canon = [tuple(from_rdflib(x) for x in t) for t in triples]
        return self._update(canon, lambda txn, ids: maintenance.delete(txn, ids, algorithm), intern=False)

    def add_files(self, paths: Sequence[str | os.PathLike], skip_invalid: bool = False,
                  errors: list[ntriples.ParseError] | None = None) -> UpdateReport:
        canon = _read_all(paths, skip_invalid, errors)
        return self._update(canon, lambda txn, ids: maintenance.insert(txn, ids), intern=True)

    def remove_files(self, paths: Sequence[str | os.PathLike], algorithm: str = "counting",
                     skip_invalid: bool = False, errors: list[ntriples.ParseError] | None = None) -> UpdateReport:
        canon = _read_all(paths, skip_invalid, errors)
        return self._update(canon, lambda txn, ids: maintenance.delete(txn, ids, algorithm), intern=False)

    def _update(self, canon: list, apply: Callable[[Txn, list], UpdateReport], intern: bool) -> UpdateReport:
        canon = list(dict.fromkeys(canon))

        def run(txn: Txn) -> UpdateReport:
            # Each distinct term is looked up (or interned) once, then the
            # triples are mapped through a dict: 3-4x fewer Python steps than
            # resolving term by term for the 100k-triple updates.
            distinct = dict.fromkeys(itertools.chain.from_iterable(canon))
            if intern:
                cache: dict[str, int] = {}
                txn.intern_all(distinct, cache)
                ids = [(cache[s], cache[p], cache[o]) for s, p, o in canon]
                missing: list = []
            else:
                known = {t: txn.term_id(t) for t in distinct}
                ids, missing = [], []
                for t in canon:
                    tid = (known[t[0]], known[t[1]], known[t[2]])
                    (missing if None in tid else ids).append(t if None in tid else tid)
            rep = apply(txn, ids)
            if not intern:
                rep.requested += len(missing)
                rep.not_explicit.extend(missing)
            return rep
        return self.db.write(run)

    # --- reading ----------------------------------------------------------
    def triples(self, pattern: Pattern = (None, None, None), explicit_only: bool = False) -> Iterator[RdfTriple]:
        """Triples matching a pattern (None = any), explicit and derived."""
        with self.db.read() as txn:
            ids = []
            for x in pattern:
                if x is None:
                    ids.append(None)
                else:
                    tid = txn.term_id(from_rdflib(x))
                    if tid is None:
                        return
                    ids.append(tid)
            for s, p, o in txn.scan(*ids):
                if explicit_only and not txn.record(s, p, o).explicit:  # type: ignore[union-attr]
                    continue
                yield to_rdflib(txn.term(s)), to_rdflib(txn.term(p)), to_rdflib(txn.term(o))

    def annotated(self) -> Iterator[tuple[Identifier, Identifier, Identifier, bool, int, int]]:
        """Every triple with its record: (s, p, o, explicit, count, step)."""
        with self.db.read() as txn:
            for s, p, o, r in txn.scan_records():
                yield (to_rdflib(txn.term(s)), to_rdflib(txn.term(p)), to_rdflib(txn.term(o)),
                       r.explicit, r.count, r.step)

    def dump_lines(self, annotate: bool = False, explicit_only: bool = False) -> list[str]:
        """N-Triples lines, sorted by statement text (the annotated dump format)."""
        out = []
        with self.db.read() as txn:
            term = txn.term
            for s, p, o, r in txn.scan_records():
                if explicit_only and not r.explicit:
                    continue
                line = f"{term(s)} {term(p)} {term(o)} ."
                if annotate:
                    line += f" # explicit={int(r.explicit)} count={r.count} step={r.step}"
                out.append(line)
        out.sort(key=_statement_key)
        return out

    def dump(self, out: IO[str], annotate: bool = False, explicit_only: bool = False) -> int:
        lines = self.dump_lines(annotate, explicit_only)
        for line in lines:
            out.write(line)
            out.write("\n")
        return len(lines)

    def __len__(self) -> int:
        with self.db.read() as txn:
            return txn.n_triples()

    def __contains__(self, triple: RdfTriple) -> bool:
        return any(True for _ in self.triples(triple))

    def stats(self) -> dict[str, Any]:
        with self.db.read() as txn:
            n, e = txn.n_triples(), txn.n_explicit()
            terms = txn.txn.stat(txn.dbs["i2t"])["entries"]
            ruleset = txn.meta_str("ruleset")
        size = self.db.size_on_disk()
        return {
            "path": str(self.path), "triples": n, "explicit": e, "derived": n - e, "terms": terms,
            "ruleset": ruleset, "bytes_on_disk": size, "bytes_per_triple": (size / n) if n else None,
        }

    def check(self, deep: bool = False) -> CheckReport:
        rep = check_store(self.db)
        if deep:
            from trine.reasoning.check import deep_check
            deep_check(self.db, rep)
        return rep

    # --- queries (trine.query) ------------------------------------------------
    def query(self, text: str, explicit_only: bool = False) -> Any:
        from trine.query.api import run_query
        return run_query(self, text, explicit_only=explicit_only)

    def explain(self, text: str, analyze: bool = True, explicit_only: bool = False) -> str:
        from trine.query.api import explain_query
        return explain_query(self, text, analyze=analyze, explicit_only=explicit_only)

    # --- namespaces ---------------------------------------------------------------
    def namespaces(self) -> list[tuple[str, str]]:
        with self.db.read() as txn:
            return list(txn.namespaces())

    def bind(self, prefix: str, namespace: str) -> None:
        self.db.write(lambda txn: txn.bind(prefix, namespace))


def _valid_triple(t: RdfTriple) -> tuple[str, str, str]:
    """Canonical strings of an RDF triple; ValueError for one RDF does not allow."""
    s, p, o = (from_rdflib(x) for x in t)
    if s[0] == '"':
        raise ValueError(f"a literal cannot be the subject of a triple: {t[0]!r}")
    if p[0] != "<":
        raise ValueError(f"the predicate of a triple must be an IRI: {t[1]!r}")
    return s, p, o


def _statement_key(line: str) -> str:
    i = line.find(" # explicit=")
    return line if i < 0 else line[:i]


def _read_all(paths: Sequence[str | os.PathLike], skip_invalid: bool,
              errors: list[ntriples.ParseError] | None) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for p in ntriples.expand_inputs(paths):
        out.extend(ntriples.read_triples(p, skip_invalid=skip_invalid, errors=errors))
    return out


def _input_bytes(paths: Sequence[str | os.PathLike]) -> int:
    total = 0
    for p in paths:
        if str(p) == "-":
            continue
        path = Path(p)
        files = path.rglob("*") if path.is_dir() else [path]
        for f in files:
            if f.is_file():
                size = f.stat().st_size
                total += size * 20 if f.suffix == ".gz" else size
    return total


def _needs_spark(paths: Sequence[str | os.PathLike]) -> bool:
    triples = _input_bytes(paths) / INPUT_BYTES_PER_TRIPLE
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return triples * LOCAL_BYTES_PER_TRIPLE > memory / 2


def _spark_available() -> bool:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    import shutil
    return bool(os.environ.get("JAVA_HOME") or shutil.which("java"))


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    return fn(), time.perf_counter() - t0
