"""Actionability classifier (seed 003 system 9): keeps pure observations out of the advice pool.

Four dimensions, each scored 0..1 from regex pattern sets, then weighted (weights and threshold
come from :class:`~graphmem.config.Settings`):

============== ====== ==========================================================================
dimension      weight what it measures
============== ====== ==========================================================================
directive      0.35   does it tell you to DO something? (imperatives, always/never, must)
condition      0.15   does it say WHEN to apply? (if, when, during, before, for each …)
specificity    0.30   does it name concrete things? (files, versions, tools, flags, numbers)
not_observation 0.20  is it NOT just describing what happened? (no past tense, no metrics)
============== ====== ==========================================================================

Pattern sets have the sizes the seed names: 8 directive positive, 4 directive negative,
5 condition, 11 specificity positive, 2 specificity negative, 12 observation indicators. A
dimension's score is ``min(1, 0.30 × positive matches) − min(0.50, 0.15 × negative matches)``
(floored at 0), counting each pattern once; ``not_observation`` starts at 1.0 and loses 0.30 per
observation indicator. A text is actionable when the weighted sum reaches the threshold (0.50).

**Instruction form.** The weights reward naming concrete things, so a plain standing instruction
("Keep answers short", "Emails to Dana should be long flowing paragraphs", an owner's correction
"No, squash fixup commits before merging billing-service") used to score under the threshold and
was filed as an observation, never served. A text is also actionable, whatever its score, when it
*reads as an instruction*: it opens with an imperative (after an optional "no,", "please", "from
now on"...) or says what must/should/needs to be done (:data:`INSTRUCTION_FORM`), and it carries
no observation indicator, no hedge or reported speech (:data:`DIRECTIVE_NEGATIVE`) and no
expectation or reported opinion (:data:`NOT_INSTRUCTION`, "should be faster now"): a report of
what happened, a fact or a third person's preference ("User prefers dark mode") stays an
observation. ``Settings.actionability_instruction_form=False`` turns this off (the score alone).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from graphmem.config import Settings
from graphmem.errors import InvalidInputError

POSITIVE_STEP = 0.30
"""What each matching positive pattern adds to its dimension (capped at 1.0)."""
NEGATIVE_STEP = 0.15
"""What each matching negative pattern takes away (the total penalty is capped at 0.50)."""
NEGATIVE_CAP = 0.50
OBSERVATION_STEP = 0.30
"""What each observation indicator takes away from not_observation (which starts at 1.0)."""

_I = re.IGNORECASE
_VERBS = (
    r"use|run|check|verify|ensure|add|remove|set|call|avoid|keep|prefer|install|write|include|try|prefix|"
    r"wrap|pass|switch|restart|retry|put|make|read|cc|send|ask|limit|start|stop|test|validate|pin|update|"
    r"space|back off|batch|split|plan|follow|confirm|fix|report|break|cite|attach|reply|sign|format|"
    r"summari[sz]e|shorten|reuse|answer|address|mention|open|close|create|delete|save|list|double-check|"
    r"mask|filter|book|squash|schedule|sort|group|merge|rebase|commit|translate|convert|round|quote|label|"
    r"tag|highlight|post|share|forward|invite|notify|remind|archive|review|compare|explain|redact|encrypt|"
    r"escape|sanitize|log|drop|skip|wait|lock|paginate|cache|order|book|reserve|pay|bill|charge"
)


def _p(pattern: str, flags: int = _I) -> re.Pattern[str]:
    return re.compile(pattern, flags)


DIRECTIVE_POSITIVE: tuple[re.Pattern[str], ...] = (
    _p(r"\b(use|always|never|avoid|prefer)\b"),
    _p(rf"^\W*(always|never|do|don'?t|{_VERBS})\b"),  # starts with an imperative
    _p(r"\b(must|should|need to|needs to|have to|has to|ought to)\b"),
    _p(r"\b(do not|don'?t|must not|should not|shouldn'?t|cannot|can'?t)\b"),
    _p(r"\b(make sure|ensure|verify|double-check|confirm|check)\b"),
    _p(rf"(?:^\W*|[,;:]\s+|\bthen\s+)(please\s+)?(don'?t\s+|do not\s+)?({_VERBS})\b"),  # a clause's verb
    _p(r"\b(instead of|rather than|in favou?r of)\b"),
    _p(r"\b(remember to|be sure to|don'?t forget to|from now on|going forward)\b"),
)
DIRECTIVE_NEGATIVE: tuple[re.Pattern[str], ...] = (
    _p(r"\b(observed|noticed|saw|seen)\b"),
    _p(r"^RT @", 0),
    _p(r"\b(i think|i feel|i guess|maybe|perhaps|apparently)\b"),
    _p(r"\b(user|users|someone|people|he|she|they)\s+(said|says|wrote|mentioned|prefers|likes|loves|wants)\b"),
)
CONDITION: tuple[re.Pattern[str], ...] = (
    _p(r"\b(when|whenever|if|during|unless)\b"),
    _p(r"\b(only when|only if|except when|as long as|provided that)\b"),
    _p(r"\b(before|after|until|once)\b"),
    _p(r"\b(for|on|in) (every|each|all|any)\b|\bfor \w+ (files?|tasks?|requests?|emails?|projects?|repos?)\b"),
    _p(r"\b(in case of|whenever possible|if possible|where applicable|by default)\b"),
)
SPECIFICITY_POSITIVE: tuple[re.Pattern[str], ...] = (
    _p(r"[\w\\/-]+\.[A-Za-z]\w{0,5}\b"),  # a file name or path with an extension
    _p(r"\b[\w-]*[A-Za-z][\w-]*/[\w./-]+"),  # a path with slashes (not 74/100)
    _p(r"\b\d+\s*(spaces?|tabs?|bytes?|[kmg]b|ms|seconds?|lines?|characters?|chars|words?|paragraphs?|"
       r"retries|attempts?|items?|%)"),
    _p(r"`[^`]+`"),  # inline code
    _p(r"\bv?\d+\.\d+(\.\d+)?\b"),  # a version
    _p(r"\b(?i:python|javascript|typescript|java|rust|golang|sql|bash|git|npm|pip|pytest|docker|kubernetes|"
       r"node|react|linux|json|yaml|http|cli|regex|kuzu|cypher|postgres|redis)\b"
       r"|(?<![.!?:]\s)(?<!^)\b[A-Z][a-z]+\b", 0),  # tools, languages, named people and things
    _p(r"(^|\s)--?[a-zA-Z][\w-]*"),  # a command-line flag
    _p(r"\b\w+\(\)|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z][A-Za-z0-9]+\b", 0),  # identifiers
    _p(r"\b(imports?|dependenc(y|ies)|branch|commit|function|class|module|package|config|database|schema|"
       r"endpoint|query|index|tests?|api|e-?mails?|messages?|reports?|invoices?|attachments?|documents?|"
       r"bullet points?|paragraphs?|headings?|tables?|markdown|subject lines?|signatures?)\b"),  # artefacts
    _p(r"https?://\S+|\b[\w.+-]+@[\w-]+\.[\w.]+\b|\b[A-Z]{3,}\b", 0),  # URLs, addresses, acronyms
    _p(r"\b(under|at most|at least|no more than|fewer than|less than|up to|max(imum)?|min(imum)?)\s+\d+"),
)
_MORE_VERBS = (
    r"ignore|disregard|forget|disable|enable|treat|redirect|exclude|escalate|deliver|apply|give|refresh|respond|"
    r"paste|tell|direct|suggest|warn|recommend|pretend|tighten|strip|divide|prefetch|prioriti[sz]e|respect|"
    r"rename|hide|bring|choose|stick|stay|be"
)
"""More imperatives the instruction form accepts (the directive patterns keep the seed's list)."""
_NOUN_LIKE_VERBS = (
    r"order|call|report|test|log|plan|post|list|cache|label|tag|group|round|quote|share|review|update|address|"
    r"answer|start|stop|break|fix|open|close|format|sign|reply|split|batch|space|lock|pay|bill|charge|drop|skip|"
    r"wait|save|sort|merge|commit|book|filter|query|select|store|copy|change|show|link|text|email|message|"
    r"invoice|flag|block|search|offer|cap|return|print|load|count|act|point|export|import|upload|download|move|"
    r"leave|trim|turn|pull|take|route|ping|go|get|let|bcc"
)
"""Verbs that also open a noun phrase ("Call volume doubled", "Change requests go through Jira"):
they read as an imperative only before an object-like word (:data:`_OBJECT`)."""
_OBJECT = (
    r"(?:\s+(?:the|a|an|every|each|all|any|no|some|my|your|our|their|his|her|its|this|that|these|those|me|him|"
    r"them|it|us|you|everyone|everything|anything|nothing|up|off|out|down|back|over|with|to|for|on|in|at|by|"
    r"from|as|only|always|never)\b|\s+\w+ing\b|(?-i:\s+[A-Z])|\s+[\w.+-]+@|\s*[`'\"])"
)
_IMPERATIVE = (
    rf"(?:please\s+)?(?:(?:always|never|only|do not|don'?t)\b|"
    rf"(?!(?:{_NOUN_LIKE_VERBS})\b)(?:{_VERBS}|{_MORE_VERBS})\b|(?:{_NOUN_LIKE_VERBS})\b(?={_OBJECT}))"
)
INSTRUCTION_FORM: tuple[re.Pattern[str], ...] = (
    # opens with an imperative, after an optional "No,", "Please", "From now on," ...
    _p(rf"^\W*(?:(?:no|ok(?:ay)?|please|also|and|so|instead)\b[\s,;:!.-]*)*"
       rf"(?:(?:from now on|going forward|in future|in the future)\b[\s,;:-]*)?{_IMPERATIVE}"),
    # a condition first, then the imperative: "When a 2FA code arrives, don't forward it"
    _p(rf"^\W*(?:when|whenever|if|before|after|during|for|once|unless|until)\b[^,;:.]{{1,80}}[,;:]\s+{_IMPERATIVE}"),
    # says what must / should be done (not "must have been": a guess about the past)
    _p(r"\b(must|should|needs? to|ha(?:ve|s) to|ought to)\b(?!\s+(?:not\s+)?have\b)"),
)
"""The grammatical forms of a standing instruction (see the module docstring)."""
NOT_INSTRUCTION: tuple[re.Pattern[str], ...] = (
    # an expectation, not a standing rule: "The build should be faster now"
    _p(r"(?<!from )\bnow\b(?! on\b)|\b(soon|probably|likely|already|by then)\b"),
    # someone else's opinion or wish reported: "Dana thinks reports should be shorter"
    _p(r"\b\w+\s+(thinks|believes|feels|says|said|told|mentioned|wants|prefers|likes|expects|hopes)\b"),
)
"""What keeps a text in instruction form from counting as one: an expectation or a reported view."""
SPECIFICITY_NEGATIVE: tuple[re.Pattern[str], ...] = (
    _p(r"\b(something|somehow|things?)\b"),
    _p(r"\b(stuff|whatever|etc\.?|and so on|in general|various)\b"),
)
OBSERVATION: tuple[re.Pattern[str], ...] = (
    _p(r"\b(was|were|had|did)\b"),
    _p(r"\b\d+\s*(likes?|views?|retweets?|followers?|impressions?|shares?|comments?|stars?)\b"),
    _p(r"^RT @|(^|\s)@\w+", 0),
    _p(r"\b(scored|achieved|reached|got|gained|hit|earned)\b"),
    _p(r"\b\d+\s*/\s*\d+\b"),  # a score like 74/100
    _p(r"\b(increased|decreased|dropped|rose|fell|improved|grew|declined)\b"),
    _p(r"\b(yesterday|today|last (week|month|night|time)|ago|earlier)\b"),
    _p(r"\b(tweet|tweets|retweet|thread|engagement)\b|\beng:\s*\d+"),
    _p(r"\b(in|over|within) (the )?(last |past )?\d+ (hours?|days?|minutes?|weeks?)\b"),
    _p(r"\b(it|this|that) (worked|failed|broke|crashed|happened|went)\b"),
    _p(r"\b(happened|occurred|resulted|showed|turned out|seemed|looked)\b"),
    _p(r"\b(according to|reportedly|as of)\b"),
)


class ActionabilityScore(BaseModel):
    """The classifier's verdict with its four-dimension breakdown (each 0..1)."""

    model_config = ConfigDict(frozen=True)

    score: float = Field(ge=0.0, le=1.0, description="Weighted sum of the four dimensions.")
    directive: float = Field(ge=0.0, le=1.0)
    condition: float = Field(ge=0.0, le=1.0)
    specificity: float = Field(ge=0.0, le=1.0)
    not_observation: float = Field(ge=0.0, le=1.0)
    threshold: float = Field(ge=0.0, le=1.0)
    instruction: bool = Field(
        default=False,
        description="Reads as a standing instruction (imperative or must/should, no observation indicator).",
    )
    is_actionable: bool


def _count(patterns: Sequence[re.Pattern[str]], text: str) -> int:
    return sum(1 for p in patterns if p.search(text))


def _dimension(text: str, positive: Sequence[re.Pattern[str]], negative: Sequence[re.Pattern[str]] = ()) -> float:
    gain = min(1.0, POSITIVE_STEP * _count(positive, text))
    penalty = min(NEGATIVE_CAP, NEGATIVE_STEP * _count(negative, text))
    return max(0.0, gain - penalty)


def reads_as_instruction(text: str) -> bool:
    """True when ``text`` has the form of a standing instruction (:data:`INSTRUCTION_FORM`) and no
    observation indicator, hedge or reported speech (see the module docstring)."""
    body = " ".join(text.split())
    return (
        any(p.search(body) for p in INSTRUCTION_FORM)
        and _count(OBSERVATION, body) == 0
        and _count(DIRECTIVE_NEGATIVE, body) == 0
        and _count(NOT_INSTRUCTION, body) == 0
    )


def score_actionability(text: str, settings: Settings | None = None) -> ActionabilityScore:
    """Score how actionable ``text`` is (seed 003 system 9).

    Raises :class:`~graphmem.errors.InvalidInputError` if ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be a string, got {type(text).__name__}")
    s = settings or Settings()
    body = " ".join(text.split())
    if not body:
        return ActionabilityScore(score=0.0, directive=0.0, condition=0.0, specificity=0.0, not_observation=0.0,
                                  threshold=s.actionability_threshold, is_actionable=False)
    directive = _dimension(body, DIRECTIVE_POSITIVE, DIRECTIVE_NEGATIVE)
    condition = _dimension(body, CONDITION)
    specificity = _dimension(body, SPECIFICITY_POSITIVE, SPECIFICITY_NEGATIVE)
    not_observation = max(0.0, 1.0 - OBSERVATION_STEP * _count(OBSERVATION, body))
    total = (
        s.actionability_w_directive * directive
        + s.actionability_w_condition * condition
        + s.actionability_w_specificity * specificity
        + s.actionability_w_not_observation * not_observation
    )
    score = round(min(1.0, max(0.0, total)), 4)
    instruction = reads_as_instruction(body)
    return ActionabilityScore(
        score=score,
        directive=round(directive, 4),
        condition=round(condition, 4),
        specificity=round(specificity, 4),
        not_observation=round(not_observation, 4),
        threshold=s.actionability_threshold,
        instruction=instruction,
        is_actionable=score >= s.actionability_threshold or (s.actionability_instruction_form and instruction),
    )


def is_actionable(text: str, settings: Settings | None = None) -> bool:
    """True when ``text`` scores at or above ``settings.actionability_threshold``."""
    return score_actionability(text, settings).is_actionable


__all__ = [
    "CONDITION",
    "DIRECTIVE_NEGATIVE",
    "DIRECTIVE_POSITIVE",
    "INSTRUCTION_FORM",
    "NOT_INSTRUCTION",
    "OBSERVATION",
    "SPECIFICITY_NEGATIVE",
    "SPECIFICITY_POSITIVE",
    "ActionabilityScore",
    "is_actionable",
    "reads_as_instruction",
    "score_actionability",
]
