"""Kafka's secured OAUTHBEARER validator at the edge: its JWKS fetched from
``sasl.oauthbearer.jwks.endpoint.url`` and kept fresh as Kafka 4.4's broker keeps it, the
checks themselves in the pure core (``core/security/oauthbearer_jwks.py``).

- A ``file:`` URL is read when the cluster is made, and read again, before a token is checked,
  whenever the file's modification time (or size) has changed, as Kafka's ``CachedFile`` with
  its last-modified policy does. A file that cannot be read or parsed then refuses tokens until
  it is fixed (Kafka's key resolver fails the same way). Write a new JWKS beside the old one
  and ``os.replace`` it, so no token meets a half-written file.
- An ``http:``/``https:`` URL is fetched once when the cluster is made (one attempt, as Kafka's
  ``RefreshingHttpsJwks.init``), then by a background thread: every
  ``sasl.oauthbearer.jwks.endpoint.refresh.ms`` and at once when a token names a ``kid`` the
  keys lack (:class:`~fakebroker.core.security.oauthbearer_jwks.MissingKeyIds`: again for that
  kid only 60 s later); that token is refused meanwhile, as on Kafka, and its client's next
  attempt meets the new keys. A refresh retries with ``...retry.backoff.ms`` doubling up to
  ``...retry.backoff.max.ms`` in all, and on failure keeps the keys it had. The broker's event
  loop never waits on the network: it only reads the current keys (one reference, swapped by
  the thread).

Every fetch is bounded: 10 s to connect and read, 1 MiB of JWKS at most, a 200 answer only.
HTTPS endpoints are verified against the system's trust store. The thread is a daemon that ends
when its validator (so its cluster) is garbage-collected.

A wrong URL, a missing file, an endpoint that does not answer or a document that is no JWKS is
a :class:`ClusterUsageError` when the cluster is made, naming the problem, as Kafka's broker
refuses to start.
"""

from __future__ import annotations

import json
import logging
import os
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..core.security.oauthbearer import InvalidOAuthToken, OAuthToken
from ..core.security.oauthbearer_jwks import (
    JWKS_ENDPOINT_URL,
    JWKS_REFRESH_MS,
    JWKS_RETRY_BACKOFF_MAX_MS,
    JWKS_RETRY_BACKOFF_MS,
    InvalidJwks,
    JsonWebKeySet,
    MissingKeyIds,
    SecuredJwtValidator,
    SecuredSettings,
    UnresolvableKey,
    setting_int,
)
from .errors import ClusterUsageError

log = logging.getLogger("fakebroker")
MAX_JWKS_BYTES = 1 << 20
FETCH_TIMEOUT_S = 10.0
PROTOCOLS = ("http", "https", "file")


class JwksUnavailable(Exception):
    """The JWKS could not be fetched or read."""


def load(url: str) -> JsonWebKeySet:
    """The JWKS at ``url`` (``file:``, ``http:``, ``https:``), fetched now (blocking, bounded);
    :class:`JwksUnavailable` naming why not."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() == "file":
        return _parse(_read_file(_file_path(parts)), url)
    return _parse(_read_http(url), url)


def _file_path(parts: urllib.parse.SplitResult) -> Path:
    return Path(urllib.parse.unquote(parts.path)).absolute()


def _read_file(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            data = file.read(MAX_JWKS_BYTES + 1)
    except OSError as exc:
        raise JwksUnavailable(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_JWKS_BYTES:
        raise JwksUnavailable(f"{path} holds more than {MAX_JWKS_BYTES} bytes: not a JWKS")
    return data


def _read_http(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    context = ssl.create_default_context() if url.lower().startswith("https:") else None
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S, context=context) as answer:
            status = answer.status
            data = answer.read(MAX_JWKS_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise JwksUnavailable(f"Non 200 status code ({exc.code} {exc.reason}) returned from {url}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise JwksUnavailable(f"cannot fetch {url}: {reason}") from None
    if status != 200:
        raise JwksUnavailable(f"Non 200 status code ({status}) returned from {url}")
    if len(data) > MAX_JWKS_BYTES:
        raise JwksUnavailable(f"{url} answered more than {MAX_JWKS_BYTES} bytes: not a JWKS")
    return data


def _parse(data: bytes, where: str) -> JsonWebKeySet:
    try:
        document = json.loads(data.decode("utf-8"))
        keys = JsonWebKeySet.from_json(document)
    except InvalidJwks as exc:
        raise JwksUnavailable(f"{where}: {exc}") from None
    except ValueError as exc:  # not UTF-8, not JSON
        raise JwksUnavailable(f"{where} is not JSON: {exc}") from None
    for params, reason in keys.skipped:
        log.debug("Ignoring an individual JWK in the JWKS of %s (%s): %s", where, reason, params)
    return keys


# -- where the keys come from ---------------------------------------------------------------


class _FileKeys:
    """A ``file:`` JWKS, read again when the file changes (Kafka's ``CachedFile``)."""

    def __init__(self, path: Path, validator: SecuredJwtValidator, stamp: tuple[int, int]):
        self._path = path
        self._validator = validator
        self._stamp = stamp  # (mtime in ns, size) of what was read last
        self._lock = threading.Lock()

    def before_validate(self) -> None:
        try:
            stat = self._path.stat()
        except OSError as exc:
            raise InvalidOAuthToken(f"cannot read the JWKS file {self._path}: {exc.strerror or exc}") from None
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp == self._stamp:
            return
        with self._lock:
            if stamp == self._stamp:
                return
            try:
                keys = _parse(_read_file(self._path), self._path.as_uri())
            except JwksUnavailable as exc:
                raise InvalidOAuthToken(f"the JWKS file changed and cannot be used: {exc}") from None
            self._validator.replace_keys(keys)
            self._stamp = stamp
            log.info("OAuth JWKS %s read again: keys %s", self._path, keys.kids)

    def missing(self, kid: str | None) -> None:
        pass  # the file is read again when it changes, not when a kid is missing


class _HttpKeys:
    """An ``http(s):`` JWKS refreshed by a background thread (Kafka's ``RefreshingHttpsJwks``)."""

    def __init__(self, url: str, validator: SecuredJwtValidator, refresh_ms: int, backoff_ms: int, backoff_max_ms: int):
        self._missing = MissingKeyIds()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        thread = threading.Thread(
            target=_refresh_loop,
            args=(url, validator, self._missing, self._lock, self._wake, self._stop),
            kwargs={"refresh_s": refresh_ms / 1000, "backoff_ms": backoff_ms, "backoff_max_ms": backoff_max_ms},
            name="fakebroker-jwks-refresh",
            daemon=True,
        )
        thread.start()

    def before_validate(self) -> None:
        pass  # the thread keeps the keys fresh

    def missing(self, kid: str | None) -> None:
        with self._lock:
            expedite = self._missing.should_refresh(kid, int(time.monotonic() * 1000))
        if expedite:
            log.debug("Refreshing the OAuth JWKS: no key for kid %r", kid)
            self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()


def _refresh_loop(
    url: str,
    validator: SecuredJwtValidator,
    missing: MissingKeyIds,
    lock: threading.Lock,
    wake: threading.Event,
    stop: threading.Event,
    *,
    refresh_s: float,
    backoff_ms: int,
    backoff_max_ms: int,
) -> None:
    """Refresh every ``refresh_s`` (at a fixed rate) and whenever woken, until stopped."""
    due = time.monotonic() + refresh_s
    while True:
        wake.wait(max(0.0, due - time.monotonic()))
        if stop.is_set():
            return
        wake.clear()
        if time.monotonic() >= due:
            due = max(due + refresh_s, time.monotonic())
        log.debug("OAuth JWKS refresh of %s starting", url)
        keys = _fetch_with_retry(url, backoff_ms, backoff_max_ms, stop)
        if stop.is_set():
            return
        if keys is None:
            log.warning("OAuth JWKS refresh of %s encountered an error; not updating local JWKS cache", url)
            continue
        validator.replace_keys(keys)
        with lock:
            missing.found(keys.kids)
        log.debug("OAuth JWKS refresh of %s complete: keys %s", url, keys.kids)


def _fetch_with_retry(url: str, backoff_ms: int, backoff_max_ms: int, stop: threading.Event) -> JsonWebKeySet | None:
    """Kafka's ``Retry``: attempts until ``backoff_max_ms`` have passed, waiting ``backoff_ms``,
    then twice that, ... between them."""
    end = time.monotonic() + backoff_max_ms / 1000
    attempt = 0
    while time.monotonic() <= end:
        attempt += 1
        try:
            return load(url)
        except JwksUnavailable as exc:
            log.debug("OAuth JWKS refresh attempt %d: %s", attempt, exc)
        wait = min(backoff_ms * 2 ** (attempt - 1) / 1000, end - time.monotonic())
        if wait <= 0 or stop.wait(wait):
            return None
    return None


# -- the validator --------------------------------------------------------------------------


class JwksTokenValidator:
    """OAUTHBEARER's validator when ``sasl.oauthbearer.jwks.endpoint.url`` is set: the core's
    checks over keys this edge keeps fresh. A refused token's reason is logged (``fakebroker``
    logger, as Kafka logs it); the client is told ``{"status":"invalid_token"}``."""

    def __init__(self, url: str, validator: SecuredJwtValidator, keys: _FileKeys | _HttpKeys):
        self.url = url
        self._validator = validator
        self._keys = keys
        if isinstance(keys, _HttpKeys):
            weakref.finalize(self, keys.stop)  # the refresh thread ends with its validator

    def validate(self, token: str, now_ms: int) -> OAuthToken:
        try:
            self._keys.before_validate()
            return self._validator.validate(token, now_ms)
        except UnresolvableKey as refused:
            self._keys.missing(refused.kid)
            log.warning("OAUTHBEARER token refused: %s", refused)
            raise
        except InvalidOAuthToken as refused:
            log.warning("OAUTHBEARER token refused: %s", refused)
            raise


def secured_validator(config: Mapping[str, Any]) -> JwksTokenValidator:
    """Kafka's secured validator from the broker settings (``sasl.oauthbearer.*``), its JWKS
    loaded now; a :class:`ClusterUsageError` with Kafka's text for settings Kafka's broker would
    not start with, or naming why the JWKS cannot be had."""

    def get(name: str) -> object:
        return config.get(name)

    try:
        settings = SecuredSettings.from_config(get)
    except ValueError as exc:
        raise ClusterUsageError(str(exc)) from None
    url = str(config.get(JWKS_ENDPOINT_URL)).strip()
    option = f"The OAuth configuration option {JWKS_ENDPOINT_URL}"
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as exc:
        raise ClusterUsageError(f"{option} contains a URL ({url}) that is malformed: {exc}") from None
    scheme = parts.scheme.lower()
    if not scheme:
        raise ClusterUsageError(f"{option} contains a URL ({url}) that is missing the protocol")
    if scheme not in PROTOCOLS:
        raise ClusterUsageError(
            f'{option} contains a URL ({url}) that contains an invalid protocol ({parts.scheme}); only "http", '
            '"https", and "file" protocol are supported'
        )
    source: _FileKeys | _HttpKeys
    if scheme == "file":
        path = _file_path(parts)
        if not path.exists():
            raise ClusterUsageError(f"{option} contains a file ({path}) that doesn't exist")
        if path.is_dir():
            raise ClusterUsageError(f"{option} references a directory ({path}), not a file")
        if not os.access(path, os.R_OK):
            raise ClusterUsageError(f"{option} contains a file ({path}) that doesn't have read permission")
        stat = path.stat()
        keys = _loaded(url)
        validator = SecuredJwtValidator(settings, keys, url)
        source = _FileKeys(path, validator, (stat.st_mtime_ns, stat.st_size))
    else:
        refresh_ms, backoff_ms, backoff_max_ms = _refresh_settings(get)
        keys = _loaded(url)
        validator = SecuredJwtValidator(settings, keys, url)
        source = _HttpKeys(url, validator, refresh_ms, backoff_ms, backoff_max_ms)
    log.info("OAUTHBEARER tokens are checked against the JWKS of %s: keys %s", url, keys.kids)
    return JwksTokenValidator(url, validator, source)


def _loaded(url: str) -> JsonWebKeySet:
    try:
        return load(url)
    except JwksUnavailable as exc:
        raise ClusterUsageError(f"{JWKS_ENDPOINT_URL}={url}: Could not refresh JWKS: {exc}") from None


def _refresh_settings(get: Callable[[str], object]) -> tuple[int, int, int]:
    """The refresh interval and retry backoffs, checked as Kafka checks them."""
    try:
        refresh_ms, backoff_ms, backoff_max_ms = (
            setting_int(get, name) for name in (JWKS_REFRESH_MS, JWKS_RETRY_BACKOFF_MS, JWKS_RETRY_BACKOFF_MAX_MS)
        )
    except ValueError as exc:
        raise ClusterUsageError(str(exc)) from None
    if refresh_ms < 0:
        raise ClusterUsageError(f"The OAuth configuration option {JWKS_REFRESH_MS} value must be at least 0")
    if refresh_ms == 0:
        raise ClusterUsageError("JWKS validation key refresh configuration value retryWaitMs value must be positive")
    if backoff_ms < 0:
        raise ClusterUsageError(f"retryBackoffMs value ({backoff_ms}) must be non-negative")
    if backoff_max_ms < 0:
        raise ClusterUsageError(f"retryBackoffMaxMs value ({backoff_max_ms}) must be non-negative")
    if backoff_max_ms < backoff_ms:
        raise ClusterUsageError(
            f"retryBackoffMaxMs value ({backoff_max_ms}) is less than retryBackoffMs value ({backoff_ms})"
        )
    return refresh_ms, backoff_ms, backoff_max_ms
