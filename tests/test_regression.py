"""From failures to tests: a failed, fixed trace becomes a spec and a replay test that passes or
fails with the agent given, end to end through `pytest DIR`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphmem import InvalidInputError, Memory


def failing_memory(make_memory: Callable[..., Memory]) -> Memory:
    mem = make_memory()
    mem.trace("What's 2 + 2?", "Let me execute code to find out.", node="router", ground_truth="4")
    mem.trace("Capital of France?", "Paris", node="router", ground_truth="Paris")  # passed: no spec
    return mem


def test_specs_hold_input_expected_actual_and_fix(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    mem = failing_memory(make_memory)
    report = mem.export_tests(tmp_path / "ai", agent="agent:answer")
    assert len(report.specs) == 1
    text = Path(report.specs[0]).read_text(encoding="utf-8")
    spec = json.loads("\n".join(l for l in text.splitlines() if not l.startswith("#")))
    assert spec["input"]["messages"] == [{"role": "user", "content": "What's 2 + 2?"}]
    assert spec["expected"] == {"response_contains": ["4"], "response_not_contains": ["Let me execute code to find out."]}
    assert spec["actual"]["response"] == "Let me execute code to find out." and spec["actual"]["failure_reason"]
    assert spec["fix"]["rules_added"] and spec["fix"]["confidence"] > 0
    with pytest.raises(InvalidInputError, match="import path"):
        mem.export_tests(tmp_path / "ai", agent="not a path")


def test_pytest_on_the_folder_passes_with_a_fixed_agent_and_fails_with_the_old_one(
    make_memory: Callable[..., Memory], tmp_path: Path,
) -> None:
    mem = failing_memory(make_memory)
    out = tmp_path / "ai"
    mem.export_tests(out, agent="agent:answer")
    (tmp_path / "agent.py").write_text("def answer(text):\n    return 'The answer is 4.'\n", encoding="utf-8")
    (tmp_path / "old_agent.py").write_text("def answer(text):\n    return 'Let me execute code to find out.'\n",
                                           encoding="utf-8")

    def pytest_on(agent: str | None) -> subprocess.CompletedProcess[str]:
        env = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
        if agent:
            env["GRAPHMEM_AGENT"] = agent
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(out)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    good = pytest_on(None)
    assert good.returncode == 0 and "1 passed" in good.stdout, good.stdout + good.stderr
    bad = pytest_on("old_agent:answer")
    assert bad.returncode == 1 and "1 failed" in bad.stdout, bad.stdout + bad.stderr


def test_cli_tests_export_json(make_memory: Callable[..., Memory], tmp_path: Path, db_path: Path) -> None:
    from graphmem.cli import _register_groups, app

    failing_memory(make_memory).close()
    _register_groups()
    result = CliRunner().invoke(app, ["--db", str(db_path), "--embedder", "hash", "--user", "alice", "tests", "export",
                                      "--dir", str(tmp_path / "ai"), "--agent", "agent:answer", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert len(report["specs"]) == 1 and report["test_file"].endswith("test_graphmem_behaviour.py")
