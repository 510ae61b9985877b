"""Shared fixtures: a real Kùzu file in tmp_path, the deterministic embedder and LLM."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from graphmem import HashEmbedder, Memory, Settings
from tests.bolt_server import arcade, bolt_url  # noqa: F401 -- one ArcadeDB server per test process, for every bolt test


def offline_llm() -> Any:
    """The deterministic OfflineLLM."""
    from graphmem.llm import OfflineLLM

    return OfflineLLM()


class FakeClock:
    """A settable clock for Memory(clock=...)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now = self.now + timedelta(**kwargs)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.kuzu"


@pytest.fixture
def make_memory(db_path: Path) -> Iterator[Callable[..., Memory]]:
    """Open Memories on the test's database file; all closed at teardown."""
    opened: list[Memory] = []

    def _make(user: str = "alice", settings: Settings | None = None, **kwargs: Any) -> Memory:
        kwargs.setdefault("embedder", HashEmbedder())
        kwargs.setdefault("llm", offline_llm())
        mem = Memory(kwargs.pop("path", db_path), user=user, settings=settings, **kwargs)
        opened.append(mem)
        return mem

    yield _make
    for mem in opened:
        if not mem.store.closed:
            mem.close()


@pytest.fixture
def mem(make_memory: Callable[..., Memory]) -> Memory:
    return make_memory()
