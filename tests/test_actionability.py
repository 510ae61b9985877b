"""Actionability classifier (seed 003 system 9): the seed's seven examples and the scoring rules."""

from __future__ import annotations

import pytest

from graphmem.config import Settings
from graphmem.errors import InvalidInputError
from graphmem.learn import actionability as act
from graphmem.learn.actionability import ActionabilityScore, is_actionable, score_actionability

# (text, actionable?, the seed's score, whether the seed's score is a lower bound "0.65+")
SEED_EXAMPLES = [
    ("Always use 4 spaces for Python indentation when editing .py files", True, 0.59, False),
    ("RT @user: This tweet got 5000 likes in 24 hours (eng:5000)", False, 0.12, False),
    ("When debugging Python imports, verify circular dependency...", True, 0.65, True),
    ("User prefers dark mode and minimal animations", False, 0.20, False),
    ("Run `pip install pytest` before running tests", True, 0.50, True),
    ("The system scored 74/100 on the reasoning benchmark", False, 0.15, False),
    ("Never use `git push --force` on main branch", True, 0.60, True),
]


@pytest.mark.parametrize(("text", "actionable", "seed_score", "at_least"), SEED_EXAMPLES)
def test_seed_examples_fall_on_the_right_side(text: str, actionable: bool, seed_score: float, at_least: bool) -> None:
    result = score_actionability(text)
    assert result.is_actionable is actionable
    assert is_actionable(text) is actionable
    threshold = Settings().actionability_threshold
    assert (result.score >= threshold) is actionable
    if at_least:
        assert result.score >= seed_score - 0.05
    else:
        assert result.score == pytest.approx(seed_score, abs=0.13)


def test_pattern_set_sizes_match_the_seed() -> None:
    assert len(act.DIRECTIVE_POSITIVE) == 8
    assert len(act.DIRECTIVE_NEGATIVE) == 4
    assert len(act.CONDITION) == 5
    assert len(act.SPECIFICITY_POSITIVE) == 11
    assert len(act.SPECIFICITY_NEGATIVE) == 2
    assert len(act.OBSERVATION) == 12


def test_breakdown_is_the_weighted_sum_of_the_dimensions() -> None:
    s = Settings()
    r = score_actionability("Always use 4 spaces for Python indentation when editing .py files")
    expected = (
        s.actionability_w_directive * r.directive
        + s.actionability_w_condition * r.condition
        + s.actionability_w_specificity * r.specificity
        + s.actionability_w_not_observation * r.not_observation
    )
    assert r.score == pytest.approx(expected, abs=1e-3)
    assert r.directive == pytest.approx(0.6)  # two directive patterns: "use|always" and "^Always"
    assert r.condition == pytest.approx(0.3)  # "when"
    assert r.not_observation == 1.0
    pure = score_actionability("User prefers dark mode and minimal animations")
    assert (pure.directive, pure.condition, pure.specificity, pure.not_observation) == (0.0, 0.0, 0.0, 1.0)
    assert pure.score == pytest.approx(0.20)


def test_positive_matches_cap_at_one_and_penalties_apply() -> None:
    loaded = score_actionability("Never use `git push --force` on main branch in the repo/src/app.py v1.2 config")
    assert loaded.specificity == 1.0
    vague = score_actionability("Use something somehow, whatever")
    assert vague.specificity == 0.0
    observed = score_actionability("I noticed the build was slow yesterday")
    assert observed.directive == 0.0 and observed.not_observation < 1.0 and not observed.is_actionable


def test_weights_and_threshold_come_from_settings() -> None:
    text = "Keep emails under 3 paragraphs"
    assert is_actionable(text)
    strict = Settings(actionability_threshold=0.95, actionability_instruction_form=False)
    result = score_actionability(text, strict)
    assert result.threshold == 0.95 and not result.is_actionable
    assert score_actionability(text, Settings(actionability_threshold=0.95)).is_actionable  # an instruction
    only_directive = Settings(
        actionability_w_directive=1.0,
        actionability_w_condition=0.0,
        actionability_w_specificity=0.0,
        actionability_w_not_observation=0.0,
    )
    assert score_actionability(text, only_directive).score == pytest.approx(score_actionability(text).directive)


@pytest.mark.parametrize(
    "text",
    ["Keep emails under 3 paragraphs", "Always cc Dana", "Don't add emojis", "Prefer shorter emails",
     "Space out web_search calls and back off before retrying after a rate limit"],
)
def test_learnings_the_offline_llm_writes_are_actionable(text: str) -> None:
    assert is_actionable(text)


@pytest.mark.parametrize(
    "text",
    ["The meeting was moved to Tuesday", "Dana said the pricing was too high last week", "", "   "],
)
def test_observations_and_empty_text_are_not_actionable(text: str) -> None:
    assert not is_actionable(text)


def test_result_model_and_bad_input() -> None:
    r = score_actionability("Run `pip install pytest` before running tests")
    assert isinstance(r, ActionabilityScore)
    assert 0.0 <= r.score <= 1.0
    with pytest.raises(InvalidInputError):
        score_actionability(None)  # type: ignore[arg-type]
