"""Several Memory objects on one Bolt database (as several processes would be): each sees the
others' writes through the change log, re-reading only the rows that changed; outcome counters
recorded at the same time from two writers lose no increment. Skipped when neo4j /
arcadedb_embedded are missing or GRAPHMEM_SKIP_BOLT=1."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from graphmem import HashEmbedder, Memory
from graphmem.store.bolt import connection as bolt_connection
from graphmem.store.bolt.testing import ArcadeServer
from tests.conftest import offline_llm

pytestmark = pytest.mark.bolt

OpenMem = Callable[..., Memory]


@pytest.fixture
def open_mem(bolt_url: str, arcade: ArcadeServer) -> Iterator[OpenMem]:
    opened: list[Memory] = []

    def _open(user: str = "alice") -> Memory:
        mem = Memory(bolt_url, user=user, bolt_auth=arcade.auth, embedder=HashEmbedder(), llm=offline_llm())
        opened.append(mem)
        return mem

    yield _open
    for mem in opened:
        mem.close()


def _ranked(mem: Memory, query: str, **kw: Any) -> list[str]:
    return [s.learning.id for s in mem.context(query, **kw).learnings]


def test_a_second_memory_sees_adds_updates_retirements_and_deletions_row_by_row(open_mem: OpenMem) -> None:
    a, b = open_mem(), open_mem()
    full = b.store.refreshes["full"]
    rows = b.store.refreshes["rows"]

    first = a.add_learning("Keep emails to Dana under three paragraphs", tool="send_email", entities=["Dana"])
    second = a.add_learning("Call Bob before noon", tool="call", entities=["Bob"])
    assert first.id in _ranked(b, "how long should the email to Dana be", tool="send_email")
    assert b.store.refreshes["rows"] - rows == 2  # the two new learnings, nothing else re-read

    a.update_learning(first.id, content="Keep emails to Dana under two paragraphs")
    assert b.get_learning(first.id).content == "Keep emails to Dana under two paragraphs"
    assert b.store.refreshes["rows"] - rows == 3

    a.retire_learning(second.id)
    assert b.get_learning(second.id).status == "disabled"
    assert second.id not in _ranked(b, "call Bob", tool="call")

    event = a.record_event("tool_call", "send_email(to='Dana')", tool="send_email")
    b.context("anything")
    assert event.id in b.store.event_catalog.vectors.rows

    a.forget_learning(second.id)
    b.context("call Bob", tool="call")
    assert second.id not in b.store.learning_catalog
    assert first.id in b.store.learning_catalog
    assert b.store.refreshes["full"] == full, "a change the log describes must not reload everything"
    assert b.store.refreshes["changes"] >= 4
    # and the other way round
    third = b.add_learning("Invoices over 10k need approval", tool="create_invoice")
    assert a.get_learning(third.id).content == "Invoices over 10k need approval"
    assert third.id in _ranked(a, "invoice approval", tool="create_invoice")


def test_a_reader_behind_the_pruned_log_reloads_in_full(open_mem: OpenMem, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bolt_connection, "_PRUNE_EVERY", 1)
    a, b = open_mem(), open_mem()
    a.store._main.change_keep = 1  # the writer keeps one record per shard
    full = b.store.refreshes["full"]
    ids = [a.add_learning(f"Rule number {i} about invoices", tool="create_invoice").id for i in range(4)]
    b.context("invoices", tool="create_invoice")
    assert all(i in b.store.learning_catalog for i in ids)
    assert b.store.refreshes["full"] == full + 1  # the records it needed were gone: a full reload


def test_an_update_read_before_another_commit_keeps_that_commit(open_mem: OpenMem) -> None:
    # read-committed: a reads the learning, b commits an increment, a writes; a's write is a
    # difference against what it read, so b's increment survives
    a, b = open_mem(), open_mem()
    lid = a.add_learning("Keep emails under three paragraphs", tool="send_email").id
    with a.store.transaction():
        mine = a.store.get_learning(lid)
        ctx = b.context("how long should emails be", tool="send_email")
        assert lid in [s.learning.id for s in ctx.learnings]
        b.record_outcome(ctx.id, success=True)  # commits helpful 1, validations 1, times_applied 1
        a.store.save_learning(mine.model_copy(update={"helpful": mine.helpful + 1, "harmful": mine.harmful + 1}))
    got = open_mem().get_learning(lid)
    assert (got.helpful, got.harmful, got.times_applied) == (2, 1, 1)
    assert a.get_learning(lid).helpful == 2  # a's mirror holds what the server holds


def test_two_writers_recording_outcomes_on_one_learning_lose_no_increment(open_mem: OpenMem) -> None:
    a, b = open_mem(), open_mem()
    lid = a.add_learning("Keep emails under three paragraphs", tool="send_email").id
    rounds = 12
    recorded = [0, 0]
    errors: list[BaseException] = []

    def work(i: int, mem: Memory) -> None:
        try:
            for _ in range(rounds):
                ctx = mem.context("how long should emails be", tool="send_email")
                assert lid in [s.learning.id for s in ctx.learnings]
                mem.record_outcome(ctx.id, success=True)
                recorded[i] += 1
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i, m), daemon=True) for i, m in enumerate((a, b))]
    deadline = time.monotonic() + 240  # the watchdog: a hung writer fails the test, not the run
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "a writer hung"
    assert not errors, errors
    got = open_mem().get_learning(lid)
    assert sum(recorded) == 2 * rounds
    assert (got.helpful, got.validations, got.times_applied) == (2 * rounds, 2 * rounds, 2 * rounds)
    conflicts = sum(m.store.conflict_retry.retried + m.store.conflict_retry.reran for m in (a, b))
    assert conflicts > 0, "the writers never collided: nothing was tested"


def test_a_reload_after_writes_that_bypass_the_mirrors_reaches_the_other_memory(open_mem: OpenMem) -> None:
    a, b = open_mem(), open_mem()
    lid = a.add_learning("Keep emails under three paragraphs", tool="send_email").id
    assert b.get_learning(lid).content == "Keep emails under three paragraphs"
    full = b.store.refreshes["full"]
    # a raw write (as an import or a repair makes) changes no mirror through a hook; the writer
    # then reloads its own, which tells the other processes to do the same
    a.store.write("MATCH (l:Learning {id: $id}) SET l.content = 'Keep emails short'", {"id": lid})
    a.store.reload_catalogs()
    assert b.get_learning(lid).content == "Keep emails short"
    assert b.store.refreshes["full"] == full + 1


def test_event_search_rows_follow_another_memorys_writes(open_mem: OpenMem) -> None:
    a, b = open_mem(), open_mem()
    said = a.record_event("message", "Dana moved the violin lesson to Friday", role="Dana", session_id="s1")
    hits = {h.id: h.node for h in b.search("violin lesson", over="events")}
    assert hits[said.id] == a.store.get_event(said.id)
    assert b.store.event_layout("alice").event_rows is not None  # kept for the next searches
    later = a.record_event("message", "the violin lesson is cancelled", role="Eli", session_id="s1")
    hits = {h.id: h.node for h in b.search("violin lesson", over="events")}
    assert hits[later.id] == a.store.get_event(later.id)
    a.store.cypher("MATCH (e:Event {id: $id}) SET e.content = 'the violin lesson moved to Monday'",
                   {"id": said.id}, write=True)
    hits = {h.id: h.node for h in b.search("violin lesson", over="events")}
    assert hits[said.id].content == "the violin lesson moved to Monday"
    a.forget()
    assert b.search("violin lesson", over="events") == []
