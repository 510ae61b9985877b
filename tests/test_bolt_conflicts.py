"""Conflicting transactions on a Bolt store: replayed with backoff, no lost update; a replay whose
reads changed gives up with a StoreError. Skipped when neo4j / arcadedb_embedded are missing or
GRAPHMEM_SKIP_BOLT=1."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from graphmem import HashEmbedder
from graphmem.errors import StoreError
from graphmem.store.bolt import open_bolt_store
from graphmem.store.bolt.testing import ArcadeServer

pytestmark = pytest.mark.bolt


def _open(url: str, auth: tuple[str, str]) -> Any:
    emb = HashEmbedder()
    return open_bolt_store(url, dim=emb.dim, embedder_name=emb.name, auth=auth)


def test_two_writers_on_one_node_lose_nothing(bolt_url: str, arcade: ArcadeServer) -> None:
    # two stores = two processes' worth of drivers and mirrors
    a, b = _open(bolt_url, arcade.auth), _open(bolt_url, arcade.auth)
    try:
        a.write("CREATE (t:Tool {name: 'counter', success_count: 0, error_count: 0})")
        rounds, errors = 15, []

        def bump(store: Any) -> None:
            try:
                for _ in range(rounds):
                    with store.transaction():
                        store.write("MATCH (t:Tool {name: 'counter'}) SET t.success_count = t.success_count + 1")
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=bump, args=(s,)) for s in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors
        assert a.read("MATCH (t:Tool {name: 'counter'}) RETURN t.success_count AS n")[0]["n"] == 2 * rounds
        assert a.conflict_retry.retried + b.conflict_retry.retried > 0, "the writers never collided: nothing was tested"
    finally:
        a.close()
        b.close()


def test_a_replay_that_reads_other_rows_gives_up(bolt_url: str, arcade: ArcadeServer) -> None:
    a, b = _open(bolt_url, arcade.auth), _open(bolt_url, arcade.auth)
    try:
        a.write("CREATE (t:Tool {name: 'counter', success_count: 0, error_count: 0})")
        with pytest.raises(StoreError), a.transaction():
            seen = a.read("MATCH (t:Tool {name: 'counter'}) RETURN t.success_count AS n")[0]["n"]
            a.write("MATCH (t:Tool {name: 'counter'}) SET t.success_count = $n", {"n": seen + 1})
            b.write("MATCH (t:Tool {name: 'counter'}) SET t.success_count = 41")  # commits first: a's commit conflicts
        # a's decision rested on the 0 it read: replaying it would have overwritten b's 41
        assert a.read("MATCH (t:Tool {name: 'counter'}) RETURN t.success_count AS n")[0]["n"] == 41
        assert a.conflict_retry.gave_up >= 1
    finally:
        a.close()
        b.close()


def test_two_stores_set_up_one_empty_database_at_once(bolt_url: str, arcade: ArcadeServer) -> None:
    stores: list[Any] = []
    errors: list[Exception] = []

    def open_one() -> None:
        try:
            stores.append(_open(bolt_url, arcade.auth))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=open_one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    try:
        assert not errors, errors
        meta = stores[0].read("MATCH (m:Meta) WHERE NOT m.key STARTS WITH 'generation' RETURN m.key AS k")
        assert sorted(r["k"] for r in meta) == ["changelog", "dim", "embedder", "schema_version"]
    finally:
        for s in stores:
            s.close()
