"""The benchmark runners: learnings (real dataset, hash embedder), the regression guard, the loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks import guard
from benchmarks.dataset import load_dataset
from benchmarks.learnings import evaluate
from benchmarks.loop import LoopConfig, simulate
from graphmem.config import Settings
from graphmem.embed import HashEmbedder


@pytest.fixture(scope="module")
def learnings_result() -> dict[str, Any]:
    return evaluate(load_dataset(), "hash", ("hybrid", "vector only"), embedder=HashEmbedder())


def test_learnings_runner_returns_sane_metrics_and_no_noise(learnings_result: dict[str, Any]) -> None:
    hybrid = learnings_result["variants"]["hybrid"]
    overall = hybrid["overall"]
    assert overall["n"] == learnings_result["queries"] == 66
    for metric in ("p@5", "r@10", "ndcg@10", "mrr"):
        assert 0.0 < overall[metric] <= 1.0
    assert overall["p@5"] <= learnings_result["p5_ceiling"] + 1e-9
    assert overall["noise_total"] == 0, hybrid["noise_findings"]
    assert learnings_result["variants"]["vector only"]["overall"]["noise_total"] == 0
    assert hybrid["per_kind"]["no_answer"]["p@5"] is None  # nothing relevant: left out of the means
    assert hybrid["per_kind"]["tool_only"]["r@10"] > 0.5  # an empty query with a tool finds its learnings
    assert all(not k.startswith("?") for row in hybrid["queries"] for k in row["ranked"])  # every id maps to a key
    assert hybrid["cpu_ms_mean"] > 0 and hybrid["cpu_ms_p50"] > 0  # context() CPU per query, embeddings cached


def _entry(p5: float, noise: int = 0, embedder: str = "hash", status: str = "OK") -> dict[str, Any]:
    return {"p5": p5, "noise": noise, "embedder": embedder, "status": status, "per_kind": {"lexical": p5}}


def test_guard_passes_a_steady_history() -> None:
    history = [_entry(0.60), _entry(0.62), _entry(0.61)]
    assert guard.check(0.60, 0, history, "hash", Settings()) == []


def test_guard_floor_is_a_share_of_the_reachable_p5() -> None:
    assert guard.check(0.35, 0, [], "hash", Settings(), ceiling=0.5) == []  # 0.70 of reachable
    alerts = guard.check(0.20, 0, [], "hash", Settings(), ceiling=0.5)  # 0.40 of reachable
    assert len(alerts) == 1 and "of the reachable" in alerts[0]


def test_guard_fails_under_the_floor() -> None:
    alerts = guard.check(0.44, 0, [], "hash", Settings())
    assert len(alerts) == 1 and "floor" in alerts[0]


def test_guard_fails_on_a_drop_from_the_rolling_average() -> None:
    history = [_entry(0.30)] + [_entry(0.70)] * 5  # the window is the last 5: average 0.70
    alerts = guard.check(0.61, 0, history, "hash", Settings())
    assert len(alerts) == 1 and "rolling average" in alerts[0]
    assert guard.check(0.63, 0, history, "hash", Settings()) == []  # a 0.07 drop is allowed


def test_guard_compares_only_passing_runs_of_the_same_embedder() -> None:
    history = [_entry(0.90, embedder="minilm")] * 5 + [_entry(0.10, status="ALERT")] * 5 + [_entry(0.55)]
    assert guard.check(0.55, 0, history, "hash", Settings()) == []
    assert guard.rolling_average(history, "hash", 5) == pytest.approx(0.55)


def test_guard_fails_on_any_noise() -> None:
    alerts = guard.check(0.80, 1, [_entry(0.80)], "hash", Settings())
    assert len(alerts) == 1 and "noise" in alerts[0]


def test_guard_history_round_trip_and_trend(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    for p5 in (0.50, 0.52, 0.60):
        alerts = guard.check(p5, 0, guard.load_history(path), "hash")
        guard.append_history(path, guard.make_entry(p5, 0, embedder="hash", alerts=alerts, per_kind={"lexical": p5}))
    history = guard.load_history(path)
    assert [e["status"] for e in history] == ["OK", "OK", "OK"]
    report = guard.trend(history, "hash", 5)
    assert report["best"] == 0.60 and report["worst"] == 0.50
    assert report["rolling_average"] == pytest.approx(0.51)
    assert report["direction"] == "improving"
    assert report["per_kind"]["lexical"]["latest"] == 0.60


def test_loop_simulation_tiny_config_returns_per_window_rates() -> None:
    cfg = LoopConfig(episodes=16, window=8, cycle_every=8, slots=3, seed=1)
    result = simulate(cfg, embedder=HashEmbedder())
    names = [r["name"] for r in result["runs"]]
    assert names[0] == "vanilla" and len(names) == 5
    for run in result["runs"]:
        assert len(run["curve"]) == 2
        assert all(0.0 <= v <= 1.0 for v in run["curve"])
        assert run["injections_accepted"] == 0
    again = simulate(cfg, embedder=HashEmbedder())
    assert [r["curve"] for r in again["runs"]] == [r["curve"] for r in result["runs"]]  # deterministic


def test_loop_compares_exploration_and_pairs_the_seeds() -> None:
    from benchmarks.loop import aggregate

    per_seed = [simulate(LoopConfig(episodes=8, window=8, cycle_every=8, slots=3, seed=s, exploration=0.0,
                                    compare_exploration=0.3), embedder=HashEmbedder()) for s in (0, 1)]
    names = [r["name"] for r in per_seed[0]["runs"]]
    assert "online only (prior on, exploration 0.3)" in names and "online only (prior on, exploration 0)" in names
    result = aggregate(per_seed)
    by = {r["name"]: r["overall_by_seed"] for r in result["runs"]}
    diff = result["paired"]["online only: prior on − off"]
    expected = [100 * (a - b) for a, b in zip(by["online only (prior on, exploration 0)"], by["online only (prior off)"])]
    assert diff["by_seed"] == expected and diff["mean"] == sum(expected) / 2
    assert "offline + online: prior on, exploration 0.3 − prior on, exploration 0" in result["paired"]
    assert "offline + online − online only (prior on)" in result["paired"]


def test_loop_agent_that_names_no_learning_still_learns_by_rank_credit() -> None:
    cfg = LoopConfig(episodes=16, window=8, cycle_every=0, slots=2, seed=2, report_used=False,
                     overrides={"credit_min_share": 0.0})
    result = simulate(cfg, embedder=HashEmbedder())
    assert result["config"]["report_used"] is False and result["config"]["overrides"] == {"credit_min_share": 0.0}
    assert all(r["injections_accepted"] == 0 for r in result["runs"])
    assert any(r["advised"] > 0 for r in result["runs"])
