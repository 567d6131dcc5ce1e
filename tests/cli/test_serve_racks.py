"""Racks from the outside: ``FakeCluster(racks=...)`` refuses bad lists naming what is valid;
``serve --rack`` (once per broker) and a config file's ``racks`` give the brokers racks that
clients see in Metadata."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient

from fakebroker.cli.config import ConfigError, load
from fakebroker.cluster import FakeCluster
from fakebroker.cluster.actions import ClusterUsageError


@pytest.mark.parametrize(
    "racks, message",
    [
        (["a"], "racks names 1 rack(s) for 2 broker(s): give one per broker"),
        ("ab", "racks must be a list of one rack name (or None) per broker"),
        (["a", ""], "racks[1] (broker 1) must be a non-empty rack name or None"),
        (["a", 7], "racks[1] (broker 1) must be a non-empty rack name or None, not 7"),
    ],
)
def test_bad_racks_are_refused_with_what_is_valid(racks, message):
    with pytest.raises(ClusterUsageError, match=re.escape(message)):
        FakeCluster(brokers=2, racks=racks)


def serve(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "fakebroker", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def racks_seen(bootstrap: str) -> list[tuple[int, str | None]]:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    return sorted((n.id, n.rack) for n in admin.describe_cluster(request_timeout=10).result().nodes)


@pytest.mark.parametrize("from_file", [False, True], ids=["--rack", "config file"])
def test_serve_gives_each_broker_its_rack(tmp_path, from_file):
    if from_file:
        path = tmp_path / "c.toml"
        path.write_text('brokers = 3\nport = 0\nracks = ["east", "west", "east"]\n')
        proc = serve("--config", str(path))
    else:
        proc = serve("--brokers", "3", "--rack", "east", "--rack", "west", "--rack", "east")
    try:
        bootstrap = proc.stdout.readline().split()[1]
        assert racks_seen(bootstrap) == [(0, "east"), (1, "west"), (2, "east")]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=15)
    assert proc.returncode == 0


def test_serve_refuses_a_rack_count_other_than_the_broker_count(tmp_path):
    proc = serve("--brokers", "3", "--rack", "a")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "--rack given 1 time(s) for 3 broker(s): give it once per broker, in node id order" in err
    path = tmp_path / "c.toml"
    path.write_text("racks = [1, 2]\n")
    with pytest.raises(ConfigError, match="racks must be an array of rack names, one per broker"):
        load(path)
