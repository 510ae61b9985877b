"""Entities from text: a deterministic, offline extractor (no model weights, no network).

:func:`extract_entities` finds the names and dates a text mentions:

- **names**: runs of capitalised words (``Caroline``, ``New York``, ``Dr. Seuss``) that do not
  start a sentence, or that start one but are known to be names (``known``: names the caller
  passed, entities already in the store, or names capitalised mid-sentence elsewhere in the same
  batch — see :func:`corpus_names`); sentence starters, pronouns and interjections are never names;
- **dates**: month names with an optional day and year (``May 2023``, ``8 May``), weekdays, and
  years (``2022``) — relative times (``last week``) are left to the search's time signal.

:func:`normalise_entity` gives the merge key of a name: possessives (``Caroline's``,
``James'``) and surrounding punctuation removed, whitespace collapsed, case folded; two spellings
with the same key are the same Entity node (:func:`merge_names` keeps the first display form
seen, e.g. the one already stored). Measured cost: ~20 µs per chat turn on this machine, so
ingest stays fast.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# capitalised words that are never names on their own (sentence starters, pronouns, interjections)
_NOT_NAMES = frozenset(["i", "i'm", "i've", "i'd", "i'll", "im", "ive", "a", "an", "the", "this", "that", "these", "those", "there", "here", "it", "it's", "its", "he", "she", "we", "they", "you", "your", "my", "our", "their", "his", "her", "me", "us", "them", "what", "when", "where", "why", "who", "whom", "which", "how", "whose", "if", "so", "and", "but", "or", "nor", "yet", "for", "as", "at", "by", "in", "on", "of", "to", "with", "from", "into", "onto", "about", "after", "before", "during", "since", "until", "while", "hey", "hi", "hello", "bye", "goodbye", "thanks", "thank", "thx", "wow", "oh", "ooh", "ah", "aw", "awww", "yeah", "yes", "yep", "yup", "no", "nope", "ok", "okay", "sure", "cool", "nice", "great", "awesome", "amazing", "sounds", "sound", "glad", "love", "lol", "haha", "omg", "congrats", "congratulations", "well", "just", "also", "really", "totally", "definitely", "absolutely", "maybe", "please", "sorry", "happy", "good", "bad", "hope", "let", "let's", "lets", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "do", "does", "did", "don't", "doesn't", "didn't", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "not", "all", "any", "some", "every", "each", "both", "either", "neither", "one", "two", "three", "first", "last", "next", "new", "old", "mr", "mrs", "ms", "dr", "st", "mom", "dad", "mum"])
# words that may sit inside a longer name ("New York", "Museum of Modern Art", "Dr. Seuss")
_INSIDE_NAMES = frozenset(["new", "old", "first", "last", "next", "mr", "mrs", "ms", "dr", "st", "mom", "dad", "mum",
                           "of", "the", "de"])
_ABBREVIATIONS = frozenset(["mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "mt"])
_DAY_PREFIXES = frozenset(d[:3] for d in _DAYS)
_MONTH_RE = "|".join(m.capitalize() for m in _MONTHS) + "|" + "|".join(m[:3].capitalize() for m in _MONTHS if m != "may")
_DATE = re.compile(
    r"\b(?:(?:\d{1,2}(?:st|nd|rd|th)?\s+)?(?:" + _MONTH_RE + r")\.?(?:\s+\d{1,2}(?:st|nd|rd|th)?)?(?:,?\s+(?:19|20)\d\d)?"
    r"|(?:" + "|".join(d.capitalize() for d in _DAYS) + r")s?"
    r"|(?:19|20)\d\d)\b"
)
_WORD = r"[A-Z][\w\-]*(?:['’][A-Za-z]+)?\.?"
_LINK = r"(?:\s+(?:of|the|de|del|la|van|von)\s+|\s+)"
_SPAN = re.compile(_WORD + r"(?:" + _LINK + _WORD + r")*")
_SENTENCE_END = re.compile(r"(?:^|[.!?:;\"“”()\[\]\n-]\s*|\s[-—–]\s*)$")
_TOKEN = re.compile(r"[\w][\w\-.'’]*")
_POSSESSIVE = re.compile(r"(?:['’]s|(?<=s)['’])$", re.IGNORECASE)


@dataclass(frozen=True)
class Mention:
    """One entity found in a text: display ``name``, merge ``key`` and ``kind`` (name or date)."""

    name: str
    key: str
    kind: str


def normalise_entity(name: str) -> str:
    """The merge key of an entity name: possessive and punctuation stripped, lower case."""
    text = " ".join(str(name).split()).strip(" \t.,;:!?\"'“”‘’()[]{}")
    text = _POSSESSIVE.sub("", text).strip(" .,'’")
    return text.casefold()


def _display(name: str) -> str:
    text = " ".join(name.split()).strip(" \t,;:!?\"'“”‘’()[]{}")
    text = _POSSESSIVE.sub("", text).rstrip(" ,'’")
    if text.endswith(".") and len(text.split()[-1]) > 3:  # sentence full stop, not "Dr." / "St."
        text = text[:-1]
    return text


def _at_sentence_start(text: str, start: int) -> bool:
    return bool(_SENTENCE_END.search(text[max(0, start - 4):start]))


def _split_span(span: str) -> list[str]:
    """Split a capitalised run where a never-a-name word sits inside it ("Thanks Melanie")."""
    words = span.split()
    out: list[list[str]] = [[]]
    for w in words:
        key = normalise_entity(w)
        if w[:1].isupper() and key in _NOT_NAMES and key not in _INSIDE_NAMES:
            out.append([])
        elif w.endswith(".") and key not in _ABBREVIATIONS:  # a full stop ends the name
            out[-1].append(w[:-1])
            out.append([])
        else:
            out[-1].append(w)
    parts = []
    for p in out:
        while p and (p[0][:1].islower() or normalise_entity(p[0]) in ("the", "of", "and")):
            p = p[1:]
        while p and p[-1][:1].islower():
            p = p[:-1]
        if p:
            parts.append(" ".join(p))
    return parts


def date_keys(text: str) -> list[str]:
    """The merge keys of the dates ``text`` mentions, in order, once each: the ``date`` mentions
    :func:`extract_entities` returns, without looking for names."""
    out: dict[str, None] = {}
    for m in _DATE.finditer(text):
        name = " ".join(m.group(0).split()).rstrip(".")
        if name.casefold() != "may":  # "may" the verb: a bare May needs a day or a year
            out.setdefault(normalise_entity(name), None)
    return list(out)


def known_name_keys(known: Iterable[str]) -> dict[str, str]:
    """Merge key -> name of the names ``known`` (the form :func:`extract_entities` looks them up in)."""
    return {normalise_entity(k): k for k in known if normalise_entity(k)}


def extract_entities(text: str, known: Iterable[str] = (), known_keys: Mapping[str, str] | None = None) -> list[Mention]:
    """The entities ``text`` mentions, in order of first mention, one per merge key.

    ``known``: names known to be entities (matched case-insensitively as whole words anywhere,
    sentence start included); or ``known_keys``, the same as :func:`known_name_keys` makes
    them (a caller that keeps them between texts)."""
    found: dict[str, Mention] = {}
    dates: list[tuple[int, int]] = []
    for m in _DATE.finditer(text):
        name = " ".join(m.group(0).split()).rstrip(".")
        if name.casefold() == "may":
            continue  # "may" the verb: a bare May needs a day or a year
        found.setdefault(normalise_entity(name), Mention(name, normalise_entity(name), "date"))
        dates.append(m.span())
    if known_keys is None:
        known_keys = known_name_keys(known)
    masked = text
    for a, b in dates:  # dates are not names: blank them out of the name search
        masked = masked[:a] + " " * (b - a) + masked[b:]
    for m in _SPAN.finditer(masked):
        for part in _split_span(m.group(0)):
            name = _display(part)
            key = normalise_entity(name)
            if not key or key in _NOT_NAMES or key in _MONTHS or key[:3] in _DAY_PREFIXES or len(key) < 2:
                continue
            start = text.find(part, m.start())
            if _at_sentence_start(text, start) and key not in known_keys and " " not in name:
                continue
            found.setdefault(key, Mention(known_keys.get(key, name), key, "name"))
    if known_keys:
        words = [normalise_entity(w) for w in _TOKEN.findall(text)]
        longest = max(len(k.split()) for k in known_keys)
        for size in range(1, min(longest, 4) + 1):
            for i in range(len(words) - size + 1):
                key = " ".join(words[i:i + size])
                if key in known_keys and key not in found:
                    found[key] = Mention(known_keys[key], key, "name")
    return list(found.values())


def corpus_names(texts: Iterable[str]) -> set[str]:
    """Names capitalised mid-sentence somewhere in ``texts`` (so they count at sentence start too)."""
    out: set[str] = set()
    for text in texts:
        for mention in extract_entities(text):
            if mention.kind == "name":
                out.add(mention.name)
    return out


def merge_names(names: Iterable[str], existing: Mapping[str, str]) -> list[str]:
    """Display names merged by key: an existing entity's spelling wins (``existing``: key ->
    stored name), duplicates collapse to the first spelling; empty names dropped."""
    out: dict[str, str] = {}
    for name in names:
        key = normalise_entity(name)
        if key and key not in out:
            out[key] = existing.get(key, _display(name) or name)
    return list(out.values())


def mentions_for_batch(
    texts: list[str], passed: list[list[str]], existing: Iterable[str] = ()
) -> list[list[tuple[str, str]]]:
    """For each text, the ``(name, kind)`` entities it mentions beyond ``passed`` (the names the
    caller linked), merged with ``existing`` entity names (their spelling wins). Names
    capitalised mid-sentence anywhere in the batch, passed names and existing ones count as
    known names everywhere in the batch."""
    stored = {normalise_entity(n): n for n in existing if normalise_entity(n)}
    known = set(stored.values()) | {n for names in passed for n in names} | corpus_names(texts)
    anchors = {normalise_entity(n): n for n in list(stored.values()) + [n for names in passed for n in names]}
    out = []
    for text, own in zip(texts, passed):
        skip = {normalise_entity(n) for n in own}
        found = []
        for m in extract_entities(text, known):
            key, name = m.key, stored.get(m.key, m.name)
            alias = alias_of(key, anchors) if m.kind == "name" else None
            if alias is not None:
                key, name = normalise_entity(alias), alias
            if key not in skip:
                skip.add(key)
                found.append((name, m.kind))
        out.append(found)
    return out


def alias_of(key: str, anchors: Mapping[str, str]) -> str | None:
    """The one anchor name (caller-linked or stored) that a short single-word name abbreviates
    (``Mel`` -> ``Melanie``, ``Caro`` -> ``Caroline``), or None when there is none or several."""
    if " " in key or len(key) < 3 or key in anchors:
        return None
    matches = [name for k, name in anchors.items() if " " not in k and len(k) > len(key) and k.startswith(key)]
    return matches[0] if len(matches) == 1 else None


def event_mentions(store: Any, settings: Any, user: str, events: Sequence[Any]) -> list[list[tuple[str, str]]] | None:
    """Per event, the ``(name, kind)`` entities its text mentions, merged with the user's
    existing event entities (one read); None when ``Settings.extract_entities`` is off."""
    if not settings.extract_entities or not events:
        return None
    existing = store.event_entity_names(user)
    return mentions_for_batch([e.content for e in events], [list(e.entities) for e in events], existing)


@dataclass
class EntityIndex:
    """One user's event-entity links in layout order: who mentions what, and how often.

    ``linked[p]``: keys the caller linked to the event at position ``p`` (``entities=``);
    ``mentioned[p]``: keys found in its text only; ``postings[key]``: positions of every event
    linked to or mentioning ``key`` (int64 arrays: read into numpy without a Python int per
    event); ``names[key]``: a display name; ``linked_flags[key]``, aligned with
    ``postings[key]``: whether ``key`` is linked to that event. A speaker's first question at a
    million events read both in ~80 ms (a list of ints, ``linked`` asked per event); now in a
    few."""

    linked: list[frozenset[str]]
    mentioned: list[frozenset[str]]
    postings: dict[str, array[int]]
    names: dict[str, str]
    linked_flags: dict[str, list[bool]] = field(default_factory=dict, repr=False, compare=False)
    _known: tuple[int, dict[str, str]] | None = field(default=None, repr=False, compare=False)

    def known_keys(self) -> dict[str, str]:
        """:func:`known_name_keys` of the display names, kept until names are added (a name,
        once there, never changes: they are only added)."""
        got = self._known
        if got is None or got[0] != len(self.names):
            got = self._known = (len(self.names), known_name_keys(self.names.values()))
        return got[1]

    @classmethod
    def build(cls, position: Mapping[str, int], linked: Sequence[Sequence[str]], rows: Iterable[tuple[str, str]]) -> EntityIndex:
        """From the layout's positions, the caller-linked names per position and the MENTIONS rows."""
        n = len(linked)
        own = [frozenset(normalise_entity(x) for x in names) for names in linked]
        found: list[set[str]] = [set() for _ in range(n)]
        postings: dict[str, array[int]] = {}
        flags: dict[str, list[bool]] = {}
        names: dict[str, str] = {}
        for ident, name in rows:
            p = position.get(ident)
            key = normalise_entity(name)
            if p is None or not key:
                continue
            names.setdefault(key, name)
            if key not in found[p]:
                found[p].add(key)
                postings.setdefault(key, array("q")).append(p)
                flags.setdefault(key, []).append(key in own[p])
        for p, keys in enumerate(own):
            for key in keys:
                if key not in found[p]:
                    found[p].add(key)
                    postings.setdefault(key, array("q")).append(p)
                    flags.setdefault(key, []).append(True)
        mentioned = [frozenset(found[p] - own[p]) for p in range(n)]
        return cls(own, mentioned, postings, names, flags)

    def extend(self, position: Mapping[str, int], linked: Sequence[Sequence[str]], rows: Iterable[tuple[str, str]]) -> None:
        """Add the positions from ``len(self.linked)`` to ``len(linked)`` (events appended to the
        layout; ``rows``: MENTIONS rows, those of earlier positions are skipped): the index then
        equals the one :meth:`build` makes over all positions."""
        start = len(self.linked)
        tail = type(self).build({i: p - start for i, p in position.items() if p >= start}, linked[start:], rows)
        self.linked.extend(tail.linked)
        self.mentioned.extend(tail.mentioned)
        for key, ps in tail.postings.items():
            self.postings.setdefault(key, array("q")).extend(p + start for p in ps)
            self.linked_flags.setdefault(key, []).extend(tail.linked_flags[key])
        for key, name in tail.names.items():
            self.names.setdefault(key, name)
