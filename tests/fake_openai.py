"""A small fake of the OpenAI API (chat completions with tool calls, embeddings) over real HTTP
on 127.0.0.1, for the OpenAI-compatible adapters' tests.

``POST /v1/chat/completions`` answers with the next scripted :class:`Scripted` response (status,
JSON body or a function of the request body) and records every request; with the queue empty it
answers 500. ``POST /v1/embeddings`` answers deterministic vectors of ``dim`` dimensions derived
from each input's bytes (no script needed).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

Body = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Scripted:
    """One scripted chat answer: HTTP status, JSON body (or a function of the request JSON)."""

    status: int = 200
    body: Body = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


def tool_call(arguments: dict[str, Any], *, name: str | None = None) -> Scripted:
    """A 200 answer calling the function the request forced (or ``name``) with ``arguments``."""

    def body(request: dict[str, Any]) -> dict[str, Any]:
        forced = name or ((request.get("tool_choice") or {}).get("function") or {}).get("name") or "tool"
        call = {"id": "call_fake", "type": "function", "function": {"name": forced, "arguments": json.dumps(arguments)}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return _completion(message, "tool_calls", str(request.get("model", "fake")))

    return Scripted(200, body)


def text_only(text: str) -> Scripted:
    """A 200 answer with text and no tool call."""
    return Scripted(200, lambda r: _completion({"role": "assistant", "content": text}, "stop", str(r.get("model"))))


def error(status: int, message: str = "fake error", headers: dict[str, str] | None = None) -> Scripted:
    """An error answer in the API's error shape."""
    return Scripted(status, {"error": {"message": message, "type": "api_error", "code": None}}, headers or {})


def _completion(message: dict[str, Any], finish: str, model: str) -> dict[str, Any]:
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def fake_vector(text: str, dim: int) -> list[float]:
    """The deterministic vector the fake returns for ``text`` (not normalised)."""
    raw = hashlib.sha256(text.encode("utf-8")).digest() * (dim // 32 + 1)
    return [b / 255.0 - 0.5 for b in raw[:dim]]


@dataclass
class Recorded:
    """One request the fake received."""

    path: str
    headers: dict[str, str]
    json: dict[str, Any]


class FakeOpenAI:
    """The fake server; ``url`` is the SDK's base_url (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, dim: int = 16) -> None:
        self.dim = dim
        self.queue: deque[Scripted] = deque()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def push(self, *responses: Scripted) -> None:
        """Queue chat answers, served in order, one per request."""
        with self._lock:
            self.queue.extend(responses)

    def start(self) -> Self:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                payload = json.loads(raw or b"{}")
                path = self.path.split("?")[0]
                with fake._lock:
                    fake.requests.append(Recorded(path, {k.lower(): v for k, v in self.headers.items()}, payload))
                if path.endswith("/embeddings"):
                    inputs = payload.get("input")
                    inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
                    data = [{"object": "embedding", "index": i, "embedding": fake_vector(t, fake.dim)}
                            for i, t in enumerate(inputs)]
                    self._send(200, {"object": "list", "data": data, "model": payload.get("model"),
                                     "usage": {"prompt_tokens": 1, "total_tokens": 1}})
                    return
                if not path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": path, "type": "not_found"}})
                    return
                with fake._lock:
                    scripted = fake.queue.popleft() if fake.queue else error(500, "fake: no scripted response left")
                body = scripted.body(payload) if callable(scripted.body) else scripted.body
                self._send(scripted.status, body, scripted.headers)

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
