"""CLI for prompt versions and their A/B tests: ``graphmem prompt add|list|active|serve|test|propose``.

Outcomes of a served prompt go through ``graphmem outcome CONTEXT_ID``; ``graphmem cycle``
decides the tests.
"""

from __future__ import annotations

from typing import Any

import typer

from graphmem.cli.common import app, command, console, open_memory, print_json, print_rows
from graphmem.errors import GraphmemError

prompt_app = typer.Typer(help="Prompt versions per role, A/B tested between the active one and a candidate.",
                         no_args_is_help=True)
app.add_typer(prompt_app, name="prompt")


def _memory() -> Any:
    mem = open_memory()
    if not hasattr(mem, "add_prompt"):
        raise GraphmemError("prompt versions work on a database file (--db), not through --server yet")
    return mem


def _rows(versions: list[Any]) -> list[dict[str, Any]]:
    return [{"label": v.label, "state": v.state, "conf": f"{v.confidence:.3f}", "h/h": f"{v.helpful}/{v.harmful}",
             "served": v.served, "id": v.id[:8], "text": v.text[:60]} for v in versions]


@command("add", target=prompt_app)
def add_cmd(
    role: str = typer.Argument(..., help="The role the prompt is for, e.g. orchestrator."),
    text: str = typer.Argument(..., help="The prompt text."),
    activate: bool = typer.Option(False, "--activate", help="Replace the active version now (no A/B test)."),
    description: str = typer.Option(None, "--description", help="What changed in this version."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Add a version: the first is active, a later one is tested against it as the candidate."""
    v = _memory().add_prompt(role, text, activate=activate, description=description)
    if json_out:
        print_json(v)
        return
    console.print(f"{v.label} ({v.state}) {v.id}")


@command("list", target=prompt_app)
def list_cmd(
    role: str = typer.Argument(None, help="Only this role."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Every version with its state, confidence, helpful/harmful and serves."""
    versions = _memory().prompts(role)
    if json_out:
        print_json(versions)
        return
    print_rows(_rows(versions))


@command("active", target=prompt_app)
def active_cmd(
    role: str = typer.Argument(..., help="The role."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The version served by default (highest confidence × success rate, not deprecated)."""
    v = _memory().active_prompt(role)
    if json_out:
        print_json(v)
        return
    console.print(f"{v.label} ({v.state}, conf {v.confidence:.3f}, {v.helpful}/{v.harmful})\n{v.text}", highlight=False)


@command("serve", target=prompt_app)
def serve_cmd(
    role: str = typer.Argument(..., help="The role."),
    session: str = typer.Option(None, "--session", help="Session id: the same session always gets the same version."),
    context_id: str = typer.Option(None, "--context", help="Record the serve in this context (from `graphmem context`)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The prompt to use now (A/B split while a candidate is tested); report the outcome with
    `graphmem outcome CONTEXT_ID`."""
    serve = _memory().prompt_for(role, session_id=session, context_id=context_id)
    if json_out:
        print_json(serve)
        return
    console.print(f"{serve.label} ({serve.arm}) context {serve.context_id}\n{serve.text}", highlight=False)


@command("test", target=prompt_app)
def test_cmd(
    role: str = typer.Argument(..., help="The role."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Where the role's A/B test stands: outcomes per arm, P(candidate better), the decision."""
    t = _memory().prompt_test(role)
    if json_out:
        print_json(t)
        return
    if t.candidate is None:
        console.print(f"{role}: {t.reason}")
        return
    assert t.active is not None
    console.print(f"{t.candidate.label} vs {t.active.label}: {t.decision} ({t.reason})", highlight=False)


@command("propose", target=prompt_app)
def propose_cmd(
    role: str = typer.Argument(..., help="The role."),
    feedback: list[str] = typer.Option(..., "--feedback", help="Negative feedback on the active version (repeatable)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Let the reflector write a candidate version from negative feedback; it enters the A/B test."""
    v = _memory().propose_prompt(role, feedback)
    if json_out:
        print_json(v)
        return
    console.print(f"{v.label} ({v.state}) {v.id}\n{v.text}", highlight=False)
