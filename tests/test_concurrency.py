"""Threads on one Memory: no deadlock, no abort, no raw error, nothing lost, duplicated or out of sync.

The stress rounds run in a child process under a watchdog (benchmarks/stress.py), so a deadlock
fails the test after a bounded wait and a crash of the process is reported instead of killing
pytest. The longer run (8 threads × 60 s × 20 rounds) is ``python -m benchmarks.stress``.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.stress import clean, run_isolated
from graphmem import Memory, Settings
from graphmem.errors import StoreError
from graphmem.store.consistency import mirror_mismatches


@pytest.mark.parametrize("defer", [True, False], ids=["deferred-applications", "inline-applications"])
def test_mixed_threads_round_is_clean(defer: bool) -> None:
    result = run_isolated(threads=8, seconds=6, seed=7, defer=defer, grace=90)
    assert result["outcome"] == "ok", result
    assert sum(result["ops"].values()) >= 4, result["ops"]  # work was done (a busy machine does far less)
    assert clean(result), {k: result[k] for k in ("raw_errors", "graphmem_errors", "live", "after_reopen")}


def _run_with_watchdog(targets: list[Callable[[], None]], timeout: float = 60.0) -> list[BaseException]:
    errors: list[BaseException] = []

    def wrap(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as e:  # collected and asserted on by the caller
                errors.append(e)
        return run

    threads = [threading.Thread(target=wrap(t), daemon=True) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread is still running: deadlock"
    return errors


def test_adder_and_reader_threads_do_not_deadlock(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()  # default settings: Application records are deferred

    def adder() -> None:
        for i in range(60):
            mem.add_learning(f"Rule number {i} for send_email", tool="send_email")

    def reader() -> None:
        for i in range(60):
            ctx = mem.context(f"send an email {i}", tool="send_email")
            assert ctx.id

    assert _run_with_watchdog([adder, reader]) == []
    assert mirror_mismatches(mem.store) == []


def test_same_content_from_eight_threads_is_stored_once(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    for round_ in range(20):
        barrier = threading.Barrier(8)
        text = f"Always confirm the recipient before sending (round {round_})"

        def add(text: str = text, barrier: threading.Barrier = barrier) -> None:
            barrier.wait(timeout=30)
            mem.add_learning(text, tool="send_email")

        assert _run_with_watchdog([add] * 8) == []
        rows = mem.cypher("MATCH (l:Learning) WHERE l.content = $c RETURN l.validations AS v", {"c": text}, scope="all")
        assert len(rows) == 1, f"round {round_}: {len(rows)} rows for one content"
        assert rows[0]["v"] == 7  # the seven later adds each counted a validation
    assert mirror_mismatches(mem.store) == []


def test_outcome_right_after_context_in_many_threads(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    mem.add_learnings([{"content": f"Keep email {i} short", "tool": "send_email"} for i in range(30)])

    def agent() -> None:
        for i in range(15):
            ctx = mem.context(f"write email {i}", tool="send_email")
            mem.record_outcome(ctx.id, success=i % 2 == 0)

    assert _run_with_watchdog([agent] * 6) == []
    n = mem.cypher("MATCH (a:Application) WHERE a.outcome IS NOT NULL RETURN count(a) AS n", scope="all")[0]["n"]
    assert n == 6 * 15
    assert mirror_mismatches(mem.store) == []


def test_concurrent_updates_are_not_lost(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(credit_min_share=0.0))  # every learning shown is credited
    learnings = mem.add_learnings([{"content": f"Check the deploy log {i}", "tool": "deploy"} for i in range(4)])
    contexts = [mem.context("deploy the service", tool="deploy", limit=4) for _ in range(24)]
    assert all(len(c.learnings) == 4 for c in contexts)

    def credit(chunk: list[str]) -> Callable[[], None]:
        def run() -> None:
            for cid in chunk:
                mem.record_outcome(cid, success=True)
        return run

    ids = [c.id for c in contexts]
    assert _run_with_watchdog([credit(ids[i::6]) for i in range(6)]) == []
    for l in learnings:
        assert mem.get_learning(l.id).helpful == 24  # every outcome counted once, none overwritten


def test_failed_deferred_write_is_kept_and_retried(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    store = mem.store
    attempts = {"n": 0}

    def flaky() -> None:
        attempts["n"] += 1
        if attempts["n"] <= store.deferred_retries + 1:
            raise RuntimeError("disk hiccup")
        store.write("CREATE (:Topic {name: 'written late'})")

    store.defer_write(flaky)
    with pytest.raises(StoreError, match="kept to retry"):
        store.flush_deferred()
    store.flush_deferred()  # the retry succeeds: the write was not dropped
    assert mem.cypher("MATCH (t:Topic {name: 'written late'}) RETURN count(t) AS n", scope="all")[0]["n"] == 1


def test_deferred_writes_commit_together_and_a_bad_one_spares_the_rest(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    store = mem.store
    attempts = {"n": 0}
    recovered = threading.Event()

    def topic(name: str) -> Callable[[], None]:
        return lambda: store.write("CREATE (:Topic {name: $n})", {"n": name})

    def flaky() -> None:  # fails until the disk "recovers" (the batch, every retry, every drain)
        attempts["n"] += 1
        if not recovered.is_set():
            raise RuntimeError("disk hiccup")
        store.write("CREATE (:Topic {name: 'late'})")

    with store.exclusive():  # hold the writer off so the writes queue up
        for i in range(5):
            store.defer_write(topic(f"before {i}"))
        store.defer_write(flaky)
        for i in range(5):
            store.defer_write(topic(f"after {i}"))
    # the background writer may meet the failure first (the lock lets it in before the next
    # writer): either way the failing write stays queued and the next flush reports it
    with pytest.raises(StoreError, match="kept to retry"):
        store.flush_deferred()
    assert attempts["n"] >= store.deferred_retries + 2  # the batch, then the write alone with its retries
    recovered.set()
    store.flush_deferred()

    def names() -> set[str]:
        return {r["n"] for r in mem.cypher("MATCH (t:Topic) RETURN t.name AS n", scope="all")}

    expected = {f"before {i}" for i in range(5)} | {f"after {i}" for i in range(5)} | {"late"}
    assert expected <= names()  # nothing lost, nothing written twice (CREATE of a key would fail)
    assert store._deferred == deque()


def test_reads_go_on_while_the_background_writer_writes(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    mem.add_learning("Check the deploy log first", tool="deploy")
    store = mem.store
    entered, release = threading.Event(), threading.Event()

    def slow() -> None:  # a deferred write that stays open until released
        entered.set()
        release.wait(30)
        store.write("CREATE (:Topic {name: 'written beside readers'})")

    store.defer_write(slow)
    try:
        assert entered.wait(30), "the background writer did not start"
        done: list[object] = []
        reader = threading.Thread(target=lambda: done.append(mem.context("deploy the service", tool="deploy")))
        reader.start()
        reader.join(30)
        assert done, "context() waited for the background writer's open transaction"
    finally:
        release.set()
    store.flush_deferred()
    assert mem.cypher("MATCH (t:Topic {name: 'written beside readers'}) RETURN count(t) AS n", scope="all") == [{"n": 1}]


def test_write_ahead_log_is_checkpointed_past_its_limit(make_memory: Callable[..., Memory], db_path: Path) -> None:
    mem = make_memory()
    mem.store.checkpoint_bytes = 0  # every commit is past the limit
    mem.add_learning("Keep the log small")
    wal = Path(f"{db_path}.wal")
    assert not wal.exists() or wal.stat().st_size == 0
    mem.store.checkpoint_bytes = 1 << 40
    mem.add_learning("Now the log keeps this one")
    assert wal.exists() and wal.stat().st_size > 0
    mem.close()
    assert not wal.exists() or wal.stat().st_size == 0  # closing checkpoints


def test_long_single_thread_session_then_close(db_path: Path, make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    for start in range(0, 2000, 100):
        mem.add_learnings([{"content": f"Learning {i} about tool {i % 7}", "tool": f"tool{i % 7}"} for i in range(start, start + 100)])
    ids = [mem.context(f"use tool {i % 7}", tool=f"tool{i % 7}").id for i in range(120)]
    mem.close()
    again = make_memory()
    n = again.cypher("MATCH (a:Application) RETURN count(a) AS n", scope="all")[0]["n"]
    assert n == len(ids) == 120
    assert again.cypher("MATCH (l:Learning) RETURN count(l) AS n", scope="all")[0]["n"] == 2000
    assert mirror_mismatches(again.store) == []


def _fts_while_writing(path: str) -> None:  # runs in a child process
    from graphmem import HashEmbedder
    from graphmem.llm import OfflineLLM

    mem = Memory(path, user="u", embedder=HashEmbedder(), llm=OfflineLLM(),
                 settings=Settings(defer_application_writes=False))
    mem.add_learnings([{"content": f"email rule {i}"} for i in range(50)])
    stop = threading.Event()

    def writer() -> None:
        i = 0
        # bounded: every full-text read after a write rebuilds the index over all rows, so an
        # unbounded writer makes each read slower than the last on a busy machine
        while not stop.is_set() and i < 40:
            mem.add_learning(f"another email rule {i}")
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    for _ in range(25):
        mem.cypher("CALL QUERY_FTS_INDEX('Learning', 'learning_fts', 'email') RETURN node.id AS id, score", scope="all")
        mem.context("email rule")
    stop.set()
    t.join()
    mem.close()


def test_full_text_reads_never_overlap_writes(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    proc = ctx.Process(target=_fts_while_writing, args=(str(tmp_path / "fts.kuzu"),))
    proc.start()
    proc.join(timeout=240)
    if proc.is_alive():
        proc.kill()
        pytest.fail("deadlock: full-text reads and writes did not finish")
    assert proc.exitcode == 0, f"the process died (exit code {proc.exitcode})"


class _FailingEmbedder:
    """The hash embedder, failing ~30% of calls at random (seeded); not a HashEmbedder, so its
    vectors are computed beside the writes, as MiniLM's, and an add fails after its statements."""

    def __init__(self, seed: int) -> None:
        import random

        from graphmem import HashEmbedder

        self.inner = HashEmbedder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.rng, self.lock = random.Random(seed), threading.Lock()

    def embed(self, texts: list[str]) -> object:
        with self.lock:
            fail = self.rng.random() < 0.3
        if fail:
            raise RuntimeError("embedder down")
        return self.inner.embed(texts)


def _failing_adds_round(path: str | None, out: object) -> None:
    """In a child process: 6 threads add learnings on one topic and entity (and call context)
    while the embedder fails at random; sends the outcome counts and the stored counts
    (``path`` None: an in-memory database)."""
    import logging
    import random
    from collections import Counter

    from graphmem.errors import GraphmemError
    from graphmem.llm import OfflineLLM

    logging.disable(logging.WARNING)  # the failed summary refreshes' warnings
    mem = Memory(path, user="alice", embedder=_FailingEmbedder(1), llm=OfflineLLM())
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def worker(k: int) -> None:
        rng = random.Random(k)
        for i in range(30):
            try:
                if rng.random() < 0.7:
                    mem.add_learning(f"Rule {k}-{i} for Initech", tool="billing", topics=["invoices"], entities=["Initech"])
                    key = "added"
                else:
                    mem.context("invoices for Initech", tool="billing")
                    key = "context"
            except RuntimeError as e:
                key = "embedder error" if "embedder down" in str(e) else f"raw: {e}"
            except GraphmemError as e:
                key = f"{type(e).__name__}: {e}"
            with lock:
                seen[key] += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    weights = [r["w"] for r in mem.cypher("MATCH (a)-[r:RELATED]->(b) RETURN r.weight AS w")]
    out.send({"seen": dict(seen), "learnings": mem.stats().get("Learning", 0), "weights": weights})  # type: ignore[attr-defined]
    mem.close()


@pytest.mark.parametrize("in_memory", [False, True], ids=["file", "in-memory"])
def test_threads_adding_while_the_embedder_fails_lose_nothing_and_never_crash(tmp_path: Path, in_memory: bool) -> None:
    """Every failed add on a file rolls back after its statements ran; the adds after it (other
    threads' too) must still work: no write-write conflict, no crash (Kùzu crashed here before
    the store checkpointed after a rollback), every successful add stored and counted exactly
    once. An in-memory database embeds before it writes, so its failed adds write nothing
    (without that, Kùzu refused the later adds there and crashed)."""
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    path = None if in_memory else str(tmp_path / "m.kuzu")
    proc = ctx.Process(target=_failing_adds_round, args=(path, send))
    proc.start()
    send.close()
    got = None
    if recv.poll(240):
        with contextlib.suppress(EOFError):  # the child died before sending
            got = recv.recv()
    proc.join(timeout=30)
    if proc.is_alive():
        proc.kill()
    assert got is not None, f"the child died (exit code {proc.exitcode}) or hung"
    seen = got["seen"]
    assert set(seen) <= {"added", "context", "embedder error"}, seen
    assert seen["embedder error"] >= 10 and seen["added"] >= 10, seen  # both paths were exercised
    assert got["learnings"] == seen["added"]
    assert got["weights"] == [seen["added"]]  # the topic-entity count: one per stored add
