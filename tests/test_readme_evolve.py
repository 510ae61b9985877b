"""The README's prompt-versions, distillation, failures-to-tests and bullet-evolution examples run as printed."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def run_section(heading: str) -> list[str]:
    """Run the first Python block under ``heading``; its printed lines."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```python\n(.*?)\n```", section, flags=re.S)[0]
    out = io.StringIO()
    scope: dict[str, object] = {}
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), scope)  # the README's own example
    scope["mem"].close()  # type: ignore[attr-defined]
    return out.getvalue().splitlines()


def test_the_prompt_versions_example_runs() -> None:
    lines = run_section("Prompt versions and A/B tests")
    assert lines[-1] == "orchestrator_v2"
    assert "P(candidate better)" in lines[0]


def test_the_distillation_example_runs() -> None:
    lines = run_section("Distillation")
    assert lines == ["Rule: The user said the email to Dana was too long 3 1", "[{'n': 3}]"]


def test_the_failures_to_tests_example_runs(tmp_path: Path, monkeypatch: object) -> None:
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)  # type: ignore[attr-defined]
    assert run_section("From failures to tests") == ["1 test_graphmem_behaviour.py"]
    section = README.read_text(encoding="utf-8").split("## From failures to tests\n", 1)[1].split("\n## ", 1)[0]
    shell = re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)[0]
    script = shell.replace("pytest ai_tests", f"{sys.executable} -m pytest -q -p no:cacheprovider ai_tests")
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def test_the_bullet_evolution_example_runs() -> None:
    lines = run_section("Bullet evolution")
    assert lines == ["0.0 1.0", "evolution True",
                     "Round invoice totals to whole dollars; always show cents and the currency code in invoice totals"]
