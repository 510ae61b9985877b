"""CLI for regression tests from failures: ``graphmem tests export``."""

from __future__ import annotations

import typer

from graphmem.cli.common import app, command, console, open_memory, print_json
from graphmem.errors import GraphmemError

tests_app = typer.Typer(help="Behaviour tests made from failures that later got a fix.", no_args_is_help=True)
app.add_typer(tests_app, name="tests")


@command("export", target=tests_app)
def export_cmd(
    directory: str = typer.Option(..., "--dir", help="The folder to write the specs and the pytest file into."),
    agent: str = typer.Option(..., "--agent", help="Your agent as an import path module:function (text in, text out)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Write a YAML behaviour spec per fixed failure and a pytest file that replays each input
    through your agent; then run `pytest DIR`."""
    mem = open_memory()
    if not hasattr(mem, "export_tests"):
        raise GraphmemError("tests export works on a database file (--db), not through --server yet")
    report = mem.export_tests(directory, agent=agent)
    if json_out:
        print_json(report)
        return
    console.print(f"{len(report.specs)} spec(s) and {report.test_file} written; run: pytest {report.dir}")
