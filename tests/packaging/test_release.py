"""The release, up to and including the upload (issue 36): ``scripts/release.sh OUT --upload``,
as ``.github/workflows/release.yml`` runs it, builds both distributions, checks them, and sends
each to a package index, here one on 127.0.0.1 that keeps what it receives."""

from __future__ import annotations

import hashlib
import threading
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .test_distributions import ROOT, run

pytestmark = pytest.mark.slow

MAX_UPLOAD = 64 * 1024 * 1024


class Index(BaseHTTPRequestHandler):
    """The upload API of a package index (PyPI's legacy ``file_upload``): each POST's form kept."""

    uploads: list[dict[str, bytes | str]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length", "0"))
        if not 0 < length <= MAX_UPLOAD:
            self.send_error(413)
            return
        body = self.rfile.read(length)
        form = BytesParser(policy=HTTP).parsebytes(
            f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + body
        )
        fields: dict[str, bytes | str] = {}
        for part in form.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            filename = part.get_filename()
            if filename:
                fields["filename"] = filename
                fields[name] = payload
            else:
                fields[name] = payload.decode()
        self.uploads.append(fields)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:  # quiet
        pass


def test_release_builds_checks_and_uploads_both_distributions(tmp_path: Path):
    Index.uploads = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = tmp_path / "dist"
        env = {
            "TWINE_REPOSITORY_URL": f"http://127.0.0.1:{server.server_port}/legacy/",
            "TWINE_USERNAME": "__token__",
            "TWINE_PASSWORD": "pypi-test-token",
        }
        done = run("bash", ROOT / "scripts" / "release.sh", out, "--upload", env_extra=env)
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert done.stdout.count("PASSED") == 4  # twine check --strict, each file
    built = sorted(p.name for p in out.iterdir())
    assert built == [
        "fakebroker-0.1.0-py3-none-any.whl",
        "fakebroker-0.1.0.tar.gz",
        "pytest_fakebroker-0.1.0-py3-none-any.whl",
        "pytest_fakebroker-0.1.0.tar.gz",
    ]
    received = {u["filename"]: u for u in Index.uploads}
    assert sorted(received) == built
    for name, upload in received.items():
        data = (out / name).read_bytes()
        assert upload[":action"] == "file_upload"
        assert upload["content"] == data
        assert upload["sha256_digest"] == hashlib.sha256(data).hexdigest()
        assert upload["version"] == "0.1.0"
        assert upload["name"] in ("fakebroker", "pytest-fakebroker", "pytest_fakebroker")


def test_release_refuses_a_folder_already_holding_files(tmp_path: Path):
    (tmp_path / "old.whl").write_text("")
    done = run("bash", ROOT / "scripts" / "release.sh", tmp_path)
    assert done.returncode == 2 and "not empty" in done.stderr
