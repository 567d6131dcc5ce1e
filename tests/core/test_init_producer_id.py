"""InitProducerId's epochs and ids (KIP-360 recovery, fencing, epoch exhaustion), as the
cluster answers them: idempotent producers from ``ProducerIds``, transactional ids from the
transaction coordinator."""

from __future__ import annotations

import pytest

from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.transactions.producer_ids import ProducerIds
from fakebroker.protocol.error_codes import ErrorCode


class Ids:
    """InitProducerId on a fresh cluster: ``init(transactional id, producer id, epoch)``."""

    def __init__(self) -> None:
        self.state = ClusterState("c")

    def init(self, tid, producer_id=-1, producer_epoch=-1):
        return self.state.init_producer_id(tid, producer_id, producer_epoch, now_ms=0)

    @property
    def transactional(self):
        return {tid: (t.producer_id, t.producer_epoch) for tid, t in self.state.transactions.txns.items()}

    @property
    def epochs(self):
        return self.state.producer_ids.epochs


# ------------------------------------------------------------------------------------------
# ProducerIds (InitProducerId)
# ------------------------------------------------------------------------------------------


def test_idempotent_producers_get_fresh_ids_with_epoch_zero():
    ids = Ids()
    assert ids.init(None) == (ErrorCode.NONE, 1000, 0)
    assert ids.init(None) == (ErrorCode.NONE, 1001, 0)
    assert ids.init(None, -1, -1) == (ErrorCode.NONE, 1002, 0)


def test_first_id_is_configurable():
    ids = ProducerIds(first_id=7)
    assert [ids.init_idempotent()[0] for _ in range(3)] == [7, 8, 9]


@pytest.mark.parametrize("epoch_of", ["current", "stale", "unknown_pid"])
def test_idempotent_init_with_a_producer_id_gets_a_new_id(epoch_of):
    # TransactionCoordinator.handleInitProducerId: "if the transactional id is null, then always blindly
    # accept the request and return a new producerId" with epoch 0, whatever producer id/epoch was sent.
    ids = Ids()
    _, pid, epoch = ids.init(None)
    sent = {"current": (pid, epoch), "stale": (pid, epoch + 3), "unknown_pid": (4242, 0)}[epoch_of]
    error, new_pid, new_epoch = ids.init(None, *sent)
    assert error == ErrorCode.NONE
    assert new_pid not in (-1, pid, 4242)
    assert new_epoch == 0


def test_empty_transactional_id_is_an_invalid_request():
    # TransactionCoordinator.handleInitProducerId: an empty (not null) transactional id -> INVALID_REQUEST
    ids = Ids()
    error, pid, epoch = ids.init("")
    assert (error, pid, epoch) == (ErrorCode.INVALID_REQUEST, -1, -1)


def test_transactional_id_keeps_its_producer_id_and_bumps_the_epoch():
    ids = Ids()
    assert ids.init("tx") == (ErrorCode.NONE, 1000, 0)
    assert ids.init("other") == (ErrorCode.NONE, 1001, 0)
    assert ids.init("tx") == (ErrorCode.NONE, 1000, 1)  # a new instance fences the old one
    assert ids.init("tx", -1, -1) == (ErrorCode.NONE, 1000, 2)
    assert ids.transactional == {"tx": (1000, 2), "other": (1001, 0)}
    assert ids.epochs == {1000: 2, 1001: 0}


def test_transactional_init_with_the_current_id_and_epoch_bumps_it():
    ids = Ids()
    ids.init("tx")
    assert ids.init("tx", 1000, 0) == (ErrorCode.NONE, 1000, 1)  # KIP-360 recovery
    assert ids.init("tx", 1000, 1) == (ErrorCode.NONE, 1000, 2)


def test_transactional_init_from_a_fenced_producer():
    ids = Ids()
    ids.init("tx")  # (1000, 0)
    ids.init("tx")  # (1000, 1): lastProducerEpoch is -1 after a bump without an expected epoch
    assert ids.init("tx", 1000, 0) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert ids.init("tx", 1000, 5) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert ids.init("tx", 999, 1) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert ids.transactional["tx"] == (1000, 1)  # a refused request changes nothing


def test_transactional_init_retry_of_a_successful_bump_returns_the_current_epoch():
    # TransactionMetadata.prepareIncrementProducerEpoch: when the expected epoch is the previous one
    # ("a retry of a successful call"), the current epoch is returned without bumping.
    ids = Ids()
    ids.init("tx")  # (1000, 0)
    assert ids.init("tx", 1000, 0) == (ErrorCode.NONE, 1000, 1)
    assert ids.init("tx", 1000, 0) == (ErrorCode.NONE, 1000, 1)  # the response was lost; the client retries
    assert ids.init("tx", 1000, 1) == (ErrorCode.NONE, 1000, 2)


def test_transactional_epoch_exhaustion_rotates_the_producer_id():
    # TransactionMetadata.isEpochExhausted: epoch >= Short.MAX_VALUE - 1 -> a new producer id, epoch 0
    ids = Ids()
    for expected_epoch in range(2**15 - 1):  # epochs 0 .. 32766
        assert ids.init("tx") == (ErrorCode.NONE, 1000, expected_epoch)
    assert ids.init("tx") == (ErrorCode.NONE, 1001, 0)
    assert ids.init("tx") == (ErrorCode.NONE, 1001, 1)
    assert ids.init(None) == (ErrorCode.NONE, 1002, 0)


def test_transactional_retry_is_fenced_once_a_new_instance_initialised():
    # prepareIncrementProducerEpoch without an expected epoch sets lastProducerEpoch to -1: "There is no danger of
    # this producer being fenced, because a new producer calling InitProducerId would have caused the last epoch
    # to be set to -1."
    ids = Ids()
    ids.init("tx")  # (1000, 0)
    assert ids.init("tx", 1000, 0) == (ErrorCode.NONE, 1000, 1)
    assert ids.init("tx", 1000, 0) == (ErrorCode.NONE, 1000, 1)  # retried twice: still not bumped
    assert ids.init("tx") == (ErrorCode.NONE, 1000, 2)  # a new instance
    assert ids.init("tx", 1000, 0) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert ids.init("tx", 1000, 1) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert ids.init("tx", 1000, 2) == (ErrorCode.NONE, 1000, 3)


def test_new_transactional_id_accepts_any_expected_producer():
    # TransactionCoordinator.isValidProducerId: metadata just created (epoch NO_PRODUCER_EPOCH) accepts any
    # expected id and epoch, e.g. a producer recovering from UNKNOWN_PRODUCER_ID; the first epoch is 0.
    ids = Ids()
    assert ids.init("tx", 4242, 7) == (ErrorCode.NONE, 1000, 0)
    assert ids.init("tx", 4242, 7) == (ErrorCode.PRODUCER_FENCED, -1, -1)  # no longer new


def exhaust(ids: Ids, transactional_id: str, *, last_with_expected: bool) -> int:
    """Bump ``transactional_id`` to epoch Short.MAX_VALUE - 1, the last bump with or without an expected epoch."""
    _, pid, epoch = ids.init(transactional_id)
    while epoch < 2**15 - 3:
        _, pid, epoch = ids.init(transactional_id)
    assert epoch == 2**15 - 3
    last = ids.init(transactional_id, pid, epoch) if last_with_expected else ids.init(transactional_id)
    assert last == (ErrorCode.NONE, pid, 2**15 - 2)
    return pid


def test_transactional_epoch_exhaustion_with_an_expected_epoch_and_its_retry():
    # prepareProducerIdRotation(recordLastEpoch = expected epoch given) keeps the exhausted epoch as the last one;
    # isValidProducerId accepts the previous producer id with an exhausted epoch as a retry of the rotation.
    ids = Ids()
    old = exhaust(ids, "tx", last_with_expected=False)
    assert ids.init("tx", old, 2**15 - 2) == (ErrorCode.NONE, 1001, 0)
    assert ids.init("tx", old, 2**15 - 2) == (ErrorCode.NONE, 1001, 0)  # the retry: not rotated again
    assert ids.init("tx", old, 2**15 - 3) == (ErrorCode.PRODUCER_FENCED, -1, -1)  # not exhausted: fenced
    assert ids.init("tx", 1001, 0) == (ErrorCode.NONE, 1001, 1)
    assert ids.init("tx", old, 2**15 - 2) == (ErrorCode.PRODUCER_FENCED, -1, -1)  # the previous id is now 1001
    assert ids.transactional["tx"] == (1001, 1)


def test_transactional_epoch_exhaustion_without_an_expected_epoch_forgets_the_last_epoch():
    ids = Ids()
    old = exhaust(ids, "tx", last_with_expected=False)
    assert ids.init("tx") == (ErrorCode.NONE, 1001, 0)
    assert ids.init("tx", old, 2**15 - 2) == (ErrorCode.PRODUCER_FENCED, -1, -1)


def test_transactional_stale_epoch_at_exhaustion_is_an_unexpected_error():
    # At an exhausted epoch, an expected epoch other than the current one goes to prepareIncrementProducerEpoch,
    # which throws IllegalStateException ("Cannot allocate any more producer epochs"): UNKNOWN_SERVER_ERROR.
    ids = Ids()
    pid = exhaust(ids, "tx", last_with_expected=True)
    assert ids.init("tx", pid, 2**15 - 3) == (ErrorCode.UNKNOWN_SERVER_ERROR, -1, -1)  # even as a retry
    assert ids.init("tx", pid, 5) == (ErrorCode.UNKNOWN_SERVER_ERROR, -1, -1)
    assert ids.init("tx", 999, 5) == (ErrorCode.PRODUCER_FENCED, -1, -1)  # the producer id is checked first
    assert ids.transactional["tx"] == (pid, 2**15 - 2)
