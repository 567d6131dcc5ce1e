"""KIP-848 consumer groups: the server computes the assignment and members reconcile to it.

``coordinator.py`` owns every transition (ConsumerGroupHeartbeat), ``model.py`` the group and
member data with the derived group state, ``assignors.py`` the ``uniform`` and ``range``
server-side assignors.
"""
