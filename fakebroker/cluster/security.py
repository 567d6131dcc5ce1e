"""A cluster's security, as a test asks for it: ``FakeCluster(security_protocol="SASL_SSL",
users={"alice": "secret"})``. TLS material is made at start with ``trustme`` (a throwaway CA
and a certificate for the broker's addresses), written as PEM files clients can be pointed at;
SASL users get PLAIN passwords and SCRAM-SHA-256/512 credentials; OAUTHBEARER tokens are
checked by Kafka's unsecured JWS validator, with its options, or by the test's own function
(``oauth_validator``)."""

from __future__ import annotations

import logging
import shutil
import tempfile
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.security.mechanisms import MECHANISMS
from ..core.security.oauthbearer import InvalidOAuthToken as InvalidOAuthToken  # re-exported for tests
from ..core.security.oauthbearer import OAuthToken as OAuthToken
from ..core.security.oauthbearer import TokenValidator, UnsecuredJwsValidator
from ..core.security.principal import MappingRuleError, parse_rules
from ..server.security import PROTOCOLS, ListenerSecurity
from .errors import ClusterUsageError
from .listeners import listener_setting

DEFAULT_MECHANISMS = ",".join(MECHANISMS)  # Kafka's default is GSSAPI, which is not served here
log = logging.getLogger("fakebroker")

# FakeCluster(oauth_validator=...): the test's function, or the unsecured validator's options
OAuthValidator = Callable[[str], OAuthToken] | Mapping[str, object]


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
    client_auth = str(config.get("ssl.client.auth", "none"))
    if client_auth not in CLIENT_AUTH:
        raise ClusterUsageError(f"ssl.client.auth={client_auth!r}: the values are {', '.join(CLIENT_AUTH)}")
    try:
        parse_rules(str(config.get("ssl.principal.mapping.rules", "DEFAULT")))
    except MappingRuleError as exc:
        raise ClusterUsageError(f"ssl.principal.mapping.rules: {exc}") from None
    given = config.get("sasl.enabled.mechanisms")
    if given is not None:
        names = [m.strip() for m in str(given).split(",") if m.strip()]
        unknown = [m for m in names if m not in MECHANISMS]
        if unknown or not names:
            raise ClusterUsageError(
                f"sasl.enabled.mechanisms={given!r}: the mechanisms served are {', '.join(MECHANISMS)}"
            )


class _TestsValidator:
    """A test's function as OAUTHBEARER's validator: what it returns is accepted, what it raises
    refuses the token (an :class:`InvalidOAuthToken`'s status, else ``invalid_token``)."""

    def __init__(self, validate: Callable[[str], OAuthToken]):
        self._validate = validate

    def validate(self, token: str, now_ms: int) -> OAuthToken:
        try:
            accepted = self._validate(token)
        except InvalidOAuthToken:
            raise
        except Exception as exc:
            log.debug("oauth_validator refused a token: %r", exc)
            raise InvalidOAuthToken(f"oauth_validator raised {exc!r}") from exc
        expiry = getattr(accepted, "expiry_ms", None)
        if not isinstance(accepted, OAuthToken) or isinstance(expiry, bool) or not isinstance(expiry, (int, float)):
            log.warning("oauth_validator returned %r, not an OAuthToken: the token is refused", accepted)
            raise InvalidOAuthToken(f"oauth_validator returned {accepted!r}, not an OAuthToken")
        if expiry <= now_ms:
            log.warning(
                "oauth_validator accepted a token with expiry_ms=%r, before now (%d ms since the epoch): its "
                "session ends at once (expiry_ms is in ms, not seconds)",
                expiry,
                now_ms,
            )
        return OAuthToken(str(accepted.principal), int(expiry), accepted.scopes)


def oauth_token_validator(
    given: OAuthValidator | None, protocol: str, config: Mapping[str, Any]
) -> TokenValidator | None:
    """OAUTHBEARER's validator from ``FakeCluster(oauth_validator=...)``: None (Kafka's default,
    the unsecured validator), a mapping of that validator's options (Kafka's JAAS names,
    ``unsecuredValidatorPrincipalClaimName`` ...) or the test's function; a ClusterUsageError
    naming what is valid."""
    if given is None:
        return None
    if not protocol.startswith("SASL_"):
        raise ClusterUsageError(
            f"oauth_validator needs a SASL listener: security_protocol is {protocol!r} (SASL_PLAINTEXT or SASL_SSL)"
        )
    enabled = mechanisms(str(config.get("sasl.enabled.mechanisms", DEFAULT_MECHANISMS)))
    if "OAUTHBEARER" not in enabled:
        raise ClusterUsageError(f"oauth_validator: OAUTHBEARER is not in sasl.enabled.mechanisms ({','.join(enabled)})")
    if isinstance(given, Mapping):
        try:
            return UnsecuredJwsValidator.from_options(given)
        except ValueError as exc:
            raise ClusterUsageError(f"oauth_validator: {exc}") from None
    if callable(given):
        return _TestsValidator(given)
    raise ClusterUsageError(
        f"oauth_validator={given!r}: a function (token: str) -> OAuthToken, or a mapping of the unsecured "
        "validator's options"
    )


def mechanisms(config_value: str) -> tuple[str, ...]:
    return tuple(m.strip() for m in config_value.split(",") if m.strip())


@dataclass(frozen=True)
class ClientCertificate:
    """A client certificate the cluster's CA signed, for mutual TLS: PEM files of the certificate
    and its key (PKCS#8), one file holding both (a Java ``ssl.keystore.type=PEM`` keystore), and
    the principal the broker will see (``User:CN=alice,...``, before the mapping rules)."""

    cert_file: str
    key_file: str
    keystore_file: str
    subject: str


class TlsMaterial:
    """A cluster's throwaway CA, its broker certificate, and the client certificates issued."""

    def __init__(self, hosts: list[str]):
        import trustme  # imported when a cluster uses TLS: it brings cryptography

        self._ca = trustme.CA(organization_name="fakebroker test CA")
        cert = self._ca.issue_cert(*dict.fromkeys(hosts))
        self.folder = Path(tempfile.mkdtemp(prefix="fakebroker-tls-"))
        self._ca.cert_pem.write_to_path(str(self.folder / "ca.pem"))
        cert.cert_chain_pems[0].write_to_path(str(self.folder / "broker.pem"))
        cert.private_key_pem.write_to_path(str(self.folder / "broker.key"))
        self._broker = cert
        self.files = TlsFiles(
            str(self.folder / "ca.pem"), str(self.folder / "broker.pem"), str(self.folder / "broker.key")
        )

    def server_context(self, client_auth: str) -> Any:
        """The broker side's context; ``client_auth`` is Kafka's ``ssl.client.auth``."""
        import ssl

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._broker.configure_cert(context)
        if client_auth in ("required", "requested"):
            self._ca.configure_trust(context)
            context.verify_mode = ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
        return context

    def issue_client(self, name: str, organization_unit: str | None = None) -> ClientCertificate:
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization

        cert = self._ca.issue_cert(name, common_name=name, organization_unit_name=organization_unit)
        key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
        pkcs8 = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        stem = self.folder / f"client-{len(list(self.folder.glob('client-*.pem')))}"
        chain = b"".join(pem.bytes() for pem in cert.cert_chain_pems)
        Path(f"{stem}.pem").write_bytes(chain)
        Path(f"{stem}.key").write_bytes(pkcs8)
        Path(f"{stem}-keystore.pem").write_bytes(pkcs8 + chain)
        subject = x509.load_pem_x509_certificate(cert.cert_chain_pems[0].bytes()).subject.rfc4514_string()
        return ClientCertificate(f"{stem}.pem", f"{stem}.key", f"{stem}-keystore.pem", subject)


CLIENT_AUTH = ("none", "requested", "required")


def listener_security(
    protocol: str, config: Any, hosts: list[str], oauth: TokenValidator | None = None
) -> tuple[ListenerSecurity, TlsMaterial | None]:
    """One listener's security, named for its protocol (see :func:`listeners_security`)."""
    securities, material = listeners_security({protocol: protocol}, config, hosts, oauth)
    return securities[protocol], material


def listeners_security(
    protocols: Mapping[str, str], config: Any, hosts: list[str], oauth: TokenValidator | None = None
) -> tuple[dict[str, ListenerSecurity], TlsMaterial | None]:
    """Each listener's security (``protocols``: listener name -> protocol) from the broker
    settings, a listener's own (``listener.name.<name>.<setting>``) first, and OAUTHBEARER's
    validator (:func:`oauth_token_validator`); one TLS material for them all."""
    tls = any(p in ("SSL", "SASL_SSL") for p in protocols.values())
    material = TlsMaterial(hosts) if tls else None
    securities = {}
    for name, protocol in protocols.items():
        # as on Kafka (KIP-684), a SASL_SSL listener asks for client certificates only when its
        # own listener.name.<name>.ssl.client.auth says so, not from the broker-wide setting
        own_auth = config.get(f"listener.name.{name.lower()}.ssl.client.auth")
        client_auth = listener_setting(config, name, "ssl.client.auth") if protocol == "SSL" else own_auth
        client_auth = str(client_auth or "none")
        if client_auth not in CLIENT_AUTH:
            raise ClusterUsageError(
                f"listener {name}: ssl.client.auth={client_auth!r}: the values are {', '.join(CLIENT_AUTH)}"
            )
        context = material.server_context(client_auth) if material is not None and protocol.endswith("SSL") else None
        sasl: tuple[str, ...] = ()
        if protocol.startswith("SASL_"):
            sasl = mechanisms(str(listener_setting(config, name, "sasl.enabled.mechanisms") or DEFAULT_MECHANISMS))
            unknown = [m for m in sasl if m not in MECHANISMS]
            if unknown or not sasl:
                raise ClusterUsageError(
                    f"listener {name}: sasl.enabled.mechanisms={','.join(sasl)!r}: the mechanisms served are "
                    f"{', '.join(MECHANISMS)}"
                )
        rules_text = listener_setting(config, name, "ssl.principal.mapping.rules") or "DEFAULT"
        try:
            rules = tuple(parse_rules(str(rules_text)))
        except MappingRuleError as exc:
            raise ClusterUsageError(f"listener {name}: ssl.principal.mapping.rules: {exc}") from None
        securities[name] = ListenerSecurity(protocol, context, sasl, rules, oauth)
    return securities, material


def remove_when_gone(owner: object, material: TlsMaterial) -> None:
    """The TLS files go with their cluster (or at the interpreter's exit)."""
    weakref.finalize(owner, shutil.rmtree, str(material.folder), True)
