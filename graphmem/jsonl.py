"""Reading JSONL files: one JSON object per non-empty line, every error naming its line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from graphmem.errors import InvalidInputError


def read_objects(path: str | os.PathLike[str], *, not_json_hint: str) -> list[tuple[int, dict[str, Any]]]:
    """The (line number, object) pairs of the file's non-empty lines.

    InvalidInputError for an unreadable file, a line that is not JSON (the message ends with
    ``not_json_hint``) or a line that is JSON but not an object."""
    source = Path(path)
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInputError(f"cannot read {source}: {getattr(e, 'strerror', None) or e}") from e
    out: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as e:
            raise InvalidInputError(f"{source}:{number}: not JSON ({e.msg}); {not_json_hint}") from e
        if not isinstance(item, dict):
            raise InvalidInputError(f"{source}:{number}: expected a JSON object, got {type(item).__name__}")
        out.append((number, item))
    return out
