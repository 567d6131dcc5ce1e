"""How a test's cluster is configured: the ``fakebroker`` marker, then command-line options,
then ini options, then FakeCluster's defaults.

Nothing here imports fakebroker: the marker is checked at collection against the names of
FakeCluster's keyword arguments, kept here (a test holds them equal to the signature)."""

from __future__ import annotations

import difflib
from typing import Any

import pytest

CLUSTER_PARAMS = frozenset(
    {
        "brokers",
        "host",
        "port",
        "topics",
        "config",
        "racks",
        "cluster_id",
        "max_frame_size",
        "coordinator_load_time_ms",
        "transaction_marker_delay_ms",
        "virtual_time",
        "kafka_version",
        "features",
        "data_dir",
        "advertised_host",
        "event_log_size",
        "warm",
        "security_protocol",
        "users",
        "oauth_validator",
        "tune_gc",
    }
)
MARKER = "fakebroker"


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("fakebroker", "fakebroker: an in-process Kafka for tests")
    group.addoption("--fakebroker-brokers", type=int, default=None, help="brokers per test cluster (default 1)")
    group.addoption(
        "--fakebroker-set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="broker setting under Kafka's name, for every test cluster (repeatable)",
    )
    group.addoption(
        "--fakebroker-shared",
        action="store_true",
        default=None,
        help="one cluster per session (per xdist worker), cleaned between tests",
    )
    group.addoption(
        "--fakebroker-virtual-time", action="store_true", default=None, help="run test clusters on virtual time"
    )
    group.addoption(
        "--fakebroker-timeline-dir",
        default=None,
        help="write the timeline picture of every failed test's cluster into this folder",
    )
    parser.addini("fakebroker_brokers", "brokers per test cluster", default="1")
    parser.addini("fakebroker_config", "broker settings NAME=VALUE, one per line", type="linelist", default=[])
    parser.addini("fakebroker_shared", "one cluster per session, cleaned between tests", type="bool", default=False)
    parser.addini("fakebroker_virtual_time", "run test clusters on virtual time", type="bool", default=False)
    parser.addini(
        "fakebroker_timeline_dir", "folder for failed tests' timeline pictures (default: under pytest's basetemp)"
    )
    parser.addini(
        "fakebroker_gc_freeze",
        "freeze what exists before fakebroker's import and when the first test cluster starts "
        "(gc.freeze), so the garbage collector stops walking the session's long-lived objects "
        "during the import and after every test's cluster",
        type="bool",
        default=True,
    )
    parser.addini(
        "fakebroker_anyio_backends",
        "the backends @pytest.mark.anyio tests run on when no anyio_backend fixture picks one "
        "(default: asyncio; 'asyncio trio' for both)",
        type="args",
        default=["asyncio"],
    )


def _pairs(lines: list[str]) -> dict[str, str]:
    out = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"fakebroker: expected NAME=VALUE, got {line!r}")
        out[key.strip()] = value.strip()
    return out


def base_options(config: pytest.Config) -> dict[str, Any]:
    """FakeCluster keyword arguments from the command line and ini file."""
    brokers = config.getoption("fakebroker_brokers") or int(config.getini("fakebroker_brokers") or 1)
    settings = _pairs(config.getini("fakebroker_config"))
    settings.update(_pairs(config.getoption("fakebroker_set")))
    virtual = config.getoption("fakebroker_virtual_time") or config.getini("fakebroker_virtual_time")
    # warm: __consumer_offsets exists at start, as on a Kafka that a test suite shares, so a
    # consumer's first FindCoordinator does not create it on the way (see FakeCluster)
    options: dict[str, Any] = {"brokers": brokers, "warm": True}
    if settings:
        options["config"] = settings
    if virtual:
        options["virtual_time"] = True
    return options


def marker_options(item: pytest.Item) -> dict[str, Any] | None:
    """The ``@pytest.mark.fakebroker(...)`` arguments (closest marker wins per key), or None."""
    markers = list(item.iter_markers(MARKER))
    if not markers:
        return None
    merged: dict[str, Any] = {}
    for marker in reversed(markers):  # class/module markers first, the test's own last
        if marker.args:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.fakebroker takes keyword arguments only")
        merged.update(marker.kwargs)
    for name in sorted(set(merged) - CLUSTER_PARAMS):
        near = difflib.get_close_matches(name, CLUSTER_PARAMS, n=1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.fakebroker got an unknown option {name!r}; {hint}"
            f"FakeCluster accepts {', '.join(sorted(CLUSTER_PARAMS))}"
        )
    return merged


def options_for(item: pytest.Item) -> dict[str, Any]:
    options = base_options(item.config)
    marked = marker_options(item) or {}
    if "config" in marked and "config" in options:
        marked = {**marked, "config": {**options["config"], **marked["config"]}}
    options.update(marked)
    return options


def shared(config: pytest.Config) -> bool:
    return bool(config.getoption("fakebroker_shared") or config.getini("fakebroker_shared"))


def timeline_dir(config: pytest.Config) -> str:
    return config.getoption("fakebroker_timeline_dir") or config.getini("fakebroker_timeline_dir") or ""


ANYIO_BACKENDS = ("asyncio", "trio")


def anyio_backends(config: pytest.Config) -> list[str]:
    names = list(config.getini("fakebroker_anyio_backends")) or ["asyncio"]
    for name in names:
        if name not in ANYIO_BACKENDS:
            raise pytest.UsageError(
                f"fakebroker_anyio_backends: unknown backend {name!r}; the backends are {', '.join(ANYIO_BACKENDS)}"
            )
    return names


def gc_freeze(config: pytest.Config) -> bool:
    return bool(config.getini("fakebroker_gc_freeze"))
