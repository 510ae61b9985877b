"""The public surface: graphmem.__all__ is pinned, and supersede() works as documented."""

from __future__ import annotations

import pytest

import graphmem
from graphmem import InvalidInputError, Memory

PUBLIC = [
    "Application", "AssembledContext", "AsyncClient", "BufferPoolError", "Client", "CypherError", "DatabaseLockedError", "Embedder", "EmbedderError",
    "EmbedderMismatchError", "Entity", "Event", "GraphmemError", "HashEmbedder", "Hit", "InvalidInputError",
    "LLMError", "LLMValidationError", "Learning", "Memory", "NotFoundError", "Objective", "PermissionDeniedError",
    "ReadOnlyError",
    "SchemaVersionError", "ScoredLearning", "SentenceTransformerEmbedder", "Settings", "StoreError", "Summary",
    "Tool", "Topic", "Transition", "__version__",
]


def test_all_is_pinned() -> None:
    assert sorted(graphmem.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert hasattr(graphmem, name), name


def test_nothing_happens_at_import() -> None:
    import subprocess
    import sys

    code = "import sys, graphmem; print('torch' in sys.modules, 'anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout.strip()
    assert out == "False False"


def test_supersede_archives_the_older_one_and_links_it(mem: Memory) -> None:
    old = mem.add_learning("Use the v1 billing API", tool="http_request")
    new = mem.add_learning("Use the v2 billing API", tool="http_request")
    archived = mem.supersede(new.id, old.id, reason="v1 was retired")
    assert (archived.tier, archived.superseded_by, archived.version) == ("archive", new.id, 2)
    rows = mem.cypher("MATCH (n:Learning)-[r:SUPERSEDES]->(o:Learning) RETURN n.id AS n, o.id AS o, r.reason AS why")
    assert rows == [{"n": new.id, "o": old.id, "why": "v1 was retired"}]
    shown = [i.learning.id for i in mem.context("billing API", tool="http_request").learnings]
    assert old.id not in shown and new.id in shown
    assert mem.supersede(new.id, old.id).version == 2  # idempotent
    with pytest.raises(InvalidInputError, match="itself"):
        mem.supersede(new.id, new.id)


def test_memory_has_the_prompt_version_and_distill_methods() -> None:
    """The self-improvement surface of Memory (prompt versions with A/B tests, distillation, failures to tests, bullet evolution) is pinned."""
    for name in ("add_prompt", "prompts", "active_prompt", "prompt_for", "prompt_test", "propose_prompt", "distill", "export_tests",
                 "evolve"):
        assert callable(getattr(Memory, name)), name
