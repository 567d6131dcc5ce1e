"""The transaction markers' fast build (a cached record and a struct-packed header) writes the
same bytes as the general batch builder, for every field in range, and refuses what it refuses."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakebroker.protocol import records as rec
from fakebroker.protocol.records.batch import _control_key, _end_txn_marker
from fakebroker.protocol.records.control import ControlRecordType
from fakebroker.protocol.records.entries import iter_batch_headers

INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


def general(kind: int, pid: int, epoch: int, coordinator_epoch: int, base: int, ts: int, leader_epoch: int) -> bytes:
    record = rec.Record(
        offset_delta=0, timestamp_delta=0, key=_control_key(kind), value=_end_txn_marker(coordinator_epoch), headers=[]
    )
    return rec.build_batch(
        [record],
        base_offset=base,
        base_timestamp=ts,
        max_timestamp=ts,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=-1,
        transactional=True,
        control=True,
        partition_leader_epoch=leader_epoch,
    )


@given(
    commit=st.booleans(),
    pid=INT64,
    epoch=INT16,
    coordinator_epoch=INT32,
    base=st.integers(0, 2**63 - 1),
    ts=INT64,
    leader_epoch=INT32,
)
def test_a_marker_is_byte_for_byte_the_general_builders(commit, pid, epoch, coordinator_epoch, base, ts, leader_epoch):
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    fast = rec.build_control_batch(
        "commit" if commit else "abort",
        pid,
        epoch,
        coordinator_epoch,
        base_offset=base,
        timestamp=ts,
        partition_leader_epoch=leader_epoch,
    )
    assert fast == general(int(kind), pid, epoch, coordinator_epoch, base, ts, leader_epoch)
    (header,) = iter_batch_headers(fast)
    assert header.is_control and header.is_transactional and header.base_offset == base


def test_fields_out_of_range_are_refused():
    with pytest.raises(ValueError, match="out of range"):
        rec.build_control_batch("commit", 1, 2**15, 0)
    with pytest.raises(ValueError, match="out of range"):
        rec.build_control_batch("abort", 2**63, 0, 0)
