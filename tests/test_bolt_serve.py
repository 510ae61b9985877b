"""Two ``graphmem serve`` processes over one Bolt database (ArcadeDB): what one is told, the other
answers. Skipped when neo4j / arcadedb_embedded are missing or GRAPHMEM_SKIP_BOLT=1."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from graphmem.client import Client
from graphmem.server.auth import KeyStore
from graphmem.store.bolt.testing import ArcadeServer
from tests.server_helpers import cli_env, free_port, graphmem_cmd, stop_process, wait_healthy

pytestmark = pytest.mark.bolt


@contextmanager
def serve_bolt(url: str, auth: tuple[str, str], keys_file: Path, count: int) -> Iterator[list[str]]:
    """``count`` servers on ``url`` started together (credentials from the environment)."""
    env = cli_env(GRAPHMEM_BOLT_USER=auth[0], GRAPHMEM_BOLT_PASSWORD=auth[1])
    procs: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    with ExitStack() as stack:
        for _ in range(count):
            port = free_port()
            proc = subprocess.Popen(
                graphmem_cmd("--embedder", "hash", "serve", "--store", url, "--port", str(port), "--keys", str(keys_file),
                             "--no-mcp"),
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )
            procs.append(proc)
            stack.callback(stop_process, proc)
            urls.append(f"http://127.0.0.1:{port}")
        for u, proc in zip(urls, procs):
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline:
                try:
                    wait_healthy(u, timeout=1)
                    break
                except TimeoutError:
                    continue
            else:
                proc.terminate()
                raise AssertionError(proc.communicate(timeout=20)[1].decode()[-3000:])
        yield urls


def test_two_servers_over_one_bolt_database(bolt_url: str, arcade: ArcadeServer, tmp_path: Path) -> None:
    keys = KeyStore()
    alice, _ = keys.add("alice", "agent")
    keys_file = tmp_path / "keys.json"
    keys.save(keys_file)
    with serve_bolt(bolt_url, arcade.auth, keys_file, 2) as (one_url, two_url):
        one, two = Client(one_url, api_key=alice), Client(two_url, api_key=alice)
        try:
            first = one.add_learning("Dana at Acme wants bullet points in every email", tool="send_email",
                                     entities=["Dana", "Acme"])
            assert two.get_learning(first.id).content == first.content  # written through one, read through two
            ctx = two.context("how should I write to Dana", tool="send_email")
            assert first.id in [s.learning.id for s in ctx.learnings]
            two.record_outcome(ctx.id, success=True, helpful=[first.id])
            assert one.get_learning(first.id).helpful == 1  # the outcome recorded by two, seen by one
            second = two.add_learning("Invoices over 10k need the finance lead's approval", tool="create_invoice")
            assert second.id in [l.id for l in one.learnings()]
            assert second.id in [s.learning.id for s in one.context("invoice approval", tool="create_invoice").learnings]
        finally:
            one.close()
            two.close()


def test_serve_refuses_two_databases(tmp_path: Path) -> None:
    out = subprocess.run(graphmem_cmd("--db", str(tmp_path / "a.kuzu"), "serve", "--store", "bolt://127.0.0.1:1/x"),
                         env=cli_env(), capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode != 0 and "not both" in (out.stderr + out.stdout)
