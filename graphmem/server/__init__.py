"""``graphmem serve``: one process owns the Kùzu file and serves every other over HTTP (and MCP).

- :func:`create_app` (app.py): the FastAPI app; routes in ``routes_*.py``;
- :class:`Owner` (core.py): the Memory per user, the bounded write gate, the background worker;
- :class:`KeyStore` (auth.py): API keys (hashed), each bound to a user and a role;
- ``mcp_server.py``: the MCP tools, over stdio (``graphmem mcp``) or mounted at ``/mcp``.

Clients use :class:`graphmem.client.Client` (same methods as Memory).
"""

from graphmem.server.app import create_app
from graphmem.server.auth import KeyStore, Principal
from graphmem.server.core import Owner

__all__ = ["KeyStore", "Owner", "Principal", "create_app"]
