"""Small helpers the benchmark scripts share."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from graphmem.config import Settings


def settings_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """``--set NAME=VALUE`` strings as Settings fields, each value parsed as JSON when it can be.

    Raises pydantic's ValidationError at once for an unknown name or a bad value."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        try:
            out[name.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[name.strip()] = value
    Settings(**out)  # fail early on an unknown name or a bad value
    return out
