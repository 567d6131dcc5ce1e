"""A cluster's listeners as Kafka configures them: ``listeners`` (``NAME://host:port,...``),
``listener.security.protocol.map`` (``NAME:PROTOCOL,...``; by default each protocol's name maps
to itself) and ``advertised.listeners``, or one listener made of ``security_protocol``, ``host``
and ``port``. Each broker listens on every listener; a port given for the first broker is that
port plus the node id on the others (0: free ports). Clients are told the addresses of the
listener they connected to.

Unlike Kafka, a listener without a host (``CLIENT://:0``) listens on the cluster's ``host``
(loopback by default), not on every interface."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..lazy_dataclasses import dataclass
from ..server.broker import Endpoint
from ..server.security import PROTOCOLS, ListenerSecurity
from .errors import ClusterUsageError

LISTENER_KEYS = ("listeners", "listener.security.protocol.map", "advertised.listeners")
_NAME = re.compile(r"[A-Za-z0-9_]+")
_ENDPOINT = re.compile(r"(?P<name>[^:/]+)://(?P<host>\[[^\]]*\]|[^:\[\]]*):(?P<port>-?\d+)")


@dataclass(frozen=True)
class ListenerSpec:
    """One listener, for the first broker: its name and protocol, the address it binds (host
    None: the cluster's) and the one it advertises (None, 0: the bound ones)."""

    name: str
    protocol: str
    host: str | None = None
    port: int = 0
    advertised_host: str | None = None
    advertised_port: int = 0

    def port_of(self, node_id: int) -> int:
        return self.port + node_id if self.port else 0

    def advertised_port_of(self, node_id: int) -> int:
        return self.advertised_port + node_id if self.advertised_port else 0


def listener_specs(
    config: Mapping[str, Any], security_protocol: str, port: int, advertised_host: str | None, brokers: int
) -> list[ListenerSpec]:
    """The listeners from the settings, or one named for ``security_protocol`` on ``port``; a
    ClusterUsageError naming what is valid (Kafka's rules: distinct names and ports, every name
    in the protocol map)."""
    given = str(config.get("listeners") or "").strip()
    if not given:
        for key in ("listener.security.protocol.map", "advertised.listeners"):
            if config.get(key):
                raise ClusterUsageError(f"{key} needs listeners (e.g. listeners=CLIENT://:0)")
        return [ListenerSpec(security_protocol, security_protocol, None, port, advertised_host)]
    if security_protocol != "PLAINTEXT":
        raise ClusterUsageError(
            f"security_protocol={security_protocol!r} and listeners={given!r}: give one of them (with listeners, "
            "each listener's protocol comes from listener.security.protocol.map)"
        )
    if port:
        raise ClusterUsageError(f"port={port} and listeners={given!r}: give the ports in listeners")
    protocols = _protocol_map(str(config.get("listener.security.protocol.map") or ""))
    specs: dict[str, ListenerSpec] = {}
    for name, host, at in _endpoints("listeners", given):
        if name in specs:
            raise ClusterUsageError(f"listeners={given!r}: each listener must have a different name ({name} twice)")
        if name not in protocols:
            raise ClusterUsageError(
                f"listeners: no security protocol for listener {name}: name it in listener.security.protocol.map "
                f"(NAME:PROTOCOL,...; the protocols are {', '.join(PROTOCOLS)}) or use a protocol's name"
            )
        specs[name] = ListenerSpec(name, protocols[name], host or None, at, advertised_host)
    _check_ports(given, list(specs.values()), brokers)
    advertised = str(config.get("advertised.listeners") or "").strip()
    for name, host, at in _endpoints("advertised.listeners", advertised) if advertised else ():
        if name not in specs:
            raise ClusterUsageError(f"advertised.listeners: {name} is not one of the listeners ({', '.join(specs)})")
        spec = specs[name]
        specs[name] = ListenerSpec(name, spec.protocol, spec.host, spec.port, host or spec.advertised_host, at)
    return list(specs.values())


def _protocol_map(text: str) -> dict[str, str]:
    protocols = {p: p for p in PROTOCOLS}
    for item in filter(None, (i.strip() for i in text.split(","))):
        name, _, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not _NAME.fullmatch(name) or protocol not in PROTOCOLS:
            raise ClusterUsageError(
                f"listener.security.protocol.map: {item!r} is not NAME:PROTOCOL (the protocols are "
                f"{', '.join(PROTOCOLS)})"
            )
        protocols[name] = protocol
    return protocols


def _endpoints(key: str, text: str) -> list[tuple[str, str, int]]:
    """``NAME://host:port`` items: names upper-cased as Kafka does, IPv6 hosts unbracketed."""
    out = []
    for item in filter(None, (i.strip() for i in text.split(","))):
        found = _ENDPOINT.fullmatch(item)
        name = found["name"].strip().upper() if found else ""
        port = int(found["port"]) if found else -1
        if not found or not _NAME.fullmatch(name) or not 0 <= port <= 65535:
            raise ClusterUsageError(
                f"{key}: {item!r} is not a listener: NAME://HOST:PORT (an empty HOST is the cluster's host, "
                "PORT 0 a free port), e.g. CLIENT://127.0.0.1:9092"
            )
        out.append((name, found["host"].strip("[]"), port))
    return out


def _check_ports(given: str, specs: list[ListenerSpec], brokers: int) -> None:
    """Fixed ports: broker ``i`` listens on port + i, so no two listeners' runs may meet."""
    taken: dict[int, str] = {}
    for spec in specs:
        for node_id in range(brokers) if spec.port else ():
            port = spec.port_of(node_id)
            if port > 65535:
                raise ClusterUsageError(f"listeners: {spec.name} on {spec.port} leaves no port for broker {node_id}")
            if port in taken:
                raise ClusterUsageError(
                    f"listeners={given!r}: each listener needs ports of its own, and broker i listens on port + i: "
                    f"{spec.name} and {taken[port]} would both use {port} with {brokers} brokers"
                )
            taken[port] = spec.name


def listener_setting(config: Mapping[str, Any], listener: str, key: str) -> Any:
    """A setting as ``listener`` sees it: ``listener.name.<listener>.<key>`` when given, else
    the broker-wide one."""
    own = config.get(f"listener.name.{listener.lower()}.{key}")
    return own if own not in (None, "") else config.get(key)


def broker_endpoints(
    specs: list[ListenerSpec], securities: Mapping[str, ListenerSecurity], host: str, node_id: int
) -> list[Endpoint]:
    """Broker ``node_id``'s listeners (``host``: the cluster's, for those that name none)."""
    return [
        Endpoint(
            s.name,
            securities[s.name],
            s.host or host,
            s.port_of(node_id),
            s.advertised_host,
            s.advertised_port_of(node_id),
        )
        for s in specs
    ]
