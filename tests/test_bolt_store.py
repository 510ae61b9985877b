"""The store on a Bolt server (ArcadeDB from the arcadedb-embedded wheel) against the Kùzu store.

The same scenario runs on both; context() must return the same learnings for the same queries.
Skipped when neo4j / arcadedb_embedded are missing or GRAPHMEM_SKIP_BOLT=1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem import HashEmbedder, Memory
from graphmem.errors import EmbedderMismatchError, NotFoundError
from graphmem.store.bolt.testing import ArcadeServer
from tests.conftest import FakeClock, offline_llm

pytestmark = pytest.mark.bolt

OpenMem = Callable[..., Memory]


@pytest.fixture
def open_bolt(bolt_url: str, arcade: ArcadeServer) -> Iterator[OpenMem]:
    opened: list[Memory] = []

    def _open(user: str = "alice", **kwargs: Any) -> Memory:
        kwargs.setdefault("embedder", HashEmbedder())
        kwargs.setdefault("llm", offline_llm())
        mem = Memory(bolt_url, user=user, bolt_auth=arcade.auth, **kwargs)
        opened.append(mem)
        return mem

    yield _open
    for mem in opened:
        mem.close()


@pytest.fixture
def open_kuzu(tmp_path: Path) -> Iterator[OpenMem]:
    opened: list[Memory] = []

    def _open(user: str = "alice", **kwargs: Any) -> Memory:
        kwargs.setdefault("embedder", HashEmbedder())
        kwargs.setdefault("llm", offline_llm())
        mem = Memory(tmp_path / "memory.kuzu", user=user, **kwargs)
        opened.append(mem)
        return mem

    yield _open
    for mem in opened:
        mem.close()


@pytest.fixture(params=["kuzu", "bolt"])
def open_any(request: pytest.FixtureRequest) -> OpenMem:
    return request.getfixturevalue(f"open_{request.param}")  # type: ignore[no-any-return]


LEARNINGS: list[dict[str, Any]] = [
    {"content": "Dana at Acme wants bullet points in every email", "tool": "send_email", "entities": ["Dana", "Acme"], "topics": ["email style"]},
    {"content": "Keep emails to Acme under three paragraphs", "tool": "send_email", "entities": ["Acme"], "topics": ["email style"]},
    {"content": "Check the CRM record before calling a customer", "tool": "call", "entities": ["CRM"], "topics": ["calls"]},
    {"content": "Invoices over 10k need the finance lead's approval", "tool": "create_invoice", "entities": ["finance"], "topics": ["billing"], "kind": "checklist"},
    {"content": "Bob prefers morning meetings before ten", "tool": "schedule", "entities": ["Bob"], "topics": ["meetings"], "kind": "preference"},
    {"content": "Summarise long threads before replying to Dana", "tool": "send_email", "entities": ["Dana"], "topics": ["email style", "threads"]},
    {"content": "Never send pricing by email without the discount table", "tool": "send_email", "entities": ["pricing"], "topics": ["billing"]},
    {"content": "Meetings with Acme need an agenda the day before", "tool": "schedule", "entities": ["Acme"], "topics": ["meetings"]},
]

QUERIES: list[dict[str, Any]] = [
    {"query": "how should I write to Dana", "tool": "send_email"},
    {"query": "email style for Acme", "entities": ["Acme"]},
    {"query": "invoice approval", "tool": "create_invoice"},
    {"query": "book a meeting with Bob", "topics": ["meetings"]},
    {"query": "pricing email"},
]


def _fill(mem: Memory, clock: FakeClock) -> list[str]:
    ids = []
    for item in LEARNINGS:
        clock.advance(minutes=1)
        ids.append(mem.add_learning(**item).id)
    return ids


def _contexts(mem: Memory) -> list[list[str]]:
    return [[s.learning.content for s in mem.context(**q).learnings] for q in QUERIES]


def test_core_scenario(open_any: OpenMem) -> None:
    clock = FakeClock()
    mem = open_any(clock=clock)
    ids = _fill(mem, clock)
    got = mem.get_learning(ids[0])
    assert got.content == LEARNINGS[0]["content"] and got.tool == "send_email"
    assert got.created_at.tzinfo is not None
    assert sorted(got.entities) == ["Acme", "Dana"]
    assert {item.id for item in mem.learnings(tool="send_email")} == {ids[0], ids[1], ids[5], ids[6]}
    assert {item.id for item in mem.learnings(entity="Acme")} == {ids[0], ids[1], ids[7]}
    with pytest.raises(NotFoundError):
        mem.get_learning("no-such-id")
    # a duplicate merges into a validation
    again = mem.add_learning(LEARNINGS[0]["content"], tool="send_email")
    assert again.id == ids[0] and mem.get_learning(ids[0]).validations >= 1
    # events
    ev = mem.record_event("tool_call", "sent the weekly email to Dana", tool="send_email", entities=["Dana"], success=True)
    assert ev.id
    assert mem.store.get_event(ev.id).content == "sent the weekly email to Dana"
    # context and outcome counters
    ctx = mem.context("how should I write to Dana", tool="send_email")
    shown = [s.learning.id for s in ctx.learnings]
    assert shown and ids[0] in shown
    mem.record_outcome(ctx.id, success=True, helpful=[shown[0]])
    assert mem.get_learning(shown[0]).helpful == 1
    mem.record_outcome(mem.context("invoice approval", tool="create_invoice").id, success=False, harmful=[ids[3]])
    assert mem.get_learning(ids[3]).harmful == 1
    # updates and retirement
    mem.update_learning(ids[2], content="Check the CRM record and recent tickets before calling")
    assert "tickets" in mem.get_learning(ids[2]).content
    mem.retire_learning(ids[4])
    assert mem.get_learning(ids[4]).status != "active"
    assert ids[4] not in [s.learning.id for s in mem.context("book a meeting with Bob", topics=["meetings"]).learnings]


def test_context_is_the_same_on_kuzu_and_bolt(open_kuzu: OpenMem, open_bolt: OpenMem) -> None:
    results = []
    for opener in (open_kuzu, open_bolt):
        clock = FakeClock()
        mem = opener(clock=clock)
        _fill(mem, clock)
        results.append(_contexts(mem))
    assert any(results[0]), "the scenario must return learnings at all"
    assert results[0] == results[1]


def test_summaries_on_both(open_any: OpenMem) -> None:
    clock = FakeClock()
    mem = open_any(clock=clock)
    _fill(mem, clock)
    refreshed = mem.refresh_summaries(force=True)
    assert refreshed, "forced refresh writes the user's summaries"
    assert all(s.text for s in refreshed)
    assert mem.summary(refreshed[0].key).text == refreshed[0].text


def test_reopen_keeps_everything_and_refuses_another_embedder(open_bolt: OpenMem) -> None:
    clock = FakeClock()
    mem = open_bolt(clock=clock)
    ids = _fill(mem, clock)
    before = _contexts(mem)
    mem.close()
    again = open_bolt(clock=clock)
    assert len(again.store.learning_catalog) == len(ids)
    assert _contexts(again) == before

    with pytest.raises(EmbedderMismatchError):
        open_bolt(embedder=HashEmbedder(dim=64))


def test_export_from_kuzu_import_into_bolt(open_kuzu: OpenMem, open_bolt: OpenMem, tmp_path: Path) -> None:
    clock = FakeClock()
    src = open_kuzu(clock=clock)
    ids = _fill(src, clock)
    ctx = src.context("how should I write to Dana", tool="send_email")
    src.record_outcome(ctx.id, success=True, helpful=[ctx.learnings[0].learning.id])
    dump = tmp_path / "alice.jsonl"
    src.export_memory(dump)
    dst = open_bolt(clock=clock)
    report = dst.import_memory(dump)
    assert report.counts.get("Learning") == len(ids)
    for ident in ids:
        a, b = src.get_learning(ident), dst.get_learning(ident)
        assert (a.content, a.helpful, a.harmful, a.validations, sorted(a.entities), sorted(a.topics), a.tool) == \
               (b.content, b.helpful, b.harmful, b.validations, sorted(b.entities), sorted(b.topics), b.tool)
    assert src.store.stats() == {k: v for k, v in dst.store.stats().items() if k in src.store.stats()}
    assert _contexts(src) == _contexts(dst)


_CHILD = r"""
import json, sys
from graphmem import HashEmbedder, Memory
from graphmem.llm import OfflineLLM
url, user, password, seen_id = sys.argv[1:5]
with Memory(url, user="alice", bolt_auth=(user, password), embedder=HashEmbedder(), llm=OfflineLLM()) as mem:
    ctx = mem.context("how should I write to Dana", tool="send_email")
    shown = [s.learning.id for s in ctx.learnings]
    mem.record_outcome(ctx.id, success=True, helpful=[seen_id])
    new = mem.add_learning("Quarterly reports go to Carol on Fridays", tool="send_report", entities=["Carol"])
    print(json.dumps({"shown": shown, "new": new.id}))
"""


def test_two_processes_see_each_others_writes(open_bolt: OpenMem, bolt_url: str, arcade: ArcadeServer) -> None:
    import json
    import os
    import subprocess
    import sys

    mem = open_bolt()
    first = mem.add_learning(**LEARNINGS[0]).id
    assert mem.get_learning(first).helpful == 0  # cached in this process now
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", _CHILD, bolt_url, *arcade.auth, first],
                         capture_output=True, text=True, timeout=120, env=env, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    child = json.loads(out.stdout.strip().splitlines()[-1])
    assert first in child["shown"]  # the child saw this process's write
    assert mem.get_learning(first).helpful == 1  # and this process sees the child's outcome
    assert mem.get_learning(child["new"]).content.startswith("Quarterly reports")
    ctx = mem.context("quarterly report for Carol", tool="send_report")
    assert child["new"] in [s.learning.id for s in ctx.learnings]


def _many_methods(mem: Memory, tmp: Path) -> dict[str, Any]:
    """A run through most of Memory's surface; returns what can be compared across stores."""
    clock = mem.clock
    ids = []
    for item in LEARNINGS:
        clock.advance(minutes=1)  # type: ignore[attr-defined]
        ids.append(mem.add_learning(**item).id)
    out: dict[str, Any] = {}
    mem.add_learnings([{"content": "Batch rule about invoices and approvals", "tool": "create_invoice"},
                       {"content": "Batch rule about calls and notes", "tool": "call"}])
    out["search"] = [mem.get_learning(h.id).content for h in mem.search("email Dana", k=3)]
    mem.record_events([{"kind": "message", "content": "hello Dana, about the Acme email"}])
    out["search_events"] = len(mem.search("Acme email", over="events"))
    objective = mem.start_objective("send the report", "report")
    mem.end_objective(objective.id, status="completed", result="sent")
    mem.observe_message("I prefer short emails, always cc Dana")
    newer = mem.add_learning("Keep emails to Acme under two paragraphs", tool="send_email")
    mem.supersede(newer.id, ids[1])
    out["superseded_by"] = mem.get_learning(ids[1]).superseded_by == newer.id
    out["cypher_user"] = mem.cypher("MATCH (l:Learning) RETURN count(l) AS n")[0]["n"]
    out["cypher_all"] = mem.cypher("MATCH (l:Learning) RETURN count(l) AS n", scope="all")[0]["n"]
    mem.reflect("write to Dana", "Sent a bulleted email", success=True, tools_used=["send_email"])
    mem.add_judge("polite", "The answer is polite", node="draft")
    mem.trace("write to Dana", "Dear Dana, ...", node="draft", ground_truth="Dear Dana")
    mem.run_cycle()
    mem.export_graphml(tmp / "g.graphml")
    mem.export_memory(tmp / "m.jsonl")
    out["doctor_ok"] = mem.doctor().ok
    mem.add_prompt("system", "You are helpful")
    served = mem.prompt_for("system")
    out["prompt"] = (served.text, served.version, served.arm, served.label)
    mem.forget_learning(ids[2])
    out["forgotten"] = ids[2] not in {l.id for l in mem.learnings()}
    out["stats"] = {k: v for k, v in mem.stats().items() if isinstance(v, int)}
    return out


def test_most_of_memory_runs_alike_on_kuzu_and_bolt(open_kuzu: OpenMem, open_bolt: OpenMem, tmp_path: Path) -> None:
    results = []
    for name, opener in (("kuzu", open_kuzu), ("bolt", open_bolt)):
        (tmp_path / name).mkdir()
        results.append(_many_methods(opener(clock=FakeClock(), admin=True), tmp_path / name))
    kuzu, bolt = results
    assert kuzu["search"] and kuzu["superseded_by"] and kuzu["forgotten"] and kuzu["doctor_ok"]
    assert (tmp_path / "bolt" / "g.graphml").stat().st_size > 0 and (tmp_path / "bolt" / "m.jsonl").stat().st_size > 0
    assert kuzu == bolt


def test_cli_on_a_bolt_url(bolt_url: str, arcade: ArcadeServer) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent), "HF_HUB_OFFLINE": "1",
           "GRAPHMEM_BOLT_USER": arcade.auth[0], "GRAPHMEM_BOLT_PASSWORD": arcade.auth[1], "GRAPHMEM_EMBEDDER": "hash"}
    base = [sys.executable, "-m", "graphmem", "--db", bolt_url]
    added = subprocess.run([*base, "add", "Dana at Acme wants bullet points", "--tool", "send_email"],
                           capture_output=True, text=True, timeout=120, env=env, check=False)
    assert added.returncode == 0, added.stderr[-2000:]
    listed = subprocess.run([*base, "list", "--json"], capture_output=True, text=True, timeout=120, env=env, check=False)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "Dana at Acme wants bullet points" in listed.stdout
