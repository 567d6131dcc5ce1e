"""Print the reference of the event kinds as markdown: every kind of event the cluster records,
with the fields each carries, read from the event dataclasses (``fakebroker.core.events``), so
the page cannot drift from the code.

    python3 scripts/event_kinds_doc.py > event-kinds.md

``markdown()`` is the page (``scripts/reference_docs.py`` writes it under docs/reference/);
``tests/test_event_kinds_doc.py`` checks that it covers every kind and every field.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import fakebroker.core  # noqa: E402 - after the path is set
from fakebroker.core.events import Event, detail_fields, event_kinds  # noqa: E402

# The page's sections, in order: title, what their kinds share, and the modules defining them.
SECTIONS: list[tuple[str, str, tuple[str, ...]]] = [
    (
        "Connections, requests, brokers, topics, faults and the clock",
        "What happens to the cluster, its connections and requests: `broker`, where set, is the "
        "broker concerned (the one a client reached, that started or stopped, or that a cut is from).",
        ("fakebroker.core.events.cluster", "fakebroker.core.topics.reassignments"),
    ),
    (
        "Authentication and ACLs",
        "A SASL listener's connections (`peer`, `client_id`): each authentication that succeeded, with "
        "its principal and mechanism, and each that failed, with Kafka's answer's text; the ACLs "
        "created and deleted (CreateAcls, DeleteAcls, `cluster.acls`) and the authorizer's denials "
        "(`access_denied`); and the delegation tokens created, renewed and expired "
        "(CreateDelegationToken and the rest, the expiry sweep).",
        ("fakebroker.core.events.security",),
    ),
    (
        "Groups, members and offsets",
        "Each names its `group` and happened on the group's coordinator (`broker`); the events of a "
        "member name it (`member`) and, once known, its `client_id`.",
        ("fakebroker.core.events.groups",),
    ),
    (
        "Share groups' records (KIP-932)",
        "What became of a share group's records, per share partition (`group`, `topic`, `partition`): "
        "acquired, acknowledged, released and archived records as ranges `first`..`last`.",
        ("fakebroker.core.events.share",),
    ),
    (
        "Transactions",
        "Each names its `transactional_id` and happened on the broker coordinating it (`broker`).",
        ("fakebroker.core.events.transactions",),
    ),
]


def all_kinds() -> dict[str, type[Event]]:
    """Every kind, once every module of the core (where kinds are defined) is imported."""
    for module in pkgutil.walk_packages(fakebroker.core.__path__, "fakebroker.core."):
        importlib.import_module(module.name)
    return event_kinds()


# Kinds whose ``details`` are not simply their fields: what they are instead (a test checks
# that every kind overriding ``Event.details`` has its note here).
DETAILS_NOTES = {
    "fault_added": "Its details are not its fields but `rule` and the rule as `GET /faults` shows it: "
    "`action` and whichever of `api` (a list of names), `error`, `brokers`, `groups`, `topics`, "
    "`partitions`, `versions`, `client_id`, `times`, `delay`, ... the rule sets. A wait may match any of them.",
}

INTRO = """\
# Event kinds

Everything the cluster does is recorded as a typed event in one ordered log: `cluster.events`
and `cluster.events_since(n)` in Python, `GET /events` over the control endpoint, the console
of `fakebroker serve` and the timelines all read it. Each event has a kind, below, and carries:

- `seq`, its place in the log (from 1), `time_ms`, the cluster clock's time (virtual under
  virtual time), and `wall`, the real time in seconds since the epoch;
- `broker`, the broker it happened on (for a group's events its coordinator, for a
  transactional id's its transaction coordinator; none for what happens to the whole cluster);
- the fields of its kind, listed below: they make up `event.details` (`details` in
  `GET /events`). A field marked *when set* is left out of the details while it has no value.
  Every event answers `event.group` and `event.client_id`, None where its kind has no such field.

A wait matches these fields: `conditions.event("member_joined", group="g", client_id="svc")`,
or `POST /wait` with `{"condition": "event", "kind": "member_joined", "details": {"group": "g"}}`;
it may also name `broker`. An unknown kind, or a field its kind does not have, is refused at
once with the closest valid names, as is an unknown kind in `GET /events?kind=`.
"""


def _text(doc: str) -> str:
    """A docstring as one markdown paragraph (reST's double backticks made single)."""
    return re.sub(r"``([^`]+)``", r"`\1`", " ".join(doc.split()))


def own_doc(cls: type[Event]) -> str | None:
    """The kind's own docstring; None for the one ``Event`` makes up for a kind without one."""
    doc = cls.__dict__.get("__doc__")
    if not doc or doc.startswith(f"{cls.__name__}("):
        return None
    return _text(doc)


def _type(field: dataclasses.Field[object], optional: bool) -> str:
    """``int | None`` as `int` or `None` (a ``|`` would split the table's cell); a field left
    out while None shows only the type it has when set."""
    parts = [p.strip() for p in str(field.type).split("|")]
    if optional and len(parts) > 1:
        parts = [p for p in parts if p != "None"]
    return " or ".join(f"`{p}`" for p in parts)


def _present(field: dataclasses.Field[object]) -> tuple[bool, str]:
    """Whether a field may be left out (default None and not ``shown``), and the words for it."""
    if field.default is None and not field.metadata.get("shown"):
        return True, "when set"
    if field.default is None:
        return False, "always (may be null)"
    return False, "always"


def kind_section(kind: str, cls: type[Event]) -> str:
    out = [f"### `{kind}`\n\n"]
    doc = own_doc(cls)
    if doc:
        out.append(f"{doc}\n\n")
    if kind in DETAILS_NOTES:
        out.append(f"{DETAILS_NOTES[kind]}\n\n")
    fields = detail_fields(cls)
    if not fields:
        out.append("No fields of its own.\n")
        return "".join(out)
    if kind in DETAILS_NOTES:  # the fields are the event's attributes, not its details
        out.append("| field | type |\n|---|---|\n")
        out.extend(f"| `{f.name}` | {_type(f, False)} |\n" for f in fields)
        return "".join(out)
    out.append("| field | type | in `details` |\n|---|---|---|\n")
    for f in fields:
        optional, present = _present(f)
        out.append(f"| `{f.name}` | {_type(f, optional)} | {present} |\n")
    return "".join(out)


def markdown() -> str:
    """The whole page: the introduction, then each section's kinds in name order."""
    kinds = all_kinds()
    placed = {module for _, _, modules in SECTIONS for module in modules}
    unplaced = sorted({cls.__module__ for cls in kinds.values()} - placed)
    if unplaced:
        raise SystemExit(f"event kinds in modules without a section here: {', '.join(unplaced)}; add them to SECTIONS")
    out = [INTRO]
    for title, note, modules in SECTIONS:
        names = [kind for kind, cls in kinds.items() if cls.__module__ in modules]
        out.append(f"\n## {title}\n\n{note}\n")
        out.append("\n" + ", ".join(f"[`{n}`](#{n})" for n in names) + "\n")
        for name in names:
            out.append("\n" + kind_section(name, kinds[name]))
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(markdown())
