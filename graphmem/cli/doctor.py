"""``graphmem doctor [--repair] [--json]``: check a file for problems and repair what can be."""

from __future__ import annotations

import typer

from graphmem.cli.common import command, console, open_memory, print_json, print_rows


@command("doctor")
def doctor_cmd(
    repair: bool = typer.Option(False, "--repair", help="Fix what can be fixed (unknown status -> disabled, ...)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List problems in the file (bad values, missing Meta, dangling links, catalog mismatches)."""
    mem = open_memory()
    report = mem.doctor(repair=repair)
    if json_out:
        print_json({**report.model_dump(), "ok": report.ok})
    else:
        if report.problems:
            print_rows(
                [{"kind": p["kind"], "table": p["table"], "id": str(p["id"] or ""), "problem": p["message"],
                  "repairable": "yes" if p["repairable"] else "no"} for p in report.problems],
                title="problems",
            )
        for line in report.repaired:
            console.print(f"repaired: {line}", highlight=False)
        left = len(report.remaining)
        console.print("no problems found" if not report.problems else f"{left} problem(s) left", highlight=False)
    if not report.ok:
        raise typer.Exit(1)
