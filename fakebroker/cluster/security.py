"""A cluster's security, as a test asks for it: ``FakeCluster(security_protocol="SASL_SSL",
users={"alice": "secret"})``. TLS material is made at start with ``trustme`` (a throwaway CA
and a certificate for the broker's addresses), written as PEM files clients can be pointed at;
SASL users get PLAIN passwords and SCRAM-SHA-256/512 credentials."""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.security.mechanisms import MECHANISMS
from ..server.security import PROTOCOLS, ListenerSecurity
from .errors import ClusterUsageError

DEFAULT_MECHANISMS = ",".join(MECHANISMS)  # Kafka's default is GSSAPI, which is not served here


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of a cluster's TLS: the CA clients trust, and the broker's certificate and key."""

    ca_file: str
    cert_file: str
    key_file: str


def check_security(protocol: str, users: Mapping[str, str] | None, config: dict[str, Any]) -> None:
    """A ClusterUsageError naming what is valid, before anything starts."""
    if protocol not in PROTOCOLS:
        raise ClusterUsageError(f"security_protocol={protocol!r}: the protocols are {', '.join(PROTOCOLS)}")
    for name, password in (users or {}).items():
        if not isinstance(name, str) or not name or not isinstance(password, str) or not password:
            raise ClusterUsageError(f"users: {name!r} needs a non-empty name and password (strings)")
    given = config.get("sasl.enabled.mechanisms")
    if given is not None:
        names = [m.strip() for m in str(given).split(",") if m.strip()]
        unknown = [m for m in names if m not in MECHANISMS]
        if unknown or not names:
            raise ClusterUsageError(
                f"sasl.enabled.mechanisms={given!r}: the mechanisms served are {', '.join(MECHANISMS)}"
            )


def mechanisms(config_value: str) -> tuple[str, ...]:
    return tuple(m.strip() for m in config_value.split(",") if m.strip())


def make_tls(hosts: list[str]) -> tuple[Any, TlsFiles]:
    """A server TLS context and its PEM files: a new CA, and a certificate for ``hosts``."""
    import ssl

    import trustme  # imported when a cluster uses TLS: it brings cryptography

    ca = trustme.CA(organization_name="fakebroker test CA")
    cert = ca.issue_cert(*dict.fromkeys(hosts))
    folder = Path(tempfile.mkdtemp(prefix="fakebroker-tls-"))
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    cert.cert_chain_pems[0].write_to_path(str(folder / "broker.pem"))
    cert.private_key_pem.write_to_path(str(folder / "broker.key"))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    files = TlsFiles(str(folder / "ca.pem"), str(folder / "broker.pem"), str(folder / "broker.key"))
    return context, files


def listener_security(
    protocol: str, mechanisms_value: str, hosts: list[str]
) -> tuple[ListenerSecurity, TlsFiles | None]:
    context, files = make_tls(hosts) if protocol in ("SSL", "SASL_SSL") else (None, None)
    sasl = mechanisms(mechanisms_value) if protocol.startswith("SASL_") else ()
    return ListenerSecurity(protocol, context, sasl), files


def remove_when_gone(owner: object, files: TlsFiles) -> None:
    """The TLS files go with their cluster (or at the interpreter's exit)."""
    weakref.finalize(owner, shutil.rmtree, str(Path(files.ca_file).parent), True)
