"""Text normalisation for the full-text index and for exact-duplicate detection.

Kùzu 0.11.3's stemmers come with a stopword list that drops meaningful words ("never", "keep",
"hello"), and a custom stopword list crashes it. So graphmem writes a normalised copy of every
searchable text into ``search_text`` and indexes that with ``stemmer := 'none'``; queries are
normalised by the same function, so both sides agree.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

# Function words only: negations, modal and instruction verbs ("never", "always", "keep",
# "avoid", "use") are kept on purpose, because rules hinge on them.
STOPWORDS = frozenset(
    ["a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "by", "for", "from", "with", "as", "into", "onto", "about", "than", "then", "is", "are", "was", "were", "be", "been", "being", "am", "it", "its", "it's", "this", "that", "these", "those", "there", "here", "i", "me", "my", "we", "our", "us", "you", "your", "he", "him", "his", "she", "her", "they", "them", "their", "what", "which", "who", "whom", "whose", "how", "when", "where", "why", "do", "does", "did", "doing", "have", "has", "had", "having", "so", "such", "very", "just", "also", "too", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "'s", "s", "t"]
)

_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("ational", "ate"),
    ("ization", "ize"),
    ("fulness", "ful"),
    ("iveness", "ive"),
    ("ousness", "ous"),
    ("ations", "ate"),
    ("ation", "ate"),
    ("ments", "ment"),
    ("ingly", ""),
    ("edly", ""),
    ("ies", "y"),
    ("sses", "ss"),
    ("ing", ""),
    ("ed", ""),
    ("ly", ""),
    ("es", ""),
    ("s", ""),
)


@lru_cache(maxsize=65536)  # words repeat: every search text and query stems the same few thousand
def stem(word: str) -> str:
    """A light, deterministic English stemmer: strips one common suffix.

    Enough to make "emails"/"email", "paragraphs"/"paragraph", "pushing"/"push" meet, without
    the cost or surprises of a full Porter implementation.
    """
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)] + replacement
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if suffix in ("es",) and not word.endswith(("ches", "shes", "xes", "zes", "sses")):
                return word[:-1]
            if suffix in ("ing", "ed") and len(base) > 2 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # "stopped" -> "stop", "running" -> "run"
            return base
    return word


def tokens(text: str) -> list[str]:
    """Lowercased, stemmed content tokens of ``text`` (stopwords dropped)."""
    out: list[str] = []
    for tok in _TOKEN.findall(text.lower()):
        tok = tok.replace("'", "")
        if tok in STOPWORDS:
            continue
        out.append(stem(tok))
    return out


def search_text(*parts: str | None) -> str:
    """The normalised text stored in ``search_text`` and matched by full-text queries."""
    return " ".join(t for part in parts if part for t in tokens(part))


def content_key(text: str) -> str:
    """The exact-duplicate key: lowercase, punctuation dropped, whitespace folded."""
    return " ".join(_TOKEN.findall(text.lower()))
