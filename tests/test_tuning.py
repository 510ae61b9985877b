"""The auto-tuner: bounded steps, snapshots, automatic and manual rollback, persisted values."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphmem import InvalidInputError, Memory, NotFoundError, ReadOnlyError, Settings
from graphmem.tuning import TUNABLES, GuardScore, TuningHealth, apply_values, recommend, tunable_values
from tests.conftest import FakeClock

TUNED = Settings(auto_tune=True)
DEFAULTS = tunable_values(Settings())


def _serve(mem: Memory, n: int, *, success_every: int) -> None:
    """``n`` contexts with an outcome each: success once every ``success_every``."""
    mem.add_learning("Keep emails under 3 paragraphs", tool="send_email")
    for i in range(n):
        ctx = mem.context("write an email to the team", tool="send_email", session_id="s1")
        mem.record_outcome(ctx.id, success=i % success_every == 0)


class Guard:
    """An injected guard: P@5 and noise as functions of the settings; counts its calls."""

    def __init__(self, p5: Callable[[Settings], float], noise: Callable[[Settings], int] = lambda s: 0) -> None:
        self.p5, self.noise, self.calls = p5, noise, 0

    def __call__(self, settings: Settings) -> GuardScore:
        self.calls += 1
        return GuardScore(p5=self.p5(settings), noise=self.noise(settings), latency_ms=5.0, queries=10)


def _stricter_hurts(s: Settings) -> float:
    return 0.6 if s.min_success_rate <= Settings().min_success_rate else 0.3


@pytest.fixture
def tuned(make_memory: Callable[..., Memory], clock: FakeClock) -> Memory:
    mem = make_memory(settings=TUNED, clock=clock)
    _serve(mem, 24, success_every=4)  # follow rate 25 %: the tuner wants stricter filters
    return mem


def test_health_reads_the_follow_rate_from_outcomes(tuned: Memory) -> None:
    report = tuned.tune(dry_run=True, evaluator=Guard(lambda s: 0.5))
    h = report.health
    assert (h.contexts, h.accepted, h.rejected) == (24, 6, 18)
    assert h.follow_rate == pytest.approx(0.25)
    assert h.outcome_rate == pytest.approx(1.0)
    assert report.status == "dry_run" and report.snapshot_id is None
    names = [r.name for r in report.recommendations]
    assert names == ["min_success_rate", "quality_weight", "vector_only_min_similarity"]
    for r in report.recommendations:  # one step up, within bounds
        t = next(t for t in TUNABLES if t.name == r.name)
        assert r.new == pytest.approx(r.old + t.step) and t.low <= r.new <= t.high
    assert tuned.tuning_snapshots() == [] and tuned.settings.min_success_rate == Settings().min_success_rate


def test_a_step_that_drops_p5_is_rolled_back(tuned: Memory, make_memory: Callable[..., Memory]) -> None:
    guard = Guard(_stricter_hurts)
    report = tuned.tune(evaluator=guard)
    assert report.status == "rolled_back" and guard.calls == 2
    assert (report.p5_before, report.p5_after) == (0.6, 0.3)
    assert "P@5 dropped" in report.reason
    assert tunable_values(tuned.settings) == DEFAULTS == report.settings
    [snap] = tuned.tuning_snapshots()
    assert snap.status == "rolled_back" and snap.settings == DEFAULTS and snap.p5_after == 0.3
    tuned.close()
    assert tunable_values(make_memory(settings=TUNED).settings) == DEFAULTS


def test_a_step_that_brings_noise_is_rolled_back(tuned: Memory) -> None:
    guard = Guard(lambda s: 0.6, noise=lambda s: 0 if s.vector_only_min_similarity <= 0.2 else 1)
    report = tuned.tune(evaluator=guard)
    assert report.status == "rolled_back" and report.noise_after == 1
    assert "noise 1" in report.reason
    assert tunable_values(tuned.settings) == DEFAULTS


def test_a_small_drop_within_the_tolerance_is_kept(tuned: Memory) -> None:
    report = tuned.tune(evaluator=Guard(lambda s: 0.60 if s == TUNED else 0.55))  # -8 % relative < 10 %
    assert report.status == "kept"


def test_small_drops_cannot_add_up(tuned: Memory) -> None:
    guard = Guard(lambda s: 0.6 - (s.min_success_rate - 0.3) * 0.8)  # each step costs 0.04 P@5
    first = tuned.tune(evaluator=guard)
    assert first.status == "kept" and first.p5_after == pytest.approx(0.56)  # -6.7 %: within 10 %
    second = tuned.tune(evaluator=guard)  # 0.56 -> 0.52: -7.1 % from before, -13 % from the start
    assert second.status == "rolled_back" and "before the first tuning step" in second.reason
    assert tuned.settings.min_success_rate == pytest.approx(0.35)


def test_a_step_that_helps_is_kept_and_persists(tuned: Memory, make_memory: Callable[..., Memory]) -> None:
    report = tuned.tune(evaluator=Guard(lambda s: 0.5 + s.min_success_rate / 10))
    assert report.status == "kept" and report.kept
    assert tuned.settings.min_success_rate == pytest.approx(0.35)
    assert tuned.settings.quality_weight == pytest.approx(0.2)
    assert tuned.settings.vector_only_min_similarity == pytest.approx(0.25)
    [snap] = tuned.tuning_snapshots()
    assert snap.status == "kept" and snap.settings == DEFAULTS  # the values before the step
    assert [c["name"] for c in snap.changes] == [r.name for r in report.recommendations]
    tuned.close()
    reopened = make_memory(settings=TUNED)
    assert reopened.settings.min_success_rate == pytest.approx(0.35)
    reopened.close()
    # without auto_tune the constructor's settings win; the tuned values stay in the file
    plain = make_memory(settings=Settings(min_success_rate=0.3))
    assert plain.settings.min_success_rate == 0.3
    assert plain.store.tuned_settings("alice")["min_success_rate"] == pytest.approx(0.35)


def test_for_user_uses_that_users_own_tuned_values(tuned: Memory) -> None:
    tuned.tune(evaluator=Guard(lambda s: 0.5))
    bob = tuned.for_user("bob")
    assert tuned.settings.min_success_rate == pytest.approx(0.35)
    assert bob.settings.min_success_rate == Settings().min_success_rate
    bob.close()


def test_snapshots_are_capped_at_ten(tuned: Memory) -> None:
    for _ in range(12):
        assert tuned.tune(evaluator=Guard(_stricter_hurts)).status == "rolled_back"
    snaps = tuned.tuning_snapshots(limit=50)
    assert len(snaps) == Settings().tune_keep_snapshots == 10
    rows = tuned.cypher("MATCH (s:TuningSnapshot) RETURN count(s) AS n")
    assert rows == [{"n": 10}]


def test_steps_stop_at_the_bounds(tuned: Memory) -> None:
    statuses = [tuned.tune(evaluator=Guard(lambda s: 0.5)).status for _ in range(8)]
    assert statuses[:6] == ["kept"] * 6 and statuses[-1] == "unchanged"
    assert tuned.settings.min_success_rate == pytest.approx(0.6)  # the bound, reached one step at a time
    assert tuned.settings.quality_weight == pytest.approx(0.4)
    assert tuned.settings.vector_only_min_similarity == pytest.approx(0.4)
    assert len(tuned.tuning_snapshots()) == 6


def test_rollback_by_hand(tuned: Memory, make_memory: Callable[..., Memory], clock: FakeClock) -> None:
    first = tuned.tune(evaluator=Guard(lambda s: 0.5))
    clock.advance(minutes=1)
    second = tuned.tune(evaluator=Guard(lambda s: 0.5))
    assert tuned.settings.min_success_rate == pytest.approx(0.4)
    snap = tuned.rollback_tuning()  # the latest: undoes the second step
    assert snap.id == second.snapshot_id and snap.status == "restored" and snap.restored_at is not None
    assert tuned.settings.min_success_rate == pytest.approx(0.35)
    tuned.rollback_tuning(first.snapshot_id)
    assert tunable_values(tuned.settings) == DEFAULTS
    tuned.close()
    assert tunable_values(make_memory(settings=TUNED).settings) == DEFAULTS


def test_bad_input_gives_clear_errors(tuned: Memory, make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="no tuning snapshot yet"):
        tuned.rollback_tuning()
    tuned.tune(evaluator=Guard(lambda s: 0.5))
    with pytest.raises(NotFoundError, match="no tuning snapshot with id 'nope'"):
        tuned.rollback_tuning("nope")
    snap_id = tuned.tuning_snapshots()[0].id
    bob = tuned.for_user("bob")
    with pytest.raises(NotFoundError, match="for user 'bob'"):
        bob.rollback_tuning(snap_id)
    bob.close()
    with pytest.raises(InvalidInputError, match="dry_run"):
        tuned.tune(dry_run="yes", evaluator=Guard(lambda s: 0.5))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="tune_p5_drop"):
        Settings(tune_p5_drop=1.5)
    tuned.close()
    ro = make_memory(settings=TUNED, read_only=True)
    with pytest.raises(ReadOnlyError, match="read_only"):
        ro.tune(evaluator=Guard(lambda s: 0.5))
    with pytest.raises(ReadOnlyError):
        ro.rollback_tuning()
    assert ro.tune(dry_run=True, evaluator=Guard(lambda s: 0.5)).status == "dry_run"  # reads only


def test_persisted_values_are_clamped_to_the_bounds(make_memory: Callable[..., Memory], clock: FakeClock) -> None:
    mem = make_memory(settings=TUNED, clock=clock)
    with mem.store.transaction():
        mem.store.set_tuned_settings("alice", {"min_success_rate": 5.0, "unknown": 1, "budget_learnings": 20},
                                     None, clock())
    mem.close()
    again = make_memory(settings=TUNED)
    assert again.settings.min_success_rate == 0.6 and again.settings.budget_learnings == 100
    assert isinstance(again.settings.budget_learnings, int)


def test_recommend_respects_the_cap_and_each_signal() -> None:
    low = TuningHealth(since=FakeClock()(), accepted=5, rejected=20, follow_rate=0.2)
    assert len(recommend(low, Settings(tune_max_changes=1))) == 1
    assert recommend(low, Settings(tune_min_outcomes=100)) == []  # too few outcomes to judge
    high = TuningHealth(since=FakeClock()(), accepted=24, rejected=1, follow_rate=0.96)
    assert [r.name for r in recommend(high, Settings())] == ["vector_only_min_similarity", "budget_learnings",
                                                             "min_success_rate"]
    assert [r.new for r in recommend(high, Settings())][:2] == [0.15, 250]
    slow = TuningHealth(since=FakeClock()(), latency_ms=900.0, demotions=3, promotions=1)
    assert {r.name: r.new for r in recommend(slow, Settings())} == {"candidates_per_source": 40, "promote_quality": 0.7}
    at_bounds = apply_values(Settings(), {t.name: t.high for t in TUNABLES})
    assert [r.name for r in recommend(low, at_bounds)] == []


def test_old_contexts_fall_out_of_the_window(tuned: Memory, clock: FakeClock) -> None:
    clock.advance(days=Settings().tune_window_days + 1)
    report = tuned.tune(dry_run=True, evaluator=Guard(lambda s: 0.5))
    assert report.health.contexts == 0 and report.recommendations == []


def test_run_cycle_runs_a_step_with_the_labelled_set(tuned: Memory) -> None:
    report = tuned.run_cycle()
    snaps = tuned.tuning_snapshots()
    assert len(snaps) == 1 and snaps[0].p5_before is not None and snaps[0].p5_before > 0
    if snaps[0].status == "kept":
        assert {c.field for c in report.tuned} == {c["name"] for c in snaps[0].changes}
    else:
        assert any("rolled back" in w for w in report.warnings)


def test_run_cycle_does_not_tune_by_default(make_memory: Callable[..., Memory], clock: FakeClock) -> None:
    mem = make_memory(clock=clock)
    _serve(mem, 24, success_every=4)
    report = mem.run_cycle()
    assert report.tuned == [] and mem.tuning_snapshots() == []


def test_cli_tune_dry_run_history_and_rollback(db_path: Path) -> None:
    from graphmem import HashEmbedder
    from graphmem.cli import _register_groups, app

    _register_groups()
    mem = Memory(db_path, user="alice", embedder=HashEmbedder())  # the CLI's clock: now
    _serve(mem, 24, success_every=4)
    mem.close()
    runner = CliRunner()
    base = ["--db", str(db_path), "--embedder", "hash", "--user", "alice"]
    dry = runner.invoke(app, [*base, "tune", "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    out = json.loads(dry.stdout)
    assert out["status"] == "dry_run" and out["p5_before"] > 0 and out["health"]["contexts"] == 24
    bad = runner.invoke(app, [*base, "tune", "--rollback", "nope"])
    assert bad.exit_code == 1 and "no tuning snapshot" in bad.output
    stray = runner.invoke(app, [*base, "tune", "abc"])
    assert stray.exit_code == 1 and "--rollback" in stray.output
    history = runner.invoke(app, [*base, "tune", "--history", "--json"])
    assert history.exit_code == 0 and json.loads(history.stdout) == []


def test_window_uses_the_clock(tuned: Memory, clock: FakeClock) -> None:
    clock.advance(days=10)
    report = tuned.tune(dry_run=True, evaluator=Guard(lambda s: 0.5))
    assert report.health.since == clock() - timedelta(days=Settings().tune_window_days)
    assert report.health.contexts == 24
