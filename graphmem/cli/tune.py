"""CLI of the auto-tuner and the session metrics.

``graphmem tune [--dry-run] [--json]``, ``graphmem tune --rollback [SNAPSHOT_ID]``,
``graphmem tune --history``, ``graphmem sessions [--session ID] [--limit N] [--json]``.
"""

from __future__ import annotations

from typing import Any

import typer

from graphmem.cli.common import command, console, open_memory, print_json, print_rows
from graphmem.errors import GraphmemError


def _local_memory() -> Any:
    mem = open_memory()
    if not hasattr(mem, "tune"):
        raise GraphmemError("tuning works on a database file (--db), not through --server yet")
    return mem


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


@command("tune")
def tune_cmd(
    dry_run: bool = typer.Option(False, "--dry-run", help="Measure and recommend; change nothing."),
    rollback: bool = typer.Option(False, "--rollback", help="Restore the values of a snapshot (the latest without an id)."),
    history: bool = typer.Option(False, "--history", help="List the tuning snapshots, newest first."),
    snapshot_id: str = typer.Argument(None, help="With --rollback: the snapshot to restore."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """One auto-tuning step: measure health and the retrieval guard, move a few settings one step
    within their bounds, and roll back when P@5 drops or noise appears."""
    if snapshot_id is not None and not rollback:
        raise GraphmemError("a snapshot id goes with --rollback: graphmem tune --rollback SNAPSHOT_ID")
    if sum((dry_run, rollback, history)) > 1:
        raise GraphmemError("choose one of --dry-run, --rollback and --history")
    mem = _local_memory()
    if history:
        snaps = mem.tuning_snapshots(mem.settings.tune_keep_snapshots)
        if json_out:
            print_json(snaps)
            return
        print_rows([{"id": s.id, "created": s.created_at.isoformat(timespec="seconds"), "status": s.status,
                     "changes": ", ".join(f"{c['name']} {c['old']:g}->{c['new']:g}" for c in s.changes),
                     "P@5": "n/a" if s.p5_before is None else f"{s.p5_before:.3f}->"
                     + ("n/a" if s.p5_after is None else f"{s.p5_after:.3f}")} for s in snaps], title="tuning snapshots")
        return
    if rollback:
        snap = mem.rollback_tuning(snapshot_id)
        if json_out:
            print_json(snap)
            return
        console.print(f"restored snapshot {snap.id}: " + ", ".join(f"{k}={v:g}" for k, v in sorted(snap.settings.items())),
                      highlight=False)
        return
    report = mem.tune(dry_run=dry_run)
    if json_out:
        print_json(report)
        return
    h = report.health
    console.print(
        f"health: {h.contexts} context(s) since {h.since.date()}, follow rate {_pct(h.follow_rate)}, "
        f"outcome rate {_pct(h.outcome_rate)}, promotions {h.promotions}, demotions {h.demotions}; "
        f"guard P@5 {report.p5_before:.3f}, noise {report.noise_before}, median latency {h.latency_ms or 0:.1f} ms",
        highlight=False,
    )
    print_rows([{"setting": r.name, "old": f"{r.old:g}", "new": f"{r.new:g}", "why": r.reason}
                for r in report.recommendations], title="recommendations")
    console.print(f"[bold]{report.status}[/bold]: {report.reason}", highlight=False)
    if report.note:
        console.print(report.note, highlight=False)


@command("sessions")
def sessions_cmd(
    session: str = typer.Option(None, "--session", help="One session id (default: the latest sessions)."),
    limit: int = typer.Option(20, "--limit", help="How many of the latest sessions."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Per-session figures: contexts, outcomes, success rate, learnings created/shown/used, judge pass rates."""
    mem = _local_memory()
    rows = mem.session_metrics(session, limit=limit)
    if json_out:
        print_json(rows)
        return
    if not rows:
        console.print("No sessions yet: pass session_id to context, record_event, observe_message and trace.")
        return
    print_rows([session_row(m) for m in rows], title="sessions")


def session_row(m: Any) -> dict[str, Any]:
    """One SessionMetrics as a table row."""
    return {
        "session": m.session_id, "last": m.last_at.isoformat(timespec="seconds") if m.last_at else "-",
        "contexts": m.contexts, "outcomes": m.outcomes, "success": _pct(m.success_rate),
        "created": m.learnings_created, "shown": m.learnings_shown, "used": m.learnings_used,
        "traces": m.traces, "pass": _pct(m.trace_pass_rate),
        "judges": ", ".join(f"{j} {_pct(r)}" for j, r in m.judge_pass_rates.items()) or "-",
    }
