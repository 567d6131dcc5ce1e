"""Consumer groups: the classic coordinator (JoinGroup, SyncGroup, Heartbeat, LeaveGroup),
committed offsets, and the group admin operations.

``coordinator.py`` owns every transition of a classic group, with Kafka's error checks in
Kafka's order; ``model.py`` holds the group and member data and the state table
(``TRANSITIONS``); ``results.py`` the typed answers; ``offsets.py`` the committed offsets and
describe/list/delete; ``placement.py`` which ``__consumer_offsets`` partition owns a group.
"""
