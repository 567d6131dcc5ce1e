"""The pure core (sans-IO): every piece of cluster state and every transition of it.

No sockets, no threads, no clock, no trio: whatever depends on time takes ``now_ms``, and
``ClusterState.tick(now_ms)`` fires the timers that are due. Everything that happens is
recorded as a typed event in one ordered log (``events.py``), and appending calls nothing
back: the server tells listeners after each change.

- ``cluster_state.py``: the root — brokers, topics, leaders, coordinator placement and moves,
  records, periodic checks; ``topics.py`` the data, ``appends.py`` Produce's append path
- ``groups/``: the classic group coordinator (``coordinator.py`` owns every group transition,
  ``model.py`` the state table), committed offsets and the group admin operations
- ``log.py`` partition logs, ``producers.py`` idempotent producer state, ``configs.py`` settings
- ``timers.py`` keyed timers (tuple keys) and parked answers, ``events.py`` the event log
"""
