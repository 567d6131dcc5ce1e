"""``POST /groups/{id}/churn``: the cluster-side churn blocks, seeded, against a group whose
members run elsewhere (a JavaScript, Go or Java suite's consumers).

The blocks are :mod:`fakebroker.testing.churn`'s own (they sleep and poll while the group settles), so
they run in a worker thread while the loop keeps serving the members, with the cluster lending
that thread a portal (``threads_may_call``)."""

from __future__ import annotations

from typing import Any

import anyio

from ..testing.churn import CLUSTER_BLOCKS, churn, remote_members
from .schemas import INT, NUM, STR, HTTPError, obj

MAX_STEPS = 20
MAX_SETTLE_S = 120.0
BLOCK_NAMES = [b.name for b in CLUSTER_BLOCKS]
CHURN_BODY = obj(
    {
        "topic": STR,
        "seed": INT,
        "steps": INT,
        "blocks": {"type": "array", "items": STR},
        "settle_timeout": NUM,
    },
    ("topic",),
)


async def churn_group(req: Any) -> Any:  # a routes.Request (routes imports this module)
    cluster, group, body = req.cluster, req.params["id"], req.body
    steps, settle = body.get("steps", 4), float(body.get("settle_timeout", 30.0))
    if not 1 <= steps <= MAX_STEPS:
        raise HTTPError(400, f"steps must be 1 to {MAX_STEPS}")
    if not 0 < settle <= MAX_SETTLE_S:
        raise HTTPError(400, f"settle_timeout must be in (0, {MAX_SETTLE_S:g}] seconds")
    names = body.get("blocks") or BLOCK_NAMES
    unknown = [n for n in names if n not in BLOCK_NAMES]
    if unknown:
        raise HTTPError(400, f"unknown blocks {unknown}; over HTTP the blocks are: {', '.join(BLOCK_NAMES)}")
    if body["topic"] not in cluster.topics():
        raise HTTPError(404, f"no topic {body['topic']!r}")
    try:
        members = remote_members(cluster, group)
    except LookupError as exc:
        raise HTTPError(404, str(exc)) from None
    if not members:
        raise HTTPError(409, f"group {group!r} has no members to churn")
    blocks = [b for b in CLUSTER_BLOCKS if b.name in names]

    def run() -> Any:
        return churn(
            cluster,
            members,
            group=group,
            topic=body["topic"],
            seed=body.get("seed"),
            steps=steps,
            blocks=blocks,
            settle_timeout=settle,
        )

    async with cluster.threads_may_call():
        try:
            # abandoned if the endpoint stops (serve's Ctrl-C): the thread's next call to the
            # cluster then fails (its portal is gone), and it ends
            report = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except AssertionError as exc:  # a block's group did not settle: say which, with the seed
            notes = "\n".join(getattr(exc, "__notes__", []))
            raise HTTPError(409, f"{exc}\n{notes}".strip()) from None
    return {"seed": report.seed, "actions": list(report.actions), "replay": f"seed={report.seed}"}
