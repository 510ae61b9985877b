"""graphmem's MCP tools (official ``mcp`` SDK, ``MCPServer``): context before a tool call, outcomes,
owner feedback, learnings, search, read-only Cypher.

Two ways to serve them:

- ``graphmem mcp --db PATH --user U`` (stdio, for desktop agents): the process owns the file and
  every call acts as user ``U``;
- mounted on ``graphmem serve`` at ``/mcp`` (streamable HTTP): each call sends the API key
  (``Authorization: Bearer K``) and acts as the key's user with the key's role.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from graphmem.errors import GraphmemError
from graphmem.memory import Memory
from graphmem.server.auth import Principal, bearer_key
from graphmem.server.core import Owner

INSTRUCTIONS = (
    "graphmem is the agent's learning memory. Before a tool call, call get_context with what you are about "
    "to do and the tool name, and follow the returned guidance. After the call, call record_outcome with the "
    "context_id and whether it worked. When the user corrects you or states a preference, call "
    "report_feedback with their words."
)

Resolver = Callable[[Context[Any, Any]], tuple[Memory, Principal]]


def build_mcp(*, owner: Owner | None = None, memory: Memory | None = None) -> MCPServer:
    """The MCP server over an Owner (HTTP: users from API keys) or one Memory (stdio: its user)."""
    if (owner is None) == (memory is None):
        raise ValueError("pass exactly one of owner= or memory=")

    def resolve(ctx: Context[Any, Any]) -> tuple[Memory, Principal]:
        if memory is not None:
            return memory, Principal(key_id="local", user=memory.user, role="admin")
        assert owner is not None
        headers = {k.lower(): v for k, v in (ctx.headers or {}).items()}
        who = owner.keys.check(bearer_key(headers.get("authorization"), headers.get("x-api-key")))
        if who is None:
            raise ToolError("no valid API key: connect with 'Authorization: Bearer <key>' (graphmem keys add)")
        return owner.memory(who.user), who

    mcp = MCPServer("graphmem", instructions=INSTRUCTIONS, log_level="WARNING")
    settings = (owner.settings if owner is not None else memory.settings)  # type: ignore[union-attr]

    async def run(
        ctx: Context[Any, Any], fn: Callable[[Memory, Principal], Any], *, writes: bool = False, shared: bool = False
    ) -> Any:
        """Call ``fn`` in a worker thread as the caller's user: writes through the owner's write gate
        (``shared``: a read that records its Application, like the /v1/context endpoint)."""
        mem, who = resolve(ctx)
        if writes and not who.writes:
            raise ToolError(f"this {who.role} key is read-only; this tool writes: use an agent key")

        def call() -> Any:
            if owner is None:
                return fn(mem, who)
            with owner.writing() if writes and not shared else owner.reading():
                return fn(mem, who)

        try:
            return await anyio.to_thread.run_sync(call)
        except GraphmemError as e:
            raise ToolError(f"{type(e).__name__}: {e}") from e

    @mcp.tool()
    async def get_context(
        ctx: Context[Any, Any], query: str, tool: str | None = None, entities: list[str] | None = None, limit: int = 8
    ) -> dict[str, Any]:
        """Call this BEFORE a tool call or an action: returns what was learned about it (the user's
        standing preferences and the most relevant learnings) as `prompt` text to follow, and a
        `context_id` to pass to record_outcome afterwards. `query`: what you are about to do, in a
        sentence; `tool`: the tool's name; `entities`: people/companies/projects involved."""
        def fn(mem: Memory, _: Principal) -> dict[str, Any]:
            c = mem.context(query, tool=tool, entities=entities or (), limit=limit)
            return {"context_id": c.id, "prompt": c.to_prompt(),
                    "learnings": [{"id": i.id, "content": i.learning.content, "reasons": i.reasons} for i in c.learnings]}
        return dict(await run(ctx, fn, writes=True, shared=True))

    @mcp.tool()
    async def record_outcome(
        ctx: Context[Any, Any], context_id: str, success: bool | None = None, rating: str | None = None,
        reasons: list[str] | None = None, used: list[str] | None = None,
    ) -> dict[str, Any]:
        """Call this AFTER acting on a context from get_context: did it work? `success` true/false,
        or `rating` good|okay|bad; `reasons` optional tags such as fallback or retry; `used` the
        ids of the learnings you acted on (without it the credit is shared by rank)."""
        def fn(mem: Memory, _: Principal) -> dict[str, Any]:
            r = mem.record_outcome(context_id, success=success, rating=rating, reasons=reasons or (), used=used)
            return {"context_id": r.context_id, "verdict": str(r.verdict), "learnings_updated": len(r.learnings)}
        return dict(await run(ctx, fn, writes=True))

    @mcp.tool()
    async def report_feedback(
        ctx: Context[Any, Any], message: str, tool: str | None = None, is_owner: bool = True
    ) -> dict[str, Any]:
        """Call this when the user (the owner) corrects you, complains, or states a preference:
        pass their words verbatim in `message` and the tool it concerns in `tool`. Feedback becomes
        a learning you will get back from get_context next time."""
        def fn(mem: Memory, _: Principal) -> dict[str, Any]:
            learned = mem.observe_message(message, tool=tool, is_owner=is_owner)
            return {"learned": [{"id": l.id, "content": l.content} for l in learned]}
        return dict(await run(ctx, fn, writes=True))

    @mcp.tool()
    async def add_learning(
        ctx: Context[Any, Any], content: str, tool: str | None = None, kind: str = "rule",
        topics: list[str] | None = None, entities: list[str] | None = None,
    ) -> dict[str, Any]:
        """Store a lesson worth remembering, phrased as an instruction (e.g. "Keep emails to Dana under
        3 paragraphs"). `kind`: rule|preference|checklist|bug_fix|prompt|observation|hypothesis."""
        def fn(mem: Memory, _: Principal) -> dict[str, Any]:
            l = mem.add_learning(content, tool=tool, kind=kind, topics=topics or (), entities=entities or ())
            return {"id": l.id, "content": l.content, "validations": l.validations}
        return dict(await run(ctx, fn, writes=True))

    @mcp.tool()
    async def search_memory(
        ctx: Context[Any, Any], query: str, over: str = "all", k: int = 10
    ) -> dict[str, Any]:
        """Search the memory for what is known about something: `over` learnings, events (what
        happened, what people said) or all. Returns the best `k` hits with their text."""
        def fn(mem: Memory, _: Principal) -> dict[str, Any]:
            hits = mem.search(query, k=k, over=over)
            return {"hits": [{"id": h.id, "kind": h.kind, "score": round(h.score, 4),
                              "content": getattr(h.node, "content", "")} for h in hits]}
        return dict(await run(ctx, fn))

    @mcp.tool()
    async def cypher(ctx: Context[Any, Any], query: str) -> dict[str, Any]:
        """Run a read-only Cypher query over the memory graph (Learning, Event, Tool, Topic, Entity,
        Application nodes; writes are refused). Needs an admin or all-users analyst key over HTTP."""
        def fn(mem: Memory, who: Principal) -> dict[str, Any]:
            if not (who.role == "admin" or (who.role == "analyst" and "*" in who.users)):
                raise ToolError("Cypher reads every user's data: it needs an admin key or an analyst key granted all users")
            rows = mem.cypher(query, scope="all", timeout_ms=settings.cypher_timeout_ms)
            limit = settings.cypher_max_rows
            return {"rows": _jsonable(rows[:limit]), "truncated": len(rows) > limit}
        return dict(await run(ctx, fn))

    return mcp


def _jsonable(value: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(Any).dump_python(value, mode="json")
