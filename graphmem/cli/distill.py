"""CLI for distillation: ``graphmem distill`` turns clusters of similar episodes into rules."""

from __future__ import annotations

import typer

from graphmem.cli.common import command, console, open_memory, print_json, print_rows
from graphmem.errors import GraphmemError


@command("distill")
def distill_cmd(
    similarity: float = typer.Option(None, "--similarity", help="Cosine to join a cluster (default: Settings.distill_similarity)."),
    min_size: int = typer.Option(None, "--min-size", help="Members a cluster needs to become a rule (default 3)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Distil clusters of similar observations and reflection rules into rules (DERIVED_FROM
    their members, which move to the archive tier). Incremental; `graphmem cycle` runs it too."""
    mem = open_memory()
    if not hasattr(mem, "distill"):
        raise GraphmemError("distill works on a database file (--db), not through --server yet")
    report = mem.distill(similarity=similarity, min_size=min_size)
    if json_out:
        print_json(report)
        return
    console.print(f"distill: {report.candidates} candidates, {len(report.created)} rules created, "
                  f"{len(report.rules) - len(report.created)} extended, {report.archived} archived, "
                  f"{report.pending} waiting for similar ones")
    if report.rules:
        print_rows([{"rule": r.rule_id[:8], "new": "yes" if r.created else "no", "members": len(r.members),
                     "content": r.content} for r in report.rules])
