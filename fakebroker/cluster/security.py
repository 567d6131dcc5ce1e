"""A cluster's security, as a test asks for it: ``FakeCluster(security_protocol="SASL_SSL",
users={"alice": "secret"})``. TLS material is made at start with ``trustme`` (a throwaway CA
and a certificate for the broker's addresses), written as PEM files clients can be pointed at;
SASL users get PLAIN passwords and SCRAM-SHA-256/512 credentials; OAUTHBEARER tokens are
checked by Kafka's unsecured JWS validator, with its options, by the test's own function
(``oauth_validator``), or by Kafka's secured validator against a JWKS
(``sasl.oauthbearer.jwks.endpoint.url``: ``jwks.py``)."""

from __future__ import annotations

import itertools
import logging
import shutil
import tempfile
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..core.security.mechanisms import MECHANISMS
from ..core.security.oauthbearer import JWKS_ENDPOINT_URL, TokenValidator, UnsecuredJwsValidator
from ..core.security.oauthbearer import InvalidOAuthToken as InvalidOAuthToken  # re-exported for tests
from ..core.security.oauthbearer import OAuthToken as OAuthToken
from ..core.security.principal import MappingRuleError, parse_rules
from ..lazy_dataclasses import dataclass
from ..server.security import PROTOCOLS, ListenerSecurity
from .errors import ClusterUsageError
from .listeners import listener_setting
from .tls_stores import STORE_PASSWORD, OwnTls, keystore, read_own_tls, truststore

DEFAULT_MECHANISMS = ",".join(MECHANISMS)  # Kafka's default is GSSAPI, which is not served here
log = logging.getLogger("fakebroker")

# FakeCluster(oauth_validator=...): the test's function, or the unsecured validator's options
OAuthValidator = Callable[[str], OAuthToken] | Mapping[str, object]


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of a cluster's TLS: the CA clients trust, and the broker's certificate and key;
    the CA as a Java truststore too (PKCS#12 or JKS, made on first use, with ``password``).

    With the broker's own certificate (``ssl.keystore.*``), ``ca_file`` is the CA it comes from
    when the keystore or the truststore holds it (else None, and so are the truststores)."""

    ca_file: str | None
    cert_file: str
    key_file: str
    password: str = STORE_PASSWORD  # of the truststores

    @property
    def truststore_p12(self) -> str | None:
        """The CA as a PKCS#12 truststore (``ssl.truststore.type=PKCS12``): a trusted-certificate entry."""
        return truststore(self.ca_file, "PKCS12") if self.ca_file is not None else None

    @property
    def truststore_jks(self) -> str | None:
        """The CA as a JKS truststore (``ssl.truststore.type=JKS``), made by the JDK's keytool."""
        return truststore(self.ca_file, "JKS") if self.ca_file is not None else None


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
    if protocol in ("SSL", "SASL_SSL"):
        read_own_tls(config)  # the broker's own certificate and trusted CAs, when given, can be read
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
    naming what is valid. With ``sasl.oauthbearer.jwks.endpoint.url`` set, Kafka's secured
    validator (``cluster/jwks.py``) instead."""
    jwks_url = config.get(JWKS_ENDPOINT_URL)
    if given is not None and jwks_url:
        raise ClusterUsageError(
            f"oauth_validator= and {JWKS_ENDPOINT_URL} both choose how OAUTHBEARER tokens are checked: give "
            "oauth_validator (the unsecured validator's options, or a function) or the JWKS URL (Kafka's secured "
            "validator), not both"
        )
    if given is None:
        return _secured_validator(protocol, config) if jwks_url else None
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


def _secured_validator(protocol: str, config: Mapping[str, Any]) -> TokenValidator | None:
    """Kafka's secured validator, its JWKS loaded now; None where no listener takes OAUTHBEARER
    (Kafka makes no validator there, and does not read the JWKS settings)."""
    enabled = mechanisms(str(config.get("sasl.enabled.mechanisms", DEFAULT_MECHANISMS)))
    if not protocol.startswith("SASL_") or "OAUTHBEARER" not in enabled:
        return None
    from .jwks import secured_validator  # PyJWT, and the refresh thread, only when asked for

    return secured_validator(config)


def mechanisms(config_value: str) -> tuple[str, ...]:
    return tuple(m.strip() for m in config_value.split(",") if m.strip())


@dataclass(frozen=True)
class ClientCertificate:
    """A client certificate the cluster's CA signed, for mutual TLS: PEM files of the certificate
    and its key (PKCS#8), one file holding both (a Java ``ssl.keystore.type=PEM`` keystore), the
    principal the broker will see (``User:CN=alice,...``, before the mapping rules), and the same
    key and chain as a PKCS#12 or JKS keystore (made on first use, with ``password``)."""

    cert_file: str
    key_file: str
    keystore_file: str
    subject: str
    password: str = STORE_PASSWORD  # of the PKCS#12 and JKS keystores, and of the key in them

    @property
    def keystore_p12(self) -> str:
        """A PKCS#12 keystore: Java's ``ssl.keystore.type=PKCS12``, librdkafka's ``ssl.keystore.location``."""
        return keystore(self.cert_file, self.key_file, "PKCS12")

    @property
    def keystore_jks(self) -> str:
        """A JKS keystore (``ssl.keystore.type=JKS``), made by the JDK's keytool."""
        return keystore(self.cert_file, self.key_file, "JKS")


class TlsMaterial:
    """A cluster's TLS: the certificate its brokers serve (a throwaway one from a throwaway CA,
    or the broker settings' own, ``ssl.keystore.*``), the CAs trusted for client certificates
    (that CA, or ``ssl.truststore.*``), and the client certificates issued."""

    def __init__(self, hosts: list[str], config: Any = None):
        import trustme  # imported when a cluster uses TLS: it brings cryptography

        own = read_own_tls(config) if config is not None else None
        self._own = own or OwnTls()
        self.folder = Path(tempfile.mkdtemp(prefix="fakebroker-tls-"))
        self._issued = itertools.count()
        needs_ca = not self._own.chain or self._own.trusted is None  # for the broker, or for clients
        self._ca = trustme.CA(organization_name="fakebroker test CA") if needs_ca else None
        ca_file: Path | None = self.folder / "ca.pem"
        if not self._own.chain:
            assert self._ca is not None
            cert = self._ca.issue_cert(*dict.fromkeys(hosts))
            self._ca.cert_pem.write_to_path(str(ca_file))
            cert.cert_chain_pems[0].write_to_path(str(self.folder / "broker.pem"))
            cert.private_key_pem.write_to_path(str(self.folder / "broker.key"))
        else:
            _write_pem(self.folder / "broker.pem", self._own.chain)
            _write_key(self.folder / "broker.key", self._own.key)
            root = self._own.root()
            if root is not None:
                _write_pem(self.folder / "ca.pem", (root,))
            else:
                ca_file = None
        self.files = TlsFiles(
            str(ca_file) if ca_file is not None else None,
            str(self.folder / "broker.pem"),
            str(self.folder / "broker.key"),
        )

    def server_context(self, client_auth: str) -> Any:
        """The broker side's context; ``client_auth`` is Kafka's ``ssl.client.auth``."""
        import ssl

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.files.cert_file, self.files.key_file)
        if client_auth in ("required", "requested"):
            if self._own.trusted is not None:
                context.load_verify_locations(cadata=_pem(self._own.trusted).decode())
            else:
                assert self._ca is not None
                self._ca.configure_trust(context)
            context.verify_mode = ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
        return context

    def issue_client(self, name: str, organization_unit: str | None = None) -> ClientCertificate:
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization

        if self._ca is None:
            raise ClusterUsageError(
                "client_certificate(): this cluster trusts the client certificates its ssl.truststore settings "
                "name, not a CA of its own: issue them from a CA of that truststore"
            )
        cert = self._ca.issue_cert(name, common_name=name, organization_unit_name=organization_unit)
        key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
        pkcs8 = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        stem = self.folder / f"client-{next(self._issued)}"
        chain = b"".join(pem.bytes() for pem in cert.cert_chain_pems)
        Path(f"{stem}.pem").write_bytes(chain)
        Path(f"{stem}.key").write_bytes(pkcs8)
        Path(f"{stem}-keystore.pem").write_bytes(pkcs8 + chain)
        subject = x509.load_pem_x509_certificate(cert.cert_chain_pems[0].bytes()).subject.rfc4514_string()
        return ClientCertificate(f"{stem}.pem", f"{stem}.key", f"{stem}-keystore.pem", subject)


def _pem(certs: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


def _write_pem(path: Path, certs: Any) -> None:
    path.write_bytes(_pem(certs))


def _write_key(path: Path, key: Any) -> None:
    from cryptography.hazmat.primitives import serialization

    path.touch(mode=0o600)
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


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
    material = TlsMaterial(hosts, config) if tls else None
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
