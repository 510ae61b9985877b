"""Promotion into instruction files and the demotion sweep (seed 003 system 7)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from graphmem import InvalidInputError, Memory
from graphmem.promote import END, START, line_text, match_line, overlap
from tests.conftest import FakeClock

OUTSIDE = "# Project rules\n\nHand-written intro.\n"
FOOTER = "\n## Footer\nkept as is\n"


@pytest.fixture
def cmem(make_memory: Callable[..., Memory], clock: FakeClock) -> Memory:
    return make_memory(clock=clock)


def _section(text: str) -> list[str]:
    body = text[text.index(START) + len(START) : text.index(END)]
    return [ln for ln in body.splitlines() if ln.strip()]


def test_promote_writes_section_idempotently_and_keeps_outside_text(cmem: Memory, tmp_path: Path) -> None:
    good = cmem.add_learning("Keep emails to Dana under 3 paragraphs", tool="send_email", confidence=0.9, tier="pinned")
    cmem.add_learning("Low confidence pinned rule", confidence=0.5, tier="pinned")
    cmem.add_learning("High confidence but not pinned", confidence=0.95)
    cmem.add_learning("Pinned but a candidate", confidence=0.95, tier="pinned", status="candidate")
    target = tmp_path / "AGENTS.md"
    target.write_text(OUTSIDE)

    first = cmem.promote(target)
    assert first.changed and not first.created
    assert [c.learning_id for c in first.promoted] == [good.id]
    text = target.read_text()
    assert text.startswith(OUTSIDE)
    assert _section(text) == [f"- Keep emails to Dana under 3 paragraphs <!-- graphmem:{good.id} -->"]

    second = cmem.promote(target)
    assert not second.changed and second.promoted == [] and second.already_present == 1
    assert target.read_text() == text

    # a hand-written line inside the section and text after it survive a new promotion
    edited = text.replace(END, "- Hand-written: run the linter before commits\n" + END) + FOOTER
    target.write_text(edited)
    other = cmem.add_learning("Always attach the invoice PDF for Acme", confidence=0.85, tier="pinned")
    third = cmem.promote(target)
    assert [c.learning_id for c in third.promoted] == [other.id]
    assert third.hand_written == 1
    final = target.read_text()
    assert final.startswith(OUTSIDE) and final.endswith(FOOTER)
    lines = _section(final)
    assert lines[1] == "- Hand-written: run the linter before commits"
    assert len(lines) == 3
    # promotions are logged as transitions
    fields = [t.field for t in cmem.store.transitions(good.id)]
    assert "promotion" in fields


def test_promote_creates_missing_file_and_min_confidence(cmem: Memory, tmp_path: Path) -> None:
    cmem.add_learning("Use ISO dates in reports", confidence=0.6, tier="pinned")
    target = tmp_path / "CLAUDE.md"
    assert cmem.promote(target).promoted == []  # 0.6 < 0.8
    report = cmem.promote(target, min_confidence=0.5)
    assert report.changed and len(report.promoted) == 1
    assert _section(target.read_text())[0].startswith("- Use ISO dates in reports <!-- graphmem:")
    with pytest.raises(InvalidInputError):
        cmem.promote(target, min_confidence=2.0)


def test_promote_refuses_unterminated_section(cmem: Memory, tmp_path: Path) -> None:
    target = tmp_path / "AGENTS.md"
    target.write_text(f"{START}\n- something\n")
    with pytest.raises(InvalidInputError, match="end marker"):
        cmem.promote(target)


def test_sweep_removes_contradicted_and_stale_keeps_hand_written_and_young(
    cmem: Memory, clock: FakeClock, tmp_path: Path
) -> None:
    contradicted = cmem.add_learning("Send the weekly report on Fridays", confidence=0.9, tier="pinned")
    stale = cmem.add_learning("Prefer Postgres for new services", confidence=0.9, tier="pinned")
    healthy = cmem.add_learning("Keep emails to Dana under 3 paragraphs", confidence=0.9, tier="pinned")
    target = tmp_path / "AGENTS.md"
    target.write_text(OUTSIDE)
    cmem.promote(target)
    # a hand-written line and a promoted line whose id comment was lost (matched by text)
    text = target.read_text().replace(END, "- Hand-written: never force-push main\n" + END)
    text = text.replace(f" <!-- graphmem:{stale.id} -->", "")
    target.write_text(text)

    # young: contradicted right away, but under demote_min_age_days (7) -> kept
    cmem.update_learning(contradicted.id, contradictions=3, validations=1)
    clock.advance(days=3)
    young = cmem.sweep([target])
    assert young.changes == [] and young.files[0].kept_young == 1
    assert target.read_text() == text

    # 70 days later: the contradicted one and the never-validated stale one go
    clock.advance(days=67)
    cmem.update_learning(healthy.id, validations=6)  # plenty of validations: not stale
    report = cmem.sweep([target, tmp_path / "missing.md"])
    removed = {c.learning_id: c.reason for c in report.changes}
    assert set(removed) == {contradicted.id, stale.id}
    assert removed[contradicted.id].startswith("contradicted")
    assert removed[stale.id].startswith("stale")
    assert report.files[1].found is False
    assert report.files[0].kept_unmatched == 1 and report.files[0].kept_matched == 1
    lines = _section(target.read_text())
    assert lines == [
        f"- Keep emails to Dana under 3 paragraphs <!-- graphmem:{healthy.id} -->",
        "- Hand-written: never force-push main",
    ]
    assert target.read_text().startswith(OUTSIDE)
    # demoted learnings are archived, with logged tier and promotion transitions
    for ident in (contradicted.id, stale.id):
        assert cmem.get_learning(ident).tier == "archive"
        changes = {(t.field, t.new) for t in cmem.store.transitions(ident)}
        assert ("tier", "archive") in changes
        assert ("promotion", "") in changes
    assert cmem.get_learning(healthy.id).tier == "pinned"
    # a second sweep has nothing left to do
    assert cmem.sweep([target]).changes == []


def test_sweep_removes_retired_learnings(cmem: Memory, clock: FakeClock, tmp_path: Path) -> None:
    learning = cmem.add_learning("Always cc the account manager", confidence=0.9, tier="pinned")
    target = tmp_path / "AGENTS.md"
    cmem.promote(target)
    clock.advance(days=10)
    cmem.retire_learning(learning.id)
    report = cmem.sweep(target)
    assert [c.reason for c in report.changes] == ["disabled"]
    assert _section(target.read_text()) == []


def test_line_matching_helpers() -> None:
    assert line_text("- Keep it short <!-- graphmem:0123abcd-0000-0000-0000-000000000000 -->") == (
        "Keep it short",
        "0123abcd-0000-0000-0000-000000000000",
    )
    assert line_text("* plain line") == ("plain line", None)
    assert overlap("keep emails to Dana short", "keep emails to Dana under 3 paragraphs") == 0.5
    assert overlap("totally different", "keep emails short") == 0.0
    assert match_line("nothing like it", [], 0.5) is None
