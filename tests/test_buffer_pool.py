"""Kùzu's buffer pool: sized from the file by default, and a clear error when a capped pool is
too small for an open or a write (nothing written, the Memory keeps working)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import kuzu
import pytest

from graphmem import BufferPoolError, Memory, Settings, StoreError
from graphmem.store import kuzu_store


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []
    real = kuzu.Database

    class Spy(real):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            seen.append(int(kwargs.get("buffer_pool_size", 0)))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(kuzu, "Database", Spy)
    return seen


def test_default_pool_is_sized_from_the_file(
    make_memory: Callable[..., Memory], db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _spy(monkeypatch)
    mem = make_memory()
    mem.add_learning("Keep emails short", tool="send_email")
    assert seen[-1] == kuzu_store.POOL_MIN_MB << 20  # a small file: the floor
    assert mem.store.buffer_pool_size == seen[-1]
    mem.close()
    # past the floor: the factor times the file, rounded up to whole MB
    monkeypatch.setattr(kuzu_store, "POOL_MIN_MB", 48)
    monkeypatch.setattr(kuzu_store, "POOL_FILE_FACTOR", 16)
    size = db_path.stat().st_size
    assert 16 * size > 48 << 20
    mem = make_memory()
    assert seen[-1] == -(-kuzu_store.POOL_FILE_FACTOR * size // (1 << 20)) << 20
    assert [s.learning.content for s in mem.context("Email Dana", tool="send_email").learnings]
    mem.close()
    # asking for more than Kùzu's own default (80 % of the RAM) leaves Kùzu's default
    monkeypatch.setattr(kuzu_store, "POOL_MIN_MB", 1 << 30)
    make_memory().close()
    assert seen[-1] == 0


def test_too_small_pool_fails_to_open_with_a_clear_error(db_path: Path) -> None:
    with pytest.raises(BufferPoolError, match="kuzu_buffer_pool_mb") as info:
        Memory(db_path, settings=Settings(kuzu_buffer_pool_mb=4))
    assert isinstance(info.value, StoreError)
    assert "opening the file" in str(info.value)


def test_write_larger_than_the_pool_fails_clearly_and_the_memory_keeps_working(
    make_memory: Callable[..., Memory],
) -> None:
    mem = make_memory(settings=Settings(kuzu_buffer_pool_mb=32))
    kept = mem.add_learning("Keep invoice emails short", tool="send_email")
    batch = [{"content": f"Batch learning {i} about invoices and the follow-up email " * 5, "tool": "send_email"}
             for i in range(3000)]
    with pytest.raises(BufferPoolError, match=r"Raise Settings\.kuzu_buffer_pool_mb") as info:
        mem.add_learnings(batch)
    assert "32 MB" in str(info.value) and "nothing of it was written" in str(info.value)
    assert len(mem.store.learning_catalog) == 1  # the batch left no row behind
    assert [s.learning.id for s in mem.context("invoice email", tool="send_email").learnings] == [kept.id]
    mem.add_learnings(batch[:50])  # smaller batches still fit
    assert len(mem.store.learning_catalog) == 51
