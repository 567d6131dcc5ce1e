"""Issue 17, a newcomer's first hour: each mistake on the command line (or in the TOML file) gets
exit code 2 and a message naming what is valid, never a traceback or silence."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from click.testing import CliRunner

from fakebroker.cli import main
from fakebroker.version import __version__


def run(*args: str) -> tuple[int, str]:
    """``fakebroker ARGS`` in-process (every mistake here is refused before anything listens)."""
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output, result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--topic", "orders:0"],
            "Invalid value for '--topic': 'orders:0': the partition count must be a whole number >= 1",
        ),
        (["--topic", "orders:-3"], "the partition count must be a whole number >= 1, e.g. orders:6"),
        (["--topic", "orders:six"], "the partition count must be a whole number >= 1"),
        (
            ["--topic", "bad topic!"],
            "'bad topic!' is not a topic name: a topic name is 1..249 characters of ASCII letters, digits, "
            "'.', '_' and '-', and not '.' or '..'",
        ),
        (["--topic", "..:2"], "'..' is not a topic name"),
        (["--topic", "x" * 250], "is not a topic name: a topic name is 1..249 characters"),
        (["--brokers", "0"], "Invalid value for '--brokers': 0 is not in the range x>=1"),
        (["--port", "70000"], "Invalid value for '--port': 70000 is not in the range 0<=x<=65535"),
        (["--port", "-1"], "Invalid value for '--port'"),
        (["--control-port", "70000"], "Invalid value for '--control-port': 70000 is not in the range 0<=x<=65535"),
        (["--port", "65535", "--brokers", "2"], "2 brokers from port 65535 would need ports up to 65536"),
        (
            ["--set", "auto.create.topics.enabel=false"],
            "Invalid value for '--set': unknown broker setting 'auto.create.topics.enabel': "
            "did you mean 'auto.create.topics.enable'?",
        ),
        (
            ["--set", "num.partitions=abc"],
            "Invalid value for '--set': broker setting num.partitions must be of type INT "
            "(a whole number in -2147483648..2147483647), not 'abc'",
        ),
        (["--set", "auto.create.topics.enable=yes"], "must be of type BOOLEAN (true or false), not 'yes'"),
        (["--set", "log.cleaner.min.cleanable.ratio=half"], "must be of type DOUBLE (a number such as 0.5)"),
        (["--set", "num.partitions"], "expected NAME=VALUE"),
    ],
)
def test_serve_refuses_a_bad_option_with_a_usage_error(args, message):
    code, output = run("serve", *args)
    assert code == 2
    assert message in output, output


def toml(tmp_path, text: str) -> str:
    path = tmp_path / "serve.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("text", "args", "message"),
    [
        ('[topics.orders]\npartitions = "6"\n', [], "topics.orders.partitions must be a whole number >= 1, got '6'"),
        ("[topics.orders]\npartitions = 0\n", [], "topics.orders.partitions must be a whole number >= 1, got 0"),
        (
            "[topics.orders]\nreplication_factor = true\n",
            [],
            "topics.orders.replication_factor must be a whole number >= 1, got True",
        ),
        ('[topics."bad topic!"]\npartitions = 1\n', [], "not a topic name: a topic name is 1..249 characters"),
        (
            "[topics.orders]\npartitions = 6\nreplication_factor = 3\n",
            [],
            "topic 'orders': replication_factor 3 needs 3 brokers and the cluster has 1; "
            "give a replication_factor in 1..1, or more brokers",
        ),
        (
            "brokers = 3\n[topics.orders]\npartitions = 6\nreplication_factor = 3\n",
            ["--brokers", "2"],
            "replication_factor 3 needs 3 brokers and the cluster has 2",
        ),
        (
            '[settings]\n"auto.create.topics.enabel" = false\n',
            [],
            "settings: unknown broker setting 'auto.create.topics.enabel': did you mean 'auto.create.topics.enable'?",
        ),
        ('[settings]\n"num.partitions" = "abc"\n', [], "broker setting num.partitions must be of type INT"),
        (
            '[topics.orders]\nconfig = { "retention.msec" = 1 }\n',
            [],
            "topics.orders: unknown topic config 'retention.msec': did you mean 'retention.ms'",
        ),
        ('virtual_time = "no"\n', [], "virtual_time must be true or false, got 'no'"),
        (
            '[[faults]]\napi = "Heartbeat"\nbroker = 5\nerror = "NOT_COORDINATOR"\n',
            [],
            "faults #1: broker= 5 names no broker of this cluster; its brokers are [0]",
        ),
        (
            '[[faults]]\napis = "Heartbeat"\nerror = "NOT_COORDINATOR"\n',
            [],
            "faults #1: unknown fault rule keyword(s) 'apis' (did you mean 'api'?)",
        ),
    ],
)
def test_a_bad_config_file_is_a_usage_error(tmp_path, text, args, message):
    code, output = run("serve", "--port", "0", "--config", toml(tmp_path, text), *args)
    assert code == 2
    assert message in " ".join(output.split()), output


def test_version_and_short_help_everywhere():
    code, output = run("--version")
    assert (code, output) == (0, f"fakebroker {__version__}\n")
    for args in ([], ["serve"], ["run"], ["errors"], ["apis"]):
        code, output = run(*args, "-h")
        assert code == 0 and "Usage:" in output and "-h, --help" in output, (args, output)


def test_errors_lists_every_kafka_error_name():
    code, output = run("errors")
    assert code == 0
    assert "NOT_COORDINATOR" in output and "REBALANCE_IN_PROGRESS" in output
    assert len(output.splitlines()) > 130


def test_apis_lists_every_api_name_and_a_misspelt_one_gets_only_the_near_ones():
    code, output = run("apis")
    assert code == 0
    assert output.splitlines()[0].split() == ["Produce", "0"] and "Heartbeat" in output
    from fakebroker.faults import FaultRuleError, Faults

    with pytest.raises(FaultRuleError) as caught:
        Faults().add(api="Hartbeat", error="NOT_COORDINATOR")
    message = str(caught.value)
    assert message.startswith("unknown API 'Hartbeat'. Did you mean Heartbeat, BrokerHeartbeat? (`fakebroker apis`")
    assert "Produce" not in message


def test_a_taken_control_port_names_that_port_and_its_option():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--control-port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"fakebroker: --control-port: cannot listen on 127.0.0.1:{port}: Address already in use" in result.stderr
    assert f"another process uses port {port}; pick another with --control-port, or --control-port 0" in result.stderr


@pytest.mark.parametrize(
    "topic, message",
    [
        ("orders:0", "the partition count must be a whole number >= 1"),
        ("t:10001", "the partition count must be a whole number in 1..10000"),  # one CreateTopics' most
    ],
)
def test_a_mistake_in_a_subprocess_is_a_message_not_a_traceback(topic, message):
    result = subprocess.run(
        [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--topic", topic],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert message in result.stderr


def test_run_refuses_a_bad_cluster_before_the_command_starts(tmp_path):
    scenario = tmp_path / "storm.py"
    scenario.write_text(
        'CLUSTER = {"brokers": 2, "config": {"num.partitions": "many"}}\n\nasync def scenario(cluster):\n    pass\n'
    )
    code, output = run("run", str(scenario), "--", "true")
    assert code == 2
    assert "broker setting num.partitions must be of type INT" in output
    code, output = run("run", str(scenario), "--topic", "orders:0", "--", "true")
    assert code == 2 and "the partition count must be a whole number >= 1" in output
