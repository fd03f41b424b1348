"""The one place for trine's binary encodings: term ids, index entries, records.

Term ids are 32-bit unsigned integers, big-endian on disk so that byte order
is numeric order.  The two low bits of an id give the term's kind (IRI,
blank node, literal), so rules and filters can test "is this a literal?"
without a dictionary lookup: ``id & 3``.

Each of the six permutation indexes (SPO SOP PSO POS OSP OPS) is an LMDB
database opened with ``dupsort`` + ``dupfixed``: the key is the first id of
the permutation (4 bytes) and each duplicate value is the other two ids
(8 bytes).  LMDB keeps duplicates sorted, so walking an index yields the
triples in exactly the order of 12-byte ``first|second|third`` keys, while
fixed-size duplicates are packed without per-entry headers (about 8 bytes
an entry instead of 22).  SPO's values carry the triple's record as well:
``p|o|record``; it is the only place a record lives.

A record is ``explicit`` (1 byte, 0/1), ``step`` (2 bytes) and ``count``
(4 bytes), big-endian: see docs/reasoning.md for what count and step mean.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from .terms import BLANK, IRI, LITERAL, kind_of

ID_BYTES = 4
PAIR_BYTES = 2 * ID_BYTES
RECORD_BYTES = 7
SPO_VALUE_BYTES = PAIR_BYTES + RECORD_BYTES
MAX_ID = 2**32 - 1
MAX_STEP = 2**16 - 1
MAX_COUNT = 2**32 - 1

KIND_MASK = 3

# Permutations by name: position of s, p, o in the key order.
PERMUTATIONS: dict[str, tuple[int, int, int]] = {
    "spo": (0, 1, 2), "sop": (0, 2, 1), "pso": (1, 0, 2),
    "pos": (1, 2, 0), "osp": (2, 0, 1), "ops": (2, 1, 0),
}
INDEX_NAMES = tuple(PERMUTATIONS)

_ID = struct.Struct(">I")
_PAIR = struct.Struct(">II")
_RECORD = struct.Struct(">BHI")
_SPO_VALUE = struct.Struct(">IIBHI")

pack_id = _ID.pack
pack_pair = _PAIR.pack
unpack_pair = _PAIR.unpack


def unpack_id(b: bytes) -> int:
    return _ID.unpack(b)[0]


class Record(NamedTuple):
    """What trine knows of one stored triple."""

    explicit: bool
    count: int
    step: int


def pack_record(r: Record) -> bytes:
    return _RECORD.pack(1 if r.explicit else 0, r.step, r.count)


def unpack_record(b: bytes) -> Record:
    e, step, count = _RECORD.unpack(b)
    return Record(bool(e), count, step)


def pack_spo_value(p: int, o: int, r: Record) -> bytes:
    return _SPO_VALUE.pack(p, o, 1 if r.explicit else 0, r.step, r.count)


def unpack_spo_value(b: bytes) -> tuple[int, int, Record]:
    p, o, e, step, count = _SPO_VALUE.unpack(b)
    return p, o, Record(bool(e), count, step)


def make_id(serial: int, kind: int) -> int:
    """The id of the ``serial``-th term of a kind-agnostic counter."""
    return (serial << 2) | kind


def id_kind(term_id: int) -> int:
    return term_id & KIND_MASK


def is_literal_id(term_id: int) -> bool:
    return term_id & KIND_MASK == LITERAL


def is_iri_id(term_id: int) -> bool:
    return term_id & KIND_MASK == IRI


def id_for_term_kind(serial: int, term: str) -> int:
    return make_id(serial, kind_of(term))


# numpy views of the same encodings, for bulk paths --------------------------

PAIR_DTYPE = np.dtype([("a", ">u4"), ("b", ">u4")])
SPO_VALUE_DTYPE = np.dtype([("p", ">u4"), ("o", ">u4"), ("explicit", "u1"), ("step", ">u2"), ("count", ">u4")])


def spo_value_items(p: np.ndarray, o: np.ndarray, explicit: np.ndarray, step: np.ndarray,
                    count: np.ndarray) -> list[bytes]:
    """SPO duplicates (``pack_spo_value`` for whole columns), as bytes objects."""
    v = np.empty(len(p), dtype=SPO_VALUE_DTYPE)
    v["p"], v["o"], v["explicit"], v["step"], v["count"] = p, o, explicit, step, count
    return v.view(f"V{SPO_VALUE_BYTES}").tolist()


def pair_items(a: np.ndarray, b: np.ndarray) -> list[bytes]:
    """Duplicates of the other indexes (``pack_pair`` for whole columns)."""
    v = np.empty((len(a), 2), dtype=">u4")
    v[:, 0], v[:, 1] = a, b
    return v.view(f"V{PAIR_BYTES}").ravel().tolist()


__all__ = [
    "BLANK", "IRI", "LITERAL", "ID_BYTES", "PAIR_BYTES", "RECORD_BYTES", "SPO_VALUE_BYTES",
    "PERMUTATIONS", "INDEX_NAMES", "Record", "pack_id", "unpack_id", "pack_pair", "unpack_pair",
    "pack_record", "unpack_record", "pack_spo_value", "unpack_spo_value", "make_id", "id_kind",
    "is_literal_id", "is_iri_id", "PAIR_DTYPE", "SPO_VALUE_DTYPE", "MAX_STEP", "MAX_COUNT",
    "spo_value_items", "pair_items",
]
