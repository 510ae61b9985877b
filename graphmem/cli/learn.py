"""Learning from experience on the command line.

- ``graphmem event KIND "CONTENT" [--tool T] [--success|--failure] [--objective ID] [--role R] [--json]``
- ``graphmem observe "MESSAGE" [--tool T] [--not-owner] [--role R] [--objective ID] [--entity E]... [--json]``
- ``graphmem objective start "GOAL" [--type T] [--json]`` / ``graphmem objective end ID [--status S] [--result R]``
- ``graphmem judge "NAME" "CRITERIA" [--node N]``
- ``graphmem trace "INPUT" "OUTPUT" --node N [--ground-truth G] [--mode M] [--json]``
- ``graphmem train FILE.jsonl [--node N] [--json]`` (one JSON object per line: input_text, output, ground_truth)

The LLM is the CLI's: AnthropicLLM when ``ANTHROPIC_API_KEY`` is set, else the offline default.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from graphmem.cli.common import app, command, console, learning_rows, open_memory, print_json, print_rows, resolve_id
from graphmem.errors import GraphmemError, InvalidInputError, LLMError

F = TypeVar("F", bound=Callable[..., Any])
objective_app = typer.Typer(help="Start and end objectives (self-evaluated at the end).", no_args_is_help=True)
app.add_typer(objective_app, name="objective")


def _sub(name: str) -> Callable[[F], F]:
    """A command of ``graphmem objective``."""
    return command(name, target=objective_app)


def _show_learnings(learned: list[Any], json_out: bool, empty: str) -> None:
    if json_out:
        print_json(learned)
    elif learned:
        print_rows(learning_rows(learned), title=f"{len(learned)} learning(s)")
    else:
        console.print(empty)


@command("event")
def event_cmd(
    kind: str = typer.Argument(..., help="message | tool_call | tool_result | feedback | trace"),
    content: str = typer.Argument("", help="What happened."),
    tool: str = typer.Option(None, "--tool", help="The tool used."),
    success: bool = typer.Option(None, "--success/--failure", help="Whether the step worked."),
    objective: str = typer.Option(None, "--objective", help="The objective id it belongs to (or a unique prefix, 4+ characters)."),
    role: str = typer.Option(None, "--role", help="user | assistant | tool | a person's name."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Log an event (tool calls/results and assistant messages are outbound)."""
    mem = open_memory()
    objective_id = resolve_id(mem, objective, "objective") if objective else None
    event = mem.record_event(kind, content, tool=tool, success=success, objective_id=objective_id, role=role)
    if json_out:
        print_json(event)
    else:
        console.print(f"logged {event.kind} event {event.id} ({event.direction})")


@command("observe")
def observe_cmd(
    message: str = typer.Argument(..., help="The message, e.g. 'Keep emails under 3 paragraphs'."),
    tool: str = typer.Option(None, "--tool", help="The tool the message is probably about."),
    not_owner: bool = typer.Option(False, "--not-owner", help="Someone other than the owner wrote it."),
    role: str = typer.Option("user", "--role", help="Who wrote it."),
    objective: str = typer.Option(None, "--objective", help="The objective id it belongs to (or a unique prefix, 4+ characters)."),
    entity: list[str] = typer.Option([], "--entity", help="An entity it mentions (repeatable)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Log an inbound message; owner feedback becomes (or reinforces) a learning."""
    mem = open_memory()
    objective_id = resolve_id(mem, objective, "objective") if objective else None
    watch = _FailureRecordingLLM(mem.llm) if hasattr(mem, "llm") else None
    if watch is not None:
        mem.llm = watch
    learned = mem.observe_message(
        message, tool=tool, is_owner=not not_owner, role=role, objective_id=objective_id, entities=entity
    )
    if watch is not None and watch.failures and not learned:
        raise GraphmemError(
            f"the message was logged, but the LLM failed, so no feedback was extracted: {watch.failures[-1]}"
        )
    _show_learnings(learned, json_out, "logged; no feedback to learn from")


class _FailureRecordingLLM:
    """Passes calls to the LLM and keeps the LLMErrors it raised (Memory.observe_message logs
    them and returns [], which the CLI must not report as "no feedback")."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.failures: list[LLMError] = []

    def generate(self, request: Any, schema: Any, *args: Any, **kwargs: Any) -> Any:
        """The inner LLM's generate, recording a failed feedback extraction before re-raising it
        (other calls, e.g. the injection judge, have their own fallback)."""
        try:
            return self.inner.generate(request, schema, *args, **kwargs)
        except LLMError as e:
            if getattr(schema, "__name__", "") == "FeedbackAnalysis":
                self.failures.append(e)
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@_sub("start")
def objective_start_cmd(
    goal: str = typer.Argument(..., help="What the agent sets out to do."),
    objective_type: str = typer.Option(None, "--type", help="research | email | code | ..."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Start an objective; log its steps with `graphmem event ... --objective ID`."""
    obj = open_memory().start_objective(goal, objective_type)
    if json_out:
        print_json(obj)
    else:
        console.print(f"started objective {obj.id}")


@_sub("end")
def objective_end_cmd(
    objective_id: str = typer.Argument(..., help="The id printed by `objective start` (or a unique prefix, 4+ characters)."),
    status: str = typer.Option("completed", "--status", help="completed | failed | cancelled"),
    result: str = typer.Option(None, "--result", help="What came out of it."),
    no_reflect: bool = typer.Option(False, "--no-reflect", help="Skip the episode reflection."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """End an objective: self-evaluate, update tool counters, store what is worth remembering."""
    mem = open_memory()
    learned = mem.end_objective(resolve_id(mem, objective_id, "objective"), status, result, reflect=not no_reflect)
    _show_learnings(learned, json_out, "ended; nothing worth remembering")


@command("judge")
def judge_cmd(
    name: str = typer.Argument(..., help="The judge's name, e.g. brevity."),
    criteria: str = typer.Argument(..., help="What it checks, e.g. 'The output is at most 50 words'."),
    node: str = typer.Option(None, "--node", help="Only for this node (default: every node)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Configure a named LLM judge."""
    judge = open_memory().add_judge(name, criteria, node)
    if json_out:
        print_json(judge)
    else:
        console.print(f"judge {judge['name']} configured for {judge['node'] or 'every node'}")


def _trace_rows(result: Any) -> list[dict[str, Any]]:
    return [{"judge": v.judge, "passed": v.passed, "score": f"{v.score:.2f}", "reasoning": v.reasoning}
            for v in result.verdicts]


@command("trace")
def trace_cmd(
    input_text: str = typer.Argument(..., help="The agent's input."),
    output: str = typer.Argument(..., help="The agent's output."),
    node: str = typer.Option(..., "--node", help="The agent node / step that produced it."),
    ground_truth: str = typer.Option(None, "--ground-truth", help="The expected output, if known."),
    mode: str = typer.Option("online", "--mode", help="vanilla | online | offline+online"),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Judge one output, store the trace, and learn from failures (unless --mode vanilla)."""
    result = open_memory().trace(input_text, output, node=node, ground_truth=ground_truth, mode=mode)
    if json_out:
        print_json(result)
        return
    print_rows(_trace_rows(result), title=f"trace {result.trace_id}: {'passed' if result.passed else 'FAILED'}")
    if result.learnings:
        print_rows(learning_rows(result.learnings), title="learned")


@command("train")
def train_cmd(
    path: Path = typer.Argument(..., help="A JSONL file: one {input_text, output, ground_truth} per line."),
    node: str = typer.Option("default", "--node", help="The node the examples belong to."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Offline mode: judge a dataset and learn offline bullets from its failures."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise InvalidInputError(f"cannot read {path}: {e.strerror}") from None
    examples: list[Any] = []
    for i, line in enumerate(lines, 1):
        if line.strip():
            try:
                examples.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise InvalidInputError(f"{path}:{i} is not JSON: {e.msg}") from None
    report = open_memory().train(examples, node=node)
    if json_out:
        print_json(report)
    else:
        console.print(f"{report.examples} examples: {report.passed} passed, {report.failed} failed, "
                      f"{report.errors} errors; {len(report.learnings)} learning(s)")
        for line in report.stored():
            console.print(f"  {line}", markup=False)
