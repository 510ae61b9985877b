"""A throwaway ArcadeDB server with the Bolt plugin, for tests and benchmarks.

ArcadeDB's Python wheel (``arcadedb-embedded``) runs the engine in a JVM through JPype. The JVM
must not live in the test process (it cannot be stopped and restarted, and it holds threads and
memory), so :class:`ArcadeServer` starts it in a separate Python subprocess that prints one
``READY`` line once the server listens, and stops when its stdin closes.

    with ArcadeServer() as srv:
        srv.create_database("t1")
        Memory(srv.url("t1"), bolt_auth=srv.auth)

Nothing here is used by graphmem itself.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT_PASSWORD = "graphmem-test"  # a local throwaway server on 127.0.0.1 only

_CHILD = r"""
import json, sys
root, password, bolt, http = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
from arcadedb_embedded.server import ArcadeDBServer
srv = ArcadeDBServer(root, password, config={
    "host": "127.0.0.1",
    "server_plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
    "bolt_port": bolt, "http_port": http,
})
srv.start()
print("READY", flush=True)
for line in sys.stdin:  # one database name per line; EOF stops the server
    name = line.strip()
    if not name:
        continue
    try:
        srv.create_database(name)
        print("CREATED " + name, flush=True)
    except Exception as e:
        print("FAILED " + json.dumps(str(e)), flush=True)
srv.stop()
"""


def bolt_available() -> str | None:
    """Why the Bolt tests cannot run here (None when they can)."""
    if os.environ.get("GRAPHMEM_SKIP_BOLT") == "1":
        return "GRAPHMEM_SKIP_BOLT=1"
    try:
        import arcadedb_embedded  # noqa: F401
        import neo4j  # noqa: F401
    except ImportError as e:
        return f"the Bolt tests need `neo4j` and `arcadedb-embedded` (pip install -e '.[dev]'): {e}"
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ArcadeServer:
    """An ArcadeDB server with Bolt in a child process, on free localhost ports."""

    def __init__(self, root: str | os.PathLike[str] | None = None, *, start_timeout: float = 120.0) -> None:
        self._own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="graphmem-arcade-") if root is None else root)
        self.start_timeout = start_timeout
        self.bolt_port = free_port()
        self.http_port = free_port()
        self.auth = ("root", ROOT_PASSWORD)
        self.start_seconds = 0.0
        self._proc: subprocess.Popen[str] | None = None

    def url(self, database: str | None = None) -> str:
        """The bolt:// URL; with ``database``, the path names it (graphmem's way to pick one)."""
        base = f"bolt://127.0.0.1:{self.bolt_port}"
        return f"{base}/{database}" if database else base

    def start(self) -> ArcadeServer:
        """Start the server and wait (bounded) until Bolt accepts connections."""
        t0 = time.perf_counter()
        log = open(self.root / "server.log", "w")  # noqa: SIM115 -- closed in stop()
        self._log = log
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(self.root / "databases"), ROOT_PASSWORD,
             str(self.bolt_port), str(self.http_port)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, cwd=self.root,
        )
        line = self._readline(self.start_timeout)
        if line.strip() != "READY":
            self.stop()
            raise RuntimeError(f"ArcadeDB did not start (got {line!r}); see {self.root / 'server.log'}")
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            with socket.socket() as s:
                s.settimeout(1.0)
                if s.connect_ex(("127.0.0.1", self.bolt_port)) == 0:
                    break
            time.sleep(0.1)
        else:
            self.stop()
            raise RuntimeError("ArcadeDB's Bolt port never answered")
        self.start_seconds = time.perf_counter() - t0
        return self

    def _readline(self, timeout: float) -> str:
        import selectors

        assert self._proc is not None and self._proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self._proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(timeout):
                return "<timeout>"
            return self._proc.stdout.readline()
        finally:
            sel.close()

    def create_database(self, name: str, timeout: float = 60.0) -> str:
        """Create database ``name`` on the server; returns its bolt:// URL."""
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(name + "\n")
        self._proc.stdin.flush()
        line = self._readline(timeout)
        if line.strip() != f"CREATED {name}":
            raise RuntimeError(f"could not create database {name}: {line!r}")
        return self.url(name)

    def sql(self, database: str, command: str, timeout: float = 600.0) -> Any:
        """Run one ArcadeDB SQL command through the server's HTTP API (what Cypher over Bolt cannot
        do, e.g. ``CREATE INDEX ON Learning (search_text) FULL_TEXT`` or an ``LSM_VECTOR`` index);
        returns its ``result`` rows. Raises RuntimeError on an HTTP error."""
        import httpx

        r = httpx.post(f"http://127.0.0.1:{self.http_port}/api/v1/command/{database}", auth=self.auth,
                       json={"language": "sql", "command": command}, timeout=timeout)
        if r.status_code != 200:
            raise RuntimeError(f"ArcadeDB SQL failed ({r.status_code}): {r.text[:500]}")
        return r.json().get("result")

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server: close its stdin, then kill it if it does not exit in time."""
        proc, self._proc = self._proc, None
        if proc is not None:
            with _suppress():
                assert proc.stdin is not None
                proc.stdin.close()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        log = getattr(self, "_log", None)
        if log is not None:
            log.close()
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ArcadeServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        return True
