"""Validation of caller input: every check raises InvalidInputError saying what to pass instead."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from graphmem.errors import InvalidInputError


def require_text(name: str, value: Any, *, max_chars: int, allow_empty: bool = False) -> str:
    """A non-empty (unless allowed) string of at most ``max_chars`` characters, stripped."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}")
    text = value.strip()
    if not text and not allow_empty:
        raise InvalidInputError(f"{name} is empty; pass the text itself (whitespace alone is not enough)")
    if len(text) > max_chars:
        raise InvalidInputError(
            f"{name} is {len(text):,} characters, over the limit of {max_chars:,}; shorten it or raise "
            "Settings.max_content_chars"
        )
    return text


def optional_text(name: str, value: Any, *, max_chars: int) -> str | None:
    """None, or a stripped string (empty becomes None)."""
    if value is None:
        return None
    text = require_text(name, value, max_chars=max_chars, allow_empty=True)
    return text or None


def require_choice(name: str, value: Any, allowed: Iterable[str]) -> str:
    """One of ``allowed``."""
    options = tuple(allowed)
    if value not in options:
        raise InvalidInputError(f"unknown {name} {value!r}; use one of: {', '.join(options)}")
    return str(value)


def require_unit(name: str, value: Any) -> float:
    """A number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{name} must be a number between 0 and 1, got {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise InvalidInputError(f"{name} must be between 0 and 1, got {value}")
    return float(value)


def require_count(name: str, value: Any) -> int:
    """A whole number >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name} must be a whole number >= 0, got {value!r}")
    return value


def names(label: str, values: Any, *, max_chars: int = 200) -> list[str]:
    """A list of distinct, non-empty names (a single string counts as one name)."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for v in values:
        text = require_text(label, v, max_chars=max_chars)
        if text not in out:
            out.append(text)
    return out


def json_object(name: str, value: Mapping[str, Any] | None) -> dict[str, Any]:
    """A dict that survives a JSON round trip unchanged."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{name} must be a dict, got {type(value).__name__}")
    try:
        restored = json.loads(json.dumps(dict(value)))
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"{name} must be JSON-serialisable (str, numbers, bools, lists, dicts): {e}") from e
    if restored != dict(value):
        raise InvalidInputError(
            f"{name} does not round-trip through JSON unchanged (tuples, non-string keys...); use lists "
            "and string keys"
        )
    return dict(restored)
