"""POST /v1/context's fast path answers exactly what the FastAPI endpoint answers, errors included."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphmem import HashEmbedder, Memory, Settings
from graphmem.client import Client
from tests.server_helpers import Served, serve_in_thread

SETTINGS = Settings(server_max_body_bytes=50_000, random_seed=7)


def _fill(path: Path) -> None:
    with Memory(path, user="alice", embedder=HashEmbedder(), settings=SETTINGS) as mem:
        for i in range(40):
            mem.add_learning(f"when emailing Dana about invoice {i}, keep the subject under {i % 9 + 3} words",
                             tool="send_email" if i % 2 else "crm", entities=["Dana"] if i % 3 else ["Bo"],
                             topics=["email style"], confidence=0.3 + (i % 7) / 10)
        mem.add_learning("bob's own rule: never email on Fridays", tool="send_email")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Served]]:
    """The same file served twice: with the fast path, and without it (the FastAPI endpoint)."""
    root = tmp_path_factory.mktemp("fastpath")
    _fill(root / "a.kuzu")
    shutil.copyfile(root / "a.kuzu", root / "b.kuzu")
    with ExitStack() as stack:
        clock = FixedClock(datetime.now(UTC))  # the same "now" for both: the quality prior decays with it
        fast = stack.enter_context(serve_in_thread(root / "a.kuzu", settings=SETTINGS, mcp=False, clock=clock))
        slow = stack.enter_context(serve_in_thread(root / "b.kuzu", settings=SETTINGS, mcp=False, clock=clock,
                                                   fast_context=False))
        yield fast, slow


class FixedClock:
    """A clock that stands still at ``start``."""

    def __init__(self, start: datetime) -> None:
        self.start = start

    def __call__(self) -> datetime:
        return self.start


def _comparable(answer: dict[str, Any]) -> Any:
    """The answer without its own id and timings."""
    return {k: v for k, v in answer.items() if k not in ("id", "timings_ms")}


CALLS = [
    {"query": "email Dana about the invoice", "tool": "send_email", "entities": ["Dana"]},
    {"query": "", "tool": None, "entities": [], "topics": [], "objective_type": None, "limit": 8, "token_budget": None},
    {"query": "subject length", "topics": ["email style"], "limit": 3},
    {"query": "invoice for Bo", "entities": ["Bo"], "token_budget": 40},
    {"query": "nothing matches this at all"},
    {},
]


def test_same_answers_as_the_endpoint(pair: tuple[Served, Served]) -> None:
    fast, slow = pair
    shown = 0
    for call in CALLS * 2:  # twice: the second round sees the first round's Applications
        a = httpx.post(f"{fast.url}/v1/context", json=call, headers=fast.headers("alice"))
        b = httpx.post(f"{slow.url}/v1/context", json=call, headers=slow.headers("alice"))
        assert a.status_code == b.status_code == 200
        assert a.headers["content-type"] == b.headers["content-type"]
        assert _comparable(a.json()) == _comparable(b.json())
        shown += len(a.json()["learnings"])
    assert shown > 0


def test_the_context_is_recorded_and_counted(pair: tuple[Served, Served]) -> None:
    fast, _ = pair
    with Client(fast.url, api_key=fast.keys["alice"]) as alice:
        ctx = alice.context("email Dana about the invoice", tool="send_email")
        assert ctx.learnings
        report = alice.record_outcome(ctx.id, success=True)  # the Application the fast path recorded
        assert report.context_id == ctx.id
    with Client(fast.url, api_key=fast.keys["bob"]) as bob:
        assert all(i.learning.id not in {l.learning.id for l in ctx.learnings} or i.learning.shared
                   for i in bob.context("email Dana about the invoice", tool="send_email").learnings)
    metrics = httpx.get(f"{fast.url}/metrics", headers=fast.headers("alice")).text
    assert 'graphmem_requests_total{endpoint="/v1/context",method="POST",status="200"}' in metrics


def _raw(served: Served, who: str | None, content: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    h = {"Content-Type": "application/json"} if headers is None else dict(headers)
    if who is not None:
        h.update(served.headers(who))
    return httpx.post(f"{served.url}/v1/context", content=content, headers=h)


BAD = [
    (None, b'{"query": "x"}', None),  # no key
    ("ann", b'{"query": "x"}', None),  # an analyst key: read-only
    ("alice", b'{"query": "x", "user": "bob"}', None),  # an unknown field
    ("alice", b'{"query": 5}', None),  # a wrong type
    ("alice", b'{"query": "x",', None),  # malformed JSON
    ("alice", b'[1, 2]', None),  # not an object
    ("alice", b'{"query": "x", "limit": 0}', None),  # Memory refuses it
    ("alice", b'{"query": "x", "token_budget": -3}', None),
    ("alice", b'{"query": "x"}', {"Content-Type": "text/plain"}),
    ("alice", b"", None),  # no body
    ("alice", b'{"query": "' + b"x" * 60_000 + b'"}', None),  # over the body limit
]


@pytest.mark.parametrize("who,content,headers", BAD)
def test_errors_are_the_endpoints(pair: tuple[Served, Served], who: str | None, content: bytes,
                                  headers: dict[str, str] | None) -> None:
    fast, slow = pair
    a, b = _raw(fast, who, content, headers), _raw(slow, who, content, headers)
    assert a.status_code == b.status_code
    assert a.json() == b.json()


def test_unknown_key_and_the_x_api_key_header(pair: tuple[Served, Served]) -> None:
    fast, slow = pair
    for served in (fast, slow):
        assert httpx.post(f"{served.url}/v1/context", json={"query": "x"},
                          headers={"Authorization": "Bearer nope"}).status_code == 401
    a = httpx.post(f"{fast.url}/v1/context", json=CALLS[0], headers={"X-API-Key": fast.keys["alice"]})
    b = httpx.post(f"{slow.url}/v1/context", json=CALLS[0], headers={"X-API-Key": slow.keys["alice"]})
    assert a.status_code == b.status_code == 200
    assert json.loads(a.content)["learnings"]


def test_the_opt_in_profile_reports_threads_and_functions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from graphmem.server import profiling

    _fill(tmp_path / "p.kuzu")
    out = tmp_path / "profile.json"
    monkeypatch.setenv(profiling.ENV, str(out))
    monkeypatch.setattr(profiling, "ACTIVE", None)
    with serve_in_thread(tmp_path / "p.kuzu", settings=SETTINGS, mcp=False) as served, \
            Client(served.url, api_key=served.keys["alice"]) as alice:
        for _ in range(3):
            assert alice.context("email Dana about the invoice", tool="send_email").learnings
    report = json.loads(out.read_text())
    assert report["profiled_calls"] == 3
    assert report["profiled_cpu_s"]["workers (profiled calls)"] > 0
    assert any(t["role"] == "event-loop" and t["cpu_ms"] > 0 for t in report["threads"])
    assert any("context" in row["function"] for row in report["top"]["workers"])
    assert Path(str(out) + ".prof").stat().st_size > 0
    monkeypatch.setattr(profiling, "ACTIVE", None)
