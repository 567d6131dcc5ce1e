"""Groups of every type behind one group service (``service.py``): every group request enters
there, and one lookup, group id -> group of a type, decides who answers.

``classic/`` owns every transition of a classic group, with Kafka's error checks in Kafka's
order; ``consumer/`` the same for KIP-848 consumer groups; ``migration.py`` the online upgrade
and downgrade between the two; ``commits.py`` who may commit offsets, per type; ``offsets.py``
the committed offsets, whatever the type; ``requests.py`` and ``results.py`` the typed
requests and answers; ``placement.py`` which ``__consumer_offsets`` partition owns a group.
"""
