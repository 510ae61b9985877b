"""Same-scope, same-aspect contradiction: the offline rule behind "a correction replaces".

Two rules contradict when they are about the **same scope** and give **different values for the
same aspect**: "Emails to Dana must use bullet points instead." vs "Emails to Dana should be long
flowing paragraphs" (aspect *format*: bullet vs prose), "Use metric units" vs "Use imperial
units", "Keep replies short" vs "Write long detailed replies". Both are worded positively, so the
polarity test (:func:`opposed`: never X vs always X) misses them.

- **Scope** (:func:`same_scope`): a shared entity, with tools equal or one of them unset; or the
  same tool when neither names an entity. Two general rules (no tool, no entity) are never
  compared: a false supersede loses a good rule, which costs more than a missed one.
- **Aspect values** (:data:`ASPECTS`): a small lexicon of aspects an owner corrects (format, length,
  tone, units, language, time of day, seat, currency, date format, greeting). A value preceded by a
  negation ("not", "no", "never", "instead of", "rather than"…) counts against it.
- :func:`aspect_conflict`: some aspect where the two texts assert disjoint values, or one negates
  the value the other asserts.
- :func:`polarity`, :func:`subject_overlap`, :func:`opposed`: one text prohibits what the other
  prescribes about the same subject (the curator's test for opposite advice).
- :func:`supersedes`: same scope, the same names in both texts ("Don't cc Omar" never replaces
  "Always cc Dana"), and an aspect conflict or opposite polarity on the same subject.

Measured on ``benchmarks/data/contradiction_pairs.jsonl`` (``python -m benchmarks.contradictions``);
the precision, recall and the pairs it gets wrong are in docs/benchmarks.md ("Contradictions").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_V = dict[str, str]

ASPECTS: dict[str, _V] = {
    "format": {
        "bullets": r"bullet(?:ed)?(?: points?| lists?)?|bullets",
        "numbered": r"numbered (?:lists?|steps?)",
        "table": r"tables?|tabular",
        "prose": r"(?:flowing |long )?paragraphs(?! ?(?:max|at most))|prose|full sentences",
    },
    "length": {
        "short": r"short(?:er)?|brief(?:er)?|concise|succinct|terse|one[- ]liners?|tl;?dr only|"
                 r"(?:under|at most|no more than|max(?:imum)?) \w+ (?:paragraphs?|sentences?|lines?|words?|bullets?)",
        "long": r"long(?:er)?(?! flowing)|detailed|in[- ]depth|thorough|lengthy|exhaustive|comprehensive",
    },
    "tone": {
        "formal": r"formal|professional|polite",
        "casual": r"casual|informal|relaxed|chatty|laid[- ]back",
    },
    "units": {
        "metric": r"metric|celsius|kilomet(?:er|re)s?|km|kilograms?|kg",
        "imperial": r"imperial|fahrenheit|miles|pounds|lbs|feet|inches",
    },
    "language": {
        "english": r"english", "french": r"french", "german": r"german", "spanish": r"spanish",
        "italian": r"italian", "dutch": r"dutch",
    },
    "time_of_day": {
        "morning": r"mornings?|before noon|before 12|early",
        "afternoon": r"afternoons?|after lunch",
        "evening": r"evenings?|after work|at night|late",
    },
    "weekday": {
        day: rf"(?:on )?{day}s?" for day in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    },
    "seat": {"window": r"window seats?", "aisle": r"aisle seats?"},
    "currency": {
        "usd": r"usd|us dollars?|dollars?|\$", "eur": r"eur|euros?|€", "gbp": r"gbp|pounds sterling|£",
    },
    "date_format": {
        "iso": r"iso(?: 8601)? dates?|yyyy-mm-dd", "us_date": r"mm/dd(?:/yyyy)?|us date",
        "eu_date": r"dd/mm(?:/yyyy)?|european date",
    },
    "greeting": {
        "first_name": r"(?:by|with) (?:their|her|his) first name|first names?",
        "title": r"(?:by|with) (?:their|her|his) (?:title|surname|last name)|mr\.?|ms\.?|dr\.?",
    },
}
_COMPILED: dict[str, dict[str, re.Pattern[str]]] = {
    aspect: {value: re.compile(rf"(?<![\w-])(?:{rx})(?![\w-])", re.IGNORECASE) for value, rx in values.items()}
    for aspect, values in ASPECTS.items()
}
_NEGATION = re.compile(
    r"\b(?:not|no|never|avoid|without|instead of|rather than|don'?t|do not|stop|skip|no more|"
    r"not in|never in|nor)\b(?:\W+\w+){0,2}\W*$",
    re.IGNORECASE,
)


_COUNTED = re.compile(r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|few)\s*$", re.IGNORECASE)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")


def names(text: str) -> set[str]:
    """Capitalised names inside ``text`` (not its first word, not an aspect value): "Omar", "Acme"."""
    found = {m.group(0).lower() for m in _NAME.finditer(text.strip())}
    return {n for n in found if not any(p.fullmatch(n) for values in _COMPILED.values() for p in values.values())}


def aspect_values(text: str) -> dict[str, dict[str, int]]:
    """``{aspect: {value: +1 asserted | -1 negated}}`` for the aspects ``text`` speaks about."""
    found: dict[str, dict[str, int]] = {}
    for aspect, values in _COMPILED.items():
        for value, pattern in values.items():
            for m in pattern.finditer(text):
                if value == "prose" and _COUNTED.search(text[: m.start()]):
                    continue  # "under 3 paragraphs" is a length, not a format
                sign = -1 if _NEGATION.search(text[: m.start()]) else 1
                found.setdefault(aspect, {})
                # an assertion anywhere wins over a negation elsewhere ("bullets, not paragraphs")
                found[aspect][value] = max(found[aspect].get(value, -1), sign)
    return found


def aspect_conflict(a: str, b: str) -> str | None:
    """The aspect on which ``a`` and ``b`` disagree, or None.

    They disagree on an aspect when both assert values for it and the asserted sets are disjoint,
    or one negates a value the other asserts.
    """
    va, vb = aspect_values(a), aspect_values(b)
    for aspect in va.keys() & vb.keys():
        pos_a = {v for v, s in va[aspect].items() if s > 0}
        pos_b = {v for v, s in vb[aspect].items() if s > 0}
        neg_a = {v for v, s in va[aspect].items() if s < 0}
        neg_b = {v for v, s in vb[aspect].items() if s < 0}
        if (pos_a and pos_b and not pos_a & pos_b) or (pos_a & neg_b) or (pos_b & neg_a):
            return aspect
    return None


def _keys(entities: Iterable[str]) -> set[str]:
    return {e.strip().lower() for e in entities if e and e.strip()}


def same_scope(
    tool_a: str | None, entities_a: Iterable[str], tool_b: str | None, entities_b: Iterable[str]
) -> bool:
    """Same scope: a shared entity and compatible tools (equal, or one unset); or the same tool
    when neither names an entity. Two unscoped rules are not the same scope."""
    ea, eb = _keys(entities_a), _keys(entities_b)
    tools_ok = tool_a is None or tool_b is None or tool_a == tool_b
    if ea or eb:
        return bool(ea & eb) and tools_ok
    return tool_a is not None and tool_a == tool_b


_NEGATIVE = re.compile(
    r"\b(never|don'?t|do not|avoid|stop|no longer|must not|mustn'?t|should not|shouldn'?t|without|not|no|"
    r"refrain from|skip)\b",
    re.IGNORECASE,
)
_POSITIVE = re.compile(
    r"\b(always|use|do|prefer|include|make sure|ensure|keep|add|must|should)\b", re.IGNORECASE
)
_POLARITY_WORDS = frozenset(
    ["never", "don't", "dont", "do", "not", "avoid", "stop", "no", "longer", "must", "mustn't", "should", "shouldn't", "without", "refrain", "from", "skip", "always", "use", "prefer", "include", "make", "sure", "ensure", "keep", "add", "a", "an", "the", "to", "of", "in", "for", "on", "and", "or", "with", "be", "is", "are"]
)


def polarity(text: str) -> int:
    """-1 for prohibitions (never, don't, avoid…), +1 for directives (always, use, keep…), else 0."""
    if _NEGATIVE.search(text):
        return -1
    return 1 if _POSITIVE.search(text) else 0


def _subject_words(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9][a-z0-9'_-]*", text.lower())
    return {w.rstrip("s") for w in words if w not in _POLARITY_WORDS and len(w) > 1}


def subject_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the content words of two texts, polarity and stop words left out."""
    wa, wb = _subject_words(a), _subject_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


OPPOSED_OVERLAP = 0.6
"""Content-word overlap at which two texts of opposite polarity are about the same thing."""


def opposed(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` give opposite advice (one prohibits what the other prescribes)
    about the same subject: opposite :func:`polarity` and :func:`subject_overlap` ≥ 0.6."""
    return polarity(a) * polarity(b) == -1 and subject_overlap(a, b) >= OPPOSED_OVERLAP


def supersedes(
    new_text: str, new_tool: str | None, new_entities: Iterable[str],
    old_text: str, old_tool: str | None, old_entities: Iterable[str],
) -> bool:
    """True when the new rule replaces the old one: same scope, and an aspect conflict or opposite
    polarity on the same subject (:func:`opposed`)."""
    if not same_scope(new_tool, new_entities, old_tool, old_entities):
        return False
    if {n for n in names(new_text) if n not in old_text.lower()} | {n for n in names(old_text) if n not in new_text.lower()}:
        return False  # one names somebody or something the other does not: not the same rule
    return aspect_conflict(new_text, old_text) is not None or opposed(new_text, old_text)


__all__ = [
    "ASPECTS", "OPPOSED_OVERLAP", "aspect_conflict", "aspect_values", "opposed", "polarity", "same_scope",
    "subject_overlap", "supersedes",
]
