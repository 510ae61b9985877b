"""The MCP tools, driven by the official SDK's own client: streamable HTTP on the server, and stdio."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client as McpClient
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from graphmem.client import Client
from tests.server_helpers import Served, cli_env, serve_in_thread

TOOLS = {"get_context", "record_outcome", "report_feedback", "add_learning", "search_memory", "cypher"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve_in_thread(tmp_path_factory.mktemp("mcp") / "memory.kuzu") as s:
        yield s


def _http(served: Served, who: str) -> Any:
    return streamable_http_client(f"{served.url}/mcp", http_client=httpx2.AsyncClient(headers=served.headers(who)))


async def _session(transport: Any, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    async with McpClient(transport) as client:
        tools = (await client.list_tools()).tools
        results = [await client.call_tool(name, args) for name, args in calls]
    return tools, results


def test_mcp_over_streamable_http_acts_as_the_keys_user(served: Served) -> None:
    calls = [
        ("add_learning", {"content": "Keep status emails to three bullet points", "tool": "send_email"}),
        ("get_context", {"query": "send the weekly status email", "tool": "send_email"}),
        ("report_feedback", {"message": "Actually, never cc Omar on Acme threads.", "tool": "send_email"}),
        ("search_memory", {"query": "status email bullets", "over": "learnings"}),
    ]
    tools, results = asyncio.run(_session(_http(served, "alice"), calls))
    assert {t.name for t in tools} == TOOLS
    assert all(len(t.description or "") > 80 for t in tools)  # descriptions an LLM can act on
    assert not any(r.is_error for r in results), [r.content for r in results]
    added, ctx, _, found = (r.structured_content for r in results)
    assert "Keep status emails" in ctx["prompt"] and ctx["context_id"]
    assert added["id"] in [h["id"] for h in found["hits"]]
    _, (outcome,) = asyncio.run(_session(_http(served, "alice"), [
        ("record_outcome", {"context_id": ctx["context_id"], "success": True,
                            "used": [ctx["learnings"][0]["id"]]})]))
    assert not outcome.is_error and outcome.structured_content["learnings_updated"] == 1  # only the one used
    # the writes are alice's: her Client sees them, bob's does not
    assert added["id"] in [l.id for l in Client(served.url, api_key=served.keys["alice"]).learnings()]
    assert added["id"] not in [l.id for l in Client(served.url, api_key=served.keys["bob"]).learnings()]
    # bob cannot credit alice's context
    _, (other,) = asyncio.run(_session(_http(served, "bob"), [
        ("record_outcome", {"context_id": ctx["context_id"], "success": False})]))
    assert other.is_error and "NotFoundError" in other.content[0].text


def test_mcp_http_roles_and_keys(served: Served) -> None:
    _, (refused, rows) = asyncio.run(_session(_http(served, "ann"), [
        ("add_learning", {"content": "analysts cannot write"}),
        ("cypher", {"query": "MATCH (l:Learning) RETURN count(l) AS n"}),
    ]))
    assert refused.is_error and "read-only" in refused.content[0].text
    assert rows.is_error  # ann is granted alice only: Cypher needs every user
    _, (ok,) = asyncio.run(_session(_http(served, "root"), [("cypher", {"query": "MATCH (l:Learning) RETURN count(l) AS n"})]))
    assert not ok.is_error and ok.structured_content["rows"][0]["n"] >= 0
    import httpx

    denied = httpx.post(f"{served.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                        headers={"Authorization": "Bearer x"})
    assert denied.status_code == 401 and denied.json()["error"]["type"] == "Unauthorized"


def test_mcp_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from graphmem.cli import main; main()", "--embedder", "hash", "--db", str(tmp_path / "m.kuzu"),
              "--user", "dana", "mcp"],
        env=cli_env(),
    )
    _, results = asyncio.run(_session(params, [
        ("add_learning", {"content": "Dana wants invoices as PDF attachments", "tool": "send_invoice"}),
        ("get_context", {"query": "send the March invoice to Dana", "tool": "send_invoice"}),
        ("cypher", {"query": "MATCH (l:Learning) RETURN l.user_id AS u"}),
    ]))
    assert not any(r.is_error for r in results), [r.content for r in results]
    assert "PDF attachments" in results[1].structured_content["prompt"]
    assert results[2].structured_content["rows"] == [{"u": "dana"}]
