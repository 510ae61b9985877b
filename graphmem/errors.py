"""Errors raised by graphmem.

Every error graphmem raises on purpose is a :class:`GraphmemError`; errors from Kùzu and the
Anthropic SDK are wrapped where they enter (``raise ... from e``), so callers catch one base class.

Hierarchy::

    GraphmemError
    ├── InvalidInputError        bad arguments: empty text, unknown status/tier/kind, k <= 0 ...
    │   └── NotFoundError        an id (learning, objective, context, summary) that does not exist
    ├── StoreError               the database refused an operation
    │   ├── BufferPoolError      Kùzu's buffer pool was too small (Settings.kuzu_buffer_pool_mb)
    │   ├── DatabaseLockedError  another process owns the database file
    │   ├── SchemaVersionError   the file was written by a newer graphmem schema
    │   ├── EmbedderMismatchError the file was built with another embedder / dimension
    │   ├── CypherError          invalid Cypher, or a write query without write=True
    │   └── ReadOnlyError        a write on a database opened with read_only=True
    ├── EmbedderError            the embedding model could not be loaded or failed
    └── LLMError                 the LLM failed, timed out or returned an invalid answer
        └── LLMValidationError   the answer did not match the requested schema
"""

from __future__ import annotations


class GraphmemError(Exception):
    """Base class of every error graphmem raises on purpose."""


class InvalidInputError(GraphmemError, ValueError):
    """An argument is invalid; the message says which and what to pass instead."""


class NotFoundError(InvalidInputError, KeyError):
    """An id that does not exist (learning, objective, context, summary)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class StoreError(GraphmemError):
    """The graph database refused an operation."""


class BufferPoolError(StoreError):
    """Kùzu's buffer pool (``Settings.kuzu_buffer_pool_mb``) was too small for an operation."""


class DatabaseLockedError(StoreError):
    """Another process holds the lock on the database file."""


class SchemaVersionError(StoreError):
    """The database file was written by a newer schema than this graphmem knows."""


class EmbedderMismatchError(StoreError):
    """The database was built with a different embedder or embedding dimension."""


class CypherError(StoreError):
    """A Cypher query failed, or tried to write without ``write=True``."""


class ReadOnlyError(StoreError):
    """A write was attempted on a database opened with ``read_only=True``."""


class EmbedderError(GraphmemError):
    """The embedding model could not be loaded or failed to embed."""


class LLMError(GraphmemError):
    """The LLM call failed, timed out, or returned no usable answer."""


class LLMValidationError(LLMError):
    """The LLM answered, but the answer does not validate against the requested schema."""


__all__ = [
    "CypherError",
    "DatabaseLockedError",
    "EmbedderError",
    "EmbedderMismatchError",
    "GraphmemError",
    "InvalidInputError",
    "LLMError",
    "LLMValidationError",
    "NotFoundError",
    "PermissionDeniedError",
    "ReadOnlyError",
    "SchemaVersionError",
    "StoreError",
]


class PermissionDeniedError(InvalidInputError):
    """A write to something this Memory's user may read but not change (another user's shared
    learning); only its owner, or a Memory opened with ``admin=True``, may change it."""
