"""Output models, one per LLM task, following the seeds' JSON where they give it.

Each model doubles as the JSON schema :class:`~graphmem.llm.anthropic_llm.AnthropicLLM` forces the
model to fill (``model_json_schema()``), so the field descriptions are written for the model.
``Literal`` types and ``Field`` bounds make out-of-range answers fail validation; the only leniency
is that an empty string or the string ``"null"`` in an optional text field reads as ``None``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

Sentiment = Literal["positive", "negative", "neutral"]
FeedbackType = Literal["correction", "praise", "preference", "complaint"]

_NULLISH = {"", "null", "none", "n/a"}


def _nullish_to_none(value: Any) -> Any:
    """Read ``""``, ``"null"``, ``"none"`` and ``"n/a"`` (any case) as ``None``."""
    if isinstance(value, str) and value.strip().lower() in _NULLISH:
        return None
    if isinstance(value, str):
        return value.strip()
    return value


def _clean_list(value: Any) -> Any:
    """Strip list items and drop empty ones; anything that is not a list is left to validation."""
    if isinstance(value, list):
        return [v.strip() if isinstance(v, str) else v for v in value if not (isinstance(v, str) and not v.strip())]
    return value


OptText = Annotated[str | None, BeforeValidator(_nullish_to_none)]
"""Optional text: ``""``/``"null"`` read as ``None``, other strings are stripped."""
TextList = Annotated[list[str], BeforeValidator(_clean_list)]
"""A list of strings, stripped, empty items dropped."""


class _Output(BaseModel):
    """Base of every output model: unknown keys are ignored, not errors."""

    model_config = ConfigDict(extra="ignore")


class UserFact(_Output):
    """One fact the owner stated about themselves or someone/something they deal with."""

    subject: str = Field(min_length=1, description="'user' for the owner, else the person's or thing's name.")
    attribute: str = Field(min_length=1, description="What it is about, e.g. 'home city', 'employer', 'diet'.")
    value: str = Field(min_length=1, description="The value, e.g. 'Paris'.")
    kind: Literal["fact", "preference"] = Field(default="fact", description="fact, or preference (diet, likes).")
    single_valued: bool = Field(
        default=True, description="True when a new value replaces the old one (home city); false when values "
        "accumulate (allergies, languages).",
    )
    statement: str = Field(min_length=1, description="The fact as a sentence, e.g. 'The user lives in Paris'.")
    entities: TextList = Field(default_factory=list, description="People, places, organisations it is about.")


class FeedbackAnalysis(_Output):
    """FeedbackExtractor's answer (seed 001 FEEDBACK_PROMPT) plus the learning, topics and entities."""

    has_feedback: bool = Field(description="True if the message gives feedback about prior AI work.")
    feedback_type: Annotated[FeedbackType | None, BeforeValidator(_nullish_to_none)] = Field(
        default=None, description="correction, praise, preference or complaint; null without feedback."
    )
    about_tool: OptText = Field(default=None, description="The tool the feedback is about, or null.")
    about_objective_type: OptText = Field(
        default=None, description="research, code, email, ... or null."
    )
    what_was_wrong: OptText = Field(default=None, description="What was wrong, or null.")
    what_to_do_instead: OptText = Field(default=None, description="What to do instead, or null.")
    sentiment: Sentiment = Field(default="neutral", description="positive, negative or neutral.")
    confidence: float = Field(ge=0.0, le=1.0, description="0.0-1.0: how sure you are.")
    learning: OptText = Field(
        default=None,
        description="The learning worded as a standing instruction, e.g. 'Keep emails under 3 "
        "paragraphs'; null without feedback.",
    )
    topics: TextList = Field(default_factory=list, description="A few short topics, e.g. 'email style'.")
    entities: TextList = Field(default_factory=list, description="People, organisations, projects named.")
    facts: list[UserFact] = Field(
        default_factory=list,
        description="Facts the owner states about themselves or the people and things they deal with "
        "(name, home city, employer, diet, who their manager is…), whether or not there is feedback.",
    )



class EvaluationLearning(_Output):
    """One insight of an objective evaluation (seed 001 EVALUATION_PROMPT ``learnings`` item)."""

    insight: str = Field(min_length=1, description="What we learned.")
    applies_to: str = Field(
        default="general", min_length=1, description="A tool name, 'objective_type' or 'general'."
    )
    recommendation: OptText = Field(default=None, description="What to do next time.")
    sentiment: Sentiment = Field(default="neutral", description="positive, negative or neutral.")



class ObjectiveEvaluation(_Output):
    """ObjectiveEvaluator's answer (seed 001 EVALUATION_PROMPT)."""

    overall_score: float = Field(ge=1.0, le=10.0, description="1-10: how well the objective went.")
    learnings: list[EvaluationLearning] = Field(default_factory=list, description="What to remember.")
    tools_used_well: TextList = Field(default_factory=list, description="Tools used well.")
    tools_used_poorly: TextList = Field(default_factory=list, description="Tools used poorly.")
    should_remember: bool = Field(description="True if the learnings are worth storing.")



class EpisodeReflection(_Output):
    """A reflection on one episode (seed 004 reflection memory payload)."""

    reflection: str = Field(min_length=1, description="A short analysis of the episode.")
    what_went_well: TextList = Field(default_factory=list, description="What worked.")
    improvements: TextList = Field(default_factory=list, description="What could be better.")
    rules: TextList = Field(default_factory=list, description="General rules for next time.")
    prompt_suggestions: TextList = Field(default_factory=list, description="System-prompt tweaks.")
    helped: list[int] = Field(
        default_factory=list, description="Numbers of the LEARNINGS SHOWN that the answer followed and that helped."
    )
    hurt: list[int] = Field(
        default_factory=list, description="Numbers of the LEARNINGS SHOWN that the answer followed and that hurt."
    )



class JudgeVerdict(_Output):
    """One LLM judge's verdict on an output (seed 002 LLMJudge)."""

    passed: bool = Field(description="True if the output meets the criteria / matches the ground truth.")
    score: float = Field(ge=0.0, le=1.0, description="0.0-1.0: how well it meets them.")
    reasoning: str = Field(min_length=1, description="The specific issue found, or why it passed.")


class ReflectorBullet(_Output):
    """One bullet (heuristic rule) the reflector writes (seed 002 Reflector)."""

    content: str = Field(min_length=1, description="The rule, worded as an instruction.")
    applies_when: OptText = Field(default=None, description="When the rule applies, or null.")
    recommendation: OptText = Field(default=None, description="The concrete action, or null.")



class ReflectorOutput(_Output):
    """The reflector's answer: bullets learned from failed verdicts (empty when nothing failed)."""

    bullets: list[ReflectorBullet] = Field(default_factory=list, max_length=10, description="New bullets.")


class CrossoverOutput(_Output):
    """Bullet evolution (seed 002 Darwin-Gödel): candidate rewrites bred from a failing bullet and
    its most helpful siblings."""

    candidates: list[ReflectorBullet] = Field(default_factory=list, max_length=10,
                                              description="The candidate rewrites, best guess first.")


class BulletTest(_Output):
    """A judge's answer to "would this bullet have helped on this failed case?" (seed 002)."""

    helpful: bool = Field(description="True if following the bullet would have made the output pass.")
    reasoning: str = Field(min_length=1, description="Why, in one sentence.")


class WeaknessLesson(_Output):
    """One lesson consolidated from surprise moments in a weak domain (the weakness trainer)."""

    content: str = Field(min_length=1, description="The lesson, worded as an instruction.")
    applies_when: OptText = Field(default=None, description="When it applies, or null.")
    recommendation: OptText = Field(default=None, description="The concrete action, or null.")
    sources: list[int] = Field(default_factory=list, description="0-based indexes of the surprises it is drawn from.")


class WeaknessLessons(_Output):
    """The weakness trainer's answer: lessons for one weak domain (best first)."""

    lessons: list[WeaknessLesson] = Field(default_factory=list, max_length=10, description="The lessons.")


InjectionFamily = Literal["exfiltration", "authority", "safeguards"]
_FAMILY_NAMES = ("exfiltration", "authority", "safeguards")


def _known_families(value: Any) -> Any:
    """Keep the family names this schema knows (lower-cased, unknown ones dropped)."""
    if isinstance(value, list):
        return [v.strip().lower() for v in value if isinstance(v, str) and v.strip().lower() in _FAMILY_NAMES]
    return value


class InjectionVerdict(_Output):
    """A screening verdict: is this text an instruction injected to steer the agent?"""

    is_injection: bool = Field(
        description="True if the text tries to make the agent leak secrets, change whom it obeys or where "
        "its output goes, or disable a safeguard (see the prompt for the three families)."
    )
    score: float = Field(
        ge=0.0, le=1.0, description="0.0-1.0: how sure you are that it is an injection (0.5 = unsure)."
    )
    families: Annotated[list[InjectionFamily], BeforeValidator(_known_families)] = Field(
        default_factory=list, description="Which families it belongs to: exfiltration, authority, safeguards."
    )
    reasons: TextList = Field(default_factory=list, description="Short reasons, quoting the words that matter.")


class SummaryOutput(_Output):
    """PreferenceSummarizer's answer (seed 001 SUMMARY_PROMPT): up to 10 actionable bullets."""

    bullets: list[str] = Field(
        default_factory=list, max_length=10, description="Actionable instructions, one per bullet."
    )

    @field_validator("bullets", mode="before")
    @classmethod
    def _strip_markers(cls, value: Any) -> Any:
        """Drop leading ``-``/``*``/``•`` markers and empty items."""
        if not isinstance(value, list):
            return value
        out: list[Any] = []
        for item in value:
            if isinstance(item, str):
                item = item.strip().lstrip("-*•").strip()
                if not item:
                    continue
            out.append(item)
        return out

    @property
    def text(self) -> str:
        """The bullets as a markdown list (``- a\\n- b``), the summary node's text."""
        return "\n".join(f"- {b}" for b in self.bullets)


class ContradictionJudgement(_Output):
    """Which of the same-scope candidates the owner's new rule replaces (0-based indexes)."""

    replaces: list[int] = Field(
        default_factory=list,
        description="Indexes of the candidates the new rule contradicts (same aspect, different value, or "
        "one prohibits what the other prescribes). Compatible or unrelated rules are NOT listed.",
    )
    reasoning: OptText = Field(default=None, description="One sentence on why.")


__all__ = [
    "BulletTest",
    "ContradictionJudgement",
    "CrossoverOutput",
    "EpisodeReflection",
    "EvaluationLearning",
    "FeedbackAnalysis",
    "FeedbackType",
    "InjectionFamily",
    "InjectionVerdict",
    "JudgeVerdict",
    "ObjectiveEvaluation",
    "ReflectorBullet",
    "ReflectorOutput",
    "Sentiment",
    "SummaryOutput",
    "UserFact",
    "WeaknessLesson",
    "WeaknessLessons",
]
