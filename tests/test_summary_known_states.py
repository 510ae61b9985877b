"""The inline refresh after a write reuses the summary states the write's bumps returned (no
Summary reads) while nothing else has committed, and reads them again as soon as anything has."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from graphmem import Memory, Settings
from graphmem.store.summaries import summary_id

MakeMemory = Callable[..., Memory]


@contextmanager
def summary_reads(mem: Memory) -> Iterator[list[str]]:
    """The Summary-state reads (Cypher) the store runs inside the block."""
    store: Any = mem.store
    seen: list[str] = []
    original = store.read

    def read(cypher: str, params: Any = None) -> Any:
        if cypher.startswith("MATCH (s:Summary)"):
            seen.append(cypher)
        return original(cypher, params)

    store.read = read
    try:
        yield seen
    finally:
        del store.read


def _file_state(mem: Memory, key: str) -> tuple[str, int, list[str]]:
    """(text, staleness, pending) of a summary as the file holds them."""
    rows = mem.store.read(
        "MATCH (s:Summary {id: $id}) RETURN s.text AS text, s.staleness AS staleness, s.pending AS pending",
        {"id": summary_id(mem.user, key)},
    )
    return rows[0]["text"], int(rows[0]["staleness"]), list(rows[0]["pending"] or [])


def test_inline_refresh_reads_no_summary_state_after_its_own_write(make_memory: MakeMemory) -> None:
    mem = make_memory()
    mem.add_learning("Keep emails short", kind="preference", tool="send_email")
    mem.add_learning("Sign emails with the first name", kind="preference", tool="send_email")
    mem.add_learning("Answer within a day", kind="preference", tool="send_email")
    with summary_reads(mem) as reads:
        mem.add_learning("Put the ask in the first line", kind="preference", tool="send_email")
    summary = mem.summary("user_preferences")
    assert summary.refreshed_at is not None and summary.staleness == 0  # the fourth preference made it due
    assert reads == []  # neither the due summaries nor the refresh's save read a state again
    text, staleness, pending = _file_state(mem, "user_preferences")
    assert (text, staleness, pending) == (summary.text, 0, [])
    assert "Put the ask in the first line" in text


def test_known_states_give_the_same_summaries_as_reading_them(make_memory: MakeMemory, tmp_path: Any) -> None:
    items = [{"content": f"Rule {i} about {t}", "kind": "preference", "tool": t, "topics": [f"topic{i % 3}"]}
             for i, t in enumerate(["send_email", "run_sql", "web_search"] * 8)]
    fast = make_memory()
    slow = make_memory(path=tmp_path / "other.kuzu")
    slow.store._known_summary_states = lambda ids: None  # type: ignore[attr-defined]  # always read
    for i, item in enumerate(items):
        if i % 5 == 4:
            fast.add_learnings([item, {**item, "content": item["content"] + " (again)"}])
            slow.add_learnings([item, {**item, "content": item["content"] + " (again)"}])
        else:
            fast.add_learning(**item)
            slow.add_learning(**item)
    got = {s.key: (s.text, s.staleness) for s in fast.summaries()}
    want = {s.key: (s.text, s.staleness) for s in slow.summaries()}
    assert got == want and any(text for text, _ in got.values())


def test_a_write_committed_in_between_makes_the_refresh_read_again(make_memory: MakeMemory) -> None:
    mem = make_memory(settings=Settings(summary_refresh="background"))
    mem.add_learning("Keep emails short", kind="preference", tool="send_email")
    sid = summary_id(mem.user, "user_preferences")
    assert mem.store.summary_states(due_only=True, ids=[sid])  # first preference: due, known from the bump
    with mem.store.transaction():  # another write commits: what was known may be stale now
        mem.store.write("MATCH (s:Summary {id: $id}) SET s.staleness = 0", {"id": sid})
    with summary_reads(mem) as reads:
        states = mem.store.summary_states(due_only=True, ids=[sid])
    assert reads and states == []  # read from the file: no longer due


def test_summary_writes_in_the_same_transaction_drop_the_known_states(make_memory: MakeMemory) -> None:
    mem = make_memory(settings=Settings(summary_refresh="background"))
    sid = summary_id(mem.user, "user_preferences")
    with mem.store.transaction():
        mem.add_learning("Keep emails short", kind="preference", tool="send_email")
        mem.store.write("MATCH (s:Summary {id: $id}) SET s.staleness = 7", {"id": sid})
        mem.store.summaries_touched()  # what any other writer of Summary nodes calls
    with summary_reads(mem) as reads:
        states = mem.store.summary_states(due_only=True, ids=[sid])
    assert reads and states[0].summary.staleness == 7


def test_forgetting_a_learning_drops_the_known_states(make_memory: MakeMemory) -> None:
    mem = make_memory(settings=Settings(summary_refresh="background"))
    bob = mem.for_user("bob")
    kept = bob.add_learning("Bob keeps emails short", kind="preference", tool="send_email")
    sid = summary_id("bob", "user_preferences")
    with mem.store.transaction():
        bob.add_learning("Bob signs with his first name", kind="preference", tool="send_email")
        mem.store.forget_learnings([kept.id])
    with summary_reads(mem) as reads:
        states = mem.store.summary_states(ids=[sid])
    assert reads and kept.id not in states[0].pending
