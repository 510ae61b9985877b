"""Does each stage of the loop change what it should? A scripted agent, one check per stage.

    python -m benchmarks.stages [--episodes 120] [--cycle 10] [--set NAME=VALUE ...] [--json] [--save]

``benchmarks.loop`` measures whether the loop raises an agent's success rate; this one checks,
stage by stage, that each part of the loop *moved* the graph the way it is meant to, and exits
non-zero when one did not (a stage that runs without error but changes nothing is a failure).

The scripted agent works with three tools through the public API (HashEmbedder, OfflineLLM, a
simulated clock). ``send_email`` has good advice from the owner, which is shown and succeeds.
``run_sql`` has a *planted weak domain*: a learning trusted at confidence 0.9 that is wrong, so
every context that shows it fails. ``web_search`` is used (events) but nothing is ever learned
about it. Episodes alternate send_email and run_sql; ``run_cycle()`` runs every ``--cycle``
episodes. In the first half the owner says nothing; in the second half the owner corrects each
run_sql failure (``observe_message``) and states three preferences.

Stages and what each must change:

1. **observe**: the owner's correction becomes a user_feedback learning about run_sql;
2. **retrieve**: the next run_sql context shows that learning first;
3. **outcome**: outcomes credit it (helpful rises) and run_sql succeeds in the last quarter;
4. **lifecycle**: the planted learning is no longer served as active (demoted, retired or superseded);
5. **weakness trainer**: after the first half, tool:run_sql is weak (send_email is not) and has a
   candidate lesson; running it again adds nothing;
6. **domain gaps**: web_search is diagnosed ``no_insights``, run_sql ``low_effectiveness``;
7. **domain evolution**: run_sql's follow rate moves by more than 5 points between the halves and
   an ``effectiveness_shift`` event is stored;
8. **summaries**: the user_preferences summary is rewritten to include the new preferences;
9. **sessions**: every context is counted in its session (episodes run in sessions of 20), and
   the last session's success rate is above the first one's;
10. **auto-tuner**: after the first half, where the agent follows about half of its contexts (this
    run counts that as low: ``tune_low_follow_rate=0.6`` unless ``--set`` says otherwise), a
    tuning step recommends moves; a
    step the guard says hurts is rolled back (the persisted values and the snapshot say so), and
    one the guard accepts is kept and persisted. The guard is a fixed function of the settings
    (a stricter ``min_success_rate`` costs precision), so the check does not depend on the
    labelled set; ``graphmem tune`` uses the real one.

Writes ``benchmarks/results/local/stages.json`` (``--save``: ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.common import settings_overrides as _overrides
from graphmem import HashEmbedder, Memory, Settings
from graphmem.llm import OfflineLLM
from graphmem.tuning import GuardScore

REPO = Path(__file__).resolve().parents[1]
START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
WRONG = "Query the orders table directly without EXPLAIN"
RIGHT_MARK = "explain first"
CORRECTION = "Actually, always run EXPLAIN first before querying the orders table."
GOOD = "Keep emails to Dana under 3 paragraphs"
PREFERENCES = (
    "I prefer window seats when you book flights for me.",
    "I prefer meetings after 10am.",
    "I prefer invoices as PDF attachments.",
)


@dataclass
class Stage:
    """One stage's check: did it change what it should?"""

    name: str
    passed: bool
    detail: str


@dataclass
class Run:
    """What the scripted run observed, for the checks."""

    stages: list[Stage] = field(default_factory=list)
    sql_success: list[bool] = field(default_factory=list)
    contexts: int = 0
    episodes: int = 0
    seconds: float = 0.0


class Clock:
    """The simulated clock."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def _check(run: Run, name: str, fn: Callable[[], tuple[bool, str]]) -> None:
    try:
        ok, detail = fn()
    except Exception as e:  # a stage whose check raises failed: say why and go on
        ok, detail = False, f"raised {type(e).__name__}: {e}"
    run.stages.append(Stage(name, ok, detail))


SESSION = 20  # episodes per session


def _episode(mem: Memory, clock: Clock, i: int, *, correct: bool, run: Run) -> Any:
    """One task; returns the run_sql context (None for other tools)."""
    clock.now += timedelta(minutes=10)
    session = f"session-{i // SESSION:03d}"
    run.contexts += 1
    if i % 5 == 4:  # the agent also searches the web; nothing is ever learned about it
        mem.record_event("tool_call", f"web_search('orders report {i}')", tool="web_search")
        mem.record_event("tool_result", "10 results", tool="web_search", success=True)
    if i % 2 == 0:
        ctx = mem.context(f"Email Dana about the weekly status {i}", tool="send_email", session_id=session)
        if ctx.learnings:
            mem.record_outcome(ctx.id, success=GOOD.lower() in ctx.learnings[0].learning.content.lower(),
                               used=[ctx.learnings[0].learning.id])
        return None
    ctx = mem.context(f"Query the orders table for the report {i}", tool="run_sql", session_id=session)
    top = ctx.learnings[0].learning if ctx.learnings else None
    ok = top is not None and RIGHT_MARK in top.content.lower()
    if top is not None:
        mem.record_outcome(ctx.id, success=ok, used=[top.id])
    run.sql_success.append(ok)
    if not ok and correct:
        clock.now += timedelta(minutes=1)
        mem.observe_message(CORRECTION, tool="run_sql")
    return ctx


def simulate(episodes: int = 120, cycle: int = 10, overrides: dict[str, Any] | None = None) -> Run:
    """Run the scripted agent and check every stage (see the module docstring)."""
    t0 = time.perf_counter()
    clock = Clock()
    run = Run(episodes=episodes)
    # harmful_max_success=0: the planted learning stays shown, so its lifecycle window fills (20 outcomes)
    settings = Settings(**{"tune_low_follow_rate": 0.6, "harmful_max_success": 0.0, **(overrides or {})})
    mem = Memory(None, user="owner", embedder=HashEmbedder(), llm=OfflineLLM(), settings=settings, clock=clock)
    try:
        mem.add_learning(GOOD, tool="send_email", entities=["Dana"], source_type="user_feedback", confidence=0.7)
        wrong = mem.add_learning(WRONG, tool="run_sql", entities=["orders"], confidence=0.9)
        mem.refresh_summaries(force=True)
        prefs_before = mem.summary("user_preferences")
        half = episodes // 2
        for i in range(half):
            _episode(mem, clock, i, correct=False, run=run)
            if cycle and (i + 1) % cycle == 0:
                mem.run_cycle()
        first_half = list(run.sql_success)
        weak_report = mem.weaknesses(train=False)
        lessons_a = mem.domains(record=False).lessons
        again = mem.weaknesses()  # every cycle already trained: nothing new
        domains_a = mem.domains()
        follow_a = {d.domain: d.follow_rate for d in domains_a.domains}
        _check(run, "weakness trainer", lambda: (
            [d.domain for d in weak_report.weak][:1] == ["tool:run_sql"]
            and "tool:send_email" not in [d.domain for d in weak_report.weak]
            and any(l.domain == "tool:run_sql" and l.status == "candidate" for l in lessons_a)
            and not again.created,
            f"weak: {[d.domain for d in weak_report.weak]}; lessons: {[(l.domain, l.status) for l in lessons_a]}; "
            f"second run created {len(again.created)}"))
        _check_tuner(run, mem)
        gaps = {(g.domain, g.kind) for g in domains_a.gaps}
        _check(run, "domain gaps", lambda: (
            {("tool:web_search", "no_insights"), ("tool:run_sql", "low_effectiveness")} <= gaps, f"gaps: {sorted(gaps)}"))

        last_ctx = None
        for n, i in enumerate(range(half, episodes)):
            if n < len(PREFERENCES):
                clock.now += timedelta(minutes=1)
                mem.observe_message(PREFERENCES[n])
            ctx = _episode(mem, clock, i, correct=True, run=run)
            last_ctx = ctx or last_ctx
            if cycle and (i + 1) % cycle == 0:
                mem.run_cycle()
        report = mem.run_cycle()
        corrected = [l for l in mem.learnings(tool="run_sql") if l.source_type == "user_feedback"
                     and RIGHT_MARK in l.content.lower()]
        _check(run, "observe", lambda: (bool(corrected), f"{len(corrected)} user_feedback learning(s) about run_sql: "
                                        f"{[l.content for l in corrected]}"))
        shown = [x.learning.id for x in last_ctx.learnings] if last_ctx is not None else []
        _check(run, "retrieve", lambda: (bool(corrected) and shown[:1] == [corrected[0].id],
                                         f"last run_sql context showed {len(shown)} learning(s), first is the correction: "
                                         f"{bool(corrected) and shown[:1] == [corrected[0].id]}"))
        tail = run.sql_success[-max(1, len(run.sql_success) // 4):]
        helpful = mem.get_learning(corrected[0].id).helpful if corrected else 0
        _check(run, "outcome", lambda: (
            helpful > 0 and sum(tail) / len(tail) > sum(first_half) / max(1, len(first_half)),
            f"correction helpful={helpful}; run_sql success first half {sum(first_half)}/{len(first_half)}, "
            f"last quarter {sum(tail)}/{len(tail)}"))
        now_wrong = mem.get_learning(wrong.id)
        _check(run, "lifecycle", lambda: (
            now_wrong.status != "active" or now_wrong.tier == "archive",
            f"planted learning: status {now_wrong.status}, tier {now_wrong.tier}, superseded_by "
            f"{(now_wrong.superseded_by or '-')[:8]}, harmful {now_wrong.harmful}"))
        domains_b = mem.domains(record=False)
        follow_b = {d.domain: d.follow_rate for d in domains_b.domains}
        shifts = [e for e in domains_b.recent_events if e.domain == "tool:run_sql" and e.kind == "effectiveness_shift"]
        before, after = follow_a.get("tool:run_sql"), follow_b.get("tool:run_sql")
        _check(run, "domain evolution", lambda: (
            before is not None and after is not None and after - before > settings.domain_shift_min and bool(shifts),
            f"run_sql follow rate {before} -> {after}; effectiveness_shift events stored: {len(shifts)}; "
            f"cycle domain changes: {len(report.domains)}"))
        prefs_after = mem.summary("user_preferences")
        missing = [p for p in ("window seat", "10am", "pdf") if p not in prefs_after.text.lower()]
        _check(run, "summaries", lambda: (
            prefs_after.text != prefs_before.text and not missing and prefs_after.refreshed_at != prefs_before.refreshed_at,
            f"user_preferences rewritten: {prefs_after.text != prefs_before.text}; missing {missing}"))
        sessions = sorted(mem.session_metrics(limit=1000), key=lambda m: m.session_id)
        counted = sum(m.contexts for m in sessions)
        first_rate, last_rate = (sessions[0].success_rate, sessions[-1].success_rate) if sessions else (None, None)
        _check(run, "sessions", lambda: (
            counted == run.contexts and len(sessions) == -(-episodes // SESSION)
            and first_rate is not None and last_rate is not None and last_rate > first_rate,
            f"{len(sessions)} sessions, {counted}/{run.contexts} contexts counted; success rate first "
            f"{first_rate} -> last {last_rate}"))
    finally:
        mem.close()
    order = ["observe", "retrieve", "outcome", "lifecycle", "weakness trainer", "domain gaps", "domain evolution",
             "summaries", "sessions", "auto-tuner"]
    run.stages.sort(key=lambda s: order.index(s.name))
    run.seconds = round(time.perf_counter() - t0, 2)
    return run


def _check_tuner(run: Run, mem: Memory) -> None:
    """Stage 10: a harmful tuning step is undone, an accepted one is kept (module docstring)."""
    start = mem.settings.min_success_rate

    def guard(settings: Settings) -> GuardScore:  # a stricter success filter costs precision
        return GuardScore(p5=0.6 if settings.min_success_rate <= start else 0.3, noise=0)

    def check() -> tuple[bool, str]:
        hurt = mem.tune(evaluator=guard)
        persisted = (mem.store.tuned_settings(mem.user) or {}).get("min_success_rate", start)
        moves = [r.name for r in hurt.recommendations]
        kept = mem.tune(evaluator=lambda settings: GuardScore(p5=0.6, noise=0))
        after = mem.store.tuned_settings(mem.user) or {}
        snaps = mem.tuning_snapshots()
        ok = (hurt.health.follow_rate is not None and "min_success_rate" in moves and hurt.status == "rolled_back"
              and persisted == start and kept.status == "kept" and bool(kept.recommendations)
              and all(after.get(r.name) == r.new for r in kept.recommendations) and len(snaps) == 2)
        return ok, (f"follow rate {hurt.health.follow_rate}; harmful step {hurt.status} ({moves}), min_success_rate "
                    f"persisted {persisted}; accepted step {kept.status} "
                    f"({[(r.name, r.old, r.new) for r in kept.recommendations]}); snapshots {len(snaps)}")

    _check(run, "auto-tuner", check)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns 0 when every stage changed what it should, else 1."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.stages", description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=120, help="tasks in all (half before the owner speaks up)")
    ap.add_argument("--cycle", type=int, default=10, help="run_cycle() every N episodes (0: only at the end)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a Settings field")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/ (default: results/local/)")
    args = ap.parse_args(argv)
    if args.episodes < 8:
        ap.error("--episodes must be at least 8")
    run = simulate(args.episodes, args.cycle, _overrides(args.set))
    result = {"episodes": run.episodes, "cycle": args.cycle, "overrides": args.set, "seconds": run.seconds,
              "passed": all(s.passed for s in run.stages), "stages": [asdict(s) for s in run.stages]}
    out_dir = REPO / "benchmarks" / "results" / ("" if args.save else "local")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "stages.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"loop stages: {run.episodes} episodes, cycle every {args.cycle}, {run.seconds:.1f} s")
        for s in run.stages:
            print(f"  [{'PASS' if s.passed else 'FAIL'}] {s.name}: {s.detail}")
        print("overall: " + ("PASS" if result["passed"] else "FAIL"))
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
