"""The trio/anyio edge: listeners, connections, the request pipeline, and time.

``broker.py`` listens; ``connection.py`` is the socket loop; ``pipeline.py`` takes a request
from bytes to bytes (decode -> its declared stages: cut check, ``quota_stage.py``,
``fault_stage.py``, ``handler_stage.py`` -> encode);
``ticker.py`` lets the real or a virtual clock drive the core's timers; ``runtime.py`` is what
the brokers of one cluster share. Nothing below this package (apis, faults, core, protocol)
imports it.
"""
