"""Load Kafka's JSON message specs shipped as package data.

Three spec sets are shipped (provenance in ``specs/README.md``): ``message/`` from Kafka
4.3.1, ``message-4.4/`` with the six files whose version range grew in 4.4 (ApiVersions v5,
DeleteGroups v3, TxnOffsetCommit v6), and ``message-3.9/`` with the files whose version range
differed in 3.9.2. The codec speaks the union: a version is read with the newest file that
defines it, an older version that only 3.9 lists (for example Produce v0-2, which old clients
still send) with the 3.9 file. Which versions a broker *serves* is the Kafka release's window
(:func:`release_windows`), not the union.
"""

from __future__ import annotations

from dataclasses import field
from functools import cache
from typing import Any

from ..lazy_dataclasses import dataclass
from . import spec_files
from .spec_files import SPEC_SETS

# the spec sets each Kafka release reads, newest first (a release uses the first file that has a message)
RELEASE_SPEC_SETS: dict[str, tuple[str, ...]] = {
    "4.4": ("message-4.4", "message"),
    "4.3": ("message",),
    "3.9": ("message-3.9", "message"),
}


@dataclass(frozen=True)
class VersionRange:
    """A spec version range such as ``"3-13"``, ``"5+"``, ``"7"`` or ``"none"``."""

    low: int
    high: int | None  # None = open-ended
    empty: bool = False

    @classmethod
    def parse(cls, text: str | None) -> VersionRange:
        if text is None or text == "none":
            return cls(0, -1, empty=True)
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            low, high = text.split("-")
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        if self.empty or not isinstance(version, int):
            return False
        return version >= self.low and (self.high is None or version <= self.high)

    def versions(self) -> range:
        if self.empty:
            return range(0)
        assert self.high is not None, "open-ended range has no finite list"
        return range(self.low, self.high + 1)


@dataclass
class Spec:
    """One JSON spec file, comments stripped."""

    name: str
    type: str  # request | response | header | data
    api_key: int | None
    valid_versions: VersionRange
    flexible_versions: VersionRange
    fields: list[dict[str, Any]]
    common_structs: dict[str, list[dict[str, Any]]]
    listeners: tuple[str, ...]
    latest_version_unstable: bool
    source: str  # e.g. "message/ProduceRequest.json"
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


def _parse_spec(source: str, raw: dict[str, Any]) -> Spec:
    return Spec(
        name=raw["name"],
        type=raw["type"],
        api_key=raw.get("apiKey"),
        valid_versions=VersionRange.parse(raw.get("validVersions")),
        flexible_versions=VersionRange.parse(raw.get("flexibleVersions")),
        fields=raw.get("fields", []),
        common_structs={s["name"]: s["fields"] for s in raw.get("commonStructs", [])},
        listeners=tuple(raw.get("listeners", ())),
        latest_version_unstable=bool(raw.get("latestVersionUnstable", False)),
        source=source,
        raw=raw,
    )


@cache
def load_spec_set(folder: str) -> dict[str, Spec]:
    """Every spec of one folder, by name."""
    specs = {}
    for file, raw in _raw_specs()[folder].items():
        spec = _parse_spec(f"{folder}/{file}", raw)
        specs[spec.name] = spec
    return specs


@cache
def _raw_specs() -> spec_files.Raw:
    return spec_files.load(SPEC_SETS)  # every shipped set, from the shipped parsed file when it is good


@dataclass
class SpecFamily:
    """Every file that defines one message, and which one to read a given version with."""

    name: str  # the 4.3.1 name where there is one
    type: str
    api_key: int | None
    by_version: dict[int, Spec]  # version -> spec that defines it

    @property
    def versions(self) -> list[int]:
        return sorted(self.by_version)

    @property
    def specs(self) -> list[Spec]:
        """Distinct specs, newest set first."""
        seen: dict[str, Spec] = {}
        for spec in sorted(self.by_version.values(), key=lambda s: SPEC_SETS.index(s.source.split("/")[0])):
            seen.setdefault(spec.source, spec)
        return list(seen.values())

    def spec(self, version: int) -> Spec:
        return self.by_version[version]


@cache
def families() -> dict[str, SpecFamily]:
    """All messages, keyed by name; 3.9-only names are filed under their 4.3.1 successor."""
    newest = {**load_spec_set("message"), **load_spec_set("message-4.4")}
    # API key + type -> current name, so a renamed 3.9 file (key 74) joins its successor.
    current = {(s.api_key, s.type): s.name for s in newest.values() if s.api_key is not None}
    result: dict[str, SpecFamily] = {}
    for folder in SPEC_SETS:
        for spec in load_spec_set(folder).values():
            name = current.get((spec.api_key, spec.type), spec.name) if spec.api_key is not None else spec.name
            fam = result.setdefault(name, SpecFamily(name, spec.type, spec.api_key, {}))
            if spec.valid_versions.empty:
                continue
            for version in spec.valid_versions.versions():
                fam.by_version.setdefault(version, spec)
    return result


@cache
def release_windows(release: str) -> dict[int, tuple[int, int]]:
    """API key -> (min, max) version that a broker of Kafka ``release`` advertises on its
    client listener: the request spec's ``validVersions`` (the release's own file), less a
    ``latestVersionUnstable`` top version, for the APIs whose ``listeners`` include ``broker``.
    Produce is the one exception Kafka makes: 4.x still advertises it from v0 (KAFKA-18659,
    for old librdkafka, whose v0-2 requests then get UNSUPPORTED_VERSION per partition)."""
    if release not in RELEASE_SPEC_SETS:
        raise ValueError(f"unknown Kafka release {release!r}; known: {', '.join(RELEASE_SPEC_SETS)}")
    chosen: dict[str, Spec] = {}
    for folder in reversed(RELEASE_SPEC_SETS[release]):
        chosen.update(load_spec_set(folder))
    renamed = {(s.api_key, s.type) for s in load_spec_set("message").values()}
    windows: dict[int, tuple[int, int]] = {}
    for spec in chosen.values():
        if spec.type != "request" or spec.api_key is None or spec.valid_versions.empty:
            continue
        if "broker" not in spec.listeners:
            continue
        if spec.source.startswith("message/") and (spec.api_key, spec.type) not in renamed:
            continue
        low, high = spec.valid_versions.low, spec.valid_versions.high
        assert high is not None
        if spec.latest_version_unstable:
            high -= 1
        if spec.api_key == 0 and not release.startswith("3."):
            low = 0
        if low <= high:
            windows[spec.api_key] = (low, high)
    return dict(sorted(windows.items()))
