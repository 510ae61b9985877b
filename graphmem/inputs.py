"""Validation of caller input: every check raises InvalidInputError saying what to pass instead.

This module is the one boundary between callers and the database: every public entry point of
:class:`graphmem.Memory` (and the learn/outcome/summary services it calls) passes its arguments
through these helpers before anything reaches Kùzu. The rules:

- text must be a ``str`` that UTF-8 can encode: lone surrogates (``"\\ud800"``, which
  ``json.loads('"\\\\ud800"')`` produces) are refused, since Kùzu cannot store them and a failed
  cast leaves its write transaction in a bad state. NUL characters (``"\\x00"``) are refused too
  (never silently stripped): they truncate text in C tools and are never meaningful in graphmem;
- booleans must be ``bool`` (``"no"`` is not False), numbers must be numbers, not bools;
- datetimes must be timezone-aware (``datetime(..., tzinfo=timezone.utc)``);
- metadata and Cypher parameters are checked recursively (keys and values).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from graphmem.errors import InvalidInputError

_MAX_DEPTH = 50


def check_string(name: str, value: Any) -> str:
    """``value`` itself if it is a str that UTF-8 can encode and holds no NUL character."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}")
    if value.isascii():
        if "\x00" in value:
            raise InvalidInputError(
                f"{name} contains a NUL character (\\x00) at position {value.index(chr(0))}; remove it"
            )
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidInputError(
            f"{name} contains a lone surrogate ({value[e.start]!r} at position {e.start}), which is not "
            "valid Unicode text; decode your input with errors='replace' or remove it"
        ) from None
    if "\x00" in value:
        raise InvalidInputError(f"{name} contains a NUL character (\\x00) at position {value.index(chr(0))}; remove it")
    return value


def require_text(name: str, value: Any, *, max_chars: int, allow_empty: bool = False) -> str:
    """A non-empty (unless allowed) valid string of at most ``max_chars`` characters, stripped."""
    text = check_string(name, value).strip()
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


def optional_string(name: str, value: Any) -> str | None:
    """None, or a valid string kept exactly as given (filters compared as they are)."""
    return None if value is None else check_string(name, value)


def query_text(name: str, value: Any, *, max_chars: int | None = None) -> str:
    """A search query: None counts as "", the text is checked, then cut to ``max_chars`` (if given)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string (the query text), got {type(value).__name__}")
    text = check_string(name, value)
    return text if max_chars is None else text[:max_chars]


def require_id(name: str, value: Any) -> str:
    """An id graphmem returned (learning, event, objective, context...): a short valid string."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be an id string returned by graphmem, got {value!r:.80}")
    if len(value) > 200:
        raise InvalidInputError(f"{name} is {len(value):,} characters long; pass an id returned by graphmem")
    return check_string(name, value)


def optional_id(name: str, value: Any) -> str | None:
    """None, or :func:`require_id`."""
    return None if value is None else require_id(name, value)


def require_bool(name: str, value: Any) -> bool:
    """A real boolean: ``"no"``, ``0`` or ``None`` are refused rather than guessed at."""
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_":  # numpy.bool_
        return bool(value)
    raise InvalidInputError(f"{name} must be True or False, got {value!r:.80}")


def optional_bool(name: str, value: Any) -> bool | None:
    """None, or :func:`require_bool`."""
    return None if value is None else require_bool(name, value)


def require_time(name: str, value: Any) -> datetime | None:
    """None, or a timezone-aware datetime converted to UTC (naive ones are refused)."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInputError(
            f"{name} must be a datetime with a timezone (e.g. datetime(2024, 1, 1, tzinfo=timezone.utc)), "
            f"got {type(value).__name__} {value!r:.80}"
        )
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(
            f"{name} must be timezone-aware; pass tzinfo=timezone.utc (e.g. datetime(..., tzinfo=timezone.utc))"
        )
    return value.astimezone(UTC)


def require_path(name: str, value: Any, *, allow_none: bool = False) -> str | os.PathLike[str] | None:
    """A file path: a str or an os.PathLike (None only when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
        if isinstance(value, bytes):
            raise InvalidInputError(f"{name} must be a text path, got bytes")
    if not isinstance(value, str):
        none = " or None (in memory)" if allow_none else ""
        raise InvalidInputError(f"{name} must be a file path (str or pathlib.Path){none}, got {type(value).__name__}")
    return check_string(name, value)


def require_items(name: str, value: Any) -> list[Any]:
    """A batch: a list or tuple (any iterable) of items, not None, a single dict or a string."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{name} must be a list of dicts, got {type(value).__name__}")
    return list(value)


def require_choice(name: str, value: Any, allowed: Iterable[str]) -> str:
    """One of ``allowed``."""
    options = tuple(allowed)
    if not isinstance(value, str) or value not in options:
        raise InvalidInputError(f"unknown {name} {value!r:.80}; use one of: {', '.join(options)}")
    return str(value)


def require_unit(name: str, value: Any) -> float:
    """A number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{name} must be a number between 0 and 1, got {value!r:.80}")
    if not 0.0 <= float(value) <= 1.0:
        raise InvalidInputError(f"{name} must be between 0 and 1, got {value}")
    return float(value)


def require_count(name: str, value: Any) -> int:
    """A whole number >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name} must be a whole number >= 0, got {value!r:.80}")
    if value >= 2**63:
        raise InvalidInputError(f"{name} is too large; pass a whole number below 2**63")
    return value


MAX_TTL_DAYS = 1_000_000


def require_ttl(name: str, value: Any) -> int:
    """A time to live in whole days: 1 .. MAX_TTL_DAYS."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_TTL_DAYS:
        raise InvalidInputError(
            f"{name} must be a whole number of days between 1 and {MAX_TTL_DAYS:,} (or None), got {value!r:.80}"
        )
    return value


def names(label: str, values: Any, *, max_chars: int = 200) -> list[str]:
    """A list of distinct, non-empty names (a single string counts as one name)."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    if isinstance(values, (bytes, Mapping)) or not isinstance(values, Iterable):
        raise InvalidInputError(f"{label} names must be a list of strings (or one string), got {type(values).__name__}")
    out: list[str] = []
    for v in values:
        text = require_text(label, v, max_chars=max_chars)
        if text not in out:
            out.append(text)
    return out


def check_value(name: str, value: Any, depth: int = 0) -> None:
    """Every string inside ``value`` (dict keys too, recursively) passes :func:`check_string`."""
    if depth > _MAX_DEPTH:
        raise InvalidInputError(f"{name} is nested more than {_MAX_DEPTH} levels deep; flatten it")
    if isinstance(value, str):
        check_string(name, value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(k, str):
                check_string(f"a key of {name}", k)
            check_value(f"{name}[{k!r:.40}]", v, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for i, v in enumerate(value):
            check_value(f"{name}[{i}]", v, depth + 1)


def json_object(name: str, value: Mapping[str, Any] | None) -> dict[str, Any]:
    """A dict of valid text that survives a JSON round trip unchanged."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{name} must be a dict, got {type(value).__name__}")
    check_value(name, value)
    try:
        restored = json.loads(json.dumps(dict(value), allow_nan=False))
    except (TypeError, ValueError, RecursionError) as e:
        raise InvalidInputError(
            f"{name} must be JSON-serialisable (str, finite numbers, bools, lists, dicts): {e}"
        ) from e
    if restored != dict(value):
        raise InvalidInputError(
            f"{name} does not round-trip through JSON unchanged (tuples, non-string keys...); use lists "
            "and string keys"
        )
    return dict(restored)


def cypher_params(value: Any) -> dict[str, Any]:
    """Cypher parameters: a dict with string keys whose strings are all valid."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"params must be a dict of parameter name -> value, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise InvalidInputError(f"Cypher parameter names must be strings, got {key!r:.80}")
    check_value("params", value)
    return dict(value)


def check_db_params(params: Mapping[str, Any] | None) -> None:
    """The store's last line of defence: no string Kùzu cannot encode reaches it.

    Caller input is checked at the API; this also covers text that came from elsewhere (an LLM's
    answer, a file). Cheap: numeric lists (embeddings) are skipped after their first element.
    """
    if params:
        for key, value in params.items():
            _check_db_value(key, value, 0)


def _check_db_value(name: str, value: Any, depth: int) -> None:
    if isinstance(value, str):
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidInputError(
                    f"a value for the database (parameter ${name}) contains a lone surrogate, which is not "
                    "valid Unicode text; it was not written"
                ) from None
    elif isinstance(value, (list, tuple)):
        if value and isinstance(value[0], (int, float)):
            return  # a vector or a list of numbers
        if depth < _MAX_DEPTH:
            for item in value:
                _check_db_value(name, item, depth + 1)
    elif isinstance(value, Mapping) and depth < _MAX_DEPTH:
        for item in value.values():
            _check_db_value(name, item, depth + 1)


@contextmanager
def model_errors(what: str) -> Iterator[None]:
    """Turn a pydantic ValidationError raised while building ``what`` into an InvalidInputError."""
    try:
        yield
    except ValidationError as e:
        details = "; ".join(
            f"{'.'.join(str(p) for p in err.get('loc', ()))}: {err.get('msg', '')}" for err in e.errors()
        )
        raise InvalidInputError(f"invalid {what}: {details}") from e
