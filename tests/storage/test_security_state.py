"""ACLs and SCRAM credentials survive a restart on a data directory (issue 37), as Kafka keeps
them in its metadata log: each answered CreateAcls, DeleteAcls and AlterUserScramCredentials is
in the journal before its answer goes out, so a crash right after loses none of them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from fakebroker.cluster import FakeCluster
from fakebroker.cluster.access import STANDARD_AUTHORIZER
from fakebroker.core.security.acls import Operation
from fakebroker.core.security.acls import ResourceType as Kind
from fakebroker.storage import DataDirError

pytestmark = pytest.mark.clients
CONFIG = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}
USERS = {"admin": "admin-secret"}
QUIET = {"log_level": 3}


def sasl(cluster: FakeCluster, user: str, password: str) -> dict:
    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": password,
        **QUIET,
    }


def crashed_copy(data: Path, into: Path) -> Path:
    shutil.copytree(data, into, ignore=shutil.ignore_patterns(".lock"))
    return into


def test_acls_and_scram_credentials_answered_are_there_after_a_crash(tmp_path):
    data = tmp_path / "data"
    options = {"security_protocol": "SASL_PLAINTEXT", "users": USERS, "config": CONFIG}
    with FakeCluster(data_dir=data, topics={"orders": 1}, **options).run_in_thread() as cluster:
        admin = AdminClient(sasl(cluster, "admin", "admin-secret"))
        upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"c-pw")
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(10)
        binding = AclBinding(
            ResourceType.TOPIC,
            "orders",
            ResourcePatternType.LITERAL,
            "User:carol",
            "*",
            AclOperation.WRITE,
            AclPermissionType.ALLOW,
        )
        for future in admin.create_acls([binding]).values():
            future.result(10)
        crashed = crashed_copy(data, tmp_path / "crashed")  # as kill -9 would leave it, answers given
    lines = [json.loads(line)[0] for line in (crashed / "fakebroker-meta.log").read_text().splitlines()]
    assert "acls" in lines and "scram" in lines

    for directory in (crashed, data):  # after a crash (snapshot + journal), after a clean stop (snapshot)
        with FakeCluster(data_dir=directory, **options).run_in_thread() as cluster:
            state = cluster.state
            assert cluster.call(
                state.authorizer.authorize, "User:carol", "127.0.0.1", Operation.WRITE, Kind.TOPIC, "orders"
            )
            assert cluster.call(state.users.scram_credential, "carol", "SCRAM-SHA-512").iterations == 8192
            reports = []
            producer = Producer(sasl(cluster, "carol", "c-pw") | {"on_delivery": lambda e, m: reports.append(e)})
            producer.produce("orders", value=b"after the restart")  # carol logs in and may write
            assert producer.flush(15) == 0 and reports == [None]


def test_damaged_stored_acls_refuse_the_directory(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, config=CONFIG).run_in_thread() as cluster:
        cluster.acls.allow("User:alice", "READ", topic="t")
    meta = json.loads((data / "fakebroker-meta.json").read_text())
    assert meta["acls"] == [[2, "t", 3, "User:alice", "*", 3, 3]]
    meta["acls"] = [[2, "t"]]
    (data / "fakebroker-meta.json").write_text(json.dumps(meta))
    with pytest.raises(DataDirError, match="acls"):
        FakeCluster(data_dir=data, config=CONFIG)


def test_a_delegation_token_logs_in_after_a_crash(tmp_path):
    from ..raw_client import RawClient
    from ..server.test_delegation_tokens_wire import create_token, plain_login, token_login

    data = tmp_path / "data"
    options = {
        "security_protocol": "SASL_PLAINTEXT",
        "users": {"alice": "alice-secret"},
        "config": {"delegation.token.secret.key": "s3cret"},
    }
    with FakeCluster(data_dir=data, **options).run_in_thread() as cluster:
        with RawClient(cluster.servers[0].port) as alice:
            plain_login(alice)
            token = create_token(alice)
            assert token.error_code == 0
        crashed = crashed_copy(data, tmp_path / "crashed")
    with FakeCluster(data_dir=crashed, **options).run_in_thread() as cluster:
        with RawClient(cluster.servers[0].port) as holder:
            assert token_login(holder, token.token_id, token.hmac).error_code == 0
        logins = [e.principal for e in cluster.events if e.kind == "client_authenticated"]
        assert logins == ["User:alice"]
