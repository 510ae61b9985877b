"""CLI commands for the agent's domains: ``graphmem weaknesses`` (the weakness trainer) and
``graphmem domains`` (domain evolution); ``graphmem insights --domains`` prints the same section
through :func:`print_domains`."""

from __future__ import annotations

from typing import Any

import typer

from graphmem.cli.common import command, console, open_memory, print_json, print_rows, state
from graphmem.errors import GraphmemError


def _section(rows: list[dict[str, Any]], title: str, empty: str) -> None:
    if rows:
        print_rows(rows, title=title)
    else:
        console.print(f"[bold]{title}[/bold]\n  {empty}", highlight=False)


def _needs_file(mem: Any, what: str) -> None:
    if not hasattr(mem, what):
        raise GraphmemError(f"`{what}` works on a database file: pass --db PATH instead of --server")


def print_domains(report: Any) -> None:
    """The domains, their gaps, the weakness trainer's lessons and the recent domain events."""
    from graphmem.insights_domains import domain_rows, event_rows, gap_rows, lesson_rows, source_rows

    _section(domain_rows(report), "domains (tools, topics, objective types)",
             "No domains yet: they appear as learnings are linked to tools, topics or objective types.")
    if source_rows(report):
        print_rows(source_rows(report), title="sources by follow rate")
    _section(gap_rows(report), "domain gaps", "No gaps: every domain has learnings that are shown and followed.")
    _section(lesson_rows(report), "lessons from weak domains (candidates)",
             "No lessons yet: the weakness trainer proposes them once a domain is weak (`graphmem weaknesses`).")
    _section(event_rows(report), "domain events (newest first)",
             "No events yet: they appear when a domain's follow rate moves or its top/weak source changes.")


@command("weaknesses")
def weaknesses_cmd(
    analyze: bool = typer.Option(False, "--analyze", help="Only find weak domains; store no lessons."),
    top: int = typer.Option(None, "--top", help="Train the N weakest domains (default: Settings.weakness_max_domains)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Find weak domains from surprise moments and store lessons for them as candidate learnings."""
    if top is not None and top < 1:
        raise GraphmemError(f"--top must be >= 1, got {top}")
    mem = open_memory()
    _needs_file(mem, "weaknesses")
    report = mem.weaknesses(train=not analyze, top=top)
    if json_out:
        print_json(report)
        return
    _section(
        [{"domain": d.domain, "showings": d.showings, "surprises": d.surprises,
          "avg gap": "n/a" if d.avg_gap is None else f"{d.avg_gap:.3f}", "weak": "WEAK" if d.weak else ""}
         for d in report.domains],
        "domains by confidence gap (weakest first)",
        "No judged showings yet: record outcomes of contexts (`graphmem outcome`) and run this again.",
    )
    surprises = [m for d in report.weak for m in d.moments]
    if surprises:
        print_rows([{"domain": d.domain, "learning": m.learning, "confidence": f"{m.confidence:.2f}",
                     "outcome": m.outcome, "gap": f"{m.gap:.2f}", "task": m.query}
                    for d in report.weak for m in d.moments], title="surprise moments in weak domains")
    if analyze:
        return
    _section([{"id": l.learning_id[:8], "domain": l.domain, "new": "yes" if l.created else "re-derived",
               "episodes": l.episodes, "lesson": l.content} for l in report.lessons],
             "lessons stored (status candidate)",
             "No new lessons: no weak domain has surprises that a lesson does not already cover.")


@command("domains")
def domains_cmd(
    no_record: bool = typer.Option(False, "--no-record", help="Compute without storing a snapshot."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Per domain: learnings, follow rate, surprises, events since the last run and gaps."""
    mem = open_memory()
    _needs_file(mem, "domains")
    report = mem.domains(record=not (no_record or state.read_only))
    if json_out:
        print_json(report)
        return
    print_domains(report)
