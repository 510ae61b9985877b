"""The README's first Python block (the agent loop) runs as printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def test_first_python_block_is_the_agent_loop_and_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)\n```", README.read_text(encoding="utf-8"), flags=re.S)
    first = blocks[0]
    for call in ("mem.context(", "mem.record_outcome(", "mem.observe_message("):
        assert call in first
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    exec(compile(first, "README.md", "exec"), scope)  # noqa: S102 - the README's own example
    assert (tmp_path / "agent.kuzu").exists()
    from graphmem import Memory
    from graphmem.embed import SentenceTransformerEmbedder

    with Memory(tmp_path / "agent.kuzu", user="alice", embedder=SentenceTransformerEmbedder()) as mem:
        assert mem.learnings(tool="send_email"), "the owner's feedback became a learning"
        assert mem.stats()["Application"] == 1
