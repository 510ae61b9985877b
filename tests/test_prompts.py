"""Prompt versions with A/B tests: versions, the deterministic split, crediting, the cycle's
decision, the reflector's proposals, and seeded simulations of the decision rule."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from graphmem import InvalidInputError, Memory, NotFoundError, Settings
from graphmem.prompts import ArmCounts, ab_decision, bucket, p_better, simulate_ab

BASE = "You are the orchestrator. Route each request to the cheapest model that can answer it."
BETTER = BASE + "\nBefore calling a tool, check that the request needs it."


def test_p_better_matches_a_monte_carlo_estimate() -> None:
    rng = random.Random(7)
    for sa, fa, sb, fb in [(5, 5, 5, 5), (30, 20, 40, 10), (3, 9, 1, 0), (0, 0, 0, 0)]:
        exact = p_better(sa, fa, sb, fb)
        n = 20_000
        mc = sum(rng.betavariate(1 + sb, 1 + fb) > rng.betavariate(1 + sa, 1 + fa) for _ in range(n)) / n
        assert abs(exact - mc) < 0.02, (sa, fa, sb, fb, exact, mc)
    assert p_better(10, 10, 10, 10) == pytest.approx(0.5, abs=1e-9)


def test_the_split_is_deterministic_per_session_and_follows_the_allocation() -> None:
    assert bucket("orchestrator", "session-1") == bucket("orchestrator", "session-1")
    shares = [bucket("orchestrator", f"s{i}") < 0.3 for i in range(5000)]
    assert abs(sum(shares) / len(shares) - 0.3) < 0.03


def test_decision_waits_for_the_minimum_of_trials() -> None:
    s = Settings(prompt_ab_min_trials=50)
    decision, p, _ = ab_decision(ArmCounts(successes=2, failures=18), ArmCounts(successes=19, failures=1), s)
    assert decision == "continue" and p > 0.999


SEEDED_RUNS = 400


def test_a_truly_better_version_wins_in_at_least_95_percent_of_seeded_runs() -> None:
    s = Settings()
    wins = sum(simulate_ab(0.5, 0.7, s, seed=seed)[0] == "promote" for seed in range(SEEDED_RUNS))
    assert wins / SEEDED_RUNS >= 0.95, wins


def test_a_truly_equal_version_is_promoted_at_most_5_percent_of_seeded_runs() -> None:
    s = Settings()
    promoted = sum(simulate_ab(0.6, 0.6, s, seed=seed)[0] == "promote" for seed in range(SEEDED_RUNS))
    assert promoted / SEEDED_RUNS <= 0.05, promoted


def test_versions_active_candidate_and_validation(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    v1 = mem.add_prompt("orchestrator", BASE)
    assert (v1.state, v1.version, v1.label) == ("active", 1, "orchestrator_v1")
    v2 = mem.add_prompt("orchestrator", BETTER, description="tool check")
    assert (v2.state, v2.version) == ("candidate", 2)
    assert mem.active_prompt("orchestrator").id == v1.id
    with pytest.raises(InvalidInputError, match="already has a candidate"):
        mem.add_prompt("orchestrator", BASE + " Be brief.")
    with pytest.raises(InvalidInputError, match="already orchestrator_v1"):
        mem.add_prompt("orchestrator", BASE, activate=True)
    with pytest.raises(NotFoundError, match="add_prompt"):
        mem.active_prompt("writer")
    assert [p.label for p in mem.prompts()] == ["orchestrator_v1", "orchestrator_v2"]
    # prompts are never handed out as advice by context()
    assert not any(i.learning.kind == "prompt" for i in mem.context("route each request to a model").learnings)
    # activate: replaces the active version now, with lineage
    v3 = mem.add_prompt("orchestrator", BASE + " Prefer local models.", activate=True)
    old = {p.id: p for p in mem.prompts("orchestrator")}[v1.id]
    assert (old.state, old.superseded_by) == ("deprecated", v3.id)
    assert mem.active_prompt("orchestrator").id == v3.id
    rows = mem.cypher("MATCH (a:Learning)-[:SUPERSEDES]->(b:Learning) RETURN a.id AS a, b.id AS b")
    assert {"a": v3.id, "b": v1.id} in rows


def test_serving_is_sticky_per_session_and_outcomes_credit_the_served_version(
    make_memory: Callable[..., Memory],
) -> None:
    mem = make_memory(settings=Settings(prompt_ab_allocation=0.5))
    v1 = mem.add_prompt("orchestrator", BASE)
    v2 = mem.add_prompt("orchestrator", BETTER)
    first = mem.prompt_for("orchestrator", session_id="s-42")
    again = mem.prompt_for("orchestrator", session_id="s-42")
    assert first.version_id == again.version_id and first.context_id != again.context_id
    arms = {mem.prompt_for("orchestrator", session_id=f"s{i}").arm for i in range(40)}
    assert arms == {"active", "candidate"}
    served = mem.prompt_for("orchestrator", session_id="s-credit")
    mem.record_outcome(served.context_id, success=True)
    credited = {p.id: p for p in mem.prompts("orchestrator")}[served.version_id]
    other = {p.id: p for p in mem.prompts("orchestrator")}[v1.id if served.version_id == v2.id else v2.id]
    assert (credited.helpful, credited.harmful, other.helpful) == (1, 0, 0)
    assert credited.confidence > 0.7
    # a context from context() can carry the serve too
    ctx = mem.context("route this request")
    in_ctx = mem.prompt_for("orchestrator", session_id="s-ctx", context_id=ctx.id)
    assert in_ctx.context_id == ctx.id
    mem.record_outcome(ctx.id, success=False)
    after = {p.id: p for p in mem.prompts("orchestrator")}[in_ctx.version_id]
    assert after.harmful == 1
    rows = mem.cypher("MATCH (l:Learning)-[s:SERVED_IN]->(a:Application {id: $a}) RETURN s.verdict AS v",
                      {"a": ctx.id})
    assert rows == [{"v": "rejected"}]


def _run_stream(mem: Memory, rates: dict[str, float], sessions: int, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(sessions):
        serve = mem.prompt_for("orchestrator", session_id=f"{seed}-{i}")
        mem.record_outcome(serve.context_id, success=rng.random() < rates[serve.arm])


def test_the_cycle_promotes_a_better_candidate_and_deprecates_the_loser(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(prompt_ab_min_trials=15, prompt_ab_max_trials=60))
    v1 = mem.add_prompt("orchestrator", BASE)
    v2 = mem.add_prompt("orchestrator", BETTER)
    _run_stream(mem, {"active": 0.3, "candidate": 0.9}, 60, seed=1)
    status = mem.prompt_test("orchestrator")
    assert status.decision == "promote" and status.p_candidate_better is not None
    assert status.candidate_counts.trials >= 15 and status.active_counts.trials >= 15
    report = mem.run_cycle()
    assert [c.learning_id for c in report.prompts] == [v1.id]
    assert mem.active_prompt("orchestrator").id == v2.id
    old = {p.id: p for p in mem.prompts("orchestrator")}[v1.id]
    assert (old.state, old.superseded_by) == ("deprecated", v2.id)
    assert mem.get_learning(v1.id).tier == "archive"
    assert mem.prompt_test("orchestrator").decision == "none"
    assert any(t.field == "prompt_state" for t in mem.store.transitions(v1.id))


def test_the_cycle_rejects_a_worse_candidate(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(prompt_ab_min_trials=15, prompt_ab_max_trials=60))
    v1 = mem.add_prompt("orchestrator", BASE)
    v2 = mem.add_prompt("orchestrator", BETTER)
    _run_stream(mem, {"active": 0.9, "candidate": 0.2}, 60, seed=2)
    report = mem.run_cycle()
    assert [c.learning_id for c in report.prompts] == [v2.id]
    loser = {p.id: p for p in mem.prompts("orchestrator")}[v2.id]
    assert (loser.state, loser.superseded_by) == ("deprecated", v1.id)
    assert mem.active_prompt("orchestrator").id == v1.id


def test_the_reflector_proposes_a_candidate_from_negative_feedback(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    mem.add_prompt("orchestrator", BASE)
    proposed = mem.propose_prompt("orchestrator", ["Don't use the expensive model for simple arithmetic, use the local one."])
    assert proposed.state == "candidate" and proposed.source_type == "reflection"
    assert proposed.text.startswith(BASE) and len(proposed.text) > len(BASE)
    with pytest.raises(InvalidInputError):
        mem.propose_prompt("orchestrator", [])


def test_serving_a_context_of_another_user_is_refused(make_memory: Callable[..., Memory]) -> None:
    alice = make_memory()
    bob = alice.for_user("bob")
    alice.add_prompt("orchestrator", BASE)
    ctx = bob.context("something")
    with pytest.raises(NotFoundError):
        alice.prompt_for("orchestrator", context_id=ctx.id)
