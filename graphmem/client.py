"""Clients of ``graphmem serve``: the same methods, arguments and return models as :class:`Memory`.

Moving an agent from an embedded memory to a served one is one line::

    mem = Memory("agent.kuzu", user="alice")                        # embedded: owns the file
    mem = Client("http://127.0.0.1:8420", api_key=os.environ["GRAPHMEM_API_KEY"])  # served

The user is the key's user (the server never takes it from the request). Errors come back as
the same :class:`~graphmem.errors.GraphmemError` subclasses Memory raises (NotFoundError,
InvalidInputError, CypherError...), mapped from the HTTP status and JSON error body, plus
:class:`AuthError` (401), :class:`ForbiddenError` (403), :class:`ServerBusyError` (503, after
``retries`` polite retries honouring Retry-After) and :class:`ServerUnavailableError`.

:class:`AsyncClient` has the same methods as coroutines, for asyncio agents.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
from pydantic import TypeAdapter

from graphmem import errors as E
from graphmem.client_http import PlainHttp, PlainHttpError, usable
from graphmem.export import ExportReport
from graphmem.insights import Insights
from graphmem.learn.judges import TraceResult, TrainReport
from graphmem.lifecycle import CycleReport
from graphmem.models import Event, Learning, Objective, Summary
from graphmem.outcomes import OutcomeReport
from graphmem.promote import PromoteReport, SweepReport
from graphmem.retrieve import AssembledContext
from graphmem.retrieve.search import Hit

__all__ = ["AsyncClient", "AuthError", "Client", "ForbiddenError", "ServerBusyError", "ServerUnavailableError"]

DEFAULT_URL = "http://127.0.0.1:8420"


class AuthError(E.GraphmemError):
    """401: no API key, or one the server does not know."""


class ForbiddenError(E.GraphmemError):
    """403: the key's role may not do this (e.g. an analyst key writing)."""


class ServerBusyError(E.GraphmemError):
    """503: the server's write queue stayed full; nothing was written. Retry later."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ServerUnavailableError(E.GraphmemError):
    """The server could not be reached, or answered something that is not graphmem's JSON."""


_ERRORS: dict[str, type[E.GraphmemError]] = {
    name: getattr(E, name) for name in E.__all__ if isinstance(getattr(E, name), type)
}
_ERRORS.update({
    "ValidationError": E.InvalidInputError, "Unauthorized": AuthError, "Forbidden": ForbiddenError,
    "NotFound": E.NotFoundError, "PayloadTooLarge": E.InvalidInputError,
})
_BY_STATUS: dict[int, type[E.GraphmemError]] = {
    400: E.InvalidInputError, 401: AuthError, 403: ForbiddenError, 404: E.NotFoundError, 413: E.InvalidInputError,
    422: E.InvalidInputError, 502: E.LLMError,
}
_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}
_CONTEXT_FIELDS = {f.name for f in dataclasses.fields(AssembledContext)}


def _adapter(tp: Any) -> TypeAdapter[Any]:
    ad = _ADAPTERS.get(tp)
    if ad is None:
        ad = _ADAPTERS[tp] = TypeAdapter(tp)
    return ad


def _context(data: Any) -> AssembledContext:
    ctx: AssembledContext = _adapter(AssembledContext).validate_python(
        {k: v for k, v in data.items() if k in _CONTEXT_FIELDS})
    return ctx


@dataclass
class _Req:
    """One call: HTTP method, path, JSON body or query, and how to turn the answer into models."""

    method: str
    path: str
    body: Any = None
    query: dict[str, Any] = field(default_factory=dict)
    parse: Callable[[Any], Any] | None = None
    writes: bool = False


def _model(tp: Any) -> Callable[[Any], Any]:
    return lambda data: _adapter(tp).validate_python(data)


def _names(values: Iterable[str] | str | None) -> list[str]:
    if values is None:
        return []
    return [values] if isinstance(values, str) else list(values)


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        err = response.json()["error"]
        kind, message = str(err.get("type", "")), str(err.get("message", ""))
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ServerUnavailableError(
            f"the server answered {response.status_code} without a graphmem error body: {response.text[:200]}"
        ) from None
    if response.status_code == 503 and kind == "Busy":
        raise ServerBusyError(message, float(response.headers.get("retry-after", "1") or 1))
    cls = _ERRORS.get(kind) or _BY_STATUS.get(response.status_code) or E.GraphmemError
    raise cls(message)


class _Api:
    """Memory's public methods as HTTP calls; subclasses provide ``_send``."""

    def _send(self, req: _Req) -> Any:
        raise NotImplementedError

    # --- learnings -------------------------------------------------------------------------------
    def add_learning(
        self,
        content: str,
        *,
        kind: str = "rule",
        tool: str | None = None,
        entities: Iterable[str] = (),
        topics: Iterable[str] = (),
        objective_type: str | None = None,
        recommendation: str | None = None,
        applies_when: str | None = None,
        sentiment: str = "neutral",
        source_type: str = "observation",
        confidence: float = 0.5,
        status: str = "active",
        tier: str = "active",
        shared: bool = False,
        ttl_days: int | None = None,
        source_event_id: str | None = None,
        objective_id: str | None = None,
        created_at: datetime | None = None,
    ) -> Learning:
        """Store a learning (see :meth:`Memory.add_learning`)."""
        body = {
            "content": content, "kind": kind, "tool": tool, "entities": _names(entities), "topics": _names(topics),
            "objective_type": objective_type, "recommendation": recommendation, "applies_when": applies_when,
            "sentiment": sentiment, "source_type": source_type, "confidence": confidence, "status": status,
            "tier": tier, "shared": shared, "ttl_days": ttl_days, "source_event_id": source_event_id,
            "objective_id": objective_id, "created_at": created_at,
        }
        return self._send(_Req("POST", "/v1/learnings", body, parse=_model(Learning), writes=True))  # type: ignore[no-any-return]

    def add_learnings(
        self, items: Sequence[Mapping[str, Any]], *, progress: Callable[[int, int], None] | None = None
    ) -> list[Learning]:
        """Store many learnings in one transaction (see :meth:`Memory.add_learnings`); ``progress``
        is called once, with (total, total), when the server has stored them."""
        body = {"items": [_listify(dict(i)) for i in items]}
        out: list[Learning] = self._send(_Req("POST", "/v1/learnings/batch", body, parse=_model(list[Learning]), writes=True))
        if progress is not None:
            progress(len(body["items"]), len(body["items"]))
        return out

    def get_learning(self, learning_id: str) -> Learning:
        """One of this user's (or a shared) learning by id."""
        return self._send(_Req("GET", f"/v1/learnings/{_seg(learning_id)}", parse=_model(Learning)))  # type: ignore[no-any-return]

    def update_learning(self, learning_id: str, **changes: Any) -> Learning:
        """Change fields of a learning (see :meth:`Memory.update_learning`)."""
        return self._send(_Req("PATCH", f"/v1/learnings/{_seg(learning_id)}", {"changes": changes},  # type: ignore[no-any-return]
                               parse=_model(Learning), writes=True))

    def retire_learning(self, learning_id: str, *, reason: str = "retired") -> Learning:
        """Take a learning out of use for good."""
        return self._send(_Req("POST", f"/v1/learnings/{_seg(learning_id)}/retire", {"reason": reason},  # type: ignore[no-any-return]
                               parse=_model(Learning), writes=True))

    def supersede(self, new_id: str, old_id: str, *, reason: str = "superseded") -> Learning:
        """Mark ``old_id`` as replaced by ``new_id``; returns the archived older learning."""
        return self._send(_Req("POST", f"/v1/learnings/{_seg(new_id)}/supersede",  # type: ignore[no-any-return]
                               {"old_id": old_id, "reason": reason}, parse=_model(Learning), writes=True))

    def learnings(
        self,
        *,
        status: str | None = None,
        tier: str | None = None,
        tool: str | None = None,
        topic: str | None = None,
        entity: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
        user: str | None = None,
    ) -> list[Learning]:
        """This user's (and shared) learnings matching every filter, newest first (``user``: analysts)."""
        query = {"status": status, "tier": tier, "tool": tool, "topic": topic, "entity": entity, "kind": kind,
                 "limit": limit, "user": user}
        return self._send(_Req("GET", "/v1/learnings", query=query, parse=_model(list[Learning])))  # type: ignore[no-any-return]

    # --- events, messages, objectives ---------------------------------------------------------
    def record_event(
        self,
        kind: str,
        content: str = "",
        *,
        tool: str | None = None,
        role: str | None = None,
        objective_id: str | None = None,
        session_id: str | None = None,
        created_at: datetime | None = None,
        entities: Iterable[str] = (),
        success: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
        direction: str | None = None,
        is_owner: bool = False,
    ) -> Event:
        """Log something that happened (see :meth:`Memory.record_event`)."""
        body = {
            "kind": kind, "content": content, "tool": tool, "role": role, "objective_id": objective_id,
            "session_id": session_id, "created_at": created_at, "entities": _names(entities), "success": success,
            "metadata": dict(metadata) if metadata is not None else None, "direction": direction,
            "is_owner": is_owner,
        }
        return self._send(_Req("POST", "/v1/events", body, parse=_model(Event), writes=True))  # type: ignore[no-any-return]

    def record_events(
        self, items: Sequence[Mapping[str, Any]], *, progress: Callable[[int, int], None] | None = None
    ) -> list[Event]:
        """Log many events in one transaction; ``progress`` is called once, with (total, total)."""
        body = {"items": [_listify(dict(i)) for i in items]}
        out: list[Event] = self._send(_Req("POST", "/v1/events/batch", body, parse=_model(list[Event]), writes=True))
        if progress is not None:
            progress(len(body["items"]), len(body["items"]))
        return out

    def observe_message(
        self,
        content: str,
        *,
        tool: str | None = None,
        is_owner: bool = True,
        role: str = "user",
        session_id: str | None = None,
        objective_id: str | None = None,
        entities: Iterable[str] = (),
    ) -> list[Learning]:
        """Log an inbound message; the owner's feedback becomes a learning."""
        body = {"content": content, "tool": tool, "is_owner": is_owner, "role": role, "session_id": session_id,
                "objective_id": objective_id, "entities": _names(entities)}
        return self._send(_Req("POST", "/v1/messages", body, parse=_model(list[Learning]), writes=True))  # type: ignore[no-any-return]

    def start_objective(self, goal: str, objective_type: str | None = None) -> Objective:
        """Start a long-running goal."""
        return self._send(_Req("POST", "/v1/objectives", {"goal": goal, "objective_type": objective_type},  # type: ignore[no-any-return]
                               parse=_model(Objective), writes=True))

    def end_objective(
        self, objective_id: str, status: str = "completed", result: str | None = None, *, reflect: bool = True
    ) -> list[Learning]:
        """End an objective; returns what was learned from it."""
        body = {"status": status, "result": result, "reflect": reflect}
        return self._send(_Req("POST", f"/v1/objectives/{_seg(objective_id)}/end", body,  # type: ignore[no-any-return]
                               parse=_model(list[Learning]), writes=True))

    # --- retrieval and outcomes -----------------------------------------------------------------
    def context(
        self,
        query: str = "",
        *,
        tool: str | None = None,
        entities: Iterable[str] = (),
        topics: Iterable[str] = (),
        objective_type: str | None = None,
        limit: int = 8,
        token_budget: int | None = None,
    ) -> AssembledContext:
        """The context an agent should see before acting (see :meth:`Memory.context`)."""
        body = {"query": query, "tool": tool, "entities": _names(entities), "topics": _names(topics),
                "objective_type": objective_type, "limit": limit, "token_budget": token_budget}
        return self._send(_Req("POST", "/v1/context", body, parse=_context))  # type: ignore[no-any-return]

    def search(
        self,
        query: str = "",
        *,
        k: int = 10,
        over: str = "learnings",
        tool: str | None = None,
        entities: Iterable[str] = (),
        topics: Iterable[str] = (),
    ) -> list[Hit]:
        """Search this user's learnings, events, or both."""
        body = {"query": query, "k": k, "over": over, "tool": tool, "entities": _names(entities),
                "topics": _names(topics)}
        return self._send(_Req("POST", "/v1/search", body, parse=_model(list[Hit])))  # type: ignore[no-any-return]

    def record_outcome(
        self,
        context_id: str,
        *,
        success: bool | None = None,
        rating: str | None = None,
        reasons: Iterable[str] | str = (),
        used: Iterable[str] | None = None,
        helpful: Iterable[str] = (),
        harmful: Iterable[str] = (),
    ) -> OutcomeReport:
        """Credit or blame the learnings shown in one context (``used``/``helpful``/``harmful``: ids
        from the context, as ``Memory.record_outcome``)."""
        body = {"context_id": context_id, "success": success, "rating": rating, "reasons": _names(reasons),
                "used": None if used is None else list(used), "helpful": list(helpful), "harmful": list(harmful)}
        return self._send(_Req("POST", "/v1/outcomes", body, parse=_model(OutcomeReport), writes=True))  # type: ignore[no-any-return]

    # --- summaries, lifecycle, insights ---------------------------------------------------------
    def summaries(self) -> list[Summary]:
        """All of this user's summaries, by key."""
        return self._send(_Req("GET", "/v1/summaries", parse=_model(list[Summary])))  # type: ignore[no-any-return]

    def summary(self, key: str) -> Summary:
        """One of this user's summaries by key."""
        return self._send(_Req("GET", f"/v1/summaries/{_seg(key, path=True)}", parse=_model(Summary)))  # type: ignore[no-any-return]

    def refresh_summaries(self, force: bool = False, *, all_users: bool = False) -> list[Summary]:
        """Refresh due summaries now (``all_users`` needs an admin key)."""
        return self._send(_Req("POST", "/v1/summaries/refresh", {"force": force, "all_users": all_users},  # type: ignore[no-any-return]
                               parse=_model(list[Summary]), writes=True))

    def run_cycle(self) -> CycleReport:
        """Run the lifecycle once for this user's learnings."""
        return self._send(_Req("POST", "/v1/cycle", {}, parse=_model(CycleReport), writes=True))  # type: ignore[no-any-return]

    def promote(self, path: str | os.PathLike[str], *, min_confidence: float | None = None) -> PromoteReport:
        """Promote into an instruction file on the SERVER's machine (admin key)."""
        return self._send(_Req("POST", "/v1/promote", {"path": os.fspath(path), "min_confidence": min_confidence},  # type: ignore[no-any-return]
                               parse=_model(PromoteReport), writes=True))

    def sweep(self, paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str]) -> SweepReport:
        """Sweep instruction files on the SERVER's machine (admin key)."""
        targets = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        return self._send(_Req("POST", "/v1/sweep", {"paths": [os.fspath(p) for p in targets]},  # type: ignore[no-any-return]
                               parse=_model(SweepReport), writes=True))

    def insights(self, *, timeline: int = 50, user: str | None = None) -> Insights:
        """Acceptance, pass/fallback/retry rates, per-learning standing (``user``: analysts)."""
        return self._send(_Req("GET", "/v1/insights", query={"timeline": timeline, "user": user},  # type: ignore[no-any-return]
                               parse=_model(Insights)))

    def training_pairs(self, *, min_confidence: float = 0.0, feedback: str = "any") -> list[dict[str, Any]]:
        """Successful episodes as chat-format training records."""
        return self._send(_Req("GET", "/v1/training-pairs",  # type: ignore[no-any-return]
                               query={"min_confidence": min_confidence, "feedback": feedback}))

    def export_jsonl(
        self, path: str | os.PathLike[str], *, min_confidence: float = 0.0, feedback: str = "any"
    ) -> ExportReport:
        """Write training pairs to a JSONL file on the SERVER's machine (admin key)."""
        body = {"path": os.fspath(path), "format": "jsonl", "min_confidence": min_confidence, "feedback": feedback}
        return self._send(_Req("POST", "/v1/export", body, parse=_model(ExportReport)))  # type: ignore[no-any-return]

    def export_graphml(self, path: str | os.PathLike[str]) -> ExportReport:
        """Write the graph as GraphML on the SERVER's machine (admin key)."""
        return self._send(_Req("POST", "/v1/export", {"path": os.fspath(path), "format": "graphml"},  # type: ignore[no-any-return]
                               parse=_model(ExportReport)))

    # --- judges and traces ----------------------------------------------------------------------
    def add_judge(self, name: str, criteria: str, node: str | None = None) -> dict[str, Any]:
        """Configure a named LLM judge (admin key: judges are shared)."""
        return self._send(_Req("POST", "/v1/judges", {"name": name, "criteria": criteria, "node": node}, writes=True))  # type: ignore[no-any-return]

    def trace(
        self, input_text: str, output: str, *, node: str, ground_truth: str | None = None,
        reasoning: str | None = None, mode: str = "online",
    ) -> TraceResult:
        """Judge one output and learn from failures (see :meth:`Memory.trace`)."""
        body = {"input_text": input_text, "output": output, "node": node, "ground_truth": ground_truth,
                "reasoning": reasoning, "mode": mode}
        return self._send(_Req("POST", "/v1/trace", body, parse=_model(TraceResult), writes=True))  # type: ignore[no-any-return]

    def train(self, examples: Sequence[Mapping[str, Any]], *, node: str = "default") -> TrainReport:
        """Offline mode over a dataset of dicts (see :meth:`Memory.train`)."""
        return self._send(_Req("POST", "/v1/train", {"dataset": [dict(e) for e in examples], "node": node},  # type: ignore[no-any-return]
                               parse=_model(TrainReport), writes=True))

    # --- analysts ---------------------------------------------------------------------------------
    def cypher(
        self,
        query: str,
        params: Mapping[str, Any] | None = None,
        *,
        write: bool = False,
        force: bool = False,
        scope: str = "user",
        timeout_ms: int | None = None,
    ) -> list[dict[str, Any]]:
        """Run read-only Cypher through the server; rows as dicts. ``scope="user"``: your own view;
        ``"all"``: the whole file (admin or all-users analyst keys). The server applies its own time
        and row limits; ``write=True`` is refused."""
        if write or force:
            raise E.CypherError("the server runs Cypher read-only; change data through the Client's methods")
        return self._send(_Req("POST", "/v1/cypher", {"query": query, "params": dict(params or {}), "scope": scope},  # type: ignore[no-any-return]
                               parse=lambda d: d["rows"]))

    def stats(self, *, all_users: bool = False) -> dict[str, int]:
        """Node counts per table and edge counts per type: yours, or the whole file (``all_users``,
        admin or all-users analyst keys)."""
        query = {"all_users": "true"} if all_users else {}
        return self._send(_Req("GET", "/v1/stats", query=query))  # type: ignore[no-any-return]

    def whoami(self) -> dict[str, Any]:
        """The key's user and role."""
        return self._send(_Req("GET", "/v1/whoami"))  # type: ignore[no-any-return]


def _seg(value: str, *, path: bool = False) -> str:
    from urllib.parse import quote

    return quote(str(value), safe="/:" if path else ":")


def _listify(item: dict[str, Any]) -> dict[str, Any]:
    for key in ("entities", "topics"):
        if key in item and not isinstance(item[key], list):
            item[key] = _names(item[key])
    return item


def _encode(body: Any) -> bytes:
    return _adapter(Any).dump_json(body)


def _query(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def _settings(url: str | None, api_key: str | None) -> tuple[str, str | None]:
    return (url or os.environ.get("GRAPHMEM_SERVER") or DEFAULT_URL).rstrip("/"), (
        api_key or os.environ.get("GRAPHMEM_API_KEY"))


class Client(_Api):
    """A synchronous client of ``graphmem serve`` (thread-safe: share one across threads).

    Args:
        url: the server, e.g. ``http://127.0.0.1:8420`` (default: $GRAPHMEM_SERVER, then that).
        api_key: the key from ``graphmem keys add`` (default: $GRAPHMEM_API_KEY).
        timeout: seconds per request.
        retries: how many times a write refused with 503 (queue full) is retried after Retry-After.
    """

    def __init__(self, url: str | None = None, *, api_key: str | None = None, timeout: float = 30.0,
                 retries: int = 5, transport: httpx.BaseTransport | None = None) -> None:
        self.url, key = _settings(url, api_key)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.retries = retries
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout, transport=transport)
        # requests go through the standard library's keep-alive connections where that sends the
        # same request (graphmem.client_http: a third of httpx's CPU per call); streams use httpx
        self._plain = PlainHttp(self.url, headers, timeout) if usable(self.url, transport) else None
        self._user: str | None = None

    @property
    def user(self) -> str:
        """The key's user (asked once from the server)."""
        if self._user is None:
            self._user = str(self.whoami()["user"])
        return self._user

    def _send(self, req: _Req) -> Any:
        for attempt in range(self.retries + 1):
            try:
                content = self._roundtrip(req)
            except ServerBusyError as e:
                if attempt >= self.retries:
                    raise
                time.sleep(e.retry_after)
                continue
            except (httpx.HTTPError, PlainHttpError) as e:
                raise ServerUnavailableError(f"could not reach graphmem at {self.url}: {e}") from e
            data = json.loads(content)
            return req.parse(data) if req.parse else data
        raise AssertionError("unreachable")

    def _roundtrip(self, req: _Req) -> bytes:
        """The answer's body; an error answer raises its GraphmemError."""
        content = _encode(req.body) if req.body is not None else None
        headers = {"Content-Type": "application/json"} if req.body is not None else None
        if self._plain is not None:
            status, answer_headers, body = self._plain.request(req.method, req.path, _query(req.query), content,
                                                               headers)
            if status >= 400:
                _raise_for(httpx.Response(status, headers=answer_headers, content=body))
            return body
        response = self._http.request(req.method, req.path, params=_query(req.query), content=content,
                                      headers=headers)
        _raise_for(response)
        return response.content

    def iter_cypher(
        self, query: str, params: Mapping[str, Any] | None = None, *, scope: str = "user"
    ) -> Iterator[dict[str, Any]]:
        """Stream the rows of a read-only query as they arrive (JSON lines)."""
        body = _encode({"query": query, "params": dict(params or {}), "scope": scope})
        with self._http.stream("POST", "/v1/cypher", content=body, headers={
            "Content-Type": "application/json", "Accept": "application/x-ndjson"}) as response:
            if response.status_code >= 400:
                response.read()
                _raise_for(response)
            for line in response.iter_lines():
                if line.strip():
                    row = json.loads(line)
                    if "_truncated" not in row:
                        yield row

    def close(self) -> None:
        """Close the HTTP connections."""
        if self._plain is not None:
            self._plain.close()
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Api):
    """The asyncio client: every method of :class:`Client` as a coroutine (``await c.context(...)``)."""

    def __init__(self, url: str | None = None, *, api_key: str | None = None, timeout: float = 30.0,
                 retries: int = 5, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.url, key = _settings(url, api_key)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.retries = retries
        self._http = httpx.AsyncClient(base_url=self.url, headers=headers, timeout=timeout, transport=transport)

    async def _send(self, req: _Req) -> Any:
        for attempt in range(self.retries + 1):
            try:
                response = await self._http.request(
                    req.method, req.path, params=_query(req.query),
                    content=_encode(req.body) if req.body is not None else None,
                    headers={"Content-Type": "application/json"} if req.body is not None else None,
                )
                _raise_for(response)
            except ServerBusyError as e:
                if attempt >= self.retries:
                    raise
                await asyncio.sleep(e.retry_after)
                continue
            except httpx.HTTPError as e:
                raise ServerUnavailableError(f"could not reach graphmem at {self.url}: {e}") from e
            data = response.json()
            return req.parse(data) if req.parse else data
        raise AssertionError("unreachable")

    async def iter_cypher(
        self, query: str, params: Mapping[str, Any] | None = None, *, scope: str = "user"
    ) -> AsyncIterator[dict[str, Any]]:
        """Stream the rows of a read-only query as they arrive (JSON lines)."""
        body = _encode({"query": query, "params": dict(params or {}), "scope": scope})
        async with self._http.stream("POST", "/v1/cypher", content=body, headers={
                "Content-Type": "application/json", "Accept": "application/x-ndjson"}) as response:
            if response.status_code >= 400:
                await response.aread()
                _raise_for(response)
            async for line in response.aiter_lines():
                if line.strip():
                    row = json.loads(line)
                    if "_truncated" not in row:
                        yield row

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
