"""`graphmem context`: the context an agent would get before a tool call."""

from __future__ import annotations

import typer

from graphmem.cli.common import command, console, open_memory, print_json, print_rows


@command("context")
def context_cmd(
    query: str = typer.Argument("", help="What the agent is about to do, e.g. 'Email Dana about Q3'."),
    tool: str = typer.Option(None, "--tool", help="The tool about to be called."),
    entity: list[str] = typer.Option([], "--entity", help="An entity involved (repeatable)."),
    topic: list[str] = typer.Option([], "--topic", help="A topic involved (repeatable)."),
    objective_type: str = typer.Option(None, "--objective-type", help="The objective type."),
    limit: int = typer.Option(8, "--limit", help="At most this many learnings."),
    token_budget: int = typer.Option(None, "--token-budget", help="Learnings budget in tokens (default from Settings)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Assemble (and record) the context for a query: preferences and ranked learnings with reasons."""
    mem = open_memory()
    ctx = mem.context(
        query, tool=tool, entities=entity, topics=topic, objective_type=objective_type, limit=limit,
        token_budget=token_budget,
    )
    if json_out:
        print_json({
            "id": ctx.id,
            "query": ctx.query,
            "tool": ctx.tool,
            "user_preferences": ctx.user_preferences,
            "learnings": [
                {"rank": i.rank, "id": i.id, "score": i.score, "content": i.learning.content,
                 "tool": i.learning.tool, "reasons": i.reasons, "signals": i.signals}
                for i in ctx.learnings
            ],
            "prompt": ctx.to_prompt(),
        })
        return
    print_rows(
        [{"#": i.rank, "id": i.id[:8], "score": f"{i.score:.3f}", "content": i.learning.content, "why": "; ".join(i.reasons)}
         for i in ctx.learnings],
        title=f"context {ctx.id}",
    )
    console.print(ctx.to_prompt() or "(empty context)", highlight=False, markup=False)
