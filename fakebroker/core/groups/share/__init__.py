"""Share groups (KIP-932): the group coordinator's side (``coordinator.py``), the share
partitions of the data path (``partitions.py``, ``partition.py``, ``records.py``, ``sessions.py``),
the share coordinator's store (``state.py``), the offsets admin (``admin.py``) and the
dead-letter queue (``dead_letters.py``)."""
