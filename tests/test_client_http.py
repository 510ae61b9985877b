"""Client's plain keep-alive connections: shared by threads, replaced when the server closed them."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from graphmem.client import Client
from graphmem.client_http import MAX_IDLE, PlainHttp, PlainHttpError, _text, dropped, usable
from graphmem.errors import NotFoundError
from tests.server_helpers import free_port, serve_in_thread


def test_a_shared_client_over_plain_connections_answers_every_thread(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path / "m.kuzu", mcp=False) as served, Client(served.url, api_key=served.keys["alice"]) as c:
        assert c._plain is not None
        learning = c.add_learning("keep invoices under 3 pages", tool="billing")
        errors: list[str] = []
        seen: list[str] = []

        def worker() -> None:
            try:
                for _ in range(10):
                    seen.append(c.get_learning(learning.id).content)
                    assert c.context("invoices", tool="billing").learnings
            except Exception as e:  # reported below
                errors.append(f"{type(e).__name__}: {e}")

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == [] and seen == ["keep invoices under 3 pages"] * 80
        assert 1 <= len(c._plain._idle) <= min(8, MAX_IDLE)
        with pytest.raises(NotFoundError):  # error answers map to the same errors as through httpx
            c.get_learning("00000000-0000-0000-0000-000000000000")
        assert [l.id for l in c.learnings(tool="billing", limit=5)] == [learning.id]


@contextmanager
def one_answer_per_connection() -> Iterator[int]:
    """A raw HTTP server that answers one request per connection (keep-alive promised), then
    closes it: what a server's idle timeout does to a pooled connection."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
                             b'{"ok":true}')

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        srv.close()


def test_a_connection_the_server_closed_is_replaced_before_reuse() -> None:
    with one_answer_per_connection() as port:
        plain = PlainHttp(f"http://127.0.0.1:{port}", {}, timeout=5)
        assert plain.request("GET", "/x")[0] == 200
        assert len(plain._idle) == 1
        deadline = time.monotonic() + 5
        while not dropped(plain._idle[0]) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert dropped(plain._idle[0])
        status, headers, body = plain.request("GET", "/x", {"flag": True, "n": 3, "tags": ["a", "b"]})
        assert (status, headers["content-type"], body) == (200, "application/json", b'{"ok":true}')
        plain.close()
        assert plain._idle == []


def test_no_server_is_a_plain_http_error() -> None:
    plain = PlainHttp(f"http://127.0.0.1:{free_port()}", {}, timeout=2)
    with pytest.raises(PlainHttpError):
        plain.request("GET", "/healthz")


def test_plain_only_where_it_sends_the_same_request(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    assert usable("http://127.0.0.1:8420")
    assert not usable("https://memory.example.com")
    assert not usable("http://127.0.0.1:8420", transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    monkeypatch.setenv("http_proxy", "http://proxy.example.com:3128")
    assert not usable("http://memory.example.com:8420")
    monkeypatch.setenv("no_proxy", "memory.example.com")
    assert usable("http://memory.example.com:8420")
    assert [_text(v) for v in (True, False, 3, "x")] == ["true", "false", "3", "x"]
