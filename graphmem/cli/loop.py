"""CLI for the outcome loop: ``graphmem outcome`` and ``graphmem cycle``."""

from __future__ import annotations

import typer

from graphmem.cli.common import command, console, open_memory, print_json, print_rows, resolve_id
from graphmem.errors import GraphmemError


@command("outcome")
def outcome_cmd(
    context_id: str = typer.Argument(..., help="A context id (ctx.id / `graphmem context --json`), or a unique prefix of it (4+ characters)."),
    success: bool = typer.Option(None, "--success/--failure", help="Did the attempt succeed?"),
    rating: str = typer.Option(None, "--rating", help="good | okay | bad (decides over --success)."),
    reason: list[str] = typer.Option([], "--reason", help="A reason tag, e.g. fallback, retry (repeatable)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Record the outcome of a context: credits or blames exactly the learnings it showed."""
    if success is None and rating is None:
        raise GraphmemError("give --success, --failure or --rating good|okay|bad")
    mem = open_memory()
    report = mem.record_outcome(resolve_id(mem, context_id, "context"), success=success, rating=rating, reasons=reason)
    if json_out:
        print_json(report)
        return
    console.print(f"context {report.context_id}: {report.verdict} ({len(report.learnings)} learnings)")
    print_rows(
        [
            {"id": l.id[:8], "status": l.status, "score": f"{l.score:.3f}", "conf": f"{l.confidence:.3f}",
             "h/h": f"{l.helpful}/{l.harmful}", "content": l.content}
            for l in report.learnings
        ]
    )


@command("cycle")
def cycle_cmd(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Run the lifecycle once: windows and transitions, hypotheses, pruning, tiers, decay.

    Only learnings with outcomes since the previous cycle get a window, so a second run right
    after the first evaluates none (in both the text and the JSON output)."""
    mem = open_memory()
    report = mem.run_cycle()
    if json_out:
        print_json({**report.model_dump(), "windows_evaluated": len(report.windows), "changed": report.changed})
        return
    n = len(report.windows)
    console.print(f"cycle: {n} window{'' if n == 1 else 's'} evaluated, {report.changed} changes")
    if n:
        print_rows([{"learning": w.learning_id[:8], "sample": w.sample, "quality": f"{w.quality:.2f}",
                     "pass rate": f"{w.pass_rate:.2f}", "verdict": w.verdict} for w in report.windows],
                   title="windows")
    else:
        console.print("(no learning has new outcomes since the previous cycle)")
    if report.changed:
        print_rows(report.rows(), title="changes")
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
