"""The stage benchmark (benchmarks/stages.py): every stage of the loop changes what it should, and a
stage that changes nothing fails the run."""

from __future__ import annotations

import json

import pytest

from benchmarks import stages


def test_every_stage_changes_what_it_should(capsys: pytest.CaptureFixture[str]) -> None:
    assert stages.main(["--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["passed"] and [s["name"] for s in result["stages"]] == [
        "observe", "retrieve", "outcome", "lifecycle", "weakness trainer", "domain gaps", "domain evolution",
        "summaries", "sessions", "auto-tuner"]
    assert all(s["passed"] for s in result["stages"])


def test_a_stage_that_changes_nothing_fails_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert stages.main(["--episodes", "60", "--set", "weakness_min_surprises=1000", "--set", "domain_shift_min=0.9",
                        "--set", "tune_p5_drop=1.0"]) == 1
    out = capsys.readouterr().out
    assert "[FAIL] weakness trainer" in out and "[FAIL] domain evolution" in out and "[PASS] observe" in out
    assert "[FAIL] auto-tuner" in out  # a ratchet that lets a harmful step through is a failure
    assert out.rstrip().endswith("overall: FAIL")
