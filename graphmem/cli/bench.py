"""CLI for the benchmarks: ``graphmem bench NAME [--check] [--json] [ARGS...]``.

NAME is one of :data:`BENCHMARKS` (also runnable as ``python -m benchmarks.NAME``); every other argument is passed
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

from graphmem.cli.common import command, console, print_json
from graphmem.errors import GraphmemError

#: bench name -> (module, whether its main takes --json itself, its default JSON output file)
BENCHMARKS: dict[str, tuple[str, bool, str | None]] = {
    "learnings": ("benchmarks.learnings", True, "learnings.json"),
    "locomo": ("benchmarks.locomo", False, "locomo.json"),
    "scale": ("benchmarks.scale", False, None),
    "loop": ("benchmarks.loop", True, "loop.json"),
    "stages": ("benchmarks.stages", True, "stages.json"),
    "ingest": ("benchmarks.ingest", False, "ingest.json"),
    "summaries": ("benchmarks.summaries", False, "summaries.json"),
    "injection": ("benchmarks.injection", False, None),
    "lexical": ("benchmarks.lexical", False, None),
    "server": ("benchmarks.server", False, None),
    "contention": ("benchmarks.contention", False, None),
    "stress": ("benchmarks.stress", False, None),
    "cypher_view": ("benchmarks.cypher_view", False, None),
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
        results = Path(str(module.__file__)).parent / "results"
        folders = [results] if "--save" in args else [results / "local", results]
        saved = next((f / default_out for f in folders if default_out and (f / default_out).exists()), None)
        if isinstance(result, (dict, list)):
            print_json(result)
        elif saved is not None:
            sys.stdout.write(saved.read_text(encoding="utf-8"))
        else:
            sys.stdout.write(json.dumps({"benchmark": name, "status": result}) + "\n")
    if isinstance(result, int) and not isinstance(result, bool):
        return result
    return 0


@command(
    "bench",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
)
def bench_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(None, help=" | ".join(BENCHMARKS) + "."),
    check: bool = typer.Option(False, "--check", help="learnings only: the regression guard (exit 1 on a regression)."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON (tables go to stderr)."),
    show_help: bool = typer.Option(
        False, "--help", help="Show this message; after NAME, that benchmark's own options."
    ),
) -> None:
    """Run a benchmark; extra arguments go to it (`graphmem bench NAME --help` lists them)."""
    if name is None and not show_help:
        raise GraphmemError(f"give a benchmark name: {', '.join(BENCHMARKS)} (graphmem bench --help)")
    if name is None or (show_help and name not in BENCHMARKS):
        typer.echo(ctx.get_help())
        return
    if show_help:
        benchmark_help(name)
        return
    status = run_benchmark(name, list(ctx.args), check=check, as_json=json_out)
    if status:
        if not json_out:
            console.print(f"bench {name}: exit status {status}")
        raise typer.Exit(status)


def benchmark_help(name: str) -> None:
    """Print the benchmark's own options (its argparse ``--help``), as `graphmem bench NAME`."""
    module = importlib.import_module(BENCHMARKS[name][0])
    argv0 = sys.argv[0]
    sys.argv[0] = f"graphmem bench {name}"
    try:
        module.main(["--help"])
    except SystemExit as e:
        if e.code not in (0, None):
            raise
    finally:
        sys.argv[0] = argv0
