"""Java's keystore files for a cluster's TLS, both ways.

Out: the cluster's CA as a truststore and each client certificate as a keystore, in PKCS#12
(``cryptography``; the CA as a Java trusted-certificate entry, which Java needs to trust it) and
in JKS (the PKCS#12 converted by the JDK's ``keytool``), with one password,
:data:`STORE_PASSWORD`. Each is made when first asked for, next to its PEM file, and goes with
the cluster's TLS folder: a TLS cluster starts as fast as before (PKCS#12 costs a few ms a
file, keytool half a second).

In: a broker's own certificate and the CAs it trusts for client certificates, from Kafka's
broker settings ``ssl.keystore.type``/``location``/``password``, ``ssl.key.password``,
``ssl.keystore.certificate.chain``/``key`` (inline PEM) and ``ssl.truststore.type``/
``location``/``password``/``certificates``, read with the rules of Kafka's
``DefaultSslEngineFactory`` (which combinations are allowed, PEM keys in PKCS#8, a PEM store
has no store password). As with Java's keystores, a ``JKS`` store may be a PKCS#12 file and a
``PKCS12`` store a JKS file: the file's own format decides. What cannot be read is a
:class:`ClusterUsageError` naming the setting and what is valid.

JKS goes through ``keytool`` (found on PATH or in ``$JAVA_HOME/bin``), which is wherever a Java
client runs: pyjks, the Python reader, has had no release since 2020 and builds C extensions
(twofish) that have no wheels for current Pythons.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..lazy_dataclasses import dataclass
from .errors import ClusterUsageError

if TYPE_CHECKING:  # cryptography is imported when a store is made or read (trustme brings it)
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
    from cryptography.hazmat.primitives.serialization.pkcs12 import PKCS12KeyAndCertificates

STORE_PASSWORD = "fakebroker"
"""The password of every keystore and truststore fakebroker makes (``ssl.truststore.password``,
``ssl.keystore.password``; a JKS key's password is the same)."""

STORE_TYPES = ("PEM", "PKCS12", "JKS")
KEYTOOL_TIMEOUT = 60.0
_JKS_MAGIC, _JCEKS_MAGIC = b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce"


# -- out: the cluster's stores ---------------------------------------------------------------


def truststore(ca_file: str, kind: str) -> str:
    """The certificates of ``ca_file`` (PEM) as a truststore of ``kind`` (``PKCS12`` or
    ``JKS``) beside it, made on the first call: Java's trusted-certificate entries, named
    ``fakebroker-ca`` (``-1``, ``-2`` ... after the first)."""
    p12 = Path(ca_file).with_suffix(".p12")
    if not p12.exists():
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import pkcs12

        certs = x509.load_pem_x509_certificates(Path(ca_file).read_bytes())
        entries = [pkcs12.PKCS12Certificate(c, _alias("fakebroker-ca", i)) for i, c in enumerate(certs)]
        _write(p12, pkcs12.serialize_java_truststore(entries, _encryption()))
    return str(p12) if kind == "PKCS12" else _as_jks(p12, "truststore_jks")


def keystore(cert_file: str, key_file: str, kind: str) -> str:
    """The key of ``key_file`` and the chain of ``cert_file`` (PEM) as a keystore of ``kind``
    (``PKCS12`` or ``JKS``) beside ``cert_file``, made on the first call: one private-key entry,
    named ``client``."""
    p12 = Path(cert_file).with_suffix(".p12")
    if not p12.exists():
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.serialization import pkcs12

        chain = x509.load_pem_x509_certificates(Path(cert_file).read_bytes())
        key = cast(
            "pkcs12.PKCS12PrivateKeyTypes", serialization.load_pem_private_key(Path(key_file).read_bytes(), None)
        )
        stored = pkcs12.serialize_key_and_certificates(b"client", key, chain[0], chain[1:] or None, _encryption())
        _write(p12, stored)
    return str(p12) if kind == "PKCS12" else _as_jks(p12, "keystore_jks")


def _alias(stem: str, i: int) -> bytes:
    return (stem if i == 0 else f"{stem}-{i}").encode()


def _encryption() -> Any:
    from cryptography.hazmat.primitives import serialization

    # AES-256 with PBKDF2 and an HMAC-SHA256 MAC: Java 8u301+/11.0.12+ and OpenSSL 1.1+/3 read it
    return serialization.BestAvailableEncryption(STORE_PASSWORD.encode())


def _write(path: Path, data: bytes) -> None:
    """Whole or not at all, so a store read while another thread makes it is never half written."""
    part = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    part.write_bytes(data)
    os.replace(part, path)


def _as_jks(p12: Path, what: str) -> str:
    jks = p12.with_suffix(".jks")
    if not jks.exists():
        part = p12.with_name(f".{jks.name}.{uuid.uuid4().hex}")
        code, said = _keytool(
            what,
            ["-importkeystore", "-noprompt", "-srckeystore", str(p12), "-srcstoretype", "PKCS12"],
            ["-srcstorepass:env", "FAKEBROKER_STORE_PASSWORD", "-destkeystore", str(part)],
            ["-deststoretype", "JKS", "-deststorepass:env", "FAKEBROKER_STORE_PASSWORD"],
        )
        if code != 0:
            part.unlink(missing_ok=True)
            raise ClusterUsageError(f"{what}: keytool could not make {jks.name}: {_keytool_error(said)}")
        os.replace(part, jks)
    return str(jks)


def keytool_path(what: str) -> str:
    """The JDK's keytool, or a ClusterUsageError saying what ``what`` needs."""
    found = shutil.which("keytool")
    home = os.environ.get("JAVA_HOME")
    if found is None and home and (Path(home) / "bin" / "keytool").is_file():
        found = str(Path(home) / "bin" / "keytool")
    if found is None:
        raise ClusterUsageError(
            f"{what} needs the JDK's keytool (on PATH or in $JAVA_HOME/bin), which is not found: install a "
            "JDK (the Java client's runtime has it), or use PKCS12, which Java reads as well "
            "(ssl.truststore.type=PKCS12, ssl.keystore.type=PKCS12)"
        )
    return found


def _keytool(what: str, *args: list[str], stdin: str = "", passwords: dict[str, str] | None = None) -> tuple[int, str]:
    """Run keytool (passwords through the environment, not its command line); its exit code
    and what it said."""
    env = os.environ | {"FAKEBROKER_STORE_PASSWORD": STORE_PASSWORD} | (passwords or {})
    command = [keytool_path(what), *(a for part in args for a in part)]
    try:
        done = subprocess.run(
            command, input=stdin, capture_output=True, text=True, timeout=KEYTOOL_TIMEOUT, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        raise ClusterUsageError(f"{what}: keytool did not finish in {KEYTOOL_TIMEOUT:.0f} s") from None
    return done.returncode, done.stdout + done.stderr


def _keytool_error(said: str) -> str:
    errors = [line.removeprefix("keytool error: ") for line in said.splitlines() if "keytool error" in line]
    return errors[-1] if errors else said.strip()[-300:]


# -- in: the broker's own certificate and trusted CAs ------------------------------------------

KEYSTORE_SETTINGS = (
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
)
TRUSTSTORE_SETTINGS = ("ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates")
_SETTINGS = ("ssl.keystore.type", "ssl.truststore.type", "ssl.key.password", *KEYSTORE_SETTINGS, *TRUSTSTORE_SETTINGS)


@dataclass(frozen=True)
class OwnTls:
    """What the broker settings give: the chain (the broker's certificate first) and key to serve,
    none for the cluster's throwaway ones; and the CAs trusted for client certificates, None for
    the cluster's own CA."""

    chain: tuple[x509.Certificate, ...] = ()
    key: PrivateKeyTypes | None = None
    trusted: tuple[x509.Certificate, ...] | None = None

    def root(self) -> x509.Certificate | None:
        """The CA the served chain comes from, for clients to trust: the chain's last certificate
        when it signed itself, else a trusted certificate that signed it; None if neither has it."""
        if not self.chain:
            return None
        last = self.chain[-1]
        if last.issuer == last.subject:
            return last
        return next((c for c in self.trusted or () if c.subject == last.issuer), None)


_cache: dict[tuple[Any, ...], OwnTls] = {}


def read_own_tls(config: Any) -> OwnTls | None:
    """The broker's own TLS from its settings (``config.get(name)``: a dict, or the broker's
    config), None when none of them is given; a ClusterUsageError naming the setting and what is
    valid when one cannot be used. Read once per settings and file versions (a JKS file costs a
    keytool run)."""
    given = {name: _setting(config, name) for name in _SETTINGS}
    kinds = {}
    for prefix in ("ssl.keystore", "ssl.truststore"):
        kind = given[f"{prefix}.type"] or "JKS"  # Kafka's default
        if kind.upper() in ("PKCS12", "JKS"):
            kind = kind.upper()  # Java's keystore types are not case-sensitive; Kafka's PEM is
        if kind not in STORE_TYPES:
            raise ClusterUsageError(f"{prefix}.type={kind!r}: the types read are {', '.join(STORE_TYPES)}")
        kinds[prefix] = kind
    if not any(given[name] is not None for name in (*KEYSTORE_SETTINGS, *TRUSTSTORE_SETTINGS)):
        return None
    stamp = tuple(_stamp(given[f"{p}.location"]) for p in ("ssl.keystore", "ssl.truststore"))
    key = (tuple(sorted(given.items(), key=lambda kv: kv[0])), tuple(kinds.items()), stamp)
    if key not in _cache:
        chain, private_key = _own_keystore(kinds["ssl.keystore"], given)
        trusted = _own_truststore(kinds["ssl.truststore"], given)
        if len(_cache) > 16:
            _cache.clear()
        _cache[key] = OwnTls(chain, private_key, trusted)
    return _cache[key]


def _setting(config: Any, name: str) -> str | None:
    value = config.get(name)
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else str(value)


def _stamp(location: str | None) -> tuple[int, int] | None:
    try:
        stat = os.stat(location) if location else None
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size) if stat else None


def _own_keystore(kind: str, given: dict[str, str | None]) -> tuple[tuple[x509.Certificate, ...], Any]:
    """Kafka's rules for a keystore (DefaultSslEngineFactory.createKeystore): the broker's chain and key."""
    location, password = given["ssl.keystore.location"], given["ssl.keystore.password"]
    chain_pem, key_pem, key_password = (
        given["ssl.keystore.certificate.chain"],
        given["ssl.keystore.key"],
        given["ssl.key.password"],
    )
    no_store_password = (
        "ssl.keystore.password cannot be given with ssl.keystore.type=PEM (as on Kafka): the password of an "
        "encrypted key is ssl.key.password"
    )
    if key_pem is not None:
        if kind != "PEM":
            raise ClusterUsageError(
                f"ssl.keystore.key is given with ssl.keystore.type={kind}: an inline PEM key needs "
                "ssl.keystore.type=PEM (as on Kafka)"
            )
        if chain_pem is None:
            raise ClusterUsageError("ssl.keystore.key is given without ssl.keystore.certificate.chain (its PEM chain)")
        if location is not None:
            raise ClusterUsageError("ssl.keystore.location and ssl.keystore.key are both given: give one or the other")
        if password is not None:
            raise ClusterUsageError(no_store_password)
        return _pem_keystore(chain_pem, key_pem, key_password, "ssl.keystore.certificate.chain", "ssl.keystore.key")
    if chain_pem is not None:
        raise ClusterUsageError("ssl.keystore.certificate.chain is given without ssl.keystore.key (its PEM key)")
    if location is None:
        if password is not None:
            raise ClusterUsageError("ssl.keystore.password is given without ssl.keystore.location")
        return (), None
    where = f"ssl.keystore.location={location!r}"
    if kind == "PEM":
        if password is not None:
            raise ClusterUsageError(no_store_password)
        text = _read(location, "ssl.keystore.location").decode("utf-8", "replace")
        return _pem_keystore(text, text, key_password, where, where)
    if password is None:
        raise ClusterUsageError(
            f"{where} is given without ssl.keystore.password: a {kind} keystore is opened with its password (as "
            "on Kafka)"
        )
    store = _binary_store(location, "ssl.keystore", password, key_password or password)
    if store.key is None or store.cert is None:
        raise ClusterUsageError(
            f"{where} holds no private key entry: a broker's keystore holds its key and certificate chain"
        )
    chain = _ordered(store.cert.certificate, [c.certificate for c in store.additional_certs])
    _check_pair(chain[0], store.key, where)
    return chain, store.key


def _own_truststore(kind: str, given: dict[str, str | None]) -> tuple[x509.Certificate, ...] | None:
    """Kafka's rules for a truststore (DefaultSslEngineFactory.createTruststore): the trusted CAs."""
    location, password = given["ssl.truststore.location"], given["ssl.truststore.password"]
    inline = given["ssl.truststore.certificates"]
    no_password = "ssl.truststore.password cannot be given with ssl.truststore.type=PEM (as on Kafka)"
    if inline is not None:
        if kind != "PEM":
            raise ClusterUsageError(
                f"ssl.truststore.certificates is given with ssl.truststore.type={kind}: inline PEM certificates "
                "need ssl.truststore.type=PEM (as on Kafka)"
            )
        if location is not None:
            raise ClusterUsageError(
                "ssl.truststore.location and ssl.truststore.certificates are both given: give one or the other"
            )
        if password is not None:
            raise ClusterUsageError(no_password)
        return _pem_certs(inline, "ssl.truststore.certificates")
    if location is None:
        if password is not None:
            raise ClusterUsageError("ssl.truststore.password is given without ssl.truststore.location")
        return None
    where = f"ssl.truststore.location={location!r}"
    if kind == "PEM":
        if password is not None:
            raise ClusterUsageError(no_password)
        return _pem_certs(_read(location, "ssl.truststore.location").decode("utf-8", "replace"), where)
    store = _binary_store(location, "ssl.truststore", password, None)
    certs = [store.cert.certificate] if store.cert is not None else []
    certs += [c.certificate for c in store.additional_certs]
    if not certs:
        raise ClusterUsageError(f"{where} holds no certificate: a truststore holds the CAs that are trusted")
    return tuple(certs)


def _read(location: str, setting: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise ClusterUsageError(f"{setting}={location!r}: cannot read it ({exc.strerror or exc})") from None


def _binary_store(
    location: str, prefix: str, password: str | None, key_password: str | None
) -> PKCS12KeyAndCertificates:
    """A PKCS#12 or JKS file (whichever its bytes are, as Java's keystores read both)."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    setting, where = f"{prefix}.location", f"{prefix}.location={location!r}"
    data = _read(location, setting)
    if b"-----BEGIN" in data[:4096]:
        raise ClusterUsageError(f"{where} is a PEM file: set {prefix}.type=PEM")
    if data.startswith(_JKS_MAGIC):
        return _jks_store(location, prefix, password, key_password)
    if data.startswith(_JCEKS_MAGIC) or not data.startswith(b"\x30"):
        raise ClusterUsageError(f"{where} is not a PKCS#12 or JKS file: the types read are {', '.join(STORE_TYPES)}")
    try:
        return pkcs12.load_pkcs12(data, password.encode() if password is not None else None)
    except ValueError:
        hint = f"the wrong {prefix}.password" if password is not None else f"no {prefix}.password given"
        raise ClusterUsageError(f"{where}: cannot open it as PKCS#12: {hint}, or a damaged file") from None


def _jks_store(location: str, prefix: str, password: str | None, key_password: str | None) -> PKCS12KeyAndCertificates:
    """A JKS file through keytool: converted to PKCS#12 in a folder of its own, then read."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    where = f"{prefix}.location={location!r}"
    with tempfile.TemporaryDirectory(prefix="fakebroker-jks-") as folder:
        converted = Path(folder) / "store.p12"
        source = ["-srcstorepass:env", "FAKEBROKER_SOURCE_PASSWORD"] if password is not None else []
        # asked for on standard input: the store's password when not given (read without checking
        # its integrity, as Java does), then a key's password when it is not the store's
        stdin = ("" if password is not None else "\n") + f"{key_password or ''}\n"
        code, said = _keytool(
            f"{where} (a JKS file)",
            ["-importkeystore", "-noprompt", "-srckeystore", location, "-srcstoretype", "JKS", *source],
            ["-destkeystore", str(converted), "-deststoretype", "PKCS12"],
            ["-deststorepass:env", "FAKEBROKER_STORE_PASSWORD"],
            stdin=stdin,
            passwords={"FAKEBROKER_SOURCE_PASSWORD": password or ""},
        )
        if code != 0 or not converted.exists():
            if "password was incorrect" in said:
                raise ClusterUsageError(f"{where}: the wrong {prefix}.password")
            if "Cannot recover key" in said or "UnrecoverableKey" in said:
                raise ClusterUsageError(
                    f"{where}: cannot open its key: the wrong ssl.key.password (without it, the keystore's password)"
                )
            raise ClusterUsageError(f"{where}: keytool cannot read it as JKS: {_keytool_error(said)}")
        return pkcs12.load_pkcs12(converted.read_bytes(), STORE_PASSWORD.encode())


_PEM_KEY = re.compile(r"-----BEGIN ([A-Z0-9 ]*?)\s*PRIVATE KEY-----[^-]*-----END [A-Z0-9 ]*PRIVATE KEY-----")


def _pem_certs(text: str, where: str) -> tuple[x509.Certificate, ...]:
    from cryptography import x509

    try:
        return tuple(x509.load_pem_x509_certificates(text.encode()))
    except ValueError:
        raise ClusterUsageError(f"{where}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it") from None


def _pem_keystore(
    chain_text: str, key_text: str, key_password: str | None, chain_where: str, key_where: str
) -> tuple[tuple[x509.Certificate, ...], Any]:
    """Kafka's PEM keystore: the chain as given (the broker's certificate first) and one PKCS#8
    key, encrypted with ``ssl.key.password`` when that is given."""
    from cryptography.hazmat.primitives import serialization

    chain = _pem_certs(chain_text, chain_where)
    keys = list(_PEM_KEY.finditer(key_text))
    if not keys:
        raise ClusterUsageError(f"{key_where}: no PEM private key (-----BEGIN PRIVATE KEY-----) in it")
    if len(keys) > 1:
        raise ClusterUsageError(f"{key_where}: {len(keys)} private keys in it, where Kafka reads one")
    label = keys[0].group(1)
    if label not in ("", "ENCRYPTED"):
        raise ClusterUsageError(
            f"{key_where}: the key is a BEGIN {label} PRIVATE KEY, where Kafka reads PKCS#8 keys only (BEGIN "
            "PRIVATE KEY or BEGIN ENCRYPTED PRIVATE KEY): `openssl pkcs8 -topk8` converts it"
        )
    if label == "ENCRYPTED" and key_password is None:
        raise ClusterUsageError(f"{key_where}: the key is encrypted: give its password as ssl.key.password")
    if label == "" and key_password is not None:
        raise ClusterUsageError(
            f"{key_where}: ssl.key.password is given but the key is not encrypted (Kafka refuses that too)"
        )
    try:
        key = serialization.load_pem_private_key(
            keys[0].group(0).encode(), password=key_password.encode() if key_password is not None else None
        )
    except (ValueError, TypeError):
        hint = "the wrong ssl.key.password, or a damaged key" if key_password is not None else "a damaged key"
        raise ClusterUsageError(f"{key_where}: cannot read its private key: {hint}") from None
    _check_pair(chain[0], key, chain_where)
    return chain, key


def _ordered(leaf: x509.Certificate, others: list[x509.Certificate]) -> tuple[x509.Certificate, ...]:
    """The chain from ``leaf`` up, each certificate followed by its issuer when the store has it."""
    chain, pool = [leaf], list(others)
    while chain[-1].issuer != chain[-1].subject:
        issuer = next((c for c in pool if c.subject == chain[-1].issuer), None)
        if issuer is None:
            break
        chain.append(issuer)
        pool.remove(issuer)
    return tuple(chain)


def _check_pair(cert: x509.Certificate, key: Any, where: str) -> None:
    from cryptography.hazmat.primitives import serialization

    spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if cert.public_key().public_bytes(*spki) != key.public_key().public_bytes(*spki):
        raise ClusterUsageError(
            f"{where}: its first certificate is not the private key's (the chain starts with the broker's own "
            "certificate)"
        )
