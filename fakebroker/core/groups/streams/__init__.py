"""Streams groups (KIP-1071, ``group.protocol=streams``): the topology a group's members run,
its configured internal topics, and the coordinator of membership, epochs and tasks."""
