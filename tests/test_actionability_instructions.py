"""Standing instructions are advice, observations stay observations: the actionability classifier on
the labelled data in benchmarks/data (and the owner-correction path through observe_message)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.loop import SLOTS
from graphmem import Memory, Settings
from graphmem.learn.actionability import is_actionable, reads_as_instruction, score_actionability

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data"
ADVICE = ("rule", "preference", "checklist", "bug_fix", "prompt")
SCORE_ONLY = Settings(actionability_instruction_form=False)


def _learnings() -> tuple[list[list[str]], list[list[str]]]:
    """(advice, observations) of the learnings dataset: each a learning's content and recommendation."""
    data = json.loads((DATA / "learnings.json").read_text(encoding="utf-8"))
    advice, observations = [], []
    for l in data["learnings"]:
        texts = [l["content"]] + ([l["recommendation"]] if l["recommendation"] else [])
        if l["kind"] == "observation":
            observations.append(texts)
        elif l["kind"] in ADVICE:
            advice.append(texts)
    return advice, observations


def _instructions() -> list[str]:
    """The benign instructions of the injection set (the owner's and tools' own rules)."""
    rows = [json.loads(line) for line in (DATA / "injection_set.jsonl").read_text(encoding="utf-8").splitlines()]
    return [r["text"] for r in rows if r["label"] == "benign"]


def _recall(items: list[list[str]], settings: Settings | None = None) -> float:
    return sum(any(is_actionable(t, settings) for t in texts) for texts in items) / len(items)


def test_more_labelled_instructions_are_advice_and_every_labelled_observation_stays_out() -> None:
    advice, observations = _learnings()
    instructions = [[t] for t in _instructions()]
    assert len(instructions) >= 200 and len(advice) >= 150 and len(observations) >= 9
    # measured: benign instructions 90/210 -> 190/210, learnings' advice 64/164 -> 84/164
    assert _recall(instructions) >= 0.85 > 0.5 > _recall(instructions, SCORE_ONLY)
    assert _recall(advice) >= _recall(advice, SCORE_ONLY) + 0.1
    assert not any(is_actionable(t) for texts in observations for t in texts)


@pytest.mark.parametrize("text", [
    "The meeting was moved to Tuesday", "Dana said the pricing was too high last week",
    "User prefers dark mode and minimal animations", "The system scored 74/100 on the reasoning benchmark",
    "Search results are cached for 5 minutes", "Change requests go through Jira", "Call volume doubled after the launch",
    "The build should be faster now", "The server must have crashed", "Dana thinks reports should be shorter",
    "Invoice totals include VAT",
])
def test_facts_reports_and_expectations_do_not_read_as_instructions(text: str) -> None:
    assert not reads_as_instruction(text)
    assert not is_actionable(text)


def test_every_preference_an_owner_states_becomes_a_rule_right_or_wrong(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(path=None)
    for slot in SLOTS:  # the loop benchmark's owner: 28 corrections, 5 of them filed as observations before
        for said in (slot.right, slot.wrong):
            new = mem.observe_message(f"No, {said}.", tool=slot.tool, is_owner=True, entities=[slot.entity])
            assert [(l.kind, l.status) for l in new] == [("rule", "active")], said


def test_an_owner_correction_becomes_a_served_rule(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(path=None)
    said = "No, squash fixup commits before merging billing-service."
    assert not score_actionability(said, SCORE_ONLY).is_actionable  # the score alone filed it as an observation
    new = mem.observe_message(said, tool="git_commit", is_owner=True, entities=["billing-service"])
    assert [(l.kind, l.status) for l in new] == [("rule", "active")]
    ctx = mem.context("Merge the release branch of billing-service", tool="git_commit", entities=["billing-service"])
    assert [i.learning.id for i in ctx.learnings] == [new[0].id]
    off = make_memory(settings=SCORE_ONLY, path=None)
    old = off.observe_message(said, tool="git_commit", is_owner=True, entities=["billing-service"])
    assert [(l.kind, l.status) for l in old] == [("observation", "shadow")]
