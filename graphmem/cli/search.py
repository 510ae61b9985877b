"""``graphmem search "QUERY" [--over learnings|events|all] [--k N] [--tool T] [--entity E]... [--json]``."""

from __future__ import annotations

from typing import Any

import typer

from graphmem.cli.common import command, open_memory, print_json, print_rows


def hit_rows(hits: list[Any]) -> list[dict[str, Any]]:
    """The columns the table shows for search hits."""
    rows = []
    for h in hits:
        node = h.node
        text = getattr(node, "content", "")
        who = getattr(node, "role", None) or getattr(node, "tool", None) or getattr(node, "tool_name", None) or ""
        rows.append({
            "id": h.id[:8], "kind": h.kind, "score": f"{h.score:.3f}", "who/tool": who,
            "content": text if len(text) <= 160 else text[:157] + "...", "reasons": "; ".join(h.reasons),
        })
    return rows


@command("search")
def search_cmd(
    query: str = typer.Argument("", help="What to look for, e.g. 'what did Dana say about pricing?'."),
    over: str = typer.Option("learnings", "--over", help="learnings | events | all"),
    k: int = typer.Option(10, "--k", help="How many hits."),
    tool: str = typer.Option(None, "--tool", help="A tool to anchor on."),
    entity: list[str] = typer.Option([], "--entity", help="An entity to anchor on (repeatable)."),
    topic: list[str] = typer.Option([], "--topic", help="A topic to anchor on (repeatable)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Search this user's learnings and/or events (hybrid: vector, full-text, graph)."""
    mem = open_memory()
    hits = mem.search(query, k=k, over=over, tool=tool, entities=entity, topics=topic)
    if json_out:
        print_json([h.model_dump() for h in hits])
    else:
        print_rows(hit_rows(hits), title=f"search over {over}: {len(hits)} hits")
