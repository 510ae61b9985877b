"""A small fake of Anthropic's Messages API for tests, over real HTTP on 127.0.0.1.

Usage::

    with FakeAnthropic() as fake:
        fake.push(tool_use({"passed": True, "score": 1.0, "reasoning": "ok"}))
        llm = AnthropicLLM(settings, api_key="test", base_url=fake.url)
        ...
        fake.requests[0].json["tool_choice"]

``POST /v1/messages`` answers with the next scripted :class:`Scripted` response (status, JSON
body or a function of the request body, optional delay) and records every request it got. With the
queue empty it answers 500 with an ``api_error`` saying so.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

Body = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Scripted:
    """One scripted answer: HTTP status, JSON body (or a function of the request JSON), delay."""

    status: int = 200
    body: Body = field(default_factory=dict)
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    json: dict[str, Any]


def _message(content: list[dict[str, Any]], stop_reason: str, model: str) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 7},
    }


def tool_use(tool_input: dict[str, Any], *, name: str | None = None) -> Scripted:
    """A 200 answer calling the tool the request forced (or ``name``) with ``tool_input``."""

    def body(request: dict[str, Any]) -> dict[str, Any]:
        forced = name or (request.get("tool_choice") or {}).get("name") or "tool"
        block = {"type": "tool_use", "id": "toolu_fake", "name": forced, "input": tool_input}
        return _message([block], "tool_use", str(request.get("model", "fake")))

    return Scripted(200, body)


def text_only(text: str, *, stop_reason: str = "end_turn") -> Scripted:
    """A 200 answer with only a text block (no tool call)."""
    return Scripted(
        200, lambda r: _message([{"type": "text", "text": text}], stop_reason, str(r.get("model", "fake")))
    )


def refusal(text: str = "I can't help with that.") -> Scripted:
    """A 200 answer with ``stop_reason: "refusal"``."""
    return text_only(text, stop_reason="refusal")


def error(status: int, kind: str = "api_error", message: str = "fake error", delay_s: float = 0.0) -> Scripted:
    """An error answer in the API's error shape (429 rate_limit_error, 500 api_error, ...)."""
    return Scripted(status, {"type": "error", "error": {"type": kind, "message": message}}, delay_s)


class FakeAnthropic:
    """The fake server: ``start()``/``stop()`` or use as a context manager; ``url`` is the base_url."""

    def __init__(self) -> None:
        self.queue: deque[Scripted] = deque()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (the SDK appends ``/v1/messages``)."""
        if self._server is None:
            raise RuntimeError("FakeAnthropic is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def push(self, *responses: Scripted) -> None:
        """Queue answers, served in order, one per request."""
        with self._lock:
            self.queue.extend(responses)

    def _next(self, request: Recorded) -> Scripted:
        with self._lock:
            self.requests.append(request)
            if self.queue:
                return self.queue.popleft()
        return error(500, "api_error", "fake: no scripted response left")

    def start(self) -> Self:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    payload = json.loads(raw or b"{}")
                except ValueError:
                    payload = {"_raw": raw.decode("utf-8", "replace")}
                if not self.path.split("?")[0].endswith("/v1/messages"):
                    self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                scripted = fake._next(Recorded(self.path, headers, payload))
                if scripted.delay_s:
                    time.sleep(scripted.delay_s)
                body = scripted.body(payload) if callable(scripted.body) else scripted.body
                self._send(scripted.status, body, scripted.headers)

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.send_header("request-id", f"req_fake_{len(fake.requests)}")
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-anthropic", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (handler threads still sleeping are daemons)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["FakeAnthropic", "Recorded", "Scripted", "error", "refusal", "text_only", "tool_use"]
