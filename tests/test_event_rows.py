"""Event search keeps a small user's event rows in memory for its hits (SearchStore.layout_events):
the hits' events equal what the file holds, and a search after each kind of change (a write, an
embedding written later, a raw Cypher write through Memory or the store, a forget, an import, a
reopen) sees the change."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from graphmem import Memory, Settings
from graphmem.models import Event


def _talk(mem: Memory, n: int = 40) -> list[Event]:
    return mem.record_events([
        {"kind": "message", "content": f"turn {i}: we talked about the lake and the violin number {i}",
         "role": "Dana" if i % 2 else "Eli", "session_id": f"s{i // 10}", "entities": ["Dana" if i % 2 else "Eli"],
         "metadata": {"turn": i, "tags": ["a", "b"]}}
        for i in range(n)
    ])


def _hits(mem: Memory, query: str, k: int = 10) -> dict[str, Event]:
    return {h.id: h.node for h in mem.search(query, over="events", k=k)}  # type: ignore[misc]


def _assert_as_in_file(mem: Memory, hits: dict[str, Event]) -> None:
    assert hits
    for ident, node in hits.items():
        assert node == mem.store.get_event(ident)


def test_hits_come_from_the_kept_rows_and_equal_the_file(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    _talk(mem)
    _assert_as_in_file(mem, _hits(mem, "what about the violin?"))
    layout = mem.store.event_layout("alice")
    assert layout.event_rows is not None and len(layout.event_rows) == 40
    # events written after the first search: their rows come from the write, not a read
    tool = mem.record_event("tool_call", "send_email(to='Dana') about the violin lesson", tool="send_email",
                            success=True, role="assistant", session_id="s9", entities=["Dana"],
                            metadata={"args": {"to": "Dana"}, "n": 1.5})
    said = mem.record_event("message", "Dana said the violin lesson moved to Friday", role="Dana",
                            session_id="s9", created_at=datetime(2024, 5, 3, 10, 30, 15, 123456, tzinfo=UTC))
    layout = mem.store.event_layout("alice")
    assert tool.id in layout.event_rows and said.id in layout.event_rows  # type: ignore[operator]
    hits = _hits(mem, "violin lesson", k=20)
    assert tool.id in hits and said.id in hits
    _assert_as_in_file(mem, hits)
    hits[tool.id].content = "changed by the caller"  # the models are the caller's own
    assert _hits(mem, "violin lesson", k=20)[tool.id].content == "send_email(to='Dana') about the violin lesson"


def test_a_larger_user_keeps_the_rows_of_its_latest_hits(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(search_event_rows_max=12))
    _talk(mem)
    hits = _hits(mem, "the lake")
    _assert_as_in_file(mem, hits)
    rows = mem.store.event_layout("alice").event_rows
    assert rows is not None and set(hits) <= set(rows) and len(rows) == 10
    more = _hits(mem, "violin number 3", k=10)
    _assert_as_in_file(mem, more)
    assert set(more) <= set(rows) and len(rows) == 12  # the least recently used went first
    said = mem.record_event("message", "Dana moved the violin lesson to Friday", role="Dana", session_id="s9")
    mem.store.event_layout("alice")  # (the layout takes the events written since)
    assert said.id in rows and len(rows) == 13  # a write adds its row; the next search trims them
    _assert_as_in_file(mem, _hits(mem, "violin lesson Friday"))
    assert len(rows) == 12


def test_no_rows_are_kept_when_asked(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(search_event_rows_max=0))
    _talk(mem)
    _assert_as_in_file(mem, _hits(mem, "the lake"))
    assert mem.store.event_layout("alice").event_rows is None


def test_an_event_embedded_later_is_found_with_its_row(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    _talk(mem)
    _hits(mem, "the lake")
    mem.settings = mem.settings.model_copy(update={"event_embed_later": True})
    later = mem.record_event("message", "the zeppelin landed near the harbour", role="Eli", session_id="s9",
                             metadata={"late": True})
    hits = _hits(mem, "zeppelin harbour")
    assert later.id in hits
    _assert_as_in_file(mem, hits)


def test_raw_cypher_writes_are_seen_by_the_next_search(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(admin=True)
    events = _talk(mem)
    target = events[7]
    assert target.id in _hits(mem, "violin number 7")
    # through Memory.cypher (the catalogs are reloaded)
    mem.cypher("MATCH (e:Event {id: $id}) SET e.content = 'violin number 7, rewritten'", {"id": target.id},
               scope="all", write=True)
    assert _hits(mem, "violin number 7")[target.id].content == "violin number 7, rewritten"
    # through the store itself (no reload: the kept rows are dropped)
    mem.store.cypher("MATCH (e:Event {id: $id}) SET e.role = 'Zed', e.metadata = '{\"x\": 1}'", {"id": target.id},
                     write=True)
    node = _hits(mem, "violin number 7")[target.id]
    assert node.role == "Zed" and node.metadata == {"x": 1}
    _assert_as_in_file(mem, _hits(mem, "violin number 7"))


def test_forget_import_and_reopen_are_seen(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    mem = make_memory()
    events = _talk(mem)
    assert _hits(mem, "the lake")
    exported = tmp_path / "alice.jsonl"
    mem.export_memory(exported)
    mem.forget()
    assert _hits(mem, "the lake") == {}
    mem.import_memory(exported)
    hits = _hits(mem, "the lake")
    assert hits and set(hits) <= {e.id for e in events}
    _assert_as_in_file(mem, hits)
    mem.close()
    again = make_memory()
    _assert_as_in_file(again, _hits(again, "the lake"))


def test_another_users_write_does_not_mix_in(make_memory: Callable[..., Memory]) -> None:
    alice = make_memory()
    _talk(alice)
    _hits(alice, "the lake")
    bob = alice.for_user("bob")
    other = bob.record_event("message", "the lake is frozen", role="Bob")
    assert other.id not in _hits(alice, "the lake is frozen", k=50)
    assert other.id not in (alice.store.event_layout("alice").event_rows or {})
    assert _hits(bob, "the lake is frozen")[other.id] == alice.store.get_event(other.id)


def test_threads_searching_one_user_share_the_kept_rows_safely(make_memory: Callable[..., Memory]) -> None:
    """Many threads search one user whose rows are fewer than its events (the rows are taken,
    read and trimmed on every search) while another thread writes: no error, no hang, and every
    hit equals the file."""
    import threading

    mem = make_memory(settings=Settings(search_event_rows_max=8))
    _talk(mem, 60)
    errors: list[BaseException] = []
    queries = ["the lake", "violin number 7", "turn 12", "what about the violin?", "lake and violin 41"]

    def search(offset: int) -> None:
        try:
            for j in range(40):
                _assert_as_in_file(mem, _hits(mem, queries[(offset + j) % len(queries)]))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def write() -> None:
        try:
            for j in range(20):
                mem.record_event("message", f"Dana mentioned the lake again, time {j}", role="Dana", session_id="s9")
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=search, args=(i,), daemon=True) for i in range(4)]
    threads.append(threading.Thread(target=write, daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)  # the watchdog: a hang fails the test instead of stalling the run
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors[:3]
    assert len(mem.store.event_layout("alice").event_rows or {}) <= 8 + 20
