"""CLI for bullet evolution: ``graphmem evolve [LEARNING_ID]`` rewrites learnings that keep failing."""

from __future__ import annotations

import typer

from graphmem.cli.common import command, console, open_memory, print_json, print_rows
from graphmem.errors import GraphmemError


@command("evolve")
def evolve_cmd(
    learning_id: str = typer.Argument(None, help="The learning to evolve (default: every failing learning)."),
    judge: str = typer.Option(None, "--judge", help="Test the candidates with this judge only (per-judge evolution)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Breed candidate rewrites of a failing learning with its most helpful siblings, test them on
    the cases where it failed with the same judges, and let the best SUPERSEDE it if it beats it.
    `graphmem cycle` evolves the failing learnings too."""
    mem = open_memory()
    if not hasattr(mem, "evolve"):
        raise GraphmemError("evolve works on a database file (--db), not through --server yet")
    report = mem.evolve(learning_id, judge=judge)
    if json_out:
        print_json(report)
        return
    console.print(f"evolve: {len(report.results)} learning(s) tried, {len(report.evolved)} evolved")
    if report.results:
        print_rows([{"learning": r.learning_id[:8], "cases": r.cases,
                     "original": f"{r.original.fitness:.2f}" if r.original else "-",
                     "best": f"{max((c.fitness for c in r.candidates), default=0.0):.2f}",
                     "evolved": (r.evolved_id or "")[:8], "reason": r.reason} for r in report.results])
