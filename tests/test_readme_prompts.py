"""The README's prompt-versions example runs as printed and promotes the candidate."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_prompt_versions_example_runs() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Prompt versions and A/B tests", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```python\n(.*?)\n```", section, flags=re.S)[0]
    out = io.StringIO()
    scope: dict[str, object] = {}
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), scope)  # the README's own example
    lines = out.getvalue().splitlines()
    assert lines[-1] == "orchestrator_v2"
    assert "P(candidate better)" in lines[0]
    scope["mem"].close()  # type: ignore[attr-defined]
