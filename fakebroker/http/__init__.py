"""The loopback JSON control endpoint: a face of the facade (it uses only ``fakebroker.cluster``'s
public API, and the churn blocks of ``fakebroker.testing``). ``server.py`` serves it with
hypercorn on the cluster's own loop, ``routes.py`` holds the route table behind both the
dispatch and the OpenAPI document."""

from __future__ import annotations

from .routes import ROUTES
from .server import ControlEndpoint, loopback_host, serve, start

__all__ = ["ROUTES", "ControlEndpoint", "loopback_host", "serve", "start"]
