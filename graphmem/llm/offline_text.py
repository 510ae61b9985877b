"""Text helpers shared by the OfflineLLM's rules (tokens, sentences, near-duplicates)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# --- shared text helpers ---------------------------------------------------------------------

_STOP = frozenset({
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by", "from", "as", "is",
    "are", "was", "were", "be", "been", "it", "its", "this", "that", "these", "those", "i", "you", "we", "they",
    "he", "she", "my", "your", "our", "their", "me", "us", "them", "do", "does", "did", "so", "if", "then", "than",
    "too", "very", "just", "not", "no", "please"
})


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:['’][a-z]+)?", text.lower())


def _tokens(text: str) -> set[str]:
    return {w for w in _words(text) if w not in _STOP}


def _norm(text: str) -> str:
    return " ".join(_words(text))


@functools.lru_cache(maxsize=4096)
def _signature(text: str) -> tuple[frozenset[str], str]:
    """(tokens, normalised text) of ``text``, cached: summaries compare every bullet pairwise."""
    words = _words(text)
    return frozenset(w for w in words if w not in _STOP), " ".join(words)


def _similar(a: str, b: str, threshold: float = 0.75) -> bool:
    """Near-identical: same normalised text, or token Jaccard >= threshold."""
    (ta, na), (tb, nb) = _signature(a), _signature(b)
    jaccard = len(ta & tb) / len(ta | tb) if ta and tb else 0.0
    return na == nb or jaccard >= threshold


def _gist(text: str | None, n: int = 10) -> str:
    words = (text or "").split()
    return " ".join(words[:n]) + ("…" if len(words) > n else "")


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _sentences(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"(?<=[.!?;])\s+|\n+", text.strip()) if p.strip()]


def _unique(items: Iterable[str]) -> list[str]:
    out: dict[str, str] = {}
    for item in items:
        if item:
            out.setdefault(item.lower(), item)
    return list(out.values())
