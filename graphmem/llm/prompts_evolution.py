"""Request builders for bullet evolution (seed 002 Darwin-Gödel): crossover and bullet tests.

Like :mod:`graphmem.llm.prompts`: each builder returns an :class:`~graphmem.llm.base.LLMRequest`
whose ``prompt`` a real model reads and whose ``inputs`` the OfflineLLM reads. Bullets, inputs and
outputs are untrusted text and are fenced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphmem.errors import InvalidInputError
from graphmem.llm.base import LLMRequest
from graphmem.llm.prompts import MAX_ITEM_CHARS, SYSTEM_PROMPT, _check_items, _check_str, _clip, fence

CROSSOVER_PROMPT = """A bullet (a short rule an agent follows) keeps failing. Breed {n} candidate
rewrites of it by crossover: each candidate merges the failing bullet with one of its most helpful
sibling bullets (same scope), keeping what made the sibling helpful and what the failing bullet is
about, and fixing what made it fail on the cases below. Each candidate is one instruction.

FAILING BULLET:
{original}

MOST HELPFUL SIBLINGS (helpful/harmful ratings):
{parents}

CASES WHERE THE FAILING BULLET DID NOT HELP:
{failures}

Fill these fields:
- candidates: {n} objects with content (the rule, worded as an instruction), applies_when (or
  null) and recommendation (the concrete action, or null); all different"""

BULLET_TEST_PROMPT = """You are the "{judge_name}" judge. A bullet (a rule given to the agent) is
being tested on a case the agent failed. Would following the bullet have made the output meet your
criteria (and match the ground truth when one is given)?

CRITERIA:
{criteria}

BULLET:
{bullet}

INPUT:
{input_text}

AGENT OUTPUT (failed):
{output}

GROUND TRUTH (the correct answer, if known):
{ground_truth}

WHY IT FAILED (your earlier verdict, if any):
{reasoning}

Fill these fields:
- helpful: true if following the bullet would have fixed this failure
- reasoning: why, in one sentence"""


def _bullet_text(b: Mapping[str, Any]) -> str:
    parts = [str(b.get("content") or "")]
    if b.get("applies_when"):
        parts.append(f"(applies when: {b['applies_when']})")
    if b.get("recommendation"):
        parts.append(f"(action: {b['recommendation']})")
    return _clip(" ".join(parts), MAX_ITEM_CHARS)


def crossover_request(original: Mapping[str, Any], parents: Sequence[Mapping[str, Any]],
                      failures: Sequence[Mapping[str, Any]], n: int = 4) -> LLMRequest:
    """Crossover request: ``n`` candidate rewrites of ``original`` (keys content, applies_when,
    recommendation) bred with ``parents`` (same keys plus helpful, harmful), informed by the
    ``failures`` (keys input_text, output, ground_truth, reasoning)."""
    if not isinstance(original, Mapping) or not isinstance(original.get("content"), str):
        raise InvalidInputError("original must be a dict with a 'content' string")
    if not isinstance(n, int) or n < 1:
        raise InvalidInputError(f"n must be a positive int, got {n!r}")
    items = _check_items("parents", parents)
    cases = _check_items("failures", failures)
    parent_text = "\n".join(f"- [{p.get('helpful', 0)}/{p.get('harmful', 0)}] {_bullet_text(p)}" for p in items)
    case_text = "\n".join(
        f"- input: {_clip(str(c.get('input_text') or ''), MAX_ITEM_CHARS)} | output: "
        f"{_clip(str(c.get('output') or '(none)'), MAX_ITEM_CHARS)} | expected: "
        f"{_clip(str(c.get('ground_truth') or '(unknown)'), MAX_ITEM_CHARS)} | why: "
        f"{_clip(str(c.get('reasoning') or ''), MAX_ITEM_CHARS)}" for c in cases)
    prompt = CROSSOVER_PROMPT.format(n=n, original=fence("bullet", _bullet_text(original)),
                                     parents=fence("siblings", parent_text), failures=fence("failures", case_text))
    return LLMRequest(task="crossover", prompt=prompt, system=SYSTEM_PROMPT,
                      inputs={"original": dict(original), "parents": items, "failures": cases, "n": n})


def bullet_test_request(judge_name: str, criteria: str, bullet: str, input_text: str, output: str | None,
                        ground_truth: str | None, reasoning: str | None) -> LLMRequest:
    """Bullet-test request (seed 002 fitness): would ``bullet`` have helped on this failed case?"""
    for name, value in (("judge_name", judge_name), ("criteria", criteria), ("bullet", bullet),
                        ("input_text", input_text)):
        _check_str(name, value)
    for opt_name, opt_value in (("output", output), ("ground_truth", ground_truth), ("reasoning", reasoning)):
        _check_str(opt_name, opt_value, optional=True)
    prompt = BULLET_TEST_PROMPT.format(
        judge_name=judge_name, criteria=criteria, bullet=fence("bullet", bullet), input_text=fence("input", input_text),
        output=fence("output", output), ground_truth=fence("ground-truth", ground_truth),
        reasoning=fence("reasoning", reasoning))
    return LLMRequest(task="bullet_test", prompt=prompt, system=SYSTEM_PROMPT,
                      inputs={"judge_name": judge_name, "criteria": criteria, "bullet": bullet,
                              "input_text": input_text, "output": output, "ground_truth": ground_truth,
                              "reasoning": reasoning})


__all__ = ["BULLET_TEST_PROMPT", "CROSSOVER_PROMPT", "bullet_test_request", "crossover_request"]
