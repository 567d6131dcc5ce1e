"""The console: a single page at ``/`` of the control endpoint, and its assets under
``/console/``, shipped in the package (``static/``; its libraries in ``static/vendor/``, no
CDN, so it works offline).

The page is guarded as the JSON API is. The token comes once, in the URL ``serve`` prints
(``/?token=...``): the answer sets it as a cookie for this origin only (HttpOnly,
SameSite=Strict, named for the port, as cookies do not tell ports apart) and sends the browser
on to ``/``, so the token leaves the address bar and the history. From then on the page's
calls carry the cookie; the server checks their Host and Origin (``server.py``)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qs

from .schemas import HTTPError

TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
IMPORT_MAP = re.compile(rb'<script type="importmap">(.*?)</script>', re.S)


@dataclass
class Response:
    """An answer that is not JSON: a page, an asset, a redirect."""

    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)


def cookie_name(port: int | None) -> str:
    return f"fakebroker-console-{port or 0}"


def cookie_token(scope: dict[str, Any], port: int | None) -> bytes:
    """The console's token from the request's cookies, or b""."""
    wanted = cookie_name(port).encode() + b"="
    for name, value in scope.get("headers", []):
        if name.lower() == b"cookie":
            for part in value.split(b";"):
                part = part.strip()
                if part.startswith(wanted):
                    return part[len(wanted) :]
    return b""


def is_console_path(path: str) -> bool:
    return path == "/" or path.startswith("/console/")


def answer(scope: dict[str, Any], token: bytes, port: int | None, authorized: bool) -> Response:
    """``GET /`` (the page, or the login with ``?token=``) or ``GET /console/<asset>``."""
    if scope["method"].upper() not in ("GET", "HEAD"):
        raise HTTPError(405, "the console's paths answer GET only", [(b"allow", b"GET")])
    path = scope["path"]
    if path == "/":
        given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
        if given:
            if not hmac.compare_digest(given[-1].encode(), token):
                return refusal("That token is not this endpoint's.")
            cookie = f"{cookie_name(port)}={given[-1]}; Path=/; HttpOnly; SameSite=Strict"
            return Response(303, headers=[(b"location", b"/"), (b"set-cookie", cookie.encode())])
        if not authorized:
            return refusal("This console needs the endpoint's token.")
        page = asset("index.html")
        return Response(200, page, TYPES[".html"], [(b"content-security-policy", policy(page).encode())])
    if not authorized:
        raise HTTPError(401, "open the console's URL with its token first (the `console:` line serve prints)")
    name = path[len("/console/") :]
    if name not in asset_names():
        raise HTTPError(404, f"no console asset {name!r}")
    return Response(200, asset(name), TYPES["." + name.rpartition(".")[2]])


def refusal(why: str) -> Response:
    body = (
        "<!doctype html><html lang='en'><meta charset='utf-8'><title>fakebroker console</title>"
        f"<body><h1>fakebroker console</h1><p>{why} Open the URL that <code>fakebroker serve</code> printed "
        "on its <code>console:</code> line (<code>http://127.0.0.1:PORT/?token=...</code>), or "
        "<code>ControlEndpoint.console_url</code> in Python.</p></body></html>"
    )
    return Response(401, body.encode(), TYPES[".html"], [(b"www-authenticate", b'Bearer realm="fakebroker"')])


def policy(page: bytes) -> str:
    """The page's Content-Security-Policy: its own origin only, and its one inline script (the
    import map) by hash."""
    found = IMPORT_MAP.search(page)
    inline = f" 'sha256-{base64.b64encode(hashlib.sha256(found.group(1)).digest()).decode()}'" if found else ""
    return (
        f"default-src 'none'; script-src 'self'{inline}; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


@cache
def asset_names() -> frozenset[str]:
    """Every file the console serves, by path under ``static/`` (fixed at first use)."""
    root = files("fakebroker.http") / "static"
    names = set()
    todo = [(root, "")]
    while todo:
        folder, prefix = todo.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                todo.append((entry, prefix + entry.name + "/"))
            elif "." + entry.name.rpartition(".")[2] in TYPES:
                names.add(prefix + entry.name)
    return frozenset(names)


@cache
def asset(name: str) -> bytes:
    folder = files("fakebroker.http") / "static"
    for part in name.split("/"):
        folder = folder / part
    return folder.read_bytes()
