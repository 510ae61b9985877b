"""The event search layout grows in place with each write and equals a rebuilt one."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import numpy as np

from graphmem import Memory
from graphmem.config import Settings
from graphmem.retrieve.entities import EntityIndex
from graphmem.retrieve.event_arrays import RankOf, entity_index, rank_array, row_positions, time_flags, top_k

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def _seed(mem: Memory) -> None:
    mem.record_events([
        {"kind": "message", "content": f"turn {i} about the {['lake', 'museum', 'garden'][i % 3]} on May {i + 1}",
         "role": "Dana" if i % 2 else "Eli", "session_id": f"s{i // 4}", "created_at": T0 + timedelta(minutes=i),
         "entities": ["Dana"] if i % 2 else []}
        for i in range(12)
    ])


def test_search_right_after_record_event_sees_it(make_memory: Callable[..., Memory]) -> None:
    # the soft term signal off: under the test embedder (feature hashing) "zorblax0" and
    # "harbour" collide (cosine 0.54), which lifts the first write above the later ones
    mem = make_memory(settings=Settings(search_weight_terms=0.0))
    _seed(mem)
    mem.search("lake", over="events", k=3)  # the layout exists now: later writes grow it
    layout = mem.store.event_layout("alice")
    for i in range(5):
        text = f"Zorblax{i} brought a violin to the harbour"
        event = mem.record_event("message", text, role="Dana", session_id="s1")
        hits = mem.search(text, over="events", k=3)
        assert hits and hits[0].id == event.id
    assert mem.store.event_layout("alice") is layout  # grown in place, not rebuilt
    assert len(layout) == 17


def test_incremental_layout_equals_a_rebuilt_one(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    bob = make_memory("bob")
    _seed(mem)
    store = mem.store
    layout = store.event_layout("alice")
    for w in (1, 2):
        layout.neighbour_index(w)  # maintained from now on
    index = entity_index(store, "alice", layout)
    time_flags(layout)
    row_positions(layout)
    store.event_entity_names("alice")
    # a mix of writes: appends at a session's end, a turn back-dated into the middle of a session,
    # a new session, events without a session, a batch, another user's events in between
    mem.record_event("message", "late turn in s0 at 9 pm", role="Eli", session_id="s0", created_at=T0 + timedelta(hours=2))
    mem.record_event("message", "back-dated turn in s1", role="Dana", session_id="s1",
                     created_at=T0 + timedelta(minutes=5, seconds=30), entities=["Fay"])
    bob.record_event("message", "bob's own turn", session_id="s1")
    mem.record_event("message", "same minute as turn 6", session_id="s1", created_at=T0 + timedelta(minutes=6))
    mem.record_event("tool_result", "the search tool returned 3 rows", tool="search")
    mem.record_events([
        {"kind": "message", "content": f"batch turn {i} with Gus", "session_id": "s9" if i % 2 else "s0",
         "created_at": T0 + timedelta(minutes=30 + i), "entities": ["Gus"]}
        for i in range(10)
    ])
    bob.record_events([{"kind": "message", "content": f"bob batch {i}", "session_id": "s0"} for i in range(9)])
    grown = store.event_layout("alice")
    assert grown is layout
    rebuilt = store._build_layout("alice")  # type: ignore[attr-defined]
    assert len(grown) == 12 + 4 + 10
    assert grown.same_as(rebuilt)
    for w in (1, 2):  # the windows maintained from the start, and one built now
        assert np.array_equal(grown.neighbour_index(w), rebuilt.neighbour_index(w))
    assert [grown.neighbours(i, 2) for i in grown.order] == [rebuilt.neighbours(i, 2) for i in rebuilt.order]
    # the ranking's caches grew with it
    fresh = EntityIndex.build(rebuilt.position, rebuilt.linked, store.event_mention_rows("alice"))
    assert entity_index(store, "alice", grown) is index
    assert index.linked == fresh.linked and index.mentioned == fresh.mentioned and index.names == fresh.names
    assert {k: sorted(v) for k, v in index.postings.items()} == {k: sorted(v) for k, v in fresh.postings.items()}
    for idx in (index, fresh):  # the linked flags, kept beside the postings, say what `linked` says
        for key, posting in idx.postings.items():
            assert idx.linked_flags[key] == [key in idx.linked[p] for p in posting], key
        assert any(any(flags) for flags in idx.linked_flags.values())
        assert not all(all(flags) for flags in idx.linked_flags.values())
    assert np.array_equal(time_flags(grown), time_flags(rebuilt))
    assert row_positions(grown) == {int(r): p for p, r in enumerate(rebuilt.rows)}
    db_names = {str(r["name"]) for r in store.read(
        "MATCH (e:Event)-[:MENTIONS]->(n:Entity) WHERE e.user_id = 'alice' RETURN DISTINCT n.name AS name")}
    assert set(store.event_entity_names("alice")) == db_names and {"Fay", "Gus"} <= db_names
    # the back-dated turn sits between turns 5 and 6 of session s1
    pos = {grown.content[p]: p for p in range(len(grown))}
    nb = grown.neighbour_index(1)[pos["back-dated turn in s1"]]
    assert set(nb.tolist()) == {pos["turn 5 about the garden on May 6"], pos["turn 6 about the lake on May 7"]}


def test_reload_rebuilds_the_layout(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    _seed(mem)
    store = mem.store
    before = store.event_layout("alice")
    store.load_event_catalog()  # what opening or a delete does
    after = store.event_layout("alice")
    assert after is not before and after.same_as(before)


def test_layout_written_by_another_process_is_read_by_id(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    _seed(mem)
    store = mem.store
    layout = store.event_layout("alice")
    mem.record_event("message", "noted turn", session_id="s0", entities=["Hal"])
    store._layout_pending.clear()  # type: ignore[attr-defined]  # as if written elsewhere
    grown = store.event_layout("alice")
    assert grown is layout and grown.same_as(store._build_layout("alice"))  # type: ignore[attr-defined]
    assert ("noted turn" in grown.content) and any(name == "Hal" for _, name in grown.mention_rows)


def write_while_searching(mem: Memory, *, notes: int, check_every: int, query: str, seconds: float = 60) -> None:
    """Three threads record ``notes`` events each (each ``check_every``-th must be found by a
    search right after it), while two threads search ``query``; under a watchdog of ``seconds``:
    no thread hangs, nothing raises, no written event is missed."""
    errors: list[BaseException] = []
    missed: list[str] = []
    stop = time.monotonic() + seconds  # watchdog: no thread runs past it

    def writer(w: int) -> None:
        try:
            for i in range(notes):
                if time.monotonic() > stop:
                    return
                text = f"writer {w} note {i} Quokka{w}x{i}"
                event = mem.record_event("message", text, session_id=f"w{w}")
                if i % check_every == 0 and event.id not in {h.id for h in mem.search(text, over="events", k=5)}:
                    missed.append(text)
        except BaseException as e:
            errors.append(e)

    def reader() -> None:
        try:
            while time.monotonic() < stop and any(t.is_alive() for t in writers):
                mem.search(query, over="events", k=5)
        except BaseException as e:
            errors.append(e)

    writers = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(3)]
    readers = [threading.Thread(target=reader, daemon=True) for _ in range(2)]
    for t in writers + readers:
        t.start()
    for t in writers + readers:
        t.join(timeout=max(0.0, stop - time.monotonic()) + 5)
    assert not any(t.is_alive() for t in writers + readers), "a thread hung"
    assert not errors, errors
    assert not missed


def test_concurrent_writes_and_searches(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    _seed(mem)
    mem.search("lake", over="events", k=3)
    write_while_searching(mem, notes=15, check_every=1, query="violin harbour lake")
    layout = mem.store.event_layout("alice")
    assert len(layout) == 12 + 45
    assert layout.same_as(mem.store._build_layout("alice"))  # type: ignore[attr-defined]


def test_top_k_and_ranks_equal_a_full_stable_sort() -> None:
    rng = np.random.default_rng(3)
    for n, k in ((1000, 10), (1000, 40), (50, 12), (300, 0), (5, 9)):
        values = rng.integers(0, 20, n).astype(np.float64)  # many ties
        assert np.array_equal(top_k(values, k), np.argsort(-values, kind="stable")[:k])
        present = values > 3
        full = rank_array(values, present)
        lazy = RankOf(values, present)
        assert all(lazy[i] == full[i] for i in range(n))


def test_layout_read_in_chunks_equals_the_one_query_layout(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    bob = make_memory("bob")
    _seed(mem)
    bob.record_events([{"kind": "message", "content": f"bob turn {i}", "session_id": "s0"} for i in range(7)])
    mem.record_event("message", "a turn without a session", entities=["Ivy", "Dana"])
    mem.record_event("tool_result", "the search tool returned 3 rows", tool="search")
    store = mem.store
    store.scan_chunk_rows = 5  # type: ignore[attr-defined]  # several chunks, some without alice's events
    assert store._chunked_layout()  # type: ignore[attr-defined]
    chunked = store._build_layout("alice")  # type: ignore[attr-defined]
    rows_map = store.event_catalog.vectors.rows
    one = store._layout_columns_rows("alice", rows_map)  # type: ignore[attr-defined]
    assert len(chunked) == 14 == len(one["id"])
    for column in ("content", "ts", "ents", "sid", "role", "tie"):
        by_id = dict(zip(one["id"], one[column]))
        got = {"content": chunked.content, "ts": chunked.created, "ents": chunked.linked, "sid": chunked.session,
               "role": chunked.role, "tie": chunked._tie[: len(chunked)].tolist()}[column]
        assert [by_id[i] for i in chunked.order] == got, column
    assert chunked.rows.tolist() == sorted(rows_map[i] for i in one["id"])


def test_neighbour_index_first_asked_after_appends_keeps_growing() -> None:
    # a layout grown by appends has spare capacity; a neighbour index first asked then must
    # hold it, or the next append writes past its end
    from graphmem.store.search import EventLayout

    layout = EventLayout()
    for i in range(20):
        layout.append(f"e{i}", i, f"s{i // 4}", f"turn {i}", T0 + timedelta(minutes=i), "", [])
    before = layout.neighbour_index(1).copy()
    layout.append("e20", 20, "s5", "turn 20", T0 + timedelta(minutes=20), "", [])
    after = layout.neighbour_index(1)
    assert after.shape == (21, 2) and np.array_equal(after[:20, 0], before[:, 0])
    assert after[20].tolist() == [-1, -1] and after[19, 1] == -1  # s5 holds e20 alone
