import pytest

from fakebroker.protocol.error_codes import ErrorCode, error_code


@pytest.mark.parametrize(
    ("member", "code"),
    [
        (ErrorCode.UNKNOWN_SERVER_ERROR, -1),
        (ErrorCode.NONE, 0),
        (ErrorCode.OFFSET_OUT_OF_RANGE, 1),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 3),
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, 6),
        (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, 14),
        (ErrorCode.COORDINATOR_NOT_AVAILABLE, 15),
        (ErrorCode.NOT_COORDINATOR, 16),
        (ErrorCode.ILLEGAL_GENERATION, 22),
        (ErrorCode.UNKNOWN_MEMBER_ID, 25),
        (ErrorCode.REBALANCE_IN_PROGRESS, 27),
        (ErrorCode.UNSUPPORTED_VERSION, 35),
        (ErrorCode.NON_EMPTY_GROUP, 68),
        (ErrorCode.GROUP_ID_NOT_FOUND, 69),
        (ErrorCode.MEMBER_ID_REQUIRED, 79),
        (ErrorCode.FENCED_INSTANCE_ID, 82),
        (ErrorCode.INVALID_RECORD, 87),
        (ErrorCode.UNKNOWN_TOPIC_ID, 100),
        (ErrorCode.FENCED_MEMBER_EPOCH, 110),
        (ErrorCode.STALE_MEMBER_EPOCH, 113),
        (ErrorCode.INVALID_REGULAR_EXPRESSION, 128),
        (ErrorCode.REBOOTSTRAP_REQUIRED, 129),
        (ErrorCode.SHARE_SESSION_LIMIT_REACHED, 133),
    ],
)
def test_known_values(member: ErrorCode, code: int) -> None:
    assert member == code
    assert int(member) == code
    assert ErrorCode(code) is member


@pytest.mark.parametrize(
    "name",
    [
        "UNKNOWN_TOPIC_OR_PARTITION",
        "LEADER_NOT_AVAILABLE",
        "NOT_LEADER_OR_FOLLOWER",
        "REQUEST_TIMED_OUT",
        "NETWORK_EXCEPTION",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "COORDINATOR_NOT_AVAILABLE",
        "NOT_COORDINATOR",
        "NOT_ENOUGH_REPLICAS",
        "NOT_CONTROLLER",
        "CONCURRENT_TRANSACTIONS",
        "UNSTABLE_OFFSET_COMMIT",
        "CORRUPT_MESSAGE",
    ],
)
def test_retriable(name: str) -> None:
    assert ErrorCode[name].retriable is True


@pytest.mark.parametrize(
    "name",
    [
        "NONE",
        "UNKNOWN_SERVER_ERROR",
        "ILLEGAL_GENERATION",
        "UNKNOWN_MEMBER_ID",
        "REBALANCE_IN_PROGRESS",
        "MEMBER_ID_REQUIRED",
        "FENCED_INSTANCE_ID",
        "GROUP_AUTHORIZATION_FAILED",
        "UNSUPPORTED_VERSION",
        "INVALID_RECORD",
        "PRODUCER_FENCED",
        "FENCED_MEMBER_EPOCH",
        "STALE_MEMBER_EPOCH",
    ],
)
def test_not_retriable(name: str) -> None:
    assert ErrorCode[name].retriable is False


def test_every_member_has_flag_and_description() -> None:
    for member in ErrorCode:
        assert isinstance(member.retriable, bool)
        assert isinstance(member.description, str)
        assert member.description.strip()
        assert "\n" not in member.description


def test_codes_unique() -> None:
    values = [m.value for m in ErrorCode]
    assert len(values) == len(set(values))
    # No member was silently turned into an alias of another.
    assert len(ErrorCode.__members__) == len(ErrorCode)


def test_codes_contiguous() -> None:
    # Kafka assigns codes without gaps from -1 up to the newest one.
    values = sorted(m.value for m in ErrorCode)
    assert values == list(range(-1, max(values) + 1))
    assert max(values) == 136  # Kafka 4.4.0


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("NOT_COORDINATOR", ErrorCode.NOT_COORDINATOR),
        ("not_coordinator", ErrorCode.NOT_COORDINATOR),
        ("Rebalance_In_Progress", ErrorCode.REBALANCE_IN_PROGRESS),
        ("  unknown_member_id ", ErrorCode.UNKNOWN_MEMBER_ID),
        ("none", ErrorCode.NONE),
        (16, ErrorCode.NOT_COORDINATOR),
        (0, ErrorCode.NONE),
        (-1, ErrorCode.UNKNOWN_SERVER_ERROR),
        ("79", ErrorCode.MEMBER_ID_REQUIRED),
        ("-1", ErrorCode.UNKNOWN_SERVER_ERROR),
        (ErrorCode.FENCED_INSTANCE_ID, ErrorCode.FENCED_INSTANCE_ID),
    ],
)
def test_lookup(arg: str | int, expected: ErrorCode) -> None:
    assert error_code(arg) is expected


def test_misspelt_name_lists_valid_names() -> None:
    with pytest.raises(ValueError) as excinfo:
        error_code("NOT_CORDINATOR")
    message = str(excinfo.value)
    assert "NOT_CORDINATOR" in message
    assert "Did you mean NOT_COORDINATOR" in message
    for member in ErrorCode:
        assert member.name in message


def test_unknown_code_rejected() -> None:
    with pytest.raises(ValueError, match="unknown Kafka error code 9999"):
        error_code(9999)
    with pytest.raises(ValueError):
        error_code(-2)


def test_wrong_type_rejected() -> None:
    with pytest.raises(TypeError):
        error_code(True)
    with pytest.raises(TypeError):
        error_code(1.5)  # type: ignore[arg-type]
