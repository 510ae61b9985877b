"""The change log that keeps several processes' mirrors in step on one Bolt database.

Every write transaction moves one of the 16 counter shards ``(:Meta {key: 'generation:K'}).n``;
one that changed what the in-memory mirrors hold also writes ``(:ChangeLog {key: 'K:N', ids})``
with the shard K and the counter value N it committed at, listing what it changed:

- ``L:<id>``: a learning was added or changed (its row and vector are re-read);
- ``D:<id>``: a learning was deleted;
- ``E:<id>``: an event was added;
- ``S:<id>``: a summary's text changed (its cached text is dropped);
- ``*``: something a row-by-row refresh does not cover (a user forgotten, a bulk load, an
  analyst's write): the reader rebuilds its mirrors in full.

What a transaction changes is read off the after-commit hooks it registers
(:func:`changes_of`): the store's mixins update the writer's own mirrors through them, so they
name every mirror change; a hook this module does not know counts as ``*``.

A reader (:func:`catch_up`, under the store's exclusive lock) reads the shard counters, then
the records ``K:N`` for every shard from the value its mirrors include up to the current one
(one query by key), re-reads the rows they name, and applies them. Per shard the counter values
are gap-free and committed in order (two transactions moving one shard conflict, and the
second is replayed on the first's value), so every record up to a counter value read is
visible. A transaction that changed nothing mirrored (an Application record) writes no record.
The writers keep each shard's last ``CHANGE_KEEP`` records and record the oldest kept as the
shard's ``floor``; a reader further behind than that, or behind by more than ``max_changes``
records, rebuilds in full instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

#: the shared write counter is the sum of GEN_SHARDS counter nodes (graphmem.store.bolt.base)
GEN_SHARDS = 16
#: a reader further behind than this many transactions rebuilds its mirrors in full instead
MAX_CHANGES = 4096

_CHANGE_READ = "MATCH (c:ChangeLog) WHERE c.key IN $keys RETURN c.key AS key, c.ids AS ids"


def _closure(fn: Any) -> dict[str, Any]:
    code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    out = {}
    for name, cell in zip(code.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return out


def changes_of(store: Any, fn: Callable[[], None]) -> list[str]:
    """What the after-commit hook ``fn`` changes in the mirrors, as change-record entries."""
    if isinstance(fn, functools.partial):
        name = getattr(fn.func, "__name__", "")
        if name == "_committed" and fn.args:
            return [f"L:{fn.args[0].id}"]
        if name == "add" and getattr(fn.func, "__self__", None) is store.event_catalog and fn.args:
            return [f"E:{fn.args[0]}"]
        return ["*"]
    name = getattr(fn, "__name__", "")
    if name == "_after_forget":
        return ["F"]  # deletions: the forget method noted their ids (or "*", see catch_up)
    code = getattr(fn, "__code__", None)
    names = set(code.co_names) | {c for c in code.co_consts if isinstance(c, str)} if code is not None else set()
    env = _closure(fn)
    if "_mark_due" in names:
        return []  # the summary service's own due list: this process only
    if "_committed" in names and "learning" in env:
        return [f"L:{env['learning'].id}"]
    if "event_catalog" in names and "event" in env:
        return [f"E:{env['event'].id}"]
    if "_summary_text_cache" in names and "sid" in env:
        return [f"S:{env['sid']}"]
    if "_forget_summary_texts" in names and "ids" in env:  # a batch of summary refreshes
        return [f"S:{i}" for i in env["ids"]]
    return ["*"]


def catch_up(store: Any) -> None:
    """Bring the store's mirrors up to the database's write counter (see the module docstring)."""
    with store._lock.exclusive():
        counters = store.counters()
        if not store._behind(counters):
            return
        if any(n < store.seen.get(k, 0) for k, (n, _) in counters.items()):  # the database was reset
            store._reload_mirrors()
            return
        keys = []
        for k in range(GEN_SHARDS):
            n, floor = counters.get(k, (0, 0))
            done = store.seen.get(k, 0)
            if n > done and done < floor:
                store._reload_mirrors()  # the records we need were pruned
                return
            keys += [f"{k}:{i}" for i in range(done + 1, n + 1)]
        if len(keys) > store.max_changes:
            store._reload_mirrors()
            return
        entries: list[str] = []
        for i in range(0, len(keys), 1000):
            for row in store.read(_CHANGE_READ, {"keys": keys[i:i + 1000]}):
                entries += list(row["ids"] or [])
        if "*" in entries or ("F" in entries and not any(e.startswith("D:") for e in entries)):
            store._reload_mirrors()
            return
        apply(store, entries)
        store.set_seen(counters)
        store.generation += 1  # caches keyed on the store's generation (analysts' views) start over
        store.refreshes["changes"] += 1


def apply(store: Any, entries: list[str]) -> None:
    """Re-read and apply the rows that change-record entries name (caller holds the lock)."""
    from graphmem.store.learnings import _RETURN, learning_from_row
    from graphmem.store.text import content_key

    learn = sorted({e[2:] for e in entries if e.startswith(("L:", "D:"))})
    events = list(dict.fromkeys(e[2:] for e in entries if e.startswith("E:")))
    summaries = {e[2:] for e in entries if e.startswith("S:")}
    found: set[str] = set()
    cache = store._cache()
    for i in range(0, len(learn), 500):
        rows = store.read(f"MATCH (l:Learning) WHERE l.id IN $ids RETURN {_RETURN}, l.embedding AS embedding",
                          {"ids": learn[i:i + 500]})
        for row in rows:
            learning = learning_from_row(row)
            vector = np.asarray(row["embedding"], dtype=np.float32) if row.get("embedding") is not None else None
            if vector is None and learning.id not in store.learning_catalog:
                continue
            store.learning_catalog.upsert(learning, vector, content_key(learning.content))
            cache.pop(learning.id, None)
            store._dirty().add(learning.id)
            found.add(learning.id)
        store.refreshes["rows"] += len(rows)
    gone = [i for i in learn if i not in found]
    for ident in gone:
        store.learning_catalog.remove(ident)
        cache.pop(ident, None)
        store._dirty().add(ident)
    if gone or "F" in entries:
        store.forgotten = getattr(store, "forgotten", 0) + 1  # name indexes reload on this
        search_cache = getattr(store, "_search_cache_dict", None)
        if search_cache:
            search_cache.clear()
    new_events = [e for e in events if e not in store.event_catalog.vectors.rows]
    for i in range(0, len(new_events), 500):
        rows = store.read("MATCH (e:Event) WHERE e.id IN $ids RETURN e.id AS id, e.user_id AS user_id, "
                          "e.embedding AS embedding, e.search_text AS search_text", {"ids": new_events[i:i + 500]})
        order = {e: n for n, e in enumerate(new_events)}
        for row in sorted(rows, key=lambda r: order.get(r["id"], 0)):
            store.event_catalog.add(row["id"], row["user_id"], np.asarray(row["embedding"], dtype=np.float32),
                                    row["search_text"])
        store.refreshes["rows"] += len(rows)
    texts = getattr(store, "_summary_text_cache", None)
    if texts:
        for sid in summaries:
            texts.pop(sid, None)


__all__ = ["GEN_SHARDS", "MAX_CHANGES", "apply", "catch_up", "changes_of"]
