"""The quickstart leaves nothing behind when it runs on a temporary file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quickstart_removes_its_temporary_database(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TMPDIR": str(scratch)}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")], capture_output=True,
                          text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "after a good outcome" in done.stdout
    # torch may leave its own compile cache (torchinductor_*) there; nothing of graphmem's stays
    left = [p.name for p in scratch.iterdir() if not p.name.startswith("torchinductor")]
    assert left == []
