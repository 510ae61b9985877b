"""CLI for the benchmarks: ``graphmem bench NAME [--check] [--json] [ARGS...]``.

NAME is one of learnings, locomo, scale, loop, ingest, summaries, injection; every other argument is passed
to that benchmark's ``main(argv)`` unchanged (e.g. ``graphmem bench learnings --embedder hash``,
``graphmem bench loop --episodes 200``). ``--check`` is the learnings regression guard. With
``--json`` the benchmark's tables go to stderr and its result is printed as JSON on stdout.
The benchmarks live in the ``benchmarks`` package at the repository root.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from graphmem.cli import command, console, print_json
from graphmem.errors import GraphmemError

#: bench name -> (module, whether its main takes --json itself, its default JSON output file)
BENCHMARKS: dict[str, tuple[str, bool, str | None]] = {
    "learnings": ("benchmarks.learnings_bench", True, "learnings.json"),
    "locomo": ("benchmarks.locomo", False, "locomo.json"),
    "scale": ("benchmarks.scale", False, None),
    "loop": ("benchmarks.loop", True, "loop.json"),
    "ingest": ("benchmarks.ingest", False, "ingest.json"),
    "summaries": ("benchmarks.summaries_bench", False, "summaries.json"),
    "injection": ("benchmarks.injection", False, None),
}


def run_benchmark(name: str, argv: Sequence[str], *, check: bool = False, as_json: bool = False) -> int:
    """Run one benchmark's ``main(argv)``; returns the exit status (1 when the guard fails)."""
    if name not in BENCHMARKS:
        raise GraphmemError(f"unknown benchmark {name!r}; choose one of: {', '.join(BENCHMARKS)}")
    if check and name != "learnings":
        raise GraphmemError("--check is the retrieval regression guard: use it with `graphmem bench learnings`")
    module_name, native_json, default_out = BENCHMARKS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise GraphmemError(
            f"cannot import {module_name} ({e}); run from a source checkout with the benchmarks package installed"
        ) from e
    args = list(argv) + (["--check"] if check else [])
    if as_json and native_json:
        args.append("--json")
    redirect = as_json and not native_json
    with contextlib.redirect_stdout(sys.stderr) if redirect else contextlib.nullcontext():
        result: Any = module.main(args)
    if redirect:
        saved = Path(str(module.__file__)).parent / "results" / default_out if default_out else None
        if isinstance(result, (dict, list)):
            print_json(result)
        elif saved is not None and saved.exists():
            sys.stdout.write(saved.read_text(encoding="utf-8"))
        else:
            sys.stdout.write(json.dumps({"benchmark": name, "status": result}) + "\n")
    if isinstance(result, int) and not isinstance(result, bool):
        return result
    return 0


@command(
    "bench",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def bench_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="learnings | locomo | scale | loop | ingest | summaries | injection"),
    check: bool = typer.Option(False, "--check", help="learnings only: the regression guard (exit 1 on a regression)."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON (tables go to stderr)."),
) -> None:
    """Run a benchmark; extra arguments go to it (e.g. `graphmem bench learnings --embedder hash`)."""
    status = run_benchmark(name, list(ctx.args), check=check, as_json=json_out)
    if status:
        if not json_out:
            console.print(f"bench {name}: exit status {status}")
        raise typer.Exit(status)
