"""The README's auto-tuning and session-metrics examples run as printed."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def run_section(heading: str) -> tuple[list[str], list[str]]:
    """Run the first Python block under ``heading``: (its printed lines, the lines its comments promise)."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```python\n(.*?)\n```", section, flags=re.S)[0]
    out = io.StringIO()
    scope: dict[str, object] = {}
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), scope)  # the README's own example
    scope["mem"].close()  # type: ignore[attr-defined]
    promised = []
    for line in block.splitlines():
        if line.startswith("# "):
            promised.append(line[2:])
        elif line.startswith("print(") and "  # " in line:
            promised.append(line.split("  # ", 1)[1])
    return out.getvalue().splitlines(), promised


def test_the_auto_tuning_example_prints_what_it_says() -> None:
    printed, promised = run_section("Auto-tuning")
    assert printed == promised


def test_the_session_metrics_example_prints_what_it_says() -> None:
    printed, promised = run_section("Session metrics")
    assert printed == promised
