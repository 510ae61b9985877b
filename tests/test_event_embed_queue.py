"""record_event with event_embed_later: the row at once, the embedding with the next search."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from graphmem import Memory, Settings
from graphmem.store import health
from tests.test_event_layout import write_while_searching

LATER = Settings(event_embed_later=True)


def _has_embedding(mem: Memory, ident: str) -> bool:
    rows = mem.store.read("MATCH (e:Event {id: $id}) RETURN e.embedding IS NOT NULL AS ok", {"id": ident})
    return bool(rows[0]["ok"])


def test_row_at_once_embedding_with_the_next_search(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=LATER)
    mem.record_events([{"kind": "message", "content": f"old turn {i} about gardens", "session_id": "s0"} for i in range(5)])
    event = mem.record_event("message", "Zorblax brought a violin to the harbour", session_id="s0")
    assert mem.store.get_event(event.id).content == event.content  # the row is written
    assert mem.store.pending_embeddings() == 1 and not _has_embedding(mem, event.id)
    hits = mem.search("Zorblax violin harbour", over="events", k=3)
    assert hits and hits[0].id == event.id
    assert mem.store.pending_embeddings() == 0 and _has_embedding(mem, event.id)
    assert mem.store.event_layout("alice").same_as(mem.store._build_layout("alice"))  # type: ignore[attr-defined]


def test_same_ranking_as_embedding_at_once(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    now = make_memory("alice")
    later = make_memory("alice", path=tmp_path / "later.kuzu", settings=LATER)
    texts = [f"turn {i}: {w} at the {p}" for i, (w, p) in enumerate(
        [("violin", "harbour"), ("cello", "museum"), ("drums", "lake"), ("violin", "lake"), ("flute", "harbour")] * 3)]
    for i, text in enumerate(texts):
        for mem in (now, later):
            mem.record_event("message", text, session_id=f"s{i // 4}", role="Dana")
    for query in ("violin harbour", "drums at the lake", "flute"):
        a = [h.node.content for h in now.search(query, over="events", k=5)]  # type: ignore[union-attr]
        b = [h.node.content for h in later.search(query, over="events", k=5)]  # type: ignore[union-attr]
        assert a == b


def test_queue_drains_at_its_cap_and_before_a_batch(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(event_embed_later=True, event_embed_queue_max=3))
    mem.record_event("message", "one")
    mem.record_event("message", "two")
    assert mem.store.pending_embeddings() == 2
    mem.record_event("message", "three")
    assert mem.store.pending_embeddings() == 0 and len(mem.store.event_catalog) == 3
    mem.record_event("message", "four")
    mem.record_events([{"kind": "message", "content": "five"}])
    assert mem.store.pending_embeddings() == 0
    assert [mem.store.event_catalog.vectors.ids[r] for r in range(5)] == [
        e.id for e in sorted(mem.store.recent_events("alice", limit=5), key=lambda e: e.created_at)]


def test_a_crash_before_the_drain_loses_only_the_embedding(make_memory: Callable[..., Memory], db_path: Path) -> None:
    mem = make_memory(settings=LATER)
    mem.record_event("message", "steady turn about the lake")
    event = mem.record_event("message", "Quokka juggles oranges", session_id="s1")
    mem.store.close()  # no drain ran: the row is in the file without its embedding
    again = make_memory(settings=LATER)
    assert again.store.pending_embeddings() == 2  # queued when the file was opened
    assert not [p for p in health.check(again.store) if p["kind"] in ("mirror", "bad_value")]
    hits = again.search("Quokka juggles oranges", over="events", k=2)
    assert hits and hits[0].id == event.id and _has_embedding(again, event.id)


def test_concurrent_queued_writes_and_searches(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(event_embed_later=True, event_embed_queue_max=5))
    mem.record_events([{"kind": "message", "content": f"seed turn {i}", "session_id": "s0"} for i in range(6)])
    write_while_searching(mem, notes=12, check_every=3, query="Quokka note")
    mem.search("anything", over="events", k=1)
    assert mem.store.pending_embeddings() == 0 and len(mem.store.event_catalog) == 6 + 36
    assert mem.store.event_layout("alice").same_as(mem.store._build_layout("alice"))  # type: ignore[attr-defined]
