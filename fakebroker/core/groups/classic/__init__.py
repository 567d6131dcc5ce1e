"""Classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): ``coordinator.py`` owns every
transition, in Kafka's order of checks; ``model.py`` holds the group, its members and the state
table."""
