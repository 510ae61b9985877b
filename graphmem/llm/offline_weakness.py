"""OfflineLLM rule for the weakness trainer: deterministic lessons from surprise moments.

Surprises are grouped by the advice shown and by how they surprised (trusted advice that failed,
distrusted advice that worked); the largest groups come first (ties: the first surprise). Each
group gives one lesson whose wording depends only on the advice, the direction and the domain, so
the same weakness found again gives the same lesson:

- trusted advice that failed: "In <domain>, check that "<advice>" fits the task before acting
  on it: it failed where it was trusted" (the tasks and reason tags go in ``applies_when``);
- distrusted advice that worked: "In <domain>, apply "<advice>": it worked where it was hardly
  trusted".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphmem.llm.schemas import WeaknessLesson, WeaknessLessons


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split()).rstrip(".")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def weakness_lessons(domain: str, surprises: Sequence[dict[str, Any]] | None = None, n: int = 3) -> WeaknessLessons:
    """Rule-based lessons (see the module docstring); deterministic for the same inputs."""
    groups: dict[tuple[str, bool], list[int]] = {}
    for i, s in enumerate(surprises or []):
        advice = _clip(str(s.get("learning") or ""))
        if advice:
            groups.setdefault((advice, s.get("outcome") == "success"), []).append(i)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
    lessons: list[WeaknessLesson] = []
    for (advice, worked), idx in ordered[: max(1, n)]:
        cases = [surprises[i] for i in idx] if surprises else []
        tasks = list(dict.fromkeys(_clip(str(c.get("query") or ""), 80) for c in cases if c.get("query")))[:2]
        tags = list(dict.fromkeys(str(r) for c in cases for r in c.get("reasons") or []
                                  if str(r) not in ("implicit", "followed")))[:3]
        when = f"{domain} tasks" + (f" such as {'; '.join(tasks)}" if tasks else "")
        if worked:
            content = f'In {domain}, apply "{advice}": it worked where it was hardly trusted'
            action = f"Apply it: {advice}"
        else:
            content = f'In {domain}, check that "{advice}" fits the task before acting on it: it failed where it was trusted'
            action = "Check the advice against the task (or ask the owner) before acting on it"
            if tags:
                when += f" (failed: {', '.join(tags)})"
        lessons.append(WeaknessLesson(content=content, applies_when=when, recommendation=action, sources=idx))
    return WeaknessLessons(lessons=lessons)


__all__ = ["weakness_lessons"]
