"""From failures to tests (seed 004 "AI Regression Tests").

A judged failure that later got a fix becomes a behaviour spec and a replay test. The failures
are the user's Traces that the judges failed (``passed = false``) and that a live learning was
derived from (``DERIVED_FROM``: the reflector's rule, the fix). :func:`export_tests` writes into
a folder:

- one ``episode_<trace id>.yaml`` per failure, as in the seed: ``input`` (the messages),
  ``expected`` (``response_contains``: the ground truth; ``response_not_contains``: the failing
  output when it did not contain the ground truth), ``actual`` (the output, the judges'
  reasons), ``fix`` (the rules added, their confidence, the learnings they superseded). The
  YAML is written in its JSON-compatible flow style (valid YAML 1.2, readable without PyYAML);
- ``test_graphmem_behaviour.py``: one pytest case per spec that replays ``input`` through your
  agent callable and checks ``expected`` (case-insensitive substring checks);
- ``graphmem_tests.json``: the agent's import path (``module:function``, called with the input
  text, returning the output text); ``GRAPHMEM_AGENT`` overrides it when pytest runs.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from graphmem.errors import InvalidInputError

if TYPE_CHECKING:
    from graphmem.store import KuzuGraphStore

_AGENT = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
TEST_FILE = "test_graphmem_behaviour.py"
CONFIG_FILE = "graphmem_tests.json"


class TestExport(BaseModel):
    """What :func:`export_tests` wrote."""

    __test__ = False  # not a pytest class

    dir: str
    agent: str
    specs: list[str] = Field(default_factory=list)
    test_file: str = ""


def failure_specs(store: KuzuGraphStore, user: str) -> list[dict[str, Any]]:
    """The behaviour specs of the user's fixed failures, oldest first."""
    specs = []
    for t in store.failed_traces_with_fixes(user):
        verdicts = store.failing_verdicts(t["id"])
        fixes = store.get_learnings(t["fixes"])
        truth, actual = t["ground_truth"], t["output"] or ""
        expected: dict[str, list[str]] = {"response_contains": [truth] if truth else [],
                                          "response_not_contains": []}
        if actual.strip() and (not truth or truth.lower() not in actual.lower()):
            expected["response_not_contains"].append(actual)
        specs.append({
            "episode_id": t["id"],
            "created_at": t["created_at"].isoformat() if t["created_at"] else None,
            "failure_type": "judged:" + ",".join(v["judge"] for v in verdicts) if verdicts else "judged",
            "node": t["node"],
            "input": {"messages": [{"role": "user", "content": t["input_text"] or ""}]},
            "expected": expected,
            "actual": {"response": actual, "failure_reason": "; ".join(v["reasoning"] or "" for v in verdicts)},
            "fix": {
                "rules_added": [l.content for l in fixes],
                "learning_ids": [l.id for l in fixes],
                "confidence": max((l.confidence for l in fixes), default=0.0),
                "supersedes": sorted({c for l in fixes for c in store.superseded_by_fix(l.id)}),
            },
        })
    return specs


def export_tests(store: KuzuGraphStore, user: str, directory: str | os.PathLike[str], *, agent: str) -> TestExport:
    """Write the specs, the replay test and its config into ``directory`` (created if missing;
    files of earlier exports are overwritten, other files kept)."""
    if not isinstance(agent, str) or not _AGENT.match(agent):
        raise InvalidInputError(f"agent must be an import path like 'mypackage.agent:answer', got {agent!r}")
    folder = Path(directory)
    if folder.exists() and not folder.is_dir():
        raise InvalidInputError(f"{folder} is a file; pass a folder for the tests")
    folder.mkdir(parents=True, exist_ok=True)
    out = TestExport(dir=str(folder), agent=agent)
    for spec in failure_specs(store, user):
        path = folder / f"episode_{spec['episode_id']}.yaml"
        header = (f"# behaviour spec from the failed trace {spec['episode_id']} (node {spec['node']}), "
                  "written by graphmem tests export\n")
        path.write_text(header + json.dumps(spec, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        out.specs.append(str(path))
    (folder / CONFIG_FILE).write_text(json.dumps({"agent": agent}, indent=2) + "\n", encoding="utf-8")
    test_path = folder / TEST_FILE
    test_path.write_text(_TEST_TEMPLATE, encoding="utf-8")
    out.test_file = str(test_path)
    return out


_TEST_TEMPLATE = '''"""Behaviour tests written by `graphmem tests export`: each replays a failed episode's input
through the agent and checks what the fix should now make true. Run: pytest THIS_FOLDER.

The agent is the import path in graphmem_tests.json (or $GRAPHMEM_AGENT), ``module:function``,
called with the input text and returning the output text.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SPECS = sorted(HERE.glob("episode_*.yaml"))


def load_spec(path: Path) -> dict:
    """A spec file: comment lines, then YAML in JSON-compatible flow style."""
    text = "\\n".join(line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("#"))
    return json.loads(text)


def agent():
    path = os.environ.get("GRAPHMEM_AGENT") or json.loads((HERE / "graphmem_tests.json").read_text())["agent"]
    module, _, name = path.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("spec_path", SPECS, ids=[p.stem for p in SPECS])
def test_behaviour(spec_path: Path) -> None:
    spec = load_spec(spec_path)
    text = spec["input"]["messages"][-1]["content"]
    output = str(agent()(text))
    for wanted in spec["expected"].get("response_contains", []):
        assert wanted.lower() in output.lower(), f"expected {wanted!r} in the output {output!r}"
    for unwanted in spec["expected"].get("response_not_contains", []):
        assert unwanted.lower() not in output.lower(), f"the output repeats the failure {unwanted!r}"
'''


__all__ = ["TestExport", "export_tests", "failure_specs"]
