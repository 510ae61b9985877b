"""``graphmem import FILE``: read a memory written by ``graphmem export --memory FILE``."""

from __future__ import annotations

from pathlib import Path

import typer

from graphmem.cli.bulk import progress_bar
from graphmem.cli.common import command, console, open_memory, print_json, state
from graphmem.errors import GraphmemError


@command("import")
def import_cmd(
    path: Path = typer.Argument(..., help="A file written by `graphmem export --memory FILE`."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not draw the progress bar."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Import a memory export into --db as --user, all or nothing (a bad line writes nothing)."""
    mem = open_memory()
    if not hasattr(mem, "import_memory"):
        raise GraphmemError("import works on a database file: pass --db PATH instead of --server")
    with progress_bar("importing", not no_progress and not json_out) as progress:
        report = mem.import_memory(path, progress=progress)
    if json_out:
        print_json(report)
        return
    moved = "" if report.from_user == report.user else f" (exported by {report.from_user})"
    console.print(
        f"imported {report.counts.get('Learning', 0)} learning(s), {report.counts.get('Event', 0)} event(s), "
        f"{sum(report.counts.values())} node(s) and {report.edges} edge(s) into {state.db} as user {report.user}{moved}",
        highlight=False,
    )
