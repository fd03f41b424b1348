"""Helpers of the Spark tests (inputs, dumps, comparisons)."""

from __future__ import annotations

import random
from pathlib import Path

from trine import Store

TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
SPO = "<http://www.w3.org/2000/01/rdf-schema#subPropertyOf>"
SCO = "<http://www.w3.org/2000/01/rdf-schema#subClassOf>"
DOM = "<http://www.w3.org/2000/01/rdf-schema#domain>"
RNG = "<http://www.w3.org/2000/01/rdf-schema#range>"
VOCAB = [TYPE, SPO, SCO, DOM, RNG]


def local_dump(path: Path, files) -> list[str]:
    with Store.open(path) as s:
        s.load([str(f) for f in files], engine="local")
        return s.dump_lines(annotate=True)


def spark_dump(path: Path, files, **options) -> list[str]:
    with Store.open(path) as s:
        s.load([str(f) for f in files], engine="spark", **options)
        return s.dump_lines(annotate=True)


def diff(a: list[str], b: list[str], limit: int = 8) -> str:
    sa, sb = set(a), set(b)
    only_a = sorted(sa - sb)[:limit]
    only_b = sorted(sb - sa)[:limit]
    return f"{len(a)} vs {len(b)} lines; only first: {only_a}; only second: {only_b}"


def random_graph(seed: int, size: int | None = None) -> list[str]:
    """A small N-Triples graph over a tiny vocabulary: cycles, self-loops and
    meta-use of the rho-df vocabulary (p spo sco, p spo type, p spo dom, ...)
    are frequent; blank nodes and literals appear in several positions."""
    rnd = random.Random(seed)
    ex = [f"<http://ex/{c}>" for c in "abcdef"]
    blanks = ["_:b1", "_:b2"]
    literals = ['"x"', '"y"@en', '"1"^^<http://www.w3.org/2001/XMLSchema#integer>', '"a b"']
    subjects = ex * 3 + blanks + VOCAB
    predicates = VOCAB * 3 + ex[:3]
    objects = ex * 3 + blanks + literals + VOCAB
    n = size if size is not None else rnd.randint(2, 28)
    triples = set()
    while len(triples) < n:
        triples.add((rnd.choice(subjects), rnd.choice(predicates), rnd.choice(objects)))
    return [f"{s} {p} {o} ." for s, p, o in sorted(triples)]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def meta_free_graph(seed: int, size: int | None = None) -> list[str]:
    """Like ``random_graph``, but the rho-df vocabulary appears only as the
    predicate of schema triples and as rdf:type, so the data cannot change
    the schema (the Spark closure's two-pass path)."""
    rnd = random.Random(seed)
    ex = [f"<http://ex/{c}>" for c in "abcde"]
    nodes = ex * 2 + ["_:b1", "_:b2"]
    objects = nodes + ['"x"', '"y"@en']
    n = size if size is not None else rnd.randint(4, 30)
    triples = set()
    while len(triples) < n:
        if rnd.random() < 0.4:
            triples.add((rnd.choice(ex), rnd.choice(VOCAB[1:]), rnd.choice(objects)))
        else:
            triples.add((rnd.choice(nodes), rnd.choice(ex[:3] + [TYPE]), rnd.choice(objects)))
    return [f"{s} {p} {o} ." for s, p, o in sorted(triples)]
