"""Issue 37: Java's keystore files for a cluster's TLS (the CA as a PKCS#12 and a JKS truststore,
client certificates as PKCS#12 and JKS keystores, one password), and the broker's own certificate
from Kafka's ``ssl.keystore.*`` / ``ssl.truststore.*`` settings, with a ClusterUsageError naming
what is valid for what cannot be read. The real clients' side is tests/clients/test_tls_stores.py."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
from pathlib import Path

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from fakebroker.cluster import ClusterUsageError, FakeCluster
from fakebroker.cluster.tls_stores import STORE_PASSWORD

needs_keytool = pytest.mark.skipif(shutil.which("keytool") is None, reason="needs the JDK's keytool")
SECRET = "broker-secret"
SPKI = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def keytool_list(path: str, password: str) -> str:
    out = subprocess.run(
        ["keytool", "-list", "-keystore", path, "-storepass", password], capture_output=True, text=True, check=True
    )
    return out.stdout


def cert_of(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def broker_certificate(organization: str = "my company") -> tuple[trustme.CA, trustme.LeafCert]:
    """A CA of the test's own and a broker certificate from it, for the addresses clients use."""
    ca = trustme.CA(organization_name=f"{organization} CA")
    return ca, ca.issue_cert("localhost", "127.0.0.1")


def key_of(leaf: trustme.LeafCert):
    return serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)


def write_p12(path: Path, leaf: trustme.LeafCert, ca: trustme.CA | None = None, password: str = SECRET) -> str:
    cas = [cert_of(ca.cert_pem.bytes())] if ca is not None else None
    data = pkcs12.serialize_key_and_certificates(
        b"broker",
        key_of(leaf),
        cert_of(leaf.cert_chain_pems[0].bytes()),
        cas,
        serialization.BestAvailableEncryption(password.encode()),
    )
    path.write_bytes(data)
    return str(path)


def pkcs8(leaf: trustme.LeafCert, password: str | None = None) -> str:
    encryption = serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
    key = key_of(leaf).private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    return key.decode()


def served(cluster: FakeCluster, ca_pem: bytes, client: trustme.LeafCert | None = None) -> x509.Certificate:
    """The certificate the broker shows a client that trusts ``ca_pem`` (hostname checked)."""
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    context = ssl.create_default_context(cadata=ca_pem.decode())
    if client is not None:
        client.configure_cert(context)
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname=host) as tls:
            der = tls.getpeercert(binary_form=True)
            assert der is not None
            return x509.load_der_x509_certificate(der)


def refused(cluster: FakeCluster, ca_pem: bytes, client: trustme.LeafCert) -> bool:
    """Whether the broker refuses ``client``'s certificate (with TLS 1.3 the refusal comes after
    the client's side of the handshake, at its first read); an accepted client just waits."""
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    context = ssl.create_default_context(cadata=ca_pem.decode())
    client.configure_cert(context)
    try:
        with socket.create_connection((host, int(port)), timeout=2) as raw:
            with context.wrap_socket(raw, server_hostname=host) as tls:
                return tls.recv(1) == b""
    except TimeoutError:
        return False
    except (ssl.SSLError, ConnectionError):
        return True


# -- the cluster's stores ----------------------------------------------------------------------


def test_the_cas_pkcs12_truststore_holds_the_ca_as_a_trusted_entry():
    cluster = FakeCluster(security_protocol="SSL")
    files = cluster.tls_files
    assert files is not None and files.password == STORE_PASSWORD
    store = pkcs12.load_pkcs12(Path(files.truststore_p12).read_bytes(), files.password.encode())
    assert store.key is None and store.cert is None
    (entry,) = store.additional_certs
    assert entry.friendly_name == b"fakebroker-ca"
    assert entry.certificate == cert_of(Path(files.ca_file).read_bytes())
    assert files.truststore_p12 == files.truststore_p12  # made once, then the same file
    with pytest.raises(ValueError):
        pkcs12.load_pkcs12(Path(files.truststore_p12).read_bytes(), b"not-the-password")
    if shutil.which("keytool"):  # Java sees a trusted certificate entry (the Oracle attribute)
        assert "trustedCertEntry" in keytool_list(files.truststore_p12, files.password)


def test_a_client_certificates_pkcs12_keystore_holds_its_key_and_certificate():
    cluster = FakeCluster(security_protocol="SSL", config={"ssl.client.auth": "required"})
    alice = cluster.client_certificate("alice", organization_unit="billing")
    assert alice.password == STORE_PASSWORD
    store = pkcs12.load_pkcs12(Path(alice.keystore_p12).read_bytes(), alice.password.encode())
    assert store.cert is not None and store.key is not None
    assert store.cert.certificate == cert_of(Path(alice.cert_file).read_bytes())
    assert store.cert.certificate.subject.rfc4514_string() == alice.subject
    assert store.key.public_key().public_bytes(*SPKI) == store.cert.certificate.public_key().public_bytes(*SPKI)
    bob = cluster.client_certificate("bob")
    assert bob.keystore_p12 != alice.keystore_p12 and Path(bob.keystore_p12).parent == Path(alice.keystore_p12).parent


def test_the_stores_are_made_on_first_use_in_the_clusters_tls_folder():
    cluster = FakeCluster(security_protocol="SASL_SSL", users={"alice": "secret"})
    files = cluster.tls_files
    assert files is not None and files.ca_file is not None
    folder = Path(files.ca_file).parent
    assert not list(folder.glob("*.p12")) and not list(folder.glob("*.jks"))  # nothing made at start
    assert Path(str(files.truststore_p12)).parent == folder
    assert [p.name for p in folder.glob("*.p12")] == ["ca.p12"]


@needs_keytool
def test_the_jks_stores_are_made_by_keytool():
    cluster = FakeCluster(security_protocol="SSL", config={"ssl.client.auth": "required"})
    files = cluster.tls_files
    assert files is not None and files.truststore_jks is not None
    assert Path(files.truststore_jks).read_bytes()[:4] == b"\xfe\xed\xfe\xed"  # JKS's magic
    listed = keytool_list(files.truststore_jks, files.password)
    assert "Keystore type: JKS" in listed and "fakebroker-ca" in listed and "trustedCertEntry" in listed
    alice = cluster.client_certificate("alice")
    listed = keytool_list(alice.keystore_jks, alice.password)
    assert "Keystore type: JKS" in listed and "PrivateKeyEntry" in listed


def test_without_keytool_a_jks_store_names_what_is_needed(monkeypatch, tmp_path):
    cluster = FakeCluster(security_protocol="SSL")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert cluster.tls_files is not None
    with pytest.raises(ClusterUsageError, match=r"truststore_jks needs the JDK's keytool .*ssl.truststore.type=PKCS12"):
        cluster.tls_files.truststore_jks
    assert cluster.tls_files.truststore_p12 is not None  # PKCS#12 needs no JDK


# -- the broker's own certificate --------------------------------------------------------------


def test_a_pkcs12_keystore_is_served_and_its_ca_becomes_tls_ca_file(tmp_path):
    ca, leaf = broker_certificate()
    config = {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": write_p12(tmp_path / "broker.p12", leaf, ca),
        "ssl.keystore.password": SECRET,
    }
    with FakeCluster(security_protocol="SSL", config=config).run_in_thread() as cluster:
        assert cluster.tls_ca_file is not None
        assert Path(cluster.tls_ca_file).read_bytes() == ca.cert_pem.bytes()  # the keystore's own CA
        assert served(cluster, ca.cert_pem.bytes()) == cert_of(leaf.cert_chain_pems[0].bytes())
        assert cluster.tls_files is not None and cluster.tls_files.truststore_p12 is not None


def test_a_keystore_without_its_ca_leaves_tls_ca_file_none_unless_the_truststore_has_it(tmp_path):
    ca, leaf = broker_certificate()
    keystore = write_p12(tmp_path / "broker.p12", leaf)  # the broker's certificate alone
    config = {"ssl.keystore.location": keystore, "ssl.keystore.password": SECRET}  # type: Kafka's default, JKS
    cluster = FakeCluster(security_protocol="SSL", config=config)
    assert cluster.tls_ca_file is None
    assert cluster.tls_files is not None and cluster.tls_files.truststore_p12 is None
    (tmp_path / "ca.pem").write_bytes(ca.cert_pem.bytes())
    trusting = config | {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(tmp_path / "ca.pem")}
    cluster = FakeCluster(security_protocol="SSL", config=trusting)
    assert cluster.tls_ca_file is not None and Path(cluster.tls_ca_file).read_bytes() == ca.cert_pem.bytes()


def test_a_pem_keystore_in_a_file_and_inline(tmp_path):
    ca, leaf = broker_certificate()
    chain = leaf.cert_chain_pems[0].bytes().decode()
    (tmp_path / "broker.pem").write_text(pkcs8(leaf, "key-secret") + chain)
    in_file = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tmp_path / "broker.pem"),
        "ssl.key.password": "key-secret",
    }
    inline = {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": chain, "ssl.keystore.key": pkcs8(leaf)}
    for config in (in_file, inline):
        with FakeCluster(security_protocol="SSL", config=config).run_in_thread() as cluster:
            assert cluster.tls_ca_file is None  # the chain does not hold its CA
            assert served(cluster, ca.cert_pem.bytes()) == cert_of(chain.encode())


def test_an_own_truststore_decides_which_client_certificates_are_accepted(tmp_path):
    ca, leaf = broker_certificate()
    clients_ca = trustme.CA(organization_name="clients CA")
    config = {
        "ssl.client.auth": "required",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": write_p12(tmp_path / "broker.p12", leaf, ca),
        "ssl.keystore.password": SECRET,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": clients_ca.cert_pem.bytes().decode(),
    }
    with FakeCluster(security_protocol="SSL", config=config).run_in_thread() as cluster:
        app = clients_ca.issue_cert("app", common_name="app")
        assert served(cluster, ca.cert_pem.bytes(), client=app) == cert_of(leaf.cert_chain_pems[0].bytes())
        with pytest.raises(ClusterUsageError, match="issue them from a CA of that truststore"):
            cluster.client_certificate("alice")  # the cluster has no CA of its own to sign with
        assert not refused(cluster, ca.cert_pem.bytes(), app)
        stranger = trustme.CA().issue_cert("mallory", common_name="mallory")
        assert refused(cluster, ca.cert_pem.bytes(), stranger)


def test_an_own_truststore_alone_keeps_the_throwaway_broker_certificate(tmp_path):
    clients_ca = trustme.CA(organization_name="clients CA")
    (tmp_path / "clients.p12").write_bytes(
        pkcs12.serialize_java_truststore(
            [pkcs12.PKCS12Certificate(cert_of(clients_ca.cert_pem.bytes()), b"clients")],
            serialization.BestAvailableEncryption(b"trust-secret"),
        )
    )
    config = {
        "ssl.client.auth": "required",
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(tmp_path / "clients.p12"),
        "ssl.truststore.password": "trust-secret",
    }
    with FakeCluster(security_protocol="SSL", config=config).run_in_thread() as cluster:
        assert cluster.tls_ca_file is not None
        app = clients_ca.issue_cert("app", common_name="app")
        throwaway_ca = Path(cluster.tls_ca_file).read_bytes()
        assert served(cluster, throwaway_ca, client=app).issuer == cert_of(throwaway_ca).subject
        assert refused(cluster, throwaway_ca, trustme.CA().issue_cert("mallory"))


@needs_keytool
def test_a_jks_keystore_is_read_through_keytool_with_its_key_password(tmp_path):
    ca, leaf = broker_certificate()
    p12 = write_p12(tmp_path / "broker.p12", leaf, ca)
    jks = str(tmp_path / "broker.jks")
    subprocess.run(  # a JKS keystore whose key has a password of its own
        ["keytool", "-importkeystore", "-noprompt", "-srckeystore", p12, "-srcstoretype", "PKCS12"]
        + ["-srcstorepass", SECRET, "-destkeystore", jks, "-deststoretype", "JKS", "-deststorepass", "store-secret"]
        + ["-srcalias", "broker", "-destkeypass", "key-secret"],
        check=True,
        capture_output=True,
    )
    config = {
        "ssl.keystore.type": "JKS",
        "ssl.keystore.location": jks,
        "ssl.keystore.password": "store-secret",
        "ssl.key.password": "key-secret",
    }
    with FakeCluster(security_protocol="SSL", config=config).run_in_thread() as cluster:
        assert served(cluster, ca.cert_pem.bytes()) == cert_of(leaf.cert_chain_pems[0].bytes())
    with pytest.raises(ClusterUsageError, match=r"broker.jks'\: the wrong ssl.keystore.password"):
        FakeCluster(security_protocol="SSL", config=config | {"ssl.keystore.password": "not-it"})
    with pytest.raises(ClusterUsageError, match="the wrong ssl.key.password"):
        FakeCluster(security_protocol="SSL", config=config | {"ssl.key.password": "not-it"})


def test_a_keystore_given_to_a_plaintext_cluster_is_not_read_as_on_kafka(tmp_path):
    config = {"ssl.keystore.location": str(tmp_path / "missing.p12"), "ssl.keystore.password": SECRET}
    assert FakeCluster(config=config).tls_ca_file is None


# -- what cannot be used -----------------------------------------------------------------------


def bad_inputs(tmp_path: Path) -> list[tuple[dict[str, str], str]]:
    ca, leaf = broker_certificate()
    other = trustme.CA().issue_cert("localhost")
    p12 = write_p12(tmp_path / "broker.p12", leaf, ca)
    (tmp_path / "broker.pem").write_text(pkcs8(leaf) + leaf.cert_chain_pems[0].bytes().decode())
    (tmp_path / "junk.p12").write_bytes(b"\x00not a keystore")
    traditional = (  # OpenSSL's own format (BEGIN EC PRIVATE KEY), not PKCS#8
        key_of(leaf)
        .private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
        .decode()
    )
    chain = leaf.cert_chain_pems[0].bytes().decode()
    inline = {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": chain}
    return [
        ({"ssl.keystore.type": "BCFKS"}, "ssl.keystore.type='BCFKS': the types read are PEM, PKCS12, JKS"),
        ({"ssl.truststore.type": "pem"}, "ssl.truststore.type='pem': the types read are PEM, PKCS12, JKS"),
        (
            {"ssl.keystore.location": str(tmp_path / "nowhere.p12"), "ssl.keystore.password": SECRET},
            "nowhere.p12': cannot read it (No such file or directory)",
        ),
        (
            {"ssl.keystore.location": p12, "ssl.keystore.password": "not-it"},
            "cannot open it as PKCS#12: the wrong ssl.keystore.password, or a damaged file",
        ),
        ({"ssl.keystore.location": p12}, "is given without ssl.keystore.password: a JKS keystore is opened with"),
        ({"ssl.keystore.password": SECRET}, "ssl.keystore.password is given without ssl.keystore.location"),
        (
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(tmp_path / "broker.pem"),
                "ssl.keystore.password": "x",
            },
            "ssl.keystore.password cannot be given with ssl.keystore.type=PEM",
        ),
        (
            {"ssl.keystore.location": str(tmp_path / "broker.pem"), "ssl.keystore.password": SECRET},
            "broker.pem' is a PEM file: set ssl.keystore.type=PEM",
        ),
        (
            {"ssl.keystore.location": str(tmp_path / "junk.p12"), "ssl.keystore.password": SECRET},
            "junk.p12' is not a PKCS#12 or JKS file: the types read are PEM, PKCS12, JKS",
        ),
        (
            {"ssl.keystore.certificate.chain": chain, "ssl.keystore.key": pkcs8(leaf)},
            "ssl.keystore.key is given with ssl.keystore.type=JKS: an inline PEM key needs ssl.keystore.type=PEM",
        ),
        (inline, "ssl.keystore.certificate.chain is given without ssl.keystore.key"),
        (inline | {"ssl.keystore.key": pkcs8(other)}, "its first certificate is not the private key's"),
        (inline | {"ssl.keystore.key": traditional}, "is a BEGIN EC PRIVATE KEY, where Kafka reads PKCS#8 keys only"),
        (
            inline | {"ssl.keystore.key": pkcs8(leaf, "k")},
            "the key is encrypted: give its password as ssl.key.password",
        ),
        (
            inline | {"ssl.keystore.key": pkcs8(leaf, "k"), "ssl.key.password": "not-k"},
            "cannot read its private key: the wrong ssl.key.password",
        ),
        (
            inline | {"ssl.keystore.key": pkcs8(leaf), "ssl.key.password": "k"},
            "ssl.key.password is given but the key is not encrypted",
        ),
        (
            {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": "no certificate here"},
            "ssl.truststore.certificates: no PEM certificate (-----BEGIN CERTIFICATE-----) in it",
        ),
        ({"ssl.truststore.password": "x"}, "ssl.truststore.password is given without ssl.truststore.location"),
        (
            {"ssl.truststore.type": "PKCS12", "ssl.truststore.location": p12},
            "cannot open it as PKCS#12: no ssl.truststore.password given, or a damaged file",
        ),
    ]


def test_what_cannot_be_used_is_a_clusterusageerror_naming_what_is_valid(tmp_path):
    for config, message in bad_inputs(tmp_path):
        with pytest.raises(ClusterUsageError) as caught:
            FakeCluster(security_protocol="SSL", config=config)
            pytest.fail(f"{config} was accepted")
        assert message in str(caught.value), (config, str(caught.value))
        with pytest.raises(ClusterUsageError):  # the same on SASL_SSL
            FakeCluster(security_protocol="SASL_SSL", users={"alice": "secret"}, config=config)
