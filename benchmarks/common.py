"""Small helpers the benchmark scripts share."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
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


RESULTS = Path(__file__).resolve().parent / "results"


def results_dir(save: bool) -> Path:
    """Where a benchmark writes: the ignored ``results/local/`` unless ``--save`` asks for the
    tracked ``results/`` (the committed figures change only when asked)."""
    return RESULTS if save else RESULTS / "local"


def guard_history(save: bool) -> Path:
    """The regression guard's history: the tracked file with ``--save``; otherwise a local copy
    (made from the tracked one the first time) that runs append to without touching the tracked."""
    tracked = RESULTS / "history.jsonl"
    if save:
        return tracked
    local = RESULTS / "local" / "history.jsonl"
    if not local.exists() and tracked.exists():
        local.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tracked, local)
    return local
