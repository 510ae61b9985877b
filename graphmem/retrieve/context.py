"""What an agent gets before a tool call: scored learnings and the prompt text built from them.

Token counts are estimated as ``ceil(len(text) / 4)`` (about four characters per token for
English with common tokenizers); it is cheap, deterministic and close enough for budgeting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from graphmem.models import Learning

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ceil(characters / 4)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def truncate_to_tokens(text: str, budget: int) -> str:
    """``text`` cut to fit ``budget`` tokens, at a word boundary, with "…" when cut."""
    limit = max(0, budget) * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ""
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


@dataclass
class ScoredLearning:
    """One ranked learning: the model, its final score, and why it was chosen.

    ``signals`` holds each signal's raw value (e.g. ``{"vector": 0.61, "fulltext_rank": 1,
    "graph": 1.0, "rrf": 0.032, "quality": 0.7}``); ``reasons`` says the same in words, with the
    graph path that found it ("via tool send_email", "2 hops via topic email style").
    """

    learning: Learning
    score: float
    reasons: list[str] = field(default_factory=list)
    signals: dict[str, float] = field(default_factory=dict)
    rank: int = 0

    @property
    def id(self) -> str:
        """The learning's id."""
        return self.learning.id

    def prompt_lines(self) -> list[str]:
        """This learning as seed 001 formats it in "Relevant Learnings"."""
        l = self.learning
        lines = [f"- **{l.tool}**: {l.content}"] if l.tool else [f"- {l.content}"]
        if l.recommendation and l.recommendation not in l.content:
            lines.append(f"  → {l.recommendation}")
        return lines


def pack(items: list[ScoredLearning], budget: int) -> list[ScoredLearning]:
    """The items, in order, whose prompt lines fit ``budget`` tokens together.

    An item that does not fit is skipped and later, shorter ones may still fit. The
    "## Relevant Learnings" heading is counted against the budget too.
    """
    used = estimate_tokens("## Relevant Learnings\n")
    out: list[ScoredLearning] = []
    for item in items:
        cost = estimate_tokens("\n".join(item.prompt_lines()) + "\n")
        if used + cost <= budget:
            out.append(item)
            used += cost
    return out


@dataclass
class AssembledContext:
    """The context handed to an agent; ``id`` is the Application recorded for it.

    Pass ``id`` to ``Memory.record_outcome`` so the learnings shown get the credit or blame.
    """

    id: str
    query: str
    tool: str | None
    user_preferences: str
    learnings: list[ScoredLearning]
    budget_user_preferences: int
    budget_learnings: int
    timings_ms: dict[str, float] = field(default_factory=dict)

    def to_prompt(self) -> str:
        """Seed 001's "## User Preferences" and "## Relevant Learnings" sections, within budget.

        Sections with nothing in them are left out; "" when both are empty.
        """
        sections: list[str] = []
        prefs = truncate_to_tokens(self.user_preferences.strip(), self.budget_user_preferences)
        if prefs:
            sections += ["## User Preferences", prefs]
        lines: list[str] = []
        used = estimate_tokens("## Relevant Learnings\n")
        for item in self.learnings:
            block = item.prompt_lines()
            cost = estimate_tokens("\n".join(block) + "\n")
            if used + cost > self.budget_learnings:
                continue
            used += cost
            lines += block
        if lines:
            if sections:
                sections.append("")
            sections += ["## Relevant Learnings", *lines]
        return "\n".join(sections)

    def __len__(self) -> int:
        return len(self.learnings)
