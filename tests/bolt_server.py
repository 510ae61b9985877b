"""Session-scoped ArcadeDB server with Bolt for the ``bolt`` tests (one JVM, in a subprocess).

Imported by tests/conftest.py only: a test module that imported these fixtures itself would get
its own session server (pytest keys a fixture by the module that defines it)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from graphmem.store.bolt.testing import ArcadeServer, bolt_available

_names = itertools.count()


@pytest.fixture(scope="session")
def arcade() -> Iterator[ArcadeServer]:
    """One ArcadeDB server for the whole session; tests create their own databases."""
    reason = bolt_available()
    if reason:
        pytest.skip(reason)
    srv = ArcadeServer()
    try:
        srv.start()
    except RuntimeError as e:
        srv.stop()
        pytest.skip(f"ArcadeDB did not start: {e}")
    yield srv
    srv.stop()


@pytest.fixture
def bolt_url(arcade: ArcadeServer) -> str:
    """A fresh, empty database on the session's server, as a bolt:// URL."""
    return arcade.create_database(f"t{next(_names)}")
