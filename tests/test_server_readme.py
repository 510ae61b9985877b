"""README "Run as a service": its shell, Python and MCP blocks run as printed (on a free port,
with the hash embedder via GRAPHMEM_EMBEDDER so no model is loaded)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.server_helpers import ROOT, cli_env, free_port

README = ROOT / "README.md"


def section() -> str:
    """The text of the README's "Run as a service" section."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Run as a service")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def block(lang: str) -> str:
    """The section's one ```lang block."""
    blocks = re.findall(rf"```{lang}\n(.*?)\n```", section(), flags=re.S)
    assert len(blocks) == 1, f"expected one {lang} block, found {len(blocks)}"
    return str(blocks[0])


def test_readme_service_commands_run_as_printed(tmp_path: Path) -> None:
    port = str(free_port())
    shell, python = block("bash").replace("8420", port), block("python").replace("8420", port)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "graphmem"  # `graphmem` as installed, from this worktree
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'from graphmem.cli import main; main()' \"$@\"\n")
    shim.chmod(0o755)
    script = "\n".join([
        "set -e",
        "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT",
        shell,
        "export AGENT_KEY ANALYST_KEY",
        f"{sys.executable} - <<'PYEOF'\n{python}\nPYEOF",
    ])
    env = cli_env(GRAPHMEM_EMBEDDER="hash")
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.Popen(["bash", "-c", script], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=150)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # nothing of the script outlives the test
    assert proc.returncode == 0, stdout + stderr
    result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    out = result.stdout
    assert "added learning" in out
    assert "Keep emails to Dana under 3 paragraphs" in out  # the CLI's context and the Client's prompt
    assert "alice" in out  # the analyst's Cypher
    assert "## Relevant Learnings" in out
    keys = json.loads((work / "keys.json").read_text())["keys"]
    assert {k["user"] for k in keys} == {"alice", "ann"}
    assert all(k["hash"].startswith("sha256:") for k in keys)
    assert not any(k in (work / "keys.json").read_text() for k in re.findall(r"gm_[\w-]{20,}", out))


def test_readme_mcp_config_names_the_commands() -> None:
    servers = json.loads(block("json"))["mcpServers"]
    stdio, http = servers["graphmem"], servers["graphmem-served"]
    assert stdio["command"] == "graphmem" and stdio["args"][-1] == "mcp"
    assert http["url"].endswith("/mcp") and http["headers"]["Authorization"].startswith("Bearer ")
