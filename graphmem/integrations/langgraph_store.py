"""A LangGraph long-term memory store backed by graphmem: ``GraphmemStore(memory)``.

LangGraph agents keep long-term memories as JSON documents under a namespace and key
(``store.put(("memories", user_id), "pref-1", {"content": "Keep emails short"})``). Here each item
is one graphmem learning of the Memory's user, so everything graphmem does for learnings applies:
semantic + full-text + graph search, Cypher, screening for injected instructions, the lifecycle.

- The learning's text is ``value["content"]`` (or ``value["text"]``, else the value as JSON); its
  ``recommendation`` field holds the item's envelope (namespace, key, value) as JSON, so ``get``
  returns the value exactly as put. It mentions the entity ``lg:<hash of namespace and key>``
  (how ``get`` finds it) and is about the topic ``lg-ns:<a.b>``.
- ``search(prefix, query=...)`` ranks with :meth:`Memory.search` (learnings that are served:
  active, not archived); without a query it lists the namespace's items, newest first. ``filter``
  compares value fields for equality; ``offset``/``limit`` page.
- ``put(..., None)`` / ``delete`` remove the learning for good (:meth:`Memory.forget_learning`).
- Two items with the same text in one user would be merged by graphmem's deduplication, so the
  second one's text gets `` [key]`` appended.

``abatch`` runs ``batch`` in a worker thread. TTLs are not supported (``supports_ttl = False``).
Needs ``langgraph`` (the ``integrations`` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from graphmem.errors import NotFoundError
from graphmem.store.text import content_key

_MARK = "langgraph-item:"


def _tag(namespace: tuple[str, ...], key: str) -> str:
    digest = hashlib.sha256(json.dumps([list(namespace), key]).encode("utf-8")).hexdigest()[:24]
    return f"lg:{digest}"


def _text_of(value: dict[str, Any]) -> str:
    for field in ("content", "text"):
        if isinstance(value.get(field), str) and value[field].strip():
            return str(value[field])
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class GraphmemStore(BaseStore):
    """LangGraph ``BaseStore`` whose items are learnings of one :class:`graphmem.Memory`'s user."""

    supports_ttl = False

    def __init__(self, memory: Any) -> None:
        self.memory = memory

    # --- the two methods BaseStore requires -----------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; one result per operation."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op.namespace, op.key))
            elif isinstance(op, PutOp):
                self._put(op.namespace, op.key, None if op.value is None else dict(op.value))
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread (graphmem's calls are blocking)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # --- operations -----------------------------------------------------------------------------
    def _find(self, namespace: tuple[str, ...], key: str) -> Any:
        found = self.memory.learnings(entity=_tag(namespace, key), limit=1)
        return found[0] if found else None

    @staticmethod
    def _envelope(learning: Any) -> dict[str, Any] | None:
        text = learning.recommendation or ""
        if not text.startswith(_MARK):
            return None
        try:
            data = json.loads(text[len(_MARK):])
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def _item(self, learning: Any, score: float | None = None, search: bool = False) -> Item | None:
        env = self._envelope(learning)
        if env is None:
            return None
        ns, key, value = tuple(env["namespace"]), str(env["key"]), dict(env["value"])
        if search:
            return SearchItem(ns, key, value, learning.created_at, learning.updated_at, score)
        return Item(value=value, key=key, namespace=ns, created_at=learning.created_at, updated_at=learning.updated_at)

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        learning = self._find(tuple(namespace), str(key))
        return None if learning is None else self._item(learning)

    def _put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any] | None) -> None:
        namespace, key = tuple(namespace), str(key)
        existing = self._find(namespace, key)
        if value is None:
            if existing is not None:
                with contextlib.suppress(NotFoundError):  # gone meanwhile: deleted is deleted
                    self.memory.forget_learning(existing.id)
            return
        envelope = _MARK + json.dumps({"namespace": list(namespace), "key": key, "value": value}, ensure_ascii=False)
        text = _text_of(value)
        if existing is not None:
            if text != existing.content and self._taken(text):
                text = f"{text} [{key}]"
            self.memory.update_learning(existing.id, content=text, recommendation=envelope)
            return
        if self._taken(text):
            text = f"{text} [{key}]"
        self.memory.add_learning(
            text, entities=[_tag(namespace, key)], topics=["lg-ns:" + ".".join(namespace)],
            recommendation=envelope,
        )

    def _taken(self, text: str) -> bool:
        store = getattr(self.memory, "store", None)
        if store is None:
            return False
        return store.learning_catalog.find_exact(self.memory.user, content_key(text)) is not None

    def _all_items(self) -> list[Any]:
        return [l for l in self.memory.learnings() if self._envelope(l) is not None]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        want = op.limit + op.offset
        scored: list[tuple[Any, float | None]]
        if op.query:
            hits = self.memory.search(op.query, over="learnings", k=max(50, want * 4))
            scored = [(h.node, float(h.score)) for h in hits]
        else:
            scored = [(l, None) for l in self._all_items()]
        out: list[SearchItem] = []
        for learning, score in scored:
            item = self._item(learning, score, search=True)
            if not isinstance(item, SearchItem) or item.namespace[: len(prefix)] != prefix:
                continue
            if op.filter and any(item.value.get(k) != v for k, v in op.filter.items()):
                continue
            out.append(item)
        return out[op.offset : op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = {tuple(env["namespace"]) for l in self._all_items() if (env := self._envelope(l))}
        for cond in op.match_conditions or ():
            path = tuple(cond.path)

            def matches(ns: tuple[str, ...], path: tuple[str, ...] = path, kind: str = cond.match_type) -> bool:
                part = ns[: len(path)] if kind == "prefix" else ns[-len(path):]
                return len(ns) >= len(path) and all(p == "*" or p == n for p, n in zip(path, part))

            spaces = {ns for ns in spaces if matches(ns)}
        if op.max_depth is not None:
            spaces = {ns[: op.max_depth] for ns in spaces}
        ordered = sorted(spaces)
        return ordered[op.offset : op.offset + op.limit]


__all__ = ["GraphmemStore"]
