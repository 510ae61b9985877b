"""graphmem: a graph-native learning memory for self-improving LLM agents, on Kùzu.

Start with :class:`Memory`::

    from graphmem import Memory
    mem = Memory("agent.kuzu", user="alice")
    mem.add_learning("Keep emails under 3 paragraphs", tool="send_email")
"""

from graphmem.config import Settings
from graphmem.embed import Embedder, HashEmbedder, SentenceTransformerEmbedder
from graphmem.errors import (
    BufferPoolError,
    CypherError,
    DatabaseLockedError,
    EmbedderError,
    EmbedderMismatchError,
    GraphmemError,
    InvalidInputError,
    LLMError,
    LLMValidationError,
    NotFoundError,
    PermissionDeniedError,
    ReadOnlyError,
    SchemaVersionError,
    StoreError,
)
from graphmem.memory import Memory
from graphmem.models import (
    Application,
    Entity,
    Event,
    Learning,
    Objective,
    Summary,
    Tool,
    Topic,
    Transition,
)
from graphmem.retrieve import AssembledContext, ScoredLearning
from graphmem.retrieve.search import Hit

__version__ = "0.1.0"

__all__ = [
    "Application",
    "AssembledContext",
    "AsyncClient",
    "BufferPoolError",
    "Client",
    "CypherError",
    "DatabaseLockedError",
    "Embedder",
    "EmbedderError",
    "EmbedderMismatchError",
    "Entity",
    "Event",
    "GraphmemError",
    "HashEmbedder",
    "Hit",
    "InvalidInputError",
    "LLMError",
    "LLMValidationError",
    "Learning",
    "Memory",
    "NotFoundError",
    "Objective",
    "PermissionDeniedError",
    "ReadOnlyError",
    "SchemaVersionError",
    "ScoredLearning",
    "SentenceTransformerEmbedder",
    "Settings",
    "StoreError",
    "Summary",
    "Tool",
    "Topic",
    "Transition",
    "__version__",
]


def __getattr__(name: str) -> object:
    """``Client`` and ``AsyncClient`` (graphmem.client) load on first use: httpx is not imported before."""
    if name in ("Client", "AsyncClient"):
        from graphmem import client

        return getattr(client, name)
    raise AttributeError(f"module 'graphmem' has no attribute {name!r}")
