"""Key encodings: byte order equals numeric order; records round-trip."""

from hypothesis import given
from hypothesis import strategies as st

from trine.store.keys import (MAX_COUNT, MAX_STEP, Record, make_id, pack_id, pack_pair, pack_record,
                              pack_spo_value, unpack_record, unpack_spo_value)

ids = st.integers(min_value=0, max_value=2**32 - 1)


@given(st.tuples(ids, ids, ids), st.tuples(ids, ids, ids))
def test_key_bytes_order_is_numeric_order(a, b):
    ka = pack_id(a[0]) + pack_pair(a[1], a[2])
    kb = pack_id(b[0]) + pack_pair(b[1], b[2])
    assert (ka < kb) == (a < b)


@given(st.booleans(), st.integers(1, MAX_COUNT), st.integers(0, MAX_STEP))
def test_record_round_trip(explicit, count, step):
    r = Record(explicit, count, step)
    assert unpack_record(pack_record(r)) == r
    assert unpack_spo_value(pack_spo_value(7, 9, r)) == (7, 9, r)


@given(st.integers(0, 2**30 - 1), st.sampled_from([0, 1, 2]))
def test_id_kind_bits(serial, kind):
    assert make_id(serial, kind) & 3 == kind
