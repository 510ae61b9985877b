"""CLI commands of the observability side: promote, sweep, insights, export.

``graphmem promote --to AGENTS.md``, ``graphmem sweep [--file F]...``,
``graphmem insights [--json] [--html FILE]``, ``graphmem export --jsonl FILE | --graphml FILE``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from graphmem.cli.common import command, console, open_memory, print_json, print_rows, warn_other_users
from graphmem.errors import GraphmemError


def _section(rows: list[dict[str, Any]], title: str, empty: str) -> None:
    """A titled table, or, with no rows, the title and a sentence saying why it is empty."""
    if rows:
        print_rows(rows, title=title)
    else:
        console.print(f"[bold]{title}[/bold]\n  {empty}", highlight=False)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


@command("promote")
def promote_cmd(
    to: Path = typer.Option(..., "--to", help="The instruction file (AGENTS.md, CLAUDE.md...); created if missing."),
    min_confidence: float = typer.Option(None, "--min-confidence", help="Default: Settings.promote_min_confidence (0.8)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Write pinned, high-confidence, active learnings into FILE's graphmem section."""
    mem = open_memory()
    report = mem.promote(to, min_confidence=min_confidence)
    if json_out:
        print_json(report)
        return
    verb = "created" if report.created else ("updated" if report.changed else "unchanged")
    console.print(
        f"{report.path}: {verb}; {len(report.promoted)} promoted, {report.already_present} already there, "
        f"{report.hand_written} hand-written line(s) kept",
        highlight=False,
    )
    for change in report.promoted:
        console.print(f"  + {change.line}", highlight=False, markup=False)


@command("sweep")
def sweep_cmd(
    files: list[Path] = typer.Option(
        [], "--file", help="An instruction file to sweep (repeatable). Default: AGENTS.md, CLAUDE.md, TOOLS.md, SOUL.md here."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Remove promoted lines whose learnings were contradicted, went stale or were retired."""
    from graphmem.promote import default_targets

    targets = list(files) or default_targets(".")
    if not targets:
        raise GraphmemError("no instruction file to sweep: pass --file FILE (none of AGENTS.md, CLAUDE.md here)")
    mem = open_memory()
    report = mem.sweep(targets)
    if json_out:
        print_json({"files": report.files, "changes": report.changes, "summary": report.summary})
        return
    console.print(report.summary, highlight=False)
    for f in report.files:
        if not f.found:
            console.print(f"  {f.path}: not found", highlight=False)
    for change in report.changes:
        console.print(f"  - {change.path}: {change.line}  ({change.reason})", highlight=False, markup=False)


@command("insights")
def insights_cmd(
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    html: Path = typer.Option(None, "--html", help="Also write a self-contained HTML page to FILE."),
    timeline: int = typer.Option(30, "--timeline", help="How many recent transitions to show."),
    domains: bool = typer.Option(False, "--domains", help="Add the domains: follow rates, gaps, weak-domain lessons, events."),
) -> None:
    """Acceptance, pass/fallback/retry rates, rating coverage, learnings and transitions."""
    from graphmem.insights_html import render_html

    if timeline <= 0:
        raise GraphmemError(f"--timeline must be > 0, got {timeline}")
    mem = open_memory()
    ins = mem.insights(timeline=timeline)
    dom = _domains_report(mem) if domains else None
    if html is not None:
        if not html.parent.exists():
            raise GraphmemError(f"the folder {html.parent} does not exist; create it first")
        html.write_text(render_html(ins, domains=dom), encoding="utf-8")
    if json_out:
        print_json(ins if dom is None else {**ins.model_dump(), "domains": dom})
        return
    o = ins.overview
    if not ins.learnings and not o.applications:
        warn_other_users(mem)
    print_rows(
        [
            {"acceptance": _pct(o.acceptance), "pass rate": _pct(o.pass_rate), "fallback rate": _pct(o.fallback_rate),
             "retry rate": _pct(o.retry_rate), "rating coverage": _pct(o.rating_coverage),
             "applications": o.applications, "with outcome": o.with_outcome, "active canaries": ins.active_canaries}
        ],
        title=f"insights of {ins.user}",
    )
    print_rows(
        [{"status": s, "learnings": n} for s, n in ins.status_counts.items()]
        + [{"status": f"tier {t}", "learnings": n} for t, n in ins.tier_counts.items()],
        title="learnings by status and tier",
    )
    _section(
        [
            {"id": l.id[:8], "content": l.content, "status": l.status, "tier": l.tier, "score": f"{l.score:.3f}",
             "conf": f"{l.confidence:.3f}", "canary": f"{l.canary_allocation:.2f}", "h/h": f"{l.helpful}/{l.harmful}",
             "used": l.times_applied}
            for l in ins.learnings
        ],
        "learnings",
        "No learnings yet: add some with `graphmem add` or let observe/end-objective learn them.",
    )
    _section(
        [
            {"when": t.created_at.strftime("%Y-%m-%d %H:%M"), "learning": t.learning_id[:8], "field": t.field,
             "from": t.old, "to": t.new, "reason": t.reason}
            for t in ins.timeline
        ],
        "transition timeline (newest first)",
        "No transitions yet: they appear when a learning changes status or tier (cycle, outcomes, promotions).",
    )
    _section(
        [d.model_dump() for d in ins.outcomes_by_day],
        "outcomes over time",
        "No contexts handed out yet: this fills in as `context` is called and outcomes come back.",
    )
    from graphmem.cli.tune import session_row

    _section([session_row(m) for m in ins.sessions], "sessions (latest first)",
             "No sessions yet: pass session_id to record_event, context and trace.")
    if dom is not None:
        from graphmem.cli.domains import print_domains

        print_domains(dom)
    if html is not None:
        console.print(f"wrote {html}", highlight=False)


def _domains_report(mem: Any) -> Any:
    """``mem.domains()`` for ``--domains`` (a snapshot of what changed, unless read-only)."""
    from graphmem.cli.common import state

    if not hasattr(mem, "domains"):
        raise GraphmemError("--domains works on a database file: pass --db PATH instead of --server")
    return mem.domains(record=not state.read_only)


@command("export")
def export_cmd(
    jsonl: Path = typer.Option(
        None, "--jsonl",
        help="Write successful episodes as chat-format training pairs. An episode is the events of one "
             "objective (or, outside any objective, of one session); each pair is a user message, the "
             "tool calls and results after it, and the assistant's answer.",
    ),
    graphml: Path = typer.Option(None, "--graphml", help="Write --user's view of the graph as GraphML (networkx)."),
    memory: Path = typer.Option(
        None, "--memory",
        help="Write --user's whole memory (learnings with counters, edges, events, outcomes...) as JSONL "
             "for `graphmem import`.",
    ),
    all_users: bool = typer.Option(False, "--all-users", help="GraphML: the whole file, every user's nodes."),
    min_confidence: float = typer.Option(0.0, "--min-confidence", help="JSONL: keep episodes with confidence >= X."),
    feedback: str = typer.Option("any", "--feedback", help="JSONL: positive (explicit praise only) or any."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Export training pairs (--jsonl FILE), the graph (--graphml FILE) and/or the memory (--memory FILE)."""
    if jsonl is None and graphml is None and memory is None:
        raise GraphmemError("nothing to export: pass --jsonl FILE, --graphml FILE and/or --memory FILE")
    mem = open_memory()
    reports: list[Any] = []
    if jsonl is not None:
        reports.append(mem.export_jsonl(jsonl, min_confidence=min_confidence, feedback=feedback))
    if graphml is not None:
        reports.append(mem.export_graphml(graphml, scope="all" if all_users else "user"))
    if memory is not None:
        if not hasattr(mem, "export_memory"):
            raise GraphmemError("--memory works on a database file: pass --db PATH instead of --server")
        reports.append(mem.export_memory(memory))
    if json_out:
        print_json(reports)
        return
    for r in reports:
        if getattr(r, "format", None) == "jsonl":
            console.print(
                f"wrote {r.records} training pair(s) from {r.episodes_kept} of {r.episodes} episode(s) to {r.path} "
                "(an episode: one objective's events, or one session's outside any objective; kept: the successful ones)",
                highlight=False,
            )
        elif getattr(r, "format", None) == "graphml":
            console.print(f"wrote {r.nodes} nodes and {r.edges} edges to {r.path}", highlight=False)
        else:
            console.print(
                f"wrote {r.counts.get('Learning', 0)} learning(s), {r.counts.get('Event', 0)} event(s) and "
                f"{r.edges} edge(s) of {r.user} to {r.path} (read it back with `graphmem import`)",
                highlight=False,
            )
