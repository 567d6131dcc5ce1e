"""The transaction coordinator (KIP-98, KIP-447, KIP-890): transactional ids, their states
and the markers that end a transaction in every partition it wrote.

``coordinator.py`` answers the transaction requests in Kafka's order of checks, ``model.py``
holds a transactional id's state and the table of its transitions, ``producer_ids.py`` the
producer id allocator every InitProducerId draws from (idempotent producers too) and the
epoch limits.
"""
