"""Fault injection: rules matched against every request between decoding and handling.

The rules and the answers they give are plain data and functions (no I/O): which rules fire
for a request (``rules.py``), what a request names (``request_view.py``), and the error answer
Kafka would give for any API (``responses.py``). The server's fault stage
(``server/fault_stage.py``) carries out the actions that involve time or sockets.
"""

from .request_view import Leaf, RequestView, view_of
from .rules import ACTIONS, FaultRule, FaultRuleError, Faults, api_key_of

__all__ = ["ACTIONS", "FaultRule", "FaultRuleError", "Faults", "Leaf", "RequestView", "api_key_of", "view_of"]
