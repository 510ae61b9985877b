"""graphmem serve: a real uvicorn server over a real Kùzu file, driven by Client and raw httpx."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from graphmem import AssembledContext, Learning, NotFoundError, Settings
from graphmem.client import AsyncClient, AuthError, Client, ForbiddenError
from graphmem.errors import CypherError, InvalidInputError
from tests.server_helpers import Served, serve_in_thread

SETTINGS = Settings(server_max_body_bytes=50_000, cypher_max_rows=5, server_refresh_interval_s=0.2)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = tmp_path_factory.mktemp("served") / "memory.kuzu"
    with serve_in_thread(db, settings=SETTINGS) as s:
        yield s


@pytest.fixture(scope="module")
def alice(served: Served) -> Iterator[Client]:
    with Client(served.url, api_key=served.keys["alice"]) as c:
        yield c


@pytest.fixture(scope="module")
def bob(served: Served) -> Iterator[Client]:
    with Client(served.url, api_key=served.keys["bob"]) as c:
        yield c


def test_client_round_trip_returns_memory_models(alice: Client) -> None:
    assert alice.user == "alice"
    l = alice.add_learning("Keep emails to Dana under 3 paragraphs", tool="send_email", entities=["Dana"],
                           topics=["email style"])
    assert isinstance(l, Learning) and l.user_id == "alice" and l.tool == "send_email"
    assert alice.get_learning(l.id) == l
    assert l.id in [x.id for x in alice.learnings(tool="send_email")]
    updated = alice.update_learning(l.id, confidence=0.9)
    assert updated.confidence == 0.9
    batch = alice.add_learnings([{"content": "Attach the invoice as PDF", "tool": "send_email"},
                                 {"content": "Use the v2 billing API", "tool": "http_request"}])
    assert [b.content for b in batch] == ["Attach the invoice as PDF", "Use the v2 billing API"]
    ctx = alice.context("Email Dana about the renewal", tool="send_email", entities=["Dana"])
    assert isinstance(ctx, AssembledContext) and ctx.learnings
    assert ctx.learnings[0].learning.user_id == "alice"
    assert "Relevant Learnings" in ctx.to_prompt()
    report = alice.record_outcome(ctx.id, success=True)
    assert report.context_id == ctx.id and report.learnings
    ctx2 = alice.context("Email Dana about the renewal", tool="send_email", entities=["Dana"])
    first = ctx2.learnings[0].learning.id
    report = alice.record_outcome(ctx2.id, success=False, used=[first])  # only the learning acted on
    assert report.learning_ids == [first] and report.shares == {first: 1.0}
    ev = alice.record_event("tool_call", "send_email(to='Dana')", tool="send_email", metadata={"n": 1})
    assert ev.metadata == {"n": 1} and ev.user_id == "alice"
    evs = alice.record_events([{"kind": "message", "content": "Dana prefers mornings", "role": "Dana"}])
    assert evs[0].role == "Dana"
    learned = alice.observe_message("Actually, never cc Omar on Acme threads.", tool="send_email")
    assert all(x.user_id == "alice" for x in learned)
    obj = alice.start_objective("Renew the Acme contract", "renewal")
    alice.record_event("tool_call", "crm.update(acme)", tool="crm", objective_id=obj.id)
    assert isinstance(alice.end_objective(obj.id, "completed", "renewed"), list)
    hits = alice.search("Dana mornings", over="all")
    assert hits and all(h.node.user_id == "alice" for h in hits)
    refreshed = alice.refresh_summaries(force=True)
    assert refreshed and {s.user_id for s in refreshed} == {"alice"}
    assert alice.summary("user_preferences").user_id == "alice"
    assert alice.summaries()
    cycle = alice.run_cycle()
    assert cycle.started_at is not None
    assert alice.insights().overview.applications >= 1
    assert alice.stats()["Learning"] >= 3
    retired = alice.retire_learning(batch[1].id, reason="v3 is out")
    assert retired.status == "disabled"


def test_async_client(served: Served) -> None:
    import asyncio

    async def main() -> tuple[Learning, AssembledContext]:
        async with AsyncClient(served.url, api_key=served.keys["alice"]) as c:
            l = await c.add_learning("Async agents batch their writes", tool="queue")
            ctx = await c.context("batch writes", tool="queue")
            await c.record_outcome(ctx.id, rating="good")
            return l, ctx

    l, ctx = asyncio.run(main())
    assert l.id in [i.id for i in ctx.learnings]


def test_keys_and_roles(served: Served) -> None:
    url = served.url
    assert httpx.get(f"{url}/v1/learnings").status_code == 401
    r = httpx.get(f"{url}/v1/learnings", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401 and r.json()["error"]["type"] == "Unauthorized"
    with pytest.raises(AuthError):
        Client(url, api_key="wrong").learnings()
    ann = Client(url, api_key=served.keys["ann"])
    with pytest.raises(ForbiddenError):
        ann.add_learning("analysts cannot write")
    assert all(l.user_id in ("alice",) or l.shared for l in ann.learnings(user="alice"))
    with pytest.raises(ForbiddenError):
        ann.learnings(user="bob")  # not granted
    with pytest.raises(ForbiddenError):
        ann.cypher("MATCH (l:Learning) RETURN count(l) AS n", scope="all")  # the whole file needs an all-users grant
    with pytest.raises(ForbiddenError):
        Client(url, api_key=served.keys["alice"]).cypher("MATCH (l:Learning) RETURN count(l) AS n", scope="all")
    own = Client(url, api_key=served.keys["alice"]).cypher("MATCH (l:Learning) RETURN DISTINCT l.user_id AS u")
    assert {r["u"] for r in own} <= {"alice"}  # any key may query its own view
    with pytest.raises(ForbiddenError):
        Client(url, api_key=served.keys["alice"]).refresh_summaries(all_users=True)
    assert Client(url, api_key=served.keys["root"]).refresh_summaries(all_users=True) is not None


def test_isolation_every_endpoint_404s_on_another_users_ids(served: Served, alice: Client, bob: Client) -> None:
    l = alice.add_learning("Alice's secret: the Q3 discount is 12%", tool="pricing", topics=["q3"])
    ctx = alice.context("Q3 discount", tool="pricing")
    obj = alice.start_objective("Alice's private objective")
    ev = alice.record_event("message", "Alice's private message about pricing", role="user")
    alice.refresh_summaries(force=True)
    h = served.headers("bob")
    url = served.url
    attempts = [
        ("GET", f"/v1/learnings/{l.id}", None),
        ("PATCH", f"/v1/learnings/{l.id}", {"changes": {"confidence": 0.1}}),
        ("POST", f"/v1/learnings/{l.id}/retire", {"reason": "x"}),
        ("POST", f"/v1/learnings/{l.id}/supersede", {"old_id": l.id}),
        ("POST", "/v1/outcomes", {"context_id": ctx.id, "success": False}),
        ("POST", f"/v1/objectives/{obj.id}/end", {"status": "failed"}),
        ("POST", "/v1/events", {"kind": "tool_call", "content": "x", "tool": "t", "objective_id": obj.id}),
        ("POST", "/v1/learnings", {"content": "linked to alice's objective", "objective_id": obj.id}),
        ("POST", "/v1/learnings", {"content": "derived from alice's event", "source_event_id": ev.id}),
        ("GET", "/v1/summaries/learning:tool:pricing", None),
    ]
    for method, path, body in attempts:
        r = httpx.request(method, url + path, json=body, headers=h)
        assert r.status_code == 404, (method, path, r.status_code, r.text)
        assert r.json()["error"]["type"] == "NotFoundError"
        assert "Q3 discount" not in r.text
    # nothing of alice's comes back in bob's lists, searches, contexts, summaries or insights
    assert all(x.user_id == "bob" for x in bob.learnings())
    assert not bob.search("Q3 discount pricing", over="all")
    assert all(i.learning.user_id == "bob" for i in bob.context("Q3 discount", tool="pricing").learnings)
    assert all(s.user_id == "bob" for s in bob.summaries())
    assert all(x.id != l.id for x in bob.insights().learnings)
    # and alice's learning is untouched
    assert alice.get_learning(l.id).confidence == l.confidence and alice.get_learning(l.id).status == "active"


def test_bad_input_gets_clear_json_errors_and_writes_nothing(served: Served, alice: Client) -> None:
    url, h = served.url, served.headers("alice")
    before = len(alice.learnings(limit=10_000))
    r = httpx.post(f"{url}/v1/learnings", content=b"{not json", headers={**h, "Content-Type": "application/json"})
    assert r.status_code == 422 and "not valid JSON" in r.json()["error"]["message"]
    r = httpx.post(f"{url}/v1/learnings", json={"tool": "x"}, headers=h)
    assert r.status_code == 422 and r.json()["error"]["fields"][0]["field"] == "content"
    r = httpx.post(f"{url}/v1/learnings", json={"content": "x", "confidence": "high"}, headers=h)
    err = r.json()["error"]
    assert r.status_code == 422 and err["fields"][0]["field"] == "confidence" and err["fields"][0]["fix"]
    r = httpx.post(f"{url}/v1/learnings", json={"content": "x", "colour": "red"}, headers=h)
    assert r.status_code == 422 and "colour" in r.json()["error"]["message"]
    r = httpx.post(f"{url}/v1/learnings", json={"content": "x" * 60_000}, headers=h)
    assert r.status_code == 413 and r.json()["error"]["type"] == "PayloadTooLarge"
    r = httpx.get(f"{url}/v1/nothing-here", headers=h)
    assert r.status_code == 404 and "/docs" in r.json()["error"]["message"]
    r = httpx.delete(f"{url}/v1/learnings", headers=h)
    assert r.status_code == 405 and r.json()["error"]["message"]
    with pytest.raises(InvalidInputError, match="kind"):
        alice.add_learning("fine text", kind="wish")
    with pytest.raises(InvalidInputError, match="item 1"):  # one bad item: nothing of the batch is written
        alice.add_learnings([{"content": "good one in a bad batch"}, {"content": "   "}])
    with pytest.raises(NotFoundError):
        alice.get_learning("00000000-0000-0000-0000-000000000000")
    assert len(alice.learnings(limit=10_000)) == before


def test_cypher_read_only_limits_and_streaming(served: Served, alice: Client) -> None:
    for i in range(7):
        alice.add_learning(f"Cypher row test learning number {i}", tool="cyphertest")
    auditor = Client(served.url, api_key=served.keys["all"])
    rows = auditor.cypher("MATCH (l:Learning) WHERE l.content STARTS WITH 'Cypher row' RETURN l.content AS c",
                          scope="all")
    assert len(rows) == SETTINGS.cypher_max_rows  # row limit
    r = httpx.post(f"{served.url}/v1/cypher", json={"query": "MATCH (l:Learning) RETURN l.id AS id", "scope": "all"},
                   headers=served.headers("all"))
    assert r.json()["truncated"] is True
    with pytest.raises(CypherError, match="read-only"):
        auditor.cypher("MATCH (l:Learning) SET l.confidence = 0.0 RETURN l.id", scope="all")
    streamed = list(auditor.iter_cypher("MATCH (l:Learning) WHERE l.tool = $t RETURN l.content AS c",
                                        {"t": "cyphertest"}, scope="all"))
    assert 0 < len(streamed) <= SETTINGS.cypher_max_rows and all("c" in row for row in streamed)
    slow = "UNWIND range(1, 4000) AS x UNWIND range(1, 4000) AS y WITH x * y AS z WHERE z % 7 = 3 RETURN count(*) AS n"
    tight = served.owner.settings.model_copy(update={"cypher_timeout_ms": 20})  # type: ignore[union-attr]
    served.owner.settings = tight  # type: ignore[union-attr]
    try:
        with pytest.raises(CypherError, match="longer than 20 ms"):
            auditor.cypher(slow, scope="all")
    finally:
        served.owner.settings = SETTINGS  # type: ignore[union-attr]


def test_full_write_queue_answers_503_with_retry_after(served: Served) -> None:
    gate = served.owner.gate  # type: ignore[union-attr]
    held = threading.Event()
    release = threading.Event()
    admitted: list[int] = []
    lock = threading.Lock()

    def hold(n: int) -> None:
        with gate.admit():
            with lock:  # set once every slot is taken, whichever thread got in last
                admitted.append(n)
                if len(admitted) == gate.capacity:
                    held.set()
            release.wait(10)

    # fill every slot with a real admitted write-in-progress, then try one more over HTTP
    threads = [threading.Thread(target=hold, args=(i,)) for i in range(gate.capacity)]
    for t in threads:
        t.start()
    try:
        assert held.wait(10)
        r = httpx.post(f"{served.url}/v1/learnings", json={"content": "refused while full"},
                       headers=served.headers("alice"))
        assert r.status_code == 503 and r.headers["Retry-After"] and r.json()["error"]["type"] == "Busy"
    finally:
        release.set()
        for t in threads:
            t.join(10)
    assert "refused while full" not in [l.content for l in Client(served.url, api_key=served.keys["alice"]).learnings()]


def test_metrics_and_health(served: Served, alice: Client) -> None:
    alice.context("metrics check")
    alice.add_learning("Metrics count this learning")
    alice.refresh_summaries()
    assert httpx.get(f"{served.url}/metrics").status_code == 401  # counts are not for anyone who asks
    text = httpx.get(f"{served.url}/metrics", headers=served.headers("alice")).text
    assert 'graphmem_requests_total{endpoint="/v1/context",method="POST",status="200"}' in text
    assert 'graphmem_request_seconds_count{endpoint="/v1/learnings",method="POST"}' in text
    learnings = next(l for l in text.splitlines() if l.startswith("graphmem_learnings "))
    assert float(learnings.split()[1]) >= 1
    refresh = next(l for l in text.splitlines() if l.startswith("graphmem_last_refresh_timestamp_seconds "))
    assert float(refresh.split()[1]) > 0
    assert "graphmem_last_cycle_timestamp_seconds" in text
    health = httpx.get(f"{served.url}/healthz").json()
    assert health["status"] == "ok" and "db" not in health and "learnings" not in health
    assert httpx.get(f"{served.url}/openapi.json").json()["paths"]["/v1/context"]


def test_playbook_endpoints_trace_train_context(served: Served) -> None:
    h, url = served.headers("alice"), served.url
    r = httpx.post(f"{url}/api/v1/trace", headers=h, json={
        "input_text": "Is a $9,000 wire to a new payee at 3am fraud?", "output": "not fraud",
        "ground_truth": "fraud", "node": "fraud_check"})
    body = r.json()
    assert r.status_code == 200 and body["is_correct"] is False and body["transaction_id"]
    assert body["generated_bullets"] and body["generated_bullets"][0]["source"] == "online"
    r = httpx.post(f"{url}/api/v1/train", headers=h, json={"node": "fraud_check", "dataset": [
        {"input_text": "A $5 coffee purchase", "output": "fraud", "ground_truth": "not fraud"}]})
    assert r.status_code == 200 and r.json()["examples"] == 1 and "generated_bullets" in r.json()
    r = httpx.post(f"{url}/api/v1/context", headers=h, json={"input_text": "wire transfer at night",
                                                             "node": "fraud_check", "max_bullets_per_evaluator": 5})
    ctx = r.json()
    assert ctx["context"]["full"].startswith("FRAUD_CHECK Rules:") and ctx["bullet_ids"]
    assert set(body["generated_bullets"][0]["id"] for _ in [0]) & set(ctx["bullet_ids"])


def test_mismatched_db_path_fails_fast(tmp_path: Path) -> None:
    from graphmem.errors import StoreError

    with pytest.raises(StoreError):
        from graphmem.server import create_app

        create_app(tmp_path / "missing-dir" / "m.kuzu")


def test_background_refresher_and_scheduled_cycle(tmp_path: Path) -> None:
    settings = Settings(summary_refresh="background", server_refresh_interval_s=0.2, server_cycle_interval_s=0.5)
    with serve_in_thread(tmp_path / "bg.kuzu", settings=settings, mcp=False) as served, \
            Client(served.url, api_key=served.keys["alice"]) as alice:
        for text in ("Prefers bullet points in emails", "Prefers mornings for meetings",
                     "Prefers PDF invoices", "Prefers short replies"):
            alice.add_learning(text, kind="preference", tool="send_email")
        deadline = time.monotonic() + 20
        text = ""
        while time.monotonic() < deadline:  # no refresh request: the owner's worker does it
            with contextlib.suppress(NotFoundError):
                text = alice.summary("user_preferences").text
            if text:
                break
            time.sleep(0.1)
        assert text, "the background refresher did not refresh user_preferences"
        while time.monotonic() < deadline and not served.owner.last_cycle:  # type: ignore[union-attr]
            time.sleep(0.1)
        metrics = httpx.get(f"{served.url}/metrics", headers=served.headers("alice")).text
        cycle = next(l for l in metrics.splitlines() if l.startswith("graphmem_last_cycle_timestamp_seconds "))
        assert float(cycle.split()[1]) > 0
        assert float(next(l for l in metrics.splitlines() if l.startswith("graphmem_summaries_refreshed_total "))
                     .split()[1]) >= 1
