"""Start a real graphmem server on a free localhost port: uvicorn in a thread, or a subprocess."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from graphmem import HashEmbedder, Settings
from graphmem.llm import OfflineLLM
from graphmem.server import KeyStore, create_app
from graphmem.server.core import Owner

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    """A running server: its URL, the keys by name, and (in-thread) its Owner."""

    url: str
    keys: dict[str, str]
    owner: Owner | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def headers(self, who: str) -> dict[str, str]:
        """Authorization headers for one of the keys."""
        return {"Authorization": f"Bearer {self.keys[who]}"}


def make_keys() -> tuple[KeyStore, dict[str, str]]:
    """alice and bob (agents), ann (analyst of alice), root (admin), all (analyst of everyone)."""
    store = KeyStore()
    keys = {
        "alice": store.add("alice", "agent")[0],
        "bob": store.add("bob", "agent")[0],
        "ann": store.add("ann", "analyst", ["alice"])[0],
        "all": store.add("auditor", "analyst", ["*"])[0],
        "root": store.add("root", "admin")[0],
    }
    return store, keys


def wait_healthy(url: str, timeout: float = 30.0) -> None:
    """Poll /healthz until it answers 200."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"server at {url} did not come up within {timeout} s")


@contextmanager
def serve_in_thread(db: Path, settings: Settings | None = None, **app_kwargs: Any) -> Iterator[Served]:
    """A real uvicorn server over ``db`` in a background thread, stopped at exit."""
    store, keys = make_keys()
    embedder = app_kwargs.pop("embedder", None) or HashEmbedder()
    app = create_app(db, keys=store, embedder=embedder, llm=OfflineLLM(), settings=settings, **app_kwargs)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url)
        yield Served(url=url, keys=keys, owner=app.state.owner)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def graphmem_cmd(*args: str) -> list[str]:
    """The argv of the graphmem CLI from this worktree."""
    return [sys.executable, "-c", "from graphmem.cli import main; main()", *args]


def cli_env(**extra: str) -> dict[str, str]:
    """The environment for a CLI subprocess: this worktree first on the path, offline."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["HF_HUB_OFFLINE"] = "1"
    env.pop("ANTHROPIC_API_KEY", None)
    env.update(extra)
    return env


@contextmanager
def serve_subprocess(db: Path, keys_file: Path, port: int | None = None) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``graphmem --embedder hash --db DB serve`` as a subprocess; killed at exit if still running."""
    port = port or free_port()
    proc = subprocess.Popen(
        graphmem_cmd("--embedder", "hash", "--db", str(db), "serve", "--port", str(port), "--keys", str(keys_file)),
        env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, timeout=60)
        yield proc, url
    finally:
        stop_process(proc)


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """Terminate ``proc`` if it still runs (kill it after 20 s)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
