"""Many processes' worth of clients on one served file: no errors, no lost writes, crash-safe."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

from graphmem import HashEmbedder, Memory, Settings
from graphmem.client import Client
from graphmem.errors import DatabaseLockedError
from graphmem.server.auth import KeyStore
from tests.server_helpers import serve_in_thread, serve_subprocess

THREADS = 16
SECONDS = 3.0


def _worker(url: str, key: str, n: int, stop: threading.Event, done: dict[str, list[str]], errors: list[str]) -> None:
    rng = random.Random(n)
    with Client(url, api_key=key, retries=50) as c:
        i = 0
        while not stop.is_set():
            i += 1
            try:
                op = rng.random()
                if op < 0.35:
                    l = c.add_learning(f"worker {n} rule {i}: check the {rng.choice(['invoice', 'email', 'api'])}",
                                       tool=f"tool{n % 4}")
                    done["learnings"].append(l.id)
                elif op < 0.6:
                    e = c.record_event("tool_call", f"worker {n} call {i}", tool=f"tool{n % 4}", session_id=f"s{n}")
                    done["events"].append(e.id)
                else:
                    ctx = c.context(f"check the invoice for worker {n}", tool=f"tool{n % 4}")
                    done["contexts"].append(ctx.id)
                    if rng.random() < 0.5:
                        c.record_outcome(ctx.id, success=rng.random() < 0.7)
                        done["outcomes"].append(ctx.id)
            except Exception as e:  # every failure is counted; the test asserts there are none
                errors.append(f"worker {n} op {i}: {type(e).__name__}: {e}")


def test_sixteen_clients_mixed_load_no_errors_no_lost_writes(tmp_path: Path) -> None:
    db = tmp_path / "load.kuzu"
    done: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    errors: list[str] = []
    settings = Settings(server_refresh_interval_s=0.5)
    with serve_in_thread(db, settings=settings) as served:
        stop = threading.Event()
        users = ["alice", "bob"]
        threads = [
            threading.Thread(target=_worker, args=(served.url, served.keys[users[n % 2]], n, stop,
                                                   done[users[n % 2]], errors))
            for n in range(THREADS)
        ]
        for t in threads:
            t.start()
        time.sleep(SECONDS)
        stop.set()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads)
    assert errors == [], errors[:5]
    total = sum(len(v) for d in done.values() for v in d.values())
    assert total > THREADS  # every worker got something done
    # the file opens clean in this process once the server let go, and holds every acknowledged write
    with Memory(db, user="alice", embedder=HashEmbedder()) as mem:
        for user, ops in done.items():
            m = mem.for_user(user)
            learnings = {l.id for l in m.learnings(limit=100_000)}
            assert set(ops["learnings"]) <= learnings
            rows = m.cypher("MATCH (e:Event) WHERE e.id IN $ids AND e.user_id = $u RETURN count(e) AS n",
                            {"ids": ops["events"], "u": user}, scope="all")
            assert rows[0]["n"] == len(set(ops["events"]))
            rows = m.cypher("MATCH (a:Application) WHERE a.id IN $ids AND a.user_id = $u RETURN count(a) AS n",
                            {"ids": ops["contexts"], "u": user}, scope="all")
            assert rows[0]["n"] == len(set(ops["contexts"]))
            rows = m.cypher("MATCH (a:Application) WHERE a.id IN $ids AND a.outcome IS NOT NULL RETURN count(a) AS n",
                            {"ids": ops["outcomes"]}, scope="all")
            assert rows[0]["n"] == len(set(ops["outcomes"]))


def _writer(url: str, key: str, n: int, stop: threading.Event, acked: list[tuple[str, str]]) -> None:
    with Client(url, api_key=key, retries=0, timeout=10) as c:
        i = 0
        while not stop.is_set():
            i += 1
            try:
                if i % 2:
                    acked.append(("learning", c.add_learning(f"crash test {n}-{i}: keep the receipt").id))
                else:
                    acked.append(("event", c.record_event("message", f"crash test {n}-{i}", role="user").id))
            except Exception:  # the server died mid-request: this write was never acknowledged
                return


def test_kill_minus_9_mid_load_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    db, keys_file = tmp_path / "crash.kuzu", tmp_path / "keys.json"
    store = KeyStore()
    key, _ = store.add("alice", "agent")
    store.save(keys_file)
    acked: list[tuple[str, str]] = []
    with serve_subprocess(db, keys_file) as (proc, url):
        # the reason the server exists: a second opener is refused, with a message pointing at it
        with pytest.raises(DatabaseLockedError, match="single owner process"):
            Memory(db, embedder=HashEmbedder())
        stop = threading.Event()
        threads = [threading.Thread(target=_writer, args=(url, key, n, stop, acked)) for n in range(4)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 20
        while len(acked) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        stop.set()
        for t in threads:
            t.join(timeout=20)
    assert len(acked) >= 40
    # restart the owner on the file (in this process: it recovers from the WAL like the server would)
    learnings = [i for kind, i in acked if kind == "learning"]
    events = [i for kind, i in acked if kind == "event"]
    with Memory(db, user="alice", embedder=HashEmbedder()) as mem:
        assert {l.id for l in mem.learnings(limit=100_000)} >= set(learnings)
        rows = mem.cypher("MATCH (e:Event) WHERE e.id IN $ids RETURN count(e) AS n", {"ids": events}, scope="all")
        assert rows[0]["n"] == len(set(events))
