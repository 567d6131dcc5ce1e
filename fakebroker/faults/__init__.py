"""Fault injection: rules matched against every request between decoding and handling.

The rules and the answers they give are plain data and functions (no I/O); the server
(``server/connection.py``) carries out the actions that involve time or sockets.
"""

from .request_view import Leaf, RequestView, view_of
from .rules import ACTIONS, FaultRule, Faults, api_key_of

__all__ = ["ACTIONS", "FaultRule", "Faults", "Leaf", "RequestView", "api_key_of", "view_of"]
