"""`graphmem prompt ...`: add, list, serve, outcome, test, active, propose, with --json."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from graphmem.cli import _register_groups, app

_register_groups()


def run(db: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["--db", str(db), "--embedder", "hash", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_prompt_commands_round_trip(tmp_path: Path) -> None:
    db = tmp_path / "p.kuzu"
    v1 = json.loads(run(db, "prompt", "add", "orchestrator", "Route each request to the cheapest model.", "--json"))
    assert (v1["state"], v1["label"]) == ("active", "orchestrator_v1")
    v2 = json.loads(run(db, "prompt", "propose", "orchestrator", "--feedback",
                        "Don't use the expensive model for simple arithmetic, use the local one.", "--json"))
    assert v2["state"] == "candidate"
    served = json.loads(run(db, "prompt", "serve", "orchestrator", "--session", "s1", "--json"))
    assert served["version_id"] in (v1["id"], v2["id"])
    run(db, "outcome", served["context_id"], "--success")
    listed = {v["id"]: v for v in json.loads(run(db, "prompt", "list", "--json"))}
    assert listed[served["version_id"]]["helpful"] == 1 and listed[served["version_id"]]["served"] == 1
    test = json.loads(run(db, "prompt", "test", "orchestrator", "--json"))
    assert test["decision"] == "continue" and test["candidate"]["id"] == v2["id"]
    assert json.loads(run(db, "prompt", "active", "orchestrator", "--json"))["id"] == v1["id"]
