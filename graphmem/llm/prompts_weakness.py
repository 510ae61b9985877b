"""Request builder for the weakness trainer: lessons from the surprise moments of a weak domain.

Like :mod:`graphmem.llm.prompts`: the ``prompt`` is what a real model reads, ``inputs`` what the
OfflineLLM reads. Learnings and queries are untrusted text and are fenced.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphmem.errors import InvalidInputError
from graphmem.llm.base import LLMRequest
from graphmem.llm.prompts import MAX_ITEM_CHARS, SYSTEM_PROMPT, _check_items, _check_str, _clip, fence

WEAKNESS_PROMPT = """An agent's advice keeps surprising it in one domain of its work ({domain}):
advice it trusted failed, or advice it hardly trusted worked. Each surprise below names the advice
shown, how much the agent trusted it (confidence 0-1), how the task went, and the task.

SURPRISES:
{surprises}

Consolidate them into at most {n} lessons the agent should follow from now on in this domain:
when trusted advice failed, say what to check or do instead; when distrusted advice worked, say to
apply it. Each lesson is one instruction.

Fill these fields:
- lessons: objects with content (the lesson, worded as an instruction), applies_when (or null),
  recommendation (the concrete action, or null) and sources (0-based indexes of the surprises it
  is drawn from)"""


def weakness_request(domain: str, surprises: Sequence[dict[str, Any]], n: int = 3) -> LLMRequest:
    """Weakness-trainer request: at most ``n`` lessons for ``domain`` (a readable label) from
    ``surprises`` (keys learning, confidence, outcome "success"/"failure", query, reasons)."""
    _check_str("domain", domain)
    if not isinstance(n, int) or n < 1:
        raise InvalidInputError(f"n must be a positive int, got {n!r}")
    items = _check_items("surprises", surprises)
    if not items:
        raise InvalidInputError("surprises must hold at least one surprise moment")
    lines = "\n".join(
        f"{i}. advice: {_clip(str(s.get('learning') or ''), MAX_ITEM_CHARS)} | confidence: "
        f"{float(s.get('confidence') or 0.0):.2f} | outcome: {s.get('outcome')} | task: "
        f"{_clip(str(s.get('query') or '(none)'), MAX_ITEM_CHARS)}"
        + (f" | reasons: {', '.join(str(r) for r in s.get('reasons') or [])}" if s.get("reasons") else "")
        for i, s in enumerate(items)
    )
    prompt = WEAKNESS_PROMPT.format(domain=domain, surprises=fence("surprises", lines), n=n)
    return LLMRequest(task="weakness", prompt=prompt, system=SYSTEM_PROMPT,
                      inputs={"domain": domain, "surprises": items, "n": n})


__all__ = ["WEAKNESS_PROMPT", "weakness_request"]
