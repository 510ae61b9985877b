"""Bulk writes from a JSONL file, with a progress bar: ``graphmem add-file`` and ``graphmem event-file``.

Each line of the file is one JSON object with the arguments of ``Memory.add_learning``
(``content`` required) or ``Memory.record_event`` (``kind`` and ``content``). The whole file is
validated first and written in one transaction (nothing is written if a line is invalid); the
progress bar (on stderr) follows the embedding, the slow part.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from graphmem.cli.common import command, console, err_console, open_memory, print_json
from graphmem.errors import GraphmemError
from graphmem.jsonl import read_objects


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The file's objects, one per non-empty line; a bad line is an error naming it."""
    items = [item for _, item in read_objects(path, not_json_hint="write one JSON object per line")]
    if not items:
        raise GraphmemError(f"{path} holds no JSON objects")
    return items


@contextmanager
def progress_bar(label: str, show: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A ``progress(done, total)`` callback drawing a rich bar on stderr (None when ``show`` is off)."""
    if not show:
        yield None
        return
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=err_console, transient=True) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


@command("add-file")
def add_file_cmd(
    path: Path = typer.Argument(..., help="A JSONL file: one learning per line, e.g. {\"content\": \"...\", \"tool\": \"x\"}."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not draw the progress bar."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Add many learnings from a JSONL file in one transaction (duplicates are merged)."""
    items = read_jsonl(path)
    mem = open_memory()
    with progress_bar("embedding learnings", not no_progress and not json_out) as progress:
        made = mem.add_learnings(items, progress=progress)
    if json_out:
        print_json(made)
    else:
        console.print(f"added {len(made)} learning(s) from {path} ({len({l.id for l in made})} distinct)")


@command("event-file")
def event_file_cmd(
    path: Path = typer.Argument(..., help="A JSONL file: one event per line, e.g. {\"kind\": \"message\", \"content\": \"...\"}."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not draw the progress bar."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Log many events from a JSONL file in one transaction."""
    items = read_jsonl(path)
    mem = open_memory()
    with progress_bar("embedding events", not no_progress and not json_out) as progress:
        events = mem.record_events(items, progress=progress)
    if json_out:
        print_json(events)
    else:
        console.print(f"logged {len(events)} event(s) from {path}")
