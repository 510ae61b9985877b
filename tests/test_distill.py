"""Distillation: clusters of similar episodic learnings become rules with DERIVED_FROM lineage;
members are archived, never deleted; runs are incremental; run_cycle runs it too."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from graphmem import Memory, Settings
from graphmem.distill import greedy_clusters, medoid

EMAILS = [
    "The user said the email to Dana was too long",
    "The user said the email to Omar was too long",
    "The user said the email to Priya was too long",
]
TIMEZONES = [
    "The meeting with Lena was booked in the wrong timezone",
    "The meeting with Marco was booked in the wrong timezone",
    "The meeting with Yuki was booked in the wrong timezone",
]


def test_greedy_clusters_and_medoid_are_deterministic() -> None:
    a, b = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    vectors = [a, b, a * 2, np.array([0.9, 0.1]), b * 3]
    assert greedy_clusters(vectors, 0.8) == [[0, 2, 3], [1, 4]]
    assert greedy_clusters(vectors, 0.8) == greedy_clusters(vectors, 0.8)
    assert medoid([a, np.array([0.9, 0.1]), np.array([0.7, 0.3])]) == 1


def test_a_cluster_becomes_a_rule_with_lineage_and_archived_members(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(distill_similarity=0.6))
    members = [mem.add_learning(t, kind="observation", tool="send_email") for t in EMAILS]
    lonely = mem.add_learning("The user likes green tea in the morning", kind="observation")
    report = mem.distill()
    assert (report.candidates, len(report.created), report.pending, report.archived) == (4, 1, 1, 3)
    rule = mem.get_learning(report.created[0].rule_id)
    assert (rule.kind, rule.source_type, rule.confidence, rule.status) == ("rule", "distillation", 0.85, "active")
    assert rule.content.startswith("Rule: ") and "email" in rule.content and rule.tool == "send_email"
    rows = mem.cypher("MATCH (r:Learning {id: $r})-[:DERIVED_FROM]->(m:Learning) RETURN m.id AS id", {"r": rule.id})
    assert sorted(r["id"] for r in rows) == sorted(m.id for m in members)
    for m in members:
        stored = mem.get_learning(m.id)  # kept, archived, with a logged transition
        assert stored.tier == "archive"
        assert any("distilled into rule" in t.reason for t in mem.store.transitions(m.id))
    assert mem.get_learning(lonely.id).tier == "active"
    shown = [i.learning.id for i in mem.context("the email was too long", tool="send_email").learnings]
    assert rule.id in shown and not set(shown) & {m.id for m in members}


def test_runs_are_incremental(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(distill_similarity=0.6))
    for t in EMAILS:
        mem.add_learning(t, kind="observation")
    first = mem.distill()
    assert len(first.created) == 1
    again = mem.distill()  # nothing new: nothing redone
    assert (again.candidates, again.rules) == (0, [])
    newcomer = mem.add_learning("The user said the email to Lena was too long", kind="observation")
    for t in TIMEZONES[:2]:
        mem.add_learning(t, kind="observation")
    third = mem.distill()
    assert third.candidates == 3 and third.pending == 2
    [extended] = third.rules
    assert (extended.created, extended.rule_id, extended.new_members) == (False, first.created[0].rule_id, [newcomer.id])
    assert len(extended.members) == 4
    assert mem.get_learning(extended.rule_id).validations == 4
    mem.add_learning(TIMEZONES[2], kind="observation")
    fourth = mem.distill()  # the two pending ones now make a cluster of three
    assert [len(r.members) for r in fourth.created] == [3]


def test_reflection_candidates_make_a_candidate_rule(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(distill_similarity=0.6))
    for t in EMAILS:
        mem.add_learning(t, source_type="reflection", status="candidate")
    [rule] = mem.distill().created
    assert mem.get_learning(rule.rule_id).status == "candidate"


def test_run_cycle_distills(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(distill_similarity=0.6))
    for t in EMAILS:
        mem.add_learning(t, kind="observation")
    report = mem.run_cycle()
    assert len(report.distilled) == 1 and report.distilled[0].new == "3"
    assert mem.run_cycle().distilled == []


def test_cli_distill_json(tmp_path: Path) -> None:
    from graphmem.cli import _register_groups, app

    _register_groups()
    db = tmp_path / "d.kuzu"
    with Memory(db, user="default", embedder=__import__("graphmem").HashEmbedder()) as mem:
        for t in EMAILS:
            mem.add_learning(t, kind="observation")
    result = CliRunner().invoke(app, ["--db", str(db), "--embedder", "hash", "distill", "--similarity", "0.6", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["candidates"] == 3 and len(out["rules"]) == 1 and out["rules"][0]["created"] is True


def test_the_generated_set_is_distilled_purely() -> None:
    from benchmarks.distill import run

    result = run("hash", settings=Settings(distill_similarity=0.4))
    last = result["waves"][-1]
    assert last["purity"] == 1.0 and last["singletons_distilled"] == 0 and last["coverage"] > 0.5


def test_distilling_refreshes_the_summaries_the_rule_and_members_feed(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(distill_similarity=0.6))
    for t in EMAILS:
        mem.add_learning(t, kind="observation", tool="send_email")
    [rule] = mem.distill().created
    text = mem.summary("learning:tool:send_email").text
    assert rule.content in text and text.count("too long") == 1  # the members' bullets are gone
