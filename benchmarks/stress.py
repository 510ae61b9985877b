"""Many threads on one Memory: no deadlock, no abort, no raw error, nothing lost or duplicated.

    python -m benchmarks.stress [--threads 8] [--seconds 60] [--rounds 20] [--embedder hash|minilm]
                                [--defer | --no-defer] [--save]

Each round runs in a child process (so a crash of the process is seen, not suffered) under a
watchdog: a round that has not finished ``--seconds`` + 120 s after it started counts as a
deadlock. Inside, ``--threads`` threads loop over a mix of add_learning (from a small pool of
texts, so threads add the same content at once), add_learnings, record_event, context,
record_outcome of their own contexts, update_learning, retire_learning and search. Every write a
thread was told succeeded is looked up afterwards; duplicate contents, lost events, missing
outcomes and differences between the in-memory mirrors and the file are counted, then the file
is reopened and checked again. Results: benchmarks/results/local/stress.json (``--save``:
benchmarks/results/stress.json).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import tempfile
import threading
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
POOL = [f"Keep {what} when writing to {who}" for what in ("bullet points", "short lines", "a greeting", "UTC times")
        for who in ("Dana", "Omar", "Priya", "Lena", "Acme")]
TOOLS = ["send_email", "web_search", "run_sql", "git_commit"]


def _worker(mem: Any, seed: int, deadline: float, log: dict[str, Any], lock: threading.Lock) -> None:
    from graphmem.errors import GraphmemError

    rng = random.Random(seed)
    mine: list[str] = []
    while time.monotonic() < deadline:
        op = rng.choice(("add", "add", "batch", "event", "context", "context", "update", "retire", "search"))
        try:
            if op == "add":
                text = rng.choice(POOL) if rng.random() < 0.5 else f"Rule {seed}-{rng.randrange(10**9)} for {rng.choice(TOOLS)}"
                l = mem.add_learning(text, tool=rng.choice(TOOLS), entities=[rng.choice(("Dana", "Omar"))])
                mine.append(l.id)
                with lock:
                    log["learnings"].add(l.id)
            elif op == "batch":
                items = [{"content": f"Batch rule {seed}-{rng.randrange(10**9)}", "tool": rng.choice(TOOLS)} for _ in range(5)]
                for l in mem.add_learnings(items):
                    with lock:
                        log["learnings"].add(l.id)
            elif op == "event":
                e = mem.record_event("tool_call", f"call {rng.randrange(10**6)}", tool=rng.choice(TOOLS))
                with lock:
                    log["events"].add(e.id)
            elif op == "context":
                ctx = mem.context(f"Email {rng.choice(('Dana', 'Omar'))} about {rng.choice(POOL)}", tool=rng.choice(TOOLS))
                if rng.random() < 0.7:
                    mem.record_outcome(ctx.id, success=rng.random() < 0.6)
                    with lock:
                        log["outcomes"].add(ctx.id)
            elif op == "update" and mine:
                mem.update_learning(rng.choice(mine), confidence=round(rng.random(), 3))
            elif op == "retire" and mine:
                mem.retire_learning(mine.pop(rng.randrange(len(mine))))
            elif op == "search":
                mem.search(rng.choice(POOL), over=rng.choice(("learnings", "events")), k=5)
            with lock:
                log["ops"][op] += 1
        except GraphmemError as e:
            with lock:
                log["graphmem_errors"].append(f"{op}: {type(e).__name__}: {e}"[:300])
        except Exception as e:
            with lock:
                log["raw_errors"].append(f"{op}: {type(e).__name__}: {e}\n{traceback.format_exc()[-800:]}")


def _check(mem: Any, log: dict[str, Any]) -> dict[str, Any]:
    from graphmem.store.consistency import mirror_mismatches
    from graphmem.store.text import content_key

    store = mem.store
    ids = {r["id"] for r in mem.cypher("MATCH (l:Learning) RETURN l.id AS id", scope="all")} if _has_scope(mem) else \
        {r["id"] for r in store.read("MATCH (l:Learning) RETURN l.id AS id")}
    rows = store.read("MATCH (l:Learning) RETURN l.user_id AS u, l.content AS c")
    keys = Counter((r["u"], content_key(r["c"])) for r in rows)
    events = {r["id"] for r in store.read("MATCH (e:Event) RETURN e.id AS id")}
    outcomes = {r["id"] for r in store.read("MATCH (a:Application) WHERE a.outcome IS NOT NULL RETURN a.id AS id")}
    return {
        "lost_learnings": len(log["learnings"] - ids),
        "duplicate_contents": sum(n - 1 for n in keys.values() if n > 1),
        "lost_events": len(log["events"] - events),
        "lost_outcomes": len(log["outcomes"] - outcomes),
        "mirror_mismatches": mirror_mismatches(store),
    }


def _has_scope(mem: Any) -> bool:
    import inspect

    return "scope" in inspect.signature(mem.cypher).parameters


def run_round(path: str, threads: int, seconds: float, seed: int, embedder: str, defer: bool) -> dict[str, Any]:
    """One round in this process; returns the counts (see the module docstring)."""
    from graphmem import HashEmbedder, Memory, Settings
    from graphmem.llm import OfflineLLM

    emb: Any = HashEmbedder()
    if embedder == "minilm":
        from graphmem import SentenceTransformerEmbedder

        emb = SentenceTransformerEmbedder()
    settings = Settings(defer_application_writes=defer)
    log: dict[str, Any] = {"learnings": set(), "events": set(), "outcomes": set(), "ops": Counter(),
                           "graphmem_errors": [], "raw_errors": []}
    lock = threading.Lock()
    started = time.monotonic()
    mem = Memory(path, user="stress", embedder=emb, llm=OfflineLLM(), settings=settings)
    deadline = time.monotonic() + seconds
    workers = [threading.Thread(target=_worker, args=(mem, seed * 100 + i, deadline, log, lock)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    live = _check(mem, log)
    mem.close()
    reopened = Memory(path, user="stress", embedder=emb, llm=OfflineLLM(), settings=settings)
    after = _check(reopened, log)
    reopened.close()
    return {
        "seconds": round(time.monotonic() - started, 1),
        "ops": dict(log["ops"]),
        "raw_errors": log["raw_errors"][:5],
        "raw_error_count": len(log["raw_errors"]),
        "graphmem_errors": log["graphmem_errors"][:5],
        "graphmem_error_count": len(log["graphmem_errors"]),
        "live": live,
        "after_reopen": after,
    }


def _child(path: str, threads: int, seconds: float, seed: int, embedder: str, defer: bool, out: Any) -> None:
    import faulthandler

    faulthandler.enable(all_threads=True)  # a crash prints every thread's Python stack to stderr
    out.send(run_round(path, threads, seconds, seed, embedder, defer))


def run_isolated(threads: int, seconds: float, seed: int, embedder: str = "hash", defer: bool = True,
                 grace: float = 120.0) -> dict[str, Any]:
    """One round in a child process under a watchdog: adds ``outcome`` ok | deadlock | crash."""
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "stress.kuzu")
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(path, threads, seconds, seed, embedder, defer, send))
        proc.start()
        send.close()
        result: dict[str, Any] | None = None
        if recv.poll(seconds + grace):
            try:
                result = recv.recv()
            except EOFError:
                result = None
        proc.join(timeout=10)
        if proc.is_alive():
            proc.kill()
            proc.join()
            return {"outcome": "deadlock", "seed": seed}
        if result is None:
            return {"outcome": "crash", "seed": seed, "exitcode": proc.exitcode}
        result.update(outcome="ok", seed=seed, exitcode=proc.exitcode)
        return result


def clean(result: dict[str, Any]) -> bool:
    """True when a round had no deadlock, crash, raw or graphmem error, loss, duplicate or mismatch."""
    if result.get("outcome") != "ok" or result["raw_error_count"] or result["graphmem_error_count"]:
        return False
    return all(
        not check["lost_learnings"] and not check["duplicate_contents"] and not check["lost_events"]
        and not check["lost_outcomes"] and not check["mirror_mismatches"]
        for check in (result["live"], result["after_reopen"])
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stress", description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--embedder", choices=("hash", "minilm"), default="hash")
    parser.add_argument("--defer", action=argparse.BooleanOptionalAction, default=True,
                        help="write Application records off the caller's path (the default setting)")
    parser.add_argument("--save", action="store_true", help="write benchmarks/results/stress.json")
    args = parser.parse_args(argv)
    rounds = []
    for seed in range(args.rounds):
        r = run_isolated(args.threads, args.seconds, seed, args.embedder, args.defer)
        rounds.append(r)
        ops = sum(r.get("ops", {}).values())
        print(f"round {seed}: {r['outcome']}, {ops} ops, clean={clean(r)}"
              + ("" if clean(r) else f" {json.dumps({k: r.get(k) for k in ('raw_errors', 'graphmem_errors', 'live', 'after_reopen')}, default=str)[:1500]}"),
              flush=True)
    summary = {
        "threads": args.threads, "seconds": args.seconds, "rounds": args.rounds, "embedder": args.embedder,
        "defer": args.defer, "clean_rounds": sum(clean(r) for r in rounds),
        "deadlocks": sum(r["outcome"] == "deadlock" for r in rounds),
        "crashes": sum(r["outcome"] == "crash" for r in rounds),
        "ops": sum(sum(r.get("ops", {}).values()) for r in rounds),
        "rounds_detail": rounds,
    }
    folder = RESULTS if args.save else RESULTS / "local"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stress.json").write_text(json.dumps(summary, indent=2, default=str))
    print(f"{summary['clean_rounds']}/{args.rounds} clean rounds, {summary['deadlocks']} deadlocks, "
          f"{summary['crashes']} crashes, {summary['ops']} operations -> {folder / 'stress.json'}")
    return 0 if summary["clean_rounds"] == args.rounds else 1


if __name__ == "__main__":
    raise SystemExit(main())
