"""The OfflineLLM's fact rules: facts about the owner and the people and things they deal with.

"My name is Alice and I live in Paris. I'm vegetarian." → three :class:`UserFact` items
(name = Alice, home city = Paris, diet = vegetarian). Each fact has a subject ("user" for the
owner, else the person's or thing's name), an attribute and a value; a single-valued attribute
(home city, employer, diet, manager…) is replaced when the owner states a new value ("I moved to
Berlin"), a multi-valued one (allergies, languages) accumulates. Only the owner's own words are
read. Questions and hypotheticals ("Do I live in Paris?", "if I lived in Paris") are not facts.
"""

from __future__ import annotations

import re

from graphmem.llm.offline_text import _rx, _sentences
from graphmem.llm.schemas import UserFact

_NAME = r"([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){0,3})"
_PLACE = r"([A-Z][\w'’.-]*(?:[\s,]+[A-Z][\w'’.-]*){0,3})"
_ROLES = (r"manager|boss|assistant|wife|husband|partner|girlfriend|boyfriend|son|daughter|mother|father|mom|"
          r"dad|brother|sister|doctor|dentist|accountant|lawyer|cofounder|co-founder|colleague|coworker|"
          r"landlord|tenant|team lead|tech lead|ceo|cto|cfo")
_DIETS = r"vegetarian|vegan|pescatarian|pescetarian|gluten[- ]free|lactose[- ]intolerant|halal|kosher|keto"

# "… and I live in Paris", "I'm vegetarian, I live in Paris": a new clause about the owner
_SPLIT = re.compile(r"\s*(?:,\s*(?:and\s+)?|\band\s+)(?=i\b|i'm\b|i’m\b|i've\b|i’ve\b|my\b)", re.IGNORECASE)
_HYPOTHETICAL = _rx(r"\b(if|whether|would|could|might|suppose|imagine|pretend|when i was|used to)\b")

# (pattern, subject group or None for the user, attribute, value group, kind, single-valued, wording)
_RULES: list[tuple[re.Pattern[str], str | None, str, int, str, bool, str]] = [
    (re.compile(r"^(?:my name is|i am called|i'm called|call me)\s+" + _NAME, re.IGNORECASE), None, "name", 1,
     "fact", True, "The user's name is {v}"),
    (re.compile(r"^i(?: have|'ve|’ve)? (?:just )?(?:moved|relocated) to\s+" + _PLACE, re.IGNORECASE), None, "home city", 1,
     "fact", True, "The user lives in {v}"),
    (re.compile(r"^i(?:'m| am)? (?:now )?(?:live|living|based|reside|residing) in\s+" + _PLACE, re.IGNORECASE),
     None, "home city", 1, "fact", True, "The user lives in {v}"),
    (re.compile(r"^i(?:'m| am)? (?:now )?(?:work|working) (?:at|for)\s+" + _NAME, re.IGNORECASE), None, "employer",
     1, "fact", True, "The user works at {v}"),
    (re.compile(r"^i(?: have|'ve|’ve)? (?:joined|started at)\s+" + _NAME, re.IGNORECASE), None, "employer", 1, "fact", True,
     "The user works at {v}"),
    (re.compile(rf"^i(?:'m|’m| am)(?: now)? (?:a |an )?({_DIETS})\b", re.IGNORECASE), None, "diet", 1,
     "preference", True, "The user is {v}"),
    (re.compile(r"^i(?:'m|’m| am) allergic to\s+([\w\s-]+?)$", re.IGNORECASE), None, "allergy", 1, "fact", False,
     "The user is allergic to {v}"),
    (re.compile(r"^i (?:don'?t|do not|never) eat\s+([\w\s-]+?)$", re.IGNORECASE), None, "does not eat", 1,
     "preference", False, "The user does not eat {v}"),
    (re.compile(r"^i speak\s+([A-Z]\w+(?:(?:,| and| or) [A-Z]\w+)*)$", re.IGNORECASE), None, "languages", 1, "fact",
     False, "The user speaks {v}"),
    (re.compile(rf"^my ({_ROLES}) is\s+" + _NAME, re.IGNORECASE), None, "role:{g1}", 2, "fact", True,
     "{v} is the user's {g1}"),
    (re.compile(r"^" + _NAME + rf" is my ({_ROLES})\b", re.IGNORECASE), None, "role:{g2}", 1, "fact", True,
     "{v} is the user's {g2}"),
    (re.compile(r"^my birthday is (?:on )?\s*(.+?)$", re.IGNORECASE), None, "birthday", 1, "fact", True,
     "The user's birthday is {v}"),
    (re.compile(r"^" + _NAME + r" (?:has )?(?:moved|relocated) to\s+" + _PLACE, re.IGNORECASE), "1", "home city", 2,
     "fact", True, "{s} lives in {v}"),
    (re.compile(r"^" + _NAME + r" (?:lives|is based) in\s+" + _PLACE, re.IGNORECASE), "1", "home city", 2, "fact",
     True, "{s} lives in {v}"),
    (re.compile(r"^" + _NAME + r" (?:works|now works) (?:at|for)\s+" + _NAME, re.IGNORECASE), "1", "employer", 2,
     "fact", True, "{s} works at {v}"),
    (re.compile(r"^" + _NAME + rf" is (?:a |an )?({_DIETS})\b", re.IGNORECASE), "1", "diet", 2, "preference", True,
     "{s} is {v}"),
    (re.compile(r"^" + _NAME + r" is allergic to\s+([\w\s-]+?)$", re.IGNORECASE), "1", "allergy", 2, "fact", False,
     "{s} is allergic to {v}"),
    (re.compile(r"^" + _NAME + r"'?s birthday is (?:on )?\s*(.+?)$", re.IGNORECASE), "1", "birthday", 2, "fact", True,
     "{s}'s birthday is {v}"),
]
_NOT_SUBJECT = frozenset({"i", "i've", "i’ve", "i'm", "i’m", "i'd", "i’d", "i'll", "i’ll", "it", "this", "that", "he", "she", "they", "we", "you", "there", "my", "the"})
_LEAD = _rx(r"^(also|and|btw|by the way|fyi|oh|so|well|actually|just so you know|for the record)[\s,:-]+")
_PLACE_END = _rx(r"[\s,]+(now|since|for|last|this|next|with|because|in)\b.*$")


def _clauses(text: str) -> list[str]:
    out: list[str] = []
    for sentence in _sentences(text):
        if sentence.rstrip().endswith("?"):
            continue
        for part in _SPLIT.split(sentence):
            part = _LEAD.sub("", part.strip()).strip().rstrip(".!;").strip()
            if part and not _HYPOTHETICAL.search(part):
                out.append(part)
    return out


def extract_facts(text: str) -> list[UserFact]:
    """The facts the owner states in ``text`` (see the module docstring); [] when there are none."""
    facts: list[UserFact] = []
    for clause in _clauses(text or ""):
        for pattern, subject_group, attribute, value_group, kind, single, wording in _RULES:
            m = pattern.match(clause)
            if not m:
                continue
            subject = m.group(int(subject_group)).strip() if subject_group else "user"
            if subject.lower() in _NOT_SUBJECT:
                continue
            value = _PLACE_END.sub("", m.group(value_group)).strip(" ,.")
            groups = {f"g{i}": (m.group(i) or "").lower() for i in range(1, (pattern.groups or 0) + 1)}
            attr = attribute.format(**groups)
            if not value:
                continue
            about = [subject] if subject != "user" else []
            if attr in ("home city", "employer") or attr.startswith("role:"):
                about.append(value)
            facts.append(UserFact(
                subject=subject, attribute=attr, value=value, kind=kind,  # type: ignore[arg-type]
                single_valued=single, statement=wording.format(v=value, s=subject, **groups), entities=about,
            ))
            break
    return facts


__all__ = ["extract_facts"]
