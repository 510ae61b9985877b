"""CLI for privacy: ``graphmem forget`` erases one user's memory for good."""

from __future__ import annotations

import typer

from graphmem.cli.common import command, console, open_memory, print_json, state
from graphmem.errors import GraphmemError


@command("forget")
def forget_cmd(
    user: str = typer.Option(None, "--user", help="The user to forget (default: the global --user)."),
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Erase a user's learnings, events, objectives, summaries, contexts, traces, reflections,
    judges, their edges and the names only they used. One transaction; cannot be undone."""
    target = user or state.user
    if not yes and not typer.confirm(f"Forget everything user {target!r} stored in {state.db}? This cannot be undone"):
        raise GraphmemError("nothing forgotten (pass --yes to skip the question)")
    state.user = target
    counts = open_memory().forget()
    if json_out:
        print_json({"user": target, "deleted": counts})
        return
    total = sum(counts.values())
    console.print(f"forgot user {target!r}: {total} rows deleted")
    for table, n in sorted(counts.items()):
        if n:
            console.print(f"  {table}: {n}")
