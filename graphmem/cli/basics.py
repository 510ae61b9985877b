"""The core commands: ``init``, ``add``, ``list``, ``show``, ``cypher``, ``stats``."""

from __future__ import annotations

import typer

from graphmem.cli.common import (
    command,
    console,
    learning_rows,
    open_memory,
    print_json,
    print_rows,
    resolve_id,
    state,
    warn_other_users,
)


@command("init")
def init_cmd(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Create the database file (or migrate an existing one) and print its schema version."""
    mem = open_memory()
    info = {"db": state.db, "schema_version": mem.store.schema_version, "embedder": mem.embedder.name}
    if json_out:
        print_json(info)
    else:
        console.print(f"graphmem database {state.db}: schema version {info['schema_version']}, embedder {info['embedder']}")


@command("add")
def add_cmd(
    content: str = typer.Argument(..., help="The learning, e.g. 'Keep emails under 3 paragraphs'."),
    kind: str = typer.Option(
        "rule", help="rule | preference | checklist | bug_fix | prompt | observation | hypothesis."
    ),
    tool: str = typer.Option(None, help="The tool it is about."),
    entity: list[str] = typer.Option([], "--entity", help="An entity it mentions (repeatable)."),
    topic: list[str] = typer.Option([], "--topic", help="A topic it is about (repeatable)."),
    objective_type: str = typer.Option(
        None, "--objective-type", help="The kind of task it serves, free text (e.g. 'email', 'deploy')."
    ),
    recommendation: str = typer.Option(None, help="What to do, in one sentence (free text)."),
    applies_when: str = typer.Option(None, "--applies-when", help="When it applies, in one sentence (free text)."),
    sentiment: str = typer.Option("neutral", help="positive | negative | neutral."),
    confidence: float = typer.Option(0.5, help="How sure it is, 0.0 to 1.0."),
    status: str = typer.Option(
        "active", help="shadow | candidate | canary | active | disabled (see the README's Concepts)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Add a learning (an exact duplicate is merged into the existing one)."""
    mem = open_memory()
    learning = mem.add_learning(
        content, kind=kind, tool=tool, entities=entity, topics=topic, objective_type=objective_type,
        recommendation=recommendation, applies_when=applies_when, sentiment=sentiment,
        confidence=confidence, status=status,
    )
    if json_out:
        print_json(learning)
    else:
        note = f" (merged: {learning.validations} validations)" if learning.validations else ""
        console.print(f"added learning {learning.id}{note}")


@command("list")
def list_cmd(
    status: str = typer.Option(None, help="Only this status: shadow | candidate | canary | active | disabled."),
    tier: str = typer.Option(None, help="Only this tier: pinned | active | archive."),
    tool: str = typer.Option(None, help="Only learnings about this tool."),
    topic: str = typer.Option(None, help="Only learnings about this topic."),
    entity: str = typer.Option(None, help="Only learnings that mention this entity."),
    limit: int = typer.Option(50, help="At most this many rows."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List this user's learnings, newest first."""
    mem = open_memory()
    items = mem.learnings(status=status, tier=tier, tool=tool, topic=topic, entity=entity, limit=limit)
    if json_out:
        print_json(items)
    else:
        print_rows(learning_rows(items), title=f"learnings of {state.user}")
    if not items:
        warn_other_users(mem)


@command("show")
def show_cmd(
    learning_id: str = typer.Argument(..., help="A learning id, or a unique prefix of it (4+ characters, e.g. the 8 `list` shows)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show one learning in full, with its lifecycle transitions."""
    mem = open_memory()
    learning = mem.get_learning(resolve_id(mem, learning_id))
    transitions = mem.store.transitions(learning.id)
    if json_out:
        print_json({"learning": learning, "transitions": transitions})
        return
    print_rows([{"field": k, "value": v} for k, v in learning.model_dump().items()], title=f"learning {learning.id}")
    if transitions:
        print_rows([t.model_dump(exclude={"id", "learning_id"}) for t in transitions], title="transitions")


@command("cypher")
def cypher_cmd(
    query: str = typer.Argument(..., help="A Cypher query."),
    write: bool = typer.Option(False, "--write", help="Allow the query to write (needs --all-users)."),
    all_users: bool = typer.Option(False, "--all-users", help="Query the whole file, not only --user's view."),
    force: bool = typer.Option(False, "--force", help="Let a write change graphmem's Meta table or schema."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Run Cypher over --user's view of the graph, or the whole file with --all-users (read-only unless --write)."""
    mem = open_memory()
    rows = mem.cypher(query, write=write, force=force, scope="all" if all_users else "user")
    if json_out:
        print_json(rows)
    else:
        print_rows(rows)


@command("stats")
def stats_cmd(
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    all_users: bool = typer.Option(False, "--all-users", help="Count the whole file, not only --user's rows."),
) -> None:
    """Node and edge counts of --user's memory (--all-users: of the whole file)."""
    mem = open_memory()
    counts = mem.stats(all_users=all_users)
    if not all_users:
        warn_other_users(mem)
    if json_out:
        print_json(counts)
    else:
        print_rows([{"table": k, "rows": v} for k, v in sorted(counts.items())], title=str(state.db))


