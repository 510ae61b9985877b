"""The foundation: learnings and edges, duplicates, updates, transactions, errors (issue 2)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from graphmem import (
    CypherError,
    DatabaseLockedError,
    EmbedderMismatchError,
    GraphmemError,
    HashEmbedder,
    InvalidInputError,
    Memory,
    NotFoundError,
    ReadOnlyError,
    SchemaVersionError,
    StoreError,
)
from graphmem.models import Learning, LearningLinks
from graphmem.store import migrations


def test_add_learning_links_tool_topic_entity_and_objective_type(mem: Memory) -> None:
    learning = mem.add_learning(
        "Dana at Acme wants bullet points", tool="send_email", entities=["Dana", "Acme"],
        topics=["email style"], objective_type="email",
    )
    rows = mem.cypher(
        "MATCH (l:Learning {id: $id})-[:ABOUT_TOOL]->(t:Tool), (l)-[:MENTIONS]->(e:Entity), "
        "(l)-[:ABOUT_TOPIC]->(p:Topic), (l)-[:FOR_OBJECTIVE_TYPE]->(o:ObjectiveType) "
        "RETURN t.name AS tool, e.name AS entity, p.name AS topic, o.name AS otype ORDER BY entity",
        {"id": learning.id},
    )
    assert [(r["tool"], r["entity"], r["topic"], r["otype"]) for r in rows] == [
        ("send_email", "Acme", "email style", "email"),
        ("send_email", "Dana", "email style", "email"),
    ]
    related = mem.cypher("MATCH (a:Entity)-[r:RELATED]-(b) RETURN a.name AS a, b.name AS b, r.weight AS w", scope="all")
    assert {"Dana", "Acme", "email style"} <= {r["a"] for r in related} | {r["b"] for r in related}


def test_nodes_are_created_once_and_reused(mem: Memory) -> None:
    mem.add_learning("Keep emails short", tool="send_email", entities=["Dana"])
    mem.add_learning("Cc the account manager", tool="send_email", entities=["Dana"])
    assert mem.cypher("MATCH (t:Tool) RETURN count(t) AS n")[0]["n"] == 1
    assert mem.cypher("MATCH (e:Entity) RETURN count(e) AS n")[0]["n"] == 1
    assert len(mem.learnings(tool="send_email")) == 2
    assert len(mem.learnings(entity="Dana")) == 2


def test_exact_duplicate_is_merged_with_a_validation(mem: Memory) -> None:
    first = mem.add_learning("Keep emails under 3 paragraphs", tool="send_email")
    again = mem.add_learning("  keep emails under 3 paragraphs. ", tool="send_email", entities=["Dana"])
    assert again.id == first.id
    assert again.validations == 1
    assert again.entities == ["Dana"]
    assert mem.cypher("MATCH (l:Learning) RETURN count(l) AS n")[0]["n"] == 1
    assert mem.learnings(entity="Dana")[0].id == first.id


def test_duplicates_are_per_user(make_memory) -> None:  # type: ignore[no-untyped-def]
    alice = make_memory("alice")
    bob = alice.for_user("bob")
    a = alice.add_learning("Use UTC timestamps")
    b = bob.add_learning("Use UTC timestamps")
    assert a.id != b.id
    assert [l.id for l in bob.learnings()] == [b.id]
    with pytest.raises(NotFoundError):
        bob.get_learning(a.id)


def test_shared_learnings_are_visible_to_everyone(mem: Memory) -> None:
    shared = mem.add_learning("Never force-push to main", shared=True)
    bob = mem.for_user("bob")
    assert [l.id for l in bob.learnings()] == [shared.id]
    assert bob.get_learning(shared.id).content == "Never force-push to main"


def test_add_learnings_batch_and_in_batch_duplicates(mem: Memory) -> None:
    out = mem.add_learnings(
        [
            {"content": "Prefer bullet points", "tool": "send_email"},
            {"content": "Run the linter before committing", "tool": "git_commit", "kind": "checklist"},
            {"content": "prefer bullet points", "entities": ["Dana"]},
        ]
    )
    assert len(out) == 3 and out[0].id == out[2].id and out[2].validations == 1
    assert mem.cypher("MATCH (l:Learning) RETURN count(l) AS n")[0]["n"] == 2


def test_add_learnings_rejects_the_whole_batch_on_one_bad_item(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="item 1"):
        mem.add_learnings([{"content": "fine"}, {"content": "   "}])
    assert mem.cypher("MATCH (l:Learning) RETURN count(l) AS n")[0]["n"] == 0


def test_update_logs_transitions_and_bumps_version(mem: Memory) -> None:
    learning = mem.add_learning("Keep emails short")
    updated = mem.update_learning(learning.id, helpful=3, harmful=0, status="canary", tier="pinned")
    assert (updated.helpful, updated.status, updated.tier, updated.version) == (3, "canary", "pinned", 2)
    assert updated.canary_allocation == pytest.approx(mem.settings.canary_min_allocation)
    assert mem.get_learning(learning.id) == updated
    rows = mem.cypher(
        "MATCH (l:Learning)-[:HAS_TRANSITION]->(t:Transition) RETURN t.field AS f, t.old AS o, t.new AS n ORDER BY f"
    )
    assert rows == [{"f": "status", "o": "active", "n": "canary"}, {"f": "tier", "o": "active", "n": "pinned"}]


def test_update_content_reembeds_and_refreshes_duplicate_key(mem: Memory) -> None:
    learning = mem.add_learning("Keep emails short")
    mem.update_learning(learning.id, content="Keep emails under 3 paragraphs")
    again = mem.add_learning("Keep emails under 3 paragraphs")
    assert again.id == learning.id and again.validations == 1
    fresh = mem.add_learning("Keep emails short")
    assert fresh.id != learning.id


def test_retire_keeps_the_node(mem: Memory) -> None:
    learning = mem.add_learning("Use the v1 API")
    retired = mem.retire_learning(learning.id)
    assert (retired.status, retired.tier) == ("disabled", "archive")
    assert mem.get_learning(learning.id).status == "disabled"
    assert [l.id for l in mem.learnings(status="disabled")] == [learning.id]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": ""}, "content is empty"),
        ({"content": "   \n\t"}, "content is empty"),
        ({"content": "x", "status": "live"}, "unknown status 'live'"),
        ({"content": "x", "tier": "gold"}, "unknown tier 'gold'"),
        ({"content": "x", "kind": "opinion"}, "unknown kind 'opinion'"),
        ({"content": "x", "sentiment": "angry"}, "unknown sentiment"),
        ({"content": "x", "confidence": 1.5}, "between 0 and 1"),
        ({"content": "x" * 30_000}, "over the limit"),
        ({"content": "x", "ttl_days": 0}, "ttl_days"),
    ],
)
def test_bad_learning_input_is_a_clear_error_and_writes_nothing(mem: Memory, kwargs: dict, message: str) -> None:
    content = kwargs.pop("content")
    with pytest.raises(InvalidInputError, match=message):
        mem.add_learning(content, **kwargs)
    assert mem.cypher("MATCH (n) RETURN count(n) AS n")[0]["n"] == mem.cypher("MATCH (m:Meta) RETURN count(m) AS n")[0]["n"]


def test_bad_update_input(mem: Memory) -> None:
    learning = mem.add_learning("Keep emails short")
    with pytest.raises(InvalidInputError, match="unknown status"):
        mem.update_learning(learning.id, status="archived")
    with pytest.raises(InvalidInputError, match="cannot update id"):
        mem.update_learning(learning.id, id="x")
    with pytest.raises(InvalidInputError, match="nothing to update"):
        mem.update_learning(learning.id)
    with pytest.raises(NotFoundError, match="no learning"):
        mem.update_learning("missing", status="active")
    assert mem.get_learning(learning.id).version == 1


def test_a_failed_write_leaves_nothing_half_written(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise StoreError("disk on fire")

    monkeypatch.setattr(mem.store, "_relate", boom)  # fails after the node and its first edges
    with pytest.raises(StoreError):
        mem.add_learning("Keep emails short", tool="send_email", topics=["style"], entities=["Dana"])
    monkeypatch.undo()
    assert mem.cypher("MATCH (l:Learning) RETURN count(l) AS n")[0]["n"] == 0
    assert mem.cypher("MATCH (t:Tool) RETURN count(t) AS n")[0]["n"] == 0
    assert len(mem.store.learning_catalog) == 0
    again = mem.add_learning("Keep emails short", tool="send_email")  # not taken for a duplicate
    assert again.validations == 0


def test_rolled_back_adds_leave_the_co_occurrence_count_exact_and_later_adds_work(
    make_memory: Callable[..., Memory],
) -> None:
    """Each failed add merged the topic-entity RELATED count, then rolled back; the same count
    is updated again and again afterwards (Kùzu once refused such a row after rolled-back updates
    in a raw benchmark: "Write-write conflict of updating the same row")."""

    class FailingEmbedder:  # not a HashEmbedder: its vector is computed beside the writes, as MiniLM's
        failing = False

        def __init__(self) -> None:
            self.inner = HashEmbedder()
            self.name, self.dim = self.inner.name, self.inner.dim

        def embed(self, texts: list[str]) -> Any:
            if self.failing:  # raised where the add waits for its vector: after its statements ran
                raise RuntimeError("embedder down")
            return self.inner.embed(texts)

    embedder = FailingEmbedder()
    mem = make_memory(embedder=embedder)
    about = {"tool": "billing", "topics": ["invoices"], "entities": ["Initech"]}
    for i in range(3):
        mem.add_learning(f"Invoice rule {i} for Initech", **about)
    embedder.failing = True
    for i in range(8):
        with pytest.raises(RuntimeError, match="embedder down"):
            mem.add_learning(f"Failed rule {i} for Initech", **about)
    embedder.failing = False
    for i in range(4):
        mem.add_learning(f"Later rule {i} for Initech", **about)
    weights = mem.cypher("MATCH (a)-[r:RELATED]->(b) RETURN a.name AS a, b.name AS b, r.weight AS w")
    assert [({r["a"], r["b"]}, r["w"]) for r in weights] == [({"invoices", "Initech"}, 7)]  # 3 + 4 adds
    assert mem.stats()["Learning"] == 7


def test_cypher_read_only_unless_write(mem: Memory) -> None:
    with pytest.raises(CypherError, match="write=True"):
        mem.cypher("CREATE (:Tool {name: 'x', success_count: 0, error_count: 0})")
    assert mem.cypher("MATCH (t:Tool) RETURN count(t) AS n")[0]["n"] == 0
    mem.cypher("CREATE (:Tool {name: 'x', success_count: 0, error_count: 0})", write=True, scope="all")
    assert mem.cypher("MATCH (t:Tool) RETURN t.name AS name", scope="all") == [{"name": "x"}]


def test_invalid_cypher(mem: Memory) -> None:
    with pytest.raises(CypherError, match="Cypher failed"):
        mem.cypher("MATCH (l:Learning RETURN l")
    with pytest.raises(CypherError, match="empty"):
        mem.cypher("  ")


def test_event_metadata_round_trips(mem: Memory) -> None:
    meta = {"dia_id": "D1:3", "nested": {"a": [1, 2.5, None, True]}, "s": "ü"}
    event = mem.record_event("message", "hi", role="user", metadata=meta, entities=["Dana"], session_id="s1")
    back = mem.store.get_event(event.id)
    assert back.metadata == meta and back.entities == ["Dana"] and back.direction == "inbound"
    assert back.created_at == event.created_at
    call = mem.record_event("tool_call", "send_email(to=Dana)", tool="send_email")
    assert call.direction == "outbound"
    with pytest.raises(InvalidInputError, match="JSON"):
        mem.record_event("message", "hi", metadata={"t": (1, 2)})
    with pytest.raises(InvalidInputError, match="unknown event kind"):
        mem.record_event("chat", "hi")
    with pytest.raises(NotFoundError, match="objective"):
        mem.record_event("message", "hi", objective_id="nope")


def test_datetimes_are_utc(mem: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    from datetime import datetime, timezone

    when = datetime(2026, 3, 1, 9, 30, tzinfo=timezone(timedelta(hours=2)))
    learning = mem.add_learning("x", created_at=when)
    back = mem.get_learning(learning.id)
    assert back.created_at == when and back.created_at.tzinfo is not None
    assert back.created_at.utcoffset() == timedelta(0)


def test_database_path_that_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        Memory(tmp_path, embedder=HashEmbedder(), llm=object())


def test_embedder_mismatch_is_refused(make_memory, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    make_memory().close()
    with pytest.raises(EmbedderMismatchError, match="hash-384"):
        Memory(db_path, embedder=HashEmbedder(dim=64), llm=object())


def test_an_older_schema_is_migrated_forward(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    everything = migrations.available()
    monkeypatch.setattr(migrations, "available", lambda: [m for m in everything if m.version == 1])
    old = Memory(db_path, user="alice", embedder=HashEmbedder(), llm=object())
    assert old.store.schema_version == 1
    kept = Learning(user_id="alice", content="Written by schema 1")
    old.store.insert_learning(kept, old.embedder.embed([kept.content])[0], LearningLinks())
    old.close()
    monkeypatch.undo()
    mem = Memory(db_path, user="alice", embedder=HashEmbedder(), llm=object())
    assert mem.store.schema_version == migrations.latest_version() > 1
    assert mem.cypher("MATCH (m:Meta {key: 'schema_version'}) RETURN m.value AS v") == [{"v": str(mem.store.schema_version)}]
    assert mem.get_learning(kept.id).content == "Written by schema 1"
    columns = {r["name"] for r in mem.cypher("CALL table_info('Learning') RETURN name")}
    assert {"window_mark", "decayed_at"} <= columns  # added by a later schema file
    mem.close()


def test_newer_schema_is_refused(make_memory, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    mem = make_memory()
    assert mem.store.schema_version == migrations.latest_version()
    mem.cypher("MATCH (m:Meta {key: 'schema_version'}) SET m.value = '999'", write=True, force=True, scope="all")
    mem.close()
    with pytest.raises(SchemaVersionError, match="upgrade graphmem"):
        Memory(db_path, embedder=HashEmbedder(), llm=object())


def test_read_only_refuses_writes(make_memory, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    writer = make_memory()
    writer.add_learning("Keep emails short")
    writer.close()
    reader = Memory(db_path, user="alice", read_only=True, embedder=HashEmbedder(), llm=object())
    assert [l.content for l in reader.learnings()] == ["Keep emails short"]
    with pytest.raises(ReadOnlyError):
        reader.add_learning("another")
    reader.close()


def test_second_process_gets_a_lock_error_with_the_fix(make_memory, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    make_memory()  # holds the file
    code = (
        "import sys\n"
        "from graphmem import Memory, HashEmbedder, DatabaseLockedError\n"
        "try:\n"
        f"    Memory({str(db_path)!r}, embedder=HashEmbedder(), llm=object())\n"
        "except DatabaseLockedError as e:\n"
        "    print(e); sys.exit(3)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert "locked by another process" in proc.stdout and "read_only=True" in proc.stdout
    assert issubclass(DatabaseLockedError, GraphmemError)


def test_threads_writing_at_once_all_succeed(mem: Memory) -> None:
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(10):
                mem.add_learning(f"thread {i} learning {j}", tool=f"tool{i}")
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert mem.cypher("MATCH (l:Learning) RETURN count(l) AS n")[0]["n"] == 40
    assert len(mem.store.learning_catalog) == 40


def test_catalog_is_rebuilt_on_open(make_memory, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    mem = make_memory()
    a = mem.add_learning("Keep emails short", tool="send_email")
    mem.close()
    again = make_memory()
    assert again.store.learning_catalog.ids == [a.id]
    assert again.add_learning("keep emails short").id == a.id  # duplicate found via the rebuilt catalog


def test_memory_is_a_context_manager(db_path: Path) -> None:
    with Memory(db_path, embedder=HashEmbedder(), llm=object()) as mem:
        mem.add_learning("x")
    assert mem.store.closed
    with pytest.raises(StoreError, match="closed"):
        mem.learnings()


def test_in_memory_database() -> None:
    with Memory(None, embedder=HashEmbedder(), llm=object()) as mem:
        mem.add_learning("x")
        assert len(mem.learnings()) == 1


def test_learnings_filters_validate(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="unknown status"):
        mem.learnings(status="on")
    with pytest.raises(InvalidInputError, match="limit"):
        mem.learnings(limit=0)


def test_learning_links_to_its_source_event_and_objective(mem: Memory) -> None:
    objective = mem.start_objective("Send the Q3 report", objective_type="email")
    event = mem.record_event("message", "Use the new template", role="user", objective_id=objective.id)
    learning = mem.add_learning("Use the new report template", source_event_id=event.id, objective_id=objective.id)
    rows = mem.cypher(
        "MATCH (l:Learning {id: $id})-[:DERIVED_FROM]->(e:Event), (l)-[:FOR_OBJECTIVE]->(o:Objective) "
        "RETURN e.id AS event, o.id AS objective",
        {"id": learning.id},
    )
    assert rows == [{"event": event.id, "objective": objective.id}]


def test_batch_rows_with_null_strings_can_be_updated(mem: Memory) -> None:
    out = mem.add_learnings(
        [{"content": f"rule number {i} about email", "recommendation": [None, "do x"][i % 2]} for i in range(130)]
    )
    for learning in out[:20]:
        assert mem.update_learning(learning.id, helpful=3).helpful == 3
    assert mem.get_learning(out[1].id).recommendation == "do x"
