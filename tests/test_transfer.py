"""Moving a memory between files: export_memory → import_memory round trip, bad input, the CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphmem import HashEmbedder, InvalidInputError, Memory
from tests.conftest import FakeClock


def _history(mem: Memory, clock: FakeClock) -> None:
    """Learnings with counters, a supersede, a status change, events, an objective, outcomes."""
    a = mem.add_learning("Keep emails to Dana under 3 paragraphs", tool="send_email", entities=["Dana"], topics=["email"])
    b = mem.add_learning("Spare canary rule about invoices", status="canary", tool="billing", topics=["billing", "email"])
    mem.add_learning("Always cc Lee on invoices", tool="billing", entities=["Lee"], objective_type="invoice")
    obj = mem.start_objective("Send the Q3 invoice", objective_type="invoice")
    mem.record_event("message", "send the invoice to Lee", session_id="s1", objective_id=obj.id)
    mem.record_event("tool_call", "billing.send(Lee)", tool="billing", session_id="s1", objective_id=obj.id)
    for ok in (True, False, True):
        ctx = mem.context("Email Dana about the invoice", tool="send_email", entities=["Dana"])
        mem.record_outcome(ctx.id, success=ok, rating="good" if ok else "bad")
        clock.advance(hours=1)
    mem.update_learning(a.id, tier="pinned")
    mem.update_learning(b.id, status="active")
    mem.end_objective(obj.id, status="completed")


def _snapshot(mem: Memory) -> dict[str, Any]:
    """What must survive a round trip, read through the public API and the user's Cypher view."""
    learnings = sorted((l.model_dump() for l in mem.learnings(limit=1000)), key=lambda d: d["id"])
    edges = mem.cypher(
        "MATCH (a)-[r]->(b) RETURN label(r) AS rel, label(a) AS la, "
        "coalesce(a.id, a.name) AS ka, label(b) AS lb, coalesce(b.id, b.name) AS kb"
    )
    counts = mem.cypher("MATCH (n) RETURN label(n) AS label, count(*) AS n")
    events = mem.cypher("MATCH (e:Event) RETURN e.id AS id, e.kind AS kind, e.content AS content, e.created_at AS t")
    transitions = [t.model_dump() for l in learnings for t in mem.store.transitions(l["id"])]
    return {
        "learnings": learnings,
        "edges": sorted(tuple(e.values()) for e in edges),
        "counts": sorted((c["label"], c["n"]) for c in counts if c["label"] != "Meta"),
        "events": sorted((e["id"], e["kind"], e["content"], str(e["t"])) for e in events),
        "transitions": sorted(json.dumps(t, default=str, sort_keys=True) for t in transitions),
        "insights": mem.insights().overview.model_dump(),
    }


@pytest.fixture
def cmem(make_memory: Callable[..., Memory], clock: FakeClock) -> Memory:
    return make_memory(clock=clock)


@pytest.fixture(scope="module")
def dump_lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The lines of one export of :func:`_history` (the bad-input tests each change a copy)."""
    folder = tmp_path_factory.mktemp("dump")
    clock = FakeClock()
    with Memory(folder / "source.kuzu", user="alice", embedder=HashEmbedder(), clock=clock) as source:
        _history(source, clock)
        source.export_memory(folder / "alice.jsonl")
    return (folder / "alice.jsonl").read_text(encoding="utf-8").splitlines()


def test_round_trip_keeps_learnings_edges_counters_and_events(cmem: Memory, clock: FakeClock, tmp_path: Path) -> None:
    _history(cmem, clock)
    before = _snapshot(cmem)
    assert any(l["helpful"] for l in before["learnings"]) and any(l["harmful"] for l in before["learnings"])
    assert before["events"] and before["transitions"]
    dump = tmp_path / "alice.jsonl"
    seen: list[tuple[int, int]] = []
    report = cmem.export_memory(dump)
    assert report.counts["Learning"] == len(before["learnings"]) >= 3 and report.edges > 0
    with Memory(tmp_path / "copy.kuzu", user="alice", embedder=HashEmbedder()) as other:
        got = other.import_memory(dump, progress=lambda d, t: seen.append((d, t)))
        assert got.counts == report.counts and got.edges == report.edges
        after = _snapshot(other)
        assert seen and seen[-1][0] == seen[-1][1]
        # the catalogs follow: search and context find the imported learnings at once
        ctx = other.context("Email Dana about the invoice", tool="send_email", entities=["Dana"])
        assert any("Dana" in s.learning.content for s in ctx.learnings)
    for key in before:
        assert after[key] == before[key], key


def test_import_as_another_user_and_refuses_a_second_import(cmem: Memory, clock: FakeClock, tmp_path: Path) -> None:
    _history(cmem, clock)
    dump = tmp_path / "alice.jsonl"
    cmem.export_memory(dump)
    with Memory(tmp_path / "copy.kuzu", user="bob", embedder=HashEmbedder()) as bob:
        report = bob.import_memory(dump)
        assert report.from_user == "alice" and report.user == "bob"
        assert {l.user_id for l in bob.learnings()} == {"bob"}
        assert len(bob.learnings()) == len(cmem.learnings()) == report.counts["Learning"]
        n = bob.stats()["Learning"]
        with pytest.raises(InvalidInputError, match="already holds"):
            bob.import_memory(dump)
        assert bob.stats()["Learning"] == n


def _bad(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda lines: [*lines[:3], "{not json", *lines[3:]], "not JSON"),
        (lambda lines: [json.dumps({**json.loads(lines[0]), "version": 99}), *lines[1:]], "format version 99"),
        (lambda lines: [json.dumps({**json.loads(lines[0]), "dims": 7}), *lines[1:]], "7 dims"),
        (lambda lines: ['{"messages": []}', *lines[1:]], "training pairs"),
        (lambda lines: [*lines, json.dumps({"type": "node", "label": "Nope", "properties": {}})], "unknown node label"),
        (lambda lines: [*lines, json.dumps({"type": "edge", "rel": "ABOUT_TOOL", "from": ["Learning", "x"],
                                            "to": ["Tool", "y"], "properties": {}})], "does not hold"),
    ],
)
def test_bad_input_is_refused_with_nothing_written(
    dump_lines: list[str], tmp_path: Path, mutate: Callable[[list[str]], list[str]], message: str
) -> None:
    bad = _bad(tmp_path, mutate(list(dump_lines)))
    with Memory(tmp_path / "copy.kuzu", user="alice", embedder=HashEmbedder()) as other:
        with pytest.raises(InvalidInputError, match=message):
            other.import_memory(bad)
        assert other.stats(all_users=True).get("Learning", 0) == 0 and other.stats(all_users=True).get("Event", 0) == 0


def test_a_vector_of_the_wrong_size_leaves_nothing(dump_lines: list[str], tmp_path: Path) -> None:
    lines = list(dump_lines)
    last_learning = max(i for i, l in enumerate(lines) if '"label": "Learning"' in l)
    rec = json.loads(lines[last_learning])
    rec["properties"]["embedding"] = rec["properties"]["embedding"][:5]
    lines[last_learning] = json.dumps(rec)
    with Memory(tmp_path / "copy.kuzu", user="alice", embedder=HashEmbedder()) as other:
        with pytest.raises(InvalidInputError, match=f"line {last_learning + 1}.*5 dims"):
            other.import_memory(_bad(tmp_path, lines))
        assert other.stats(all_users=True).get("Learning", 0) == 0


def test_cli_export_memory_then_import(cmem: Memory, clock: FakeClock, db_path: Path, tmp_path: Path) -> None:
    from graphmem.cli import _register_groups, app

    _register_groups()
    _history(cmem, clock)
    cmem.close()
    dump, target = tmp_path / "dump.jsonl", tmp_path / "target.kuzu"
    runner = CliRunner()
    out = runner.invoke(app, ["export", "--memory", str(dump), "--db", str(db_path), "--user", "alice", "--embedder", "hash"])
    assert out.exit_code == 0, out.output
    assert "learning(s)" in out.output
    out = runner.invoke(app, ["import", str(dump), "--db", str(target), "--user", "alice", "--embedder", "hash", "--no-progress"])
    assert out.exit_code == 0, out.output
    assert "imported " in out.output and "as user alice" in out.output
    out = runner.invoke(app, ["import", str(dump), "--db", str(target), "--user", "alice", "--embedder", "hash"])
    assert out.exit_code == 1 and "already holds" in out.output


def test_cli_names_the_embedder_option_on_a_mismatch(tmp_path: Path) -> None:
    from graphmem.cli import _register_groups, app

    _register_groups()
    db = tmp_path / "h.kuzu"
    Memory(db, user="alice", embedder=HashEmbedder()).close()
    out = CliRunner().invoke(app, ["--db", str(db), "--user", "alice", "--embedder", "minilm", "list"])
    assert out.exit_code == 1 and "--embedder hash" in out.output
