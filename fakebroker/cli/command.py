"""The ``fakebroker`` command (``python -m fakebroker`` is the same): ``serve``, a local dev
server; ``run``, a command against a fresh cluster while a scenario plays faults on it
(``scenario.py``); ``errors`` and ``apis``, the names a fault rule can use.

``serve``'s first line on stdout is exactly ``bootstrap: 127.0.0.1:P1,...`` so scripts can read it;
then one line per notable event. Ctrl-C or SIGTERM stops it cleanly with exit code 0.
"""

from __future__ import annotations

import errno
import gc
import os
import signal
import sys
from typing import Any

import anyio
import click
from click.core import ParameterSource

from ..cluster import ClusterUsageError, DataDirError, ErrorCode, FakeCluster
from ..cluster.settings import (
    DEFAULT_RELEASE,
    MAX_PARTITIONS_PER_REQUEST,
    PARTITIONS_RULE,
    PROTOCOLS,
    RELEASES,
    TOPIC_NAME_RULE,
    FeatureError,
    UnknownRelease,
    advertised_for,
    api_keys,
    check_feature,
    check_options,
    check_security,
    listener_specs,
    release,
    topic_name_error,
)
from ..version import __version__
from .config import ConfigError, ServeConfig, setting_error
from .config import load as load_config
from .console import EventPrinter
from .memory import reclaim_when_quiet

# -h works wherever --help does (click hands these on to every subcommand)
CONTEXT = {"help_option_names": ["-h", "--help"]}
PORT = click.IntRange(0, 65535)


class ControlPortError(Exception):
    """The control endpoint could not listen on its port."""

    def __init__(self, port: int, error: OSError):
        super().__init__(f"{port}: {error.strerror or error}")
        self.port = port
        self.error = error


def _parse_topic(text: str) -> tuple[str, int]:
    name, _, count = text.rpartition(":") if ":" in text else (text, "", "")
    if not name:
        raise click.BadParameter(f"{text!r}: expected NAME or NAME:PARTITIONS, e.g. orders:6", param_hint="'--topic'")
    if reason := topic_name_error(name):
        raise click.BadParameter(f"{name!r} is not a topic name: {TOPIC_NAME_RULE} ({reason})", param_hint="'--topic'")
    try:
        partitions = int(count) if count else 1
    except ValueError:
        partitions = 0
    if partitions < 1:
        raise click.BadParameter(
            f"{text!r}: the partition count must be a whole number >= 1, e.g. {name}:6", param_hint="'--topic'"
        )
    if partitions > MAX_PARTITIONS_PER_REQUEST:  # what one CreateTopics may create
        raise click.BadParameter(f"{text!r}: the partition count must be {PARTITIONS_RULE}", param_hint="'--topic'")
    return name, partitions


def _parse_setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise click.BadParameter(
            f"{text!r}: expected NAME=VALUE, e.g. auto.create.topics.enable=false", param_hint="'--set'"
        )
    reason = setting_error(key, value)
    if reason:
        raise click.BadParameter(reason, param_hint="'--set'")
    return key, value


def _parse_user(text: str) -> tuple[str, str]:
    name, sep, password = text.partition(":")
    if not sep or not name or not password:
        raise click.BadParameter(f"{text!r}: give NAME:PASSWORD, e.g. --user alice:alice-secret", param_hint="--user")
    return name, password


def _parse_oauth_option(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise click.BadParameter(
            f"{text!r}: give NAME=VALUE, e.g. --oauth-option unsecuredValidatorPrincipalClaimName=client_id",
            param_hint="--oauth-option",
        )
    return name.strip(), value


def _oauth_words(message: str, flags: tuple[str, ...], config_file: str | None) -> str:
    """A refusal of the OAUTHBEARER validator's options, in the words of the command line or the file."""
    where = "--oauth-option" if flags or not config_file else f"{config_file}: [oauth_validator]"
    return message.replace("oauth_validator=", where).replace("oauth_validator", where)


def _parse_features(texts: tuple[str, ...], kafka_version: str) -> dict[str, int]:
    """``NAME=LEVEL`` pairs, checked against the levels a broker of that release supports."""
    out: dict[str, int] = {}
    for text in texts:
        name, sep, level = text.partition("=")
        if not sep or not name or not level.strip().lstrip("-").isdigit():
            raise click.BadParameter(
                f"{text!r}: expected NAME=LEVEL, e.g. transaction.version=1", param_hint="'--feature'"
            )
        try:
            check_feature(name, int(level), kafka_version)
        except FeatureError as exc:
            raise click.BadParameter(str(exc), param_hint="'--feature'") from None
        out[name] = int(level)
    return out


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, "--version", "-V", prog_name="fakebroker", message="%(prog)s %(version)s")
def main() -> None:
    """fakebroker: an in-process Kafka-compatible broker for tests."""


@main.command(context_settings=CONTEXT)
def errors() -> None:
    """List every Kafka error name a fault rule can answer with (error=NAME), with its code."""
    for member in ErrorCode:
        click.echo(f"{member.name:<45} {int(member):>4}  {member.description}")


@main.command(context_settings=CONTEXT)
def apis() -> None:
    """List every Kafka API a fault rule can match (api=NAME), with its key."""
    for key, name in sorted(api_keys().items()):
        click.echo(f"{name:<40} {key:>4}")


@main.command(context_settings=CONTEXT)
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="TOML file with brokers, port, topics, settings and initial faults (options given here win).",
)
@click.option("--brokers", type=click.IntRange(min=1), default=1, show_default=True, help="Number of brokers.")
@click.option(
    "--port",
    type=PORT,
    default=9092,
    show_default=True,
    help="Port of the first broker; the others use port+1, ... (0 = free ports).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback by default).")
@click.option(
    "--advertised-host",
    default=None,
    help="Address the brokers tell clients in Metadata and the bootstrap line (default: --host when it is "
    "a concrete address; 127.0.0.1 for 0.0.0.0 and ::1 for ::).",
)
@click.option("--topic", "topics", multiple=True, help="Create a topic at start: NAME or NAME:PARTITIONS (repeatable).")
@click.option(
    "--rack",
    "racks",
    multiple=True,
    help="A broker's rack (broker.rack), once per broker in node id order: --rack a --rack b (repeatable).",
)
@click.option("--set", "settings", multiple=True, help="Broker setting under Kafka's name: NAME=VALUE (repeatable).")
@click.option(
    "--feature",
    "features",
    multiple=True,
    help="Finalized feature level: NAME=LEVEL, e.g. transaction.version=1 for clients without KIP-890 (repeatable).",
)
@click.option(
    "--kafka-version",
    default=None,
    help=f"Kafka release to pose as: {', '.join(RELEASES)} (default {DEFAULT_RELEASE}); its API versions and features.",
)
@click.option(
    "--virtual-time",
    is_flag=True,
    default=False,
    help="Run the broker's timers on a virtual clock (advance it over the control endpoint).",
)
@click.option(
    "--control-port",
    type=PORT,
    default=None,
    help="Serve the HTTP control endpoint on 127.0.0.1:PORT (0 = a free port); off by default.",
)
@click.option("--control-token", default=None, help="Bearer token of the control endpoint (default: a random one).")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=True, dir_okay=True),
    default=None,
    help="Keep partition logs, topics and committed offsets in this directory, so a restart finds them again.",
)
@click.option(
    "--security-protocol",
    type=click.Choice(PROTOCOLS),
    default=None,
    help="The listeners' protocol (default PLAINTEXT). With TLS a line `tls-ca: PATH` names the CA file clients "
    "trust; with SASL, give users with --user.",
)
@click.option(
    "--listeners",
    default=None,
    help="Kafka's listeners: NAME://HOST:PORT,... (an empty HOST is --host, PORT 0 a free one; broker i "
    "listens on PORT+i). A name's protocol comes from --set listener.security.protocol.map=NAME:PROTOCOL,... "
    "(by default the protocol of the same name). The first is the one the bootstrap line names; a line "
    "`listener NAME: HOST:PORT,...` follows for each other one.",
)
@click.option(
    "--user",
    "users",
    multiple=True,
    help="A SASL user: NAME:PASSWORD, for PLAIN and SCRAM-SHA-256/512 (repeatable).",
)
@click.option(
    "--oauth-option",
    "oauth_options",
    multiple=True,
    help="An option of Kafka's default OAUTHBEARER validator (the unsecured one): NAME=VALUE, e.g. "
    "unsecuredValidatorPrincipalClaimName=client_id (repeatable). Kafka's secured validator (JWKS) is set with "
    "--set sasl.oauthbearer.jwks.endpoint.url=... instead.",
)
@click.option("--json-logs", is_flag=True, default=False, help="Print events as JSON lines instead of coloured text.")
@click.option("--color/--no-color", default=None, help="Force colours on or off (default: on for a terminal).")
@click.pass_context
def serve(
    ctx: click.Context,
    config_file: str | None,
    brokers: int,
    port: int,
    host: str,
    advertised_host: str | None,
    topics: tuple[str, ...],
    racks: tuple[str, ...],
    settings: tuple[str, ...],
    features: tuple[str, ...],
    kafka_version: str | None,
    virtual_time: bool,
    control_port: int | None,
    control_token: str | None,
    data_dir: str | None,
    security_protocol: str | None,
    listeners: str | None,
    users: tuple[str, ...],
    oauth_options: tuple[str, ...],
    json_logs: bool,
    color: bool | None,
) -> None:
    """Run a fake Kafka cluster until Ctrl-C or SIGTERM.

    The first line is `bootstrap: HOST:PORT,...`; with several --listeners, a line `listener NAME:
    HOST:PORT,...` for each other one; with TLS the next is `tls-ca: PATH`; with --control-port the
    next is `control: URL token=TOKEN`, then `console: URL` (the live console, its token in the
    URL); then one line per event.
    """
    try:
        file = load_config(config_file) if config_file else ServeConfig()
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)

    brokers = brokers if given("brokers") or not config_file else file.brokers
    port = port if given("port") or not config_file else file.port
    host = host if given("host") or not config_file else file.host
    control_port = control_port if control_port is not None else file.control_port
    control_token = control_token if control_token is not None else file.control_token
    topic_map: dict[str, Any] = {**file.topics, **dict(_parse_topic(t) for t in topics)}
    config = {**file.settings, **dict(_parse_setting(s) for s in settings)}
    if listeners is not None:
        config["listeners"] = listeners
    if config.get("listeners") and not given("port"):
        port = 0  # the ports are the listeners'
    rack_list = list(racks) if racks else file.racks
    if control_token is not None and control_port is None:
        raise click.UsageError("--control-token needs --control-port")
    kafka_version = kafka_version or file.kafka_version or DEFAULT_RELEASE
    try:
        kafka_version = release(kafka_version).name
    except UnknownRelease as exc:
        raise click.BadParameter(str(exc), param_hint="--kafka-version") from None
    if host in ("0.0.0.0", "::", ""):
        click.echo(
            f"fakebroker: warning: --host {host} listens on every network interface: anyone who can reach this "
            "machine can read, write and delete its topics (there is no authentication); "
            f"clients are told {advertised_host or advertised_for(host)} (set it with --advertised-host)",
            err=True,
        )
    user_map = {**file.users, **dict(_parse_user(u) for u in users)}
    oauth_map = {**file.oauth_validator, **dict(_parse_oauth_option(o) for o in oauth_options)}
    options = {
        "brokers": brokers,
        "host": host,
        "advertised_host": advertised_host,
        "port": port,
        "topics": topic_map,
        "config": config,
        "racks": rack_list,
        "virtual_time": virtual_time or file.virtual_time,
        "coordinator_load_time_ms": file.coordinator_load_time_ms,
        "transaction_marker_delay_ms": file.transaction_marker_delay_ms,
        "kafka_version": kafka_version,
        "features": _parse_features(features, kafka_version),
        "data_dir": data_dir if data_dir is not None else file.data_dir,
        "event_log_size": file.event_log_size,
        "security_protocol": security_protocol or file.security_protocol or "PLAINTEXT",
        "users": user_map,
        "oauth_validator": oauth_map or None,
    }
    try:  # what FakeCluster would refuse, refused before anything starts
        check_options(brokers, port, topic_map, config, rack_list)
        check_security(str(options["security_protocol"]), user_map, config)
        listener_specs(config, str(options["security_protocol"]), port, advertised_host, brokers)
    except ClusterUsageError as exc:
        message = str(exc)
        if racks and message.startswith("racks"):  # in the words of the command line
            message = (
                f"--rack given {len(racks)} time(s) for {brokers} broker(s): give it once per broker, in node id order"
            )
        raise click.UsageError(message) from None
    for index, rule in enumerate(file.faults, 1):
        named = rule.get("broker")
        named = [named] if isinstance(named, int) else list(named or [])
        if any(b not in range(brokers) for b in named):
            raise click.UsageError(
                f"{config_file}: faults #{index}: broker= {rule['broker']!r} names no broker of this cluster; "
                f"its brokers are {list(range(brokers))}"
            )
    printer = EventPrinter(json_lines=json_logs, color=color)
    control = None if control_port is None else {"port": control_port, "token": control_token}
    try:
        anyio.run(_serve, options, control, file.faults, printer, backend="trio")
        if not printer.close():  # a full stdout pipe nobody reads: exiting must not wait for it
            sys.stderr.flush()
            os._exit(0)
    except ClusterUsageError as exc:  # what only making the cluster finds: the OAUTHBEARER validator, its JWKS
        raise click.UsageError(_oauth_words(str(exc), oauth_options, config_file)) from None
    except DataDirError as exc:
        click.echo(f"fakebroker: {exc}", err=True)
        sys.exit(2)
    except ControlPortError as exc:
        click.echo(f"fakebroker: --control-port: cannot listen on 127.0.0.1:{exc}", err=True)
        if exc.error.errno == errno.EADDRINUSE:
            click.echo(
                f"fakebroker: another process uses port {exc.port}; pick another with --control-port, "
                "or --control-port 0 for a free port",
                err=True,
            )
        sys.exit(2)
    except OSError as exc:
        click.echo(f"fakebroker: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        if exc.errno == errno.EADDRINUSE:
            click.echo(
                "fakebroker: another process uses that port; pick another with --port, or --port 0 for free ports",
                err=True,
            )
        sys.exit(2)


# The process is the broker's own: what exists at start (the protocol schemas, the modules)
# is frozen out of the collector's walks; the running cluster raises its thresholds
# (cluster/collector.py), as for any cluster.
def _collect_less() -> None:
    gc.collect()
    gc.freeze()


async def _serve(
    options: dict[str, Any], control: dict[str, Any] | None, faults: list[dict[str, Any]], printer: EventPrinter
) -> None:
    cluster = FakeCluster(**options)
    failed: ControlPortError | None = None  # raised once the cluster has stopped, not inside its task group
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with cluster:
            printer.plain(f"bootstrap: {cluster.bootstrap_servers}")
            for name in cluster.listener_names[1:]:
                printer.plain(f"listener {name}: {cluster.bootstrap_for(name)}")
            if cluster.tls_ca_file is not None:
                printer.plain(f"tls-ca: {cluster.tls_ca_file}")
            if control is not None:  # the control endpoint runs beside the cluster, in its task group
                from ..http import ControlEndpoint  # hypercorn and the routes only when asked for

                try:
                    endpoint = await ControlEndpoint(cluster, control["port"], control["token"]).__aenter__()
                except OSError as exc:
                    failed = ControlPortError(control["port"], exc)
                else:
                    printer.plain(f"control: {endpoint.url} token={endpoint.token}")
                    printer.plain(f"console: {endpoint.console_url}")
            if failed is None:
                _collect_less()
                for rule in faults:
                    cluster.faults.add(**rule)
                for event in cluster.events:
                    printer(event)
                cluster.on_event(printer)
                async with anyio.create_task_group() as beside:
                    # what a burst took goes back (cli/memory.py), the events it left made anew first
                    beside.start_soon(reclaim_when_quiet, cluster.renew_events)
                    async for signum in signals:
                        printer.plain(f"stopping ({signal.Signals(signum).name})")
                        break
                    beside.cancel_scope.cancel()
    if failed is not None:
        raise failed


@main.command(context_settings=CONTEXT)
@click.argument("scenario_file", metavar="SCENARIO.py", type=click.Path(exists=True, dir_okay=False))
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option(
    "--brokers", type=click.IntRange(min=1), default=None, help="Number of brokers (overrides the scenario's CLUSTER)."
)
@click.option("--topic", "topics", multiple=True, help="Create a topic at start: NAME or NAME:PARTITIONS (repeatable).")
@click.option("--set", "settings", multiple=True, help="Broker setting under Kafka's name: NAME=VALUE (repeatable).")
@click.option(
    "--timeout", type=float, default=None, help="Stop the command after this many seconds (overrides TIMEOUT)."
)
@click.option(
    "--timeline",
    "timeline_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the timeline to this file (.txt, or .svg/.png when drawing is available) instead of printing it.",
)
@click.option("--quiet", is_flag=True, help="Print nothing of fakebroker's own but errors.")
def run(
    scenario_file: str,
    command: tuple[str, ...],
    brokers: int | None,
    topics: tuple[str, ...],
    settings: tuple[str, ...],
    timeout: float | None,
    timeline_file: str | None,
    quiet: bool,
) -> None:
    """Run COMMAND against a fresh cluster while SCENARIO.py plays faults on it.

    COMMAND gets the bootstrap address in FAKEBROKER_BOOTSTRAP, KAFKA_BOOTSTRAP_SERVERS and
    BOOTSTRAP_SERVERS. Exits with COMMAND's status; 3 if the scenario failed, 124 on timeout.
    Put `--` before COMMAND: fakebroker run storm.py -- pytest -x tests/
    """
    from .scenario import ScenarioError, load_scenario, play

    try:
        scenario = load_scenario(scenario_file)
    except ScenarioError as exc:
        raise click.UsageError(str(exc)) from None
    options = dict(scenario.cluster_options)
    if brokers is not None:
        options["brokers"] = brokers
    if topics:
        options["topics"] = {**(options.get("topics") or {}), **dict(_parse_topic(t) for t in topics)}
    if settings:
        options["config"] = {**(options.get("config") or {}), **dict(_parse_setting(s) for s in settings)}
    try:  # what FakeCluster would refuse, refused before the command starts
        check_options(
            options.get("brokers", 1),
            options.get("port", 0),
            options.get("topics"),
            options.get("config"),
            options.get("racks"),
        )
    except ClusterUsageError as exc:
        raise click.UsageError(f"{scenario_file}: {exc}") from None

    def started(cluster: FakeCluster, proc: Any) -> None:
        if not quiet:
            click.echo(
                f"fakebroker: bootstrap {cluster.bootstrap_servers}; running {' '.join(command)} (pid {proc.pid})",
                err=True,
            )

    try:
        result = anyio.run(
            lambda: play(
                scenario,
                list(command),
                options,
                timeout=timeout,
                timeline_file=timeline_file,
                forward_signals=True,
                on_start=started,
            ),
            backend="trio",
        )
    except ScenarioError as exc:
        click.echo(f"fakebroker: {exc}", err=True)
        sys.exit(2)
    if result.scenario_traceback:
        click.echo(f"fakebroker: the scenario {scenario_file} failed:\n{result.scenario_traceback.rstrip()}", err=True)
    if not quiet and result.timeline_file is None:
        click.echo("fakebroker: timeline\n" + result.timeline, err=True)
    if not quiet or result.status != result.command_status:
        where = f" (timeline in {result.timeline_file})" if result.timeline_file else ""
        click.echo(f"fakebroker: {result.summary()}{where}", err=True)
    sys.exit(result.status)


from .campaign import campaign  # noqa: E402 (a light command: it imports PySpark when it runs)

main.add_command(campaign)

if __name__ == "__main__":  # pragma: no cover
    main()
