"""context() latency on a Bolt graph server (ArcadeDB from the arcadedb-embedded wheel) vs Kùzu.

    python -m benchmarks.bolt [--sizes 1000 10000] [--queries 100] [--freshness 0 1]

For each size the same generated learnings (benchmarks/scale.py's generator, HashEmbedder) are
bulk-loaded into a fresh Kùzu file and into a fresh ArcadeDB database (one server, started in a
child process, on 127.0.0.1), then the same queries run through ``Memory.context()`` for one user
on each. Reported per store: open (mirror load) time, context() p50/p95/mean, and on Bolt the
share of context() time the calling thread spent inside driver calls (network round trips plus
the server's work), with the number of round trips per context. ``--freshness`` runs Bolt with
each ``store.freshness_seconds`` value (0: the shared write counter is read before every ranking
and top-level read; larger: at most that often).

Results go to benchmarks/results/local/bolt.json.

    python -m benchmarks.bolt --throughput [--clients 8] [--servers 2] [--seconds 20]

Write throughput instead: ``--clients`` concurrent HTTP clients (threads, one user each, each
``Client.add_learning`` in a loop for ``--seconds``) spread over ``--servers`` ``graphmem serve``
processes on one ArcadeDB database, against the same clients on one server over a Kùzu file and
one server over ArcadeDB (same run, same machine). Counted: acknowledged adds/s, errors, that
acknowledged learnings are readable through another server afterwards, and the CPU seconds of the servers and of the ArcadeDB process. Results go to
benchmarks/results/local/bolt_throughput.json.

    python -m benchmarks.bolt --locomo [--conversations 5-9] [--embed-cache FILE.npz]

LoCoMo evidence recall (benchmarks/locomo.py's ingest, questions and metric, its default ranking)
on an in-memory Kùzu database and on an ArcadeDB database per conversation, in one run. Results
go to benchmarks/results/local/bolt_locomo.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import scale

OUT = Path(__file__).resolve().parent / "results" / "local"


class RoundTrips:
    """Counts and times the driver calls made by one thread (patched into BoltConnection)."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.calls = 0
        self.seconds = 0.0
        self.active = False

    def install(self) -> None:
        from graphmem.store.bolt import connection

        me = self
        for name in ("execute",):
            orig = getattr(connection.BoltConnection, name)

            def wrapped(self: Any, *a: Any, _orig: Any = orig, **k: Any) -> Any:
                if not me.active or threading.get_ident() != me.thread:
                    return _orig(self, *a, **k)
                t = time.perf_counter()
                try:
                    return _orig(self, *a, **k)
                finally:
                    me.calls += 1
                    me.seconds += time.perf_counter() - t

            setattr(connection.BoltConnection, name, wrapped)


def learnings(specs: list[dict[str, Any]]) -> list[Any]:
    from graphmem.models import Learning

    base = time.time() - 200 * 86400
    out = []
    for i, s in enumerate(specs):
        when = datetime.fromtimestamp(base + i * (180 * 86400 / max(1, len(specs))), tz=UTC)
        out.append(Learning(
            user_id=s["user"], shared=s["shared"], content=s["content"], tool=s["tool"],
            entities=s["entities"], topics=s["topics"], status=s["status"], tier=s["tier"],
            canary_allocation=0.2 if s["status"] == "canary" else 1.0, helpful=s["helpful"],
            harmful=s["harmful"], confidence=s["confidence"], created_at=when, updated_at=when,
        ))
    return out


def related(items: list[Any]) -> dict[str, list[tuple[str, str, str, str, int]]]:
    pairs: dict[str, dict[tuple[str, str, str, str], int]] = {}
    scale.count_related(pairs, items)
    return {u: [(*k, w) for k, w in c.items()] for u, c in pairs.items()}


def fill(store: Any, items: list[Any], vectors: np.ndarray, server_pid: int | None = None) -> dict[str, float]:
    """Bulk-load the learnings and their RELATED edges: wall seconds, this process's CPU seconds
    and (``server_pid``) the server process's CPU seconds over the load."""
    t, cpu = time.perf_counter(), time.process_time()
    server0 = _cpu_seconds(server_pid) if server_pid else 0.0
    store.bulk_insert_learnings(items, vectors)
    for user, edges in related(items).items():
        store.bulk_insert_related(edges, user_id=user)
    out = {"s": round(time.perf_counter() - t, 2), "cpu_s": round(time.process_time() - cpu, 2)}
    if server_pid:
        out["server_cpu_s"] = round(_cpu_seconds(server_pid) - server0, 2)
    return out


def run_contexts(mem: Any, qs: list[dict[str, Any]], trips: RoundTrips | None) -> dict[str, Any]:
    for q in qs[:5]:  # warm-up
        mem.context(q["query"], tool=q["tool"], entities=q["entities"])
    times, shown = [], []
    if trips is not None:
        trips.calls, trips.seconds, trips.active = 0, 0.0, True
    cpu0, thread0 = time.process_time(), time.thread_time()
    for q in qs:
        t = time.perf_counter()
        ctx = mem.context(q["query"], tool=q["tool"], entities=q["entities"])
        times.append(time.perf_counter() - t)
        shown.append([(s.learning.id, round(float(s.score), 6)) for s in ctx.learnings])
    out: dict[str, Any] = {
        "p50_ms": round(1000 * statistics.median(times), 2),
        "p95_ms": round(1000 * scale.pct(times, 95), 2),
        "mean_ms": round(1000 * statistics.mean(times), 2),
        # CPU per context: the calling thread's, and the whole process's (with the background writer)
        "thread_cpu_ms": round(1000 * (time.thread_time() - thread0) / len(qs), 2),
        "process_cpu_ms": round(1000 * (time.process_time() - cpu0) / len(qs), 2),
    }
    if trips is not None:
        trips.active = False
        out["round_trips_per_context"] = round(trips.calls / len(qs), 2)
        out["driver_share"] = round(trips.seconds / sum(times), 3)
        out["driver_ms_per_context"] = round(1000 * trips.seconds / len(qs), 2)
    out["_shown"] = shown
    return out


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its children so far (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def _serve(db: str, keys_file: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    from graphmem.store.bolt.testing import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "graphmem", "--embedder", "hash", "serve", "--store" if "://" in db else "--db",
                             db, "--port", str(port), "--keys", str(keys_file), "--no-mcp"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return proc, f"http://127.0.0.1:{port}"


def _wait_up(proc: subprocess.Popen[bytes], url: str, timeout: float = 180.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.communicate()[1].decode()[-2000:]}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server at {url} did not come up")


def throughput(db: str, servers: int, clients: int, seconds: float, env: dict[str, str], tmp: Path,
               arcade_pid: int | None = None) -> dict[str, Any]:
    """``clients`` threads adding learnings through ``servers`` servers on ``db`` for ``seconds``."""
    from graphmem.client import Client
    from graphmem.server.auth import KeyStore

    keys = KeyStore()
    user_keys = [keys.add(f"u{i}", "agent")[0] for i in range(clients)]
    keys_file = tmp / f"keys{servers}{abs(hash(db))}.json"
    keys.save(keys_file)
    procs = [_serve(db, keys_file, env) for _ in range(servers)]
    try:
        for proc, url in procs:
            _wait_up(proc, url)
        acked: list[list[str]] = [[] for _ in range(clients)]
        errors: list[str] = []
        latencies: list[float] = []
        stop = threading.Event()

        def work(i: int) -> None:
            client = Client(procs[i % servers][1], api_key=user_keys[i], timeout=60.0)
            n = 0
            try:
                while not stop.is_set():
                    t = time.perf_counter()
                    try:
                        got = client.add_learning(f"client {i} rule {n}: check the ledger {n * 7 + i} before paying "
                                                  f"vendor {n % 13}", tool=f"tool{n % 5}", entities=[f"vendor{n % 13}"])
                        acked[i].append(got.id)
                        latencies.append(time.perf_counter() - t)
                    except Exception as e:  # counted, the client goes on
                        errors.append(f"{type(e).__name__}: {e}"[:200])
                    n += 1
            finally:
                client.close()

        cpu0 = [_cpu_seconds(p.pid) for p, _ in procs]
        arcade0 = _cpu_seconds(arcade_pid) if arcade_pid else float("nan")
        threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join(timeout=120)
        wall = time.perf_counter() - t0
        cpu = sum(_cpu_seconds(p.pid) - c for (p, _), c in zip(procs, cpu0))
        total = sum(len(a) for a in acked)
        # every acknowledged learning is readable (through the first server, which may not have written it)
        reader = Client(procs[0][1], api_key=user_keys[0])
        check = Client(procs[-1][1], api_key=user_keys[0])
        missing = 0
        try:
            for ident in acked[0][:50]:
                try:
                    check.get_learning(ident)
                except Exception:
                    missing += 1
        finally:
            reader.close()
            check.close()
        lat = sorted(latencies)
        return {
            "db": "kuzu" if "://" not in db else "bolt", "servers": servers, "clients": clients,
            "seconds": round(wall, 1), "adds": total, "adds_per_s": round(total / wall, 1),
            "add_p50_ms": round(1000 * lat[len(lat) // 2], 1) if lat else None,
            "add_p95_ms": round(1000 * lat[int(len(lat) * 0.95)], 1) if lat else None,
            "errors": len(errors), "first_errors": sorted(set(errors))[:3],
            "checked_missing": missing, "server_cpu_s": round(cpu, 1),
            "arcade_cpu_s": round(_cpu_seconds(arcade_pid) - arcade0, 1) if arcade_pid else None,
        }
    finally:
        for proc, _ in procs:
            proc.terminate()
        for proc, _ in procs:
            try:
                err = proc.communicate(timeout=30)[1].decode()
                if "Traceback" in err:
                    print(err[-800:])
            except subprocess.TimeoutExpired:
                proc.kill()


def main_throughput(args: argparse.Namespace) -> list[dict[str, Any]]:
    from graphmem.store.bolt.testing import ArcadeServer

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent), "HF_HUB_OFFLINE": "1"}
    results: list[dict[str, Any]] = []
    with ArcadeServer(start_timeout=600) as srv, tempfile.TemporaryDirectory() as tmp:
        env.update(GRAPHMEM_BOLT_USER=srv.auth[0], GRAPHMEM_BOLT_PASSWORD=srv.auth[1])
        pid = srv._proc.pid if srv._proc is not None else None
        runs = [(str(Path(tmp) / "t.kuzu"), 1), (srv.create_database("tp1"), 1),
                (srv.create_database(f"tp{args.servers}"), args.servers)]
        for db, servers in runs:
            row = throughput(db, servers, args.clients, args.seconds, env, Path(tmp), pid if "://" in db else None)
            print(json.dumps(row))
            results.append(row)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bolt_throughput.json").write_text(json.dumps(results, indent=1))
    return results


def migrate(users: list[str], src: Path, dst: str, emb: Any, tmp: Path) -> dict[str, Any]:
    """``export_memory`` of every user from the file ``src``, ``import_memory`` into ``dst``; then
    whether every learning (content, counters, tier, status, anchors, superseded_by), every
    node and edge count, and the users' summaries match."""
    from graphmem import Memory
    from graphmem.llm import OfflineLLM

    t = time.perf_counter()
    for user in users:
        with Memory(src, user=user, embedder=emb, llm=OfflineLLM(), read_only=True) as mem:
            mem.export_memory(tmp / f"{user}.jsonl")
        with Memory(dst, user=user, embedder=emb, llm=OfflineLLM()) as mem:
            mem.import_memory(tmp / f"{user}.jsonl")
    seconds = time.perf_counter() - t

    def view(db: Any) -> tuple[dict[str, Any], dict[str, int]]:
        with Memory(db, user=users[0], embedder=emb, llm=OfflineLLM()) as mem:
            store = mem.store
            rows = store.read("MATCH (l:Learning) RETURN l.id AS id")
            learnings = {}
            for l in store.get_learnings([r["id"] for r in rows]):
                learnings[l.id] = (l.content, l.user_id, l.helpful, l.harmful, l.validations, l.tier, l.status,
                                   l.tool, sorted(l.entities), sorted(l.topics), l.superseded_by, l.shared)
            return learnings, {k: v for k, v in store.stats().items() if k != "Meta"}

    a, a_stats = view(src)
    b, b_stats = view(dst)
    return {"seconds": round(seconds, 1), "learnings": len(a), "same_learnings": a == b,
            "differing_learnings": sum(a.get(k) != b.get(k) for k in set(a) | set(b)),
            "same_counts": {k: v for k, v in a_stats.items() if v} == {k: v for k, v in b_stats.items() if v},
            "kuzu_counts": a_stats, "imported_counts": b_stats}


def main_learnings(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The labelled learnings benchmark (benchmarks/learnings.py) on a Kùzu file and on ArcadeDB."""
    from benchmarks import learnings as lb
    from graphmem.config import Settings
    from graphmem.store.bolt.testing import ArcadeServer

    dataset = lb.load_dataset()
    emb = lb.make_embedder(args.embedder)
    variants = [v for v in args.variants.split(";") if v]
    out: dict[str, Any] = {"embedder": args.embedder, "learnings": len(dataset.learnings),
                           "queries": len(dataset.queries), "variants": {}}
    with ArcadeServer(start_timeout=600) as srv, tempfile.TemporaryDirectory() as tmp:
        os.environ["GRAPHMEM_BOLT_USER"], os.environ["GRAPHMEM_BOLT_PASSWORD"] = srv.auth
        dbs: dict[str, Any] = {"kuzu": Path(tmp) / "bench.kuzu", "bolt": srv.create_database("labelled")}
        keys: dict[str, Any] = {}
        for name, db in dbs.items():
            t = time.perf_counter()
            keys[name] = lb.load_into(dataset, db, emb)  # type: ignore[arg-type]
            out[f"{name}_load_s"] = round(time.perf_counter() - t, 1)
        # migration: each user's memory exported from the Kùzu file and imported into a third database
        dbs["imported"] = srv.create_database("imported")
        keys["imported"] = keys["kuzu"]
        out["migration"] = migrate(dataset.users, dbs["kuzu"], dbs["imported"], emb, Path(tmp))
        print("migration", json.dumps(out["migration"]))
        for variant in variants:
            row: dict[str, Any] = {}
            ranked: dict[str, list[Any]] = {}
            for name, db in dbs.items():
                t = time.perf_counter()
                rows, _findings = lb.run_variant(dataset, db, emb, Settings(**lb.VARIANTS[variant]), keys[name])  # type: ignore[arg-type]
                agg = lb.aggregate([{k: v for k, v in r.items() if k not in ("id", "returned", "ranked")} for r in rows])
                row[name] = {k: round(v, 4) if isinstance(v, float) else v for k, v in agg["overall"].items()}
                row[name]["seconds"] = round(time.perf_counter() - t, 1)
                ranked[name] = [r["ranked"] for r in rows]
            row["same_ranking_share"] = round(sum(a == b for a, b in zip(ranked["kuzu"], ranked["bolt"])) / len(rows), 3)
            row["differing"] = [{"query": r["id"], "kuzu": a, "bolt": b}
                                for r, a, b in zip(rows, ranked["kuzu"], ranked["bolt"]) if a != b][:10]
            row["imported_same_ranking_share"] = round(
                sum(a == b for a, b in zip(ranked["kuzu"], ranked["imported"])) / len(rows), 3)
            row["p@5_diff_points"] = round(100 * (row["bolt"]["p@5"] - row["kuzu"]["p@5"]), 2)
            out["variants"][variant] = row
            print(variant, json.dumps(row))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bolt_learnings.json").write_text(json.dumps(out, indent=1))
    return [out]


def main_locomo(args: argparse.Namespace) -> list[dict[str, Any]]:
    """LoCoMo evidence recall (benchmarks/locomo.py's ingest, question and metric; its default
    "full" ranking only) on an in-memory Kùzu database and on an ArcadeDB database, per
    conversation, in one run: R@5/10/25 on each store, and the share of questions whose top 25
    event ids were the same."""
    from benchmarks import locomo as lm
    from graphmem import Memory
    from graphmem.embed import SentenceTransformerEmbedder
    from graphmem.llm import OfflineLLM
    from graphmem.store.bolt.testing import ArcadeServer

    data_dir = Path(args.locomo_data) if args.locomo_data else lm.DEFAULT_DATA
    data = json.loads((data_dir / "locomo10.json").read_text())
    audit = lm.load_audit(data_dir / "locomo_audit_errors.json")
    chosen = lm.parse_indices(args.conversations) or list(range(len(data)))
    embedder = lm.CachingEmbedder(SentenceTransformerEmbedder(), Path(args.embed_cache) if args.embed_cache else None)
    rows: dict[str, dict[str, list[Any]]] = {s: {"original": [], "audited": []} for s in ("kuzu", "bolt")}
    same = total = 0
    timing: dict[str, float] = {"kuzu_ingest_s": 0.0, "bolt_ingest_s": 0.0, "kuzu_search_s": 0.0, "bolt_search_s": 0.0,
                                "kuzu_search_cpu_s": 0.0, "bolt_search_cpu_s": 0.0}
    t_all, cpu_all = time.perf_counter(), time.process_time()
    with ArcadeServer(start_timeout=600) as srv:
        for ci in chosen:
            sample = data[ci]
            items = lm.turn_items(sample, captions=True)
            embedder.remember([str(i["content"]) for i in items])
            questions = [(qi, qa) for qi, qa in enumerate(sample["qa"]) if qa.get("question")]
            embedder.remember([str(qa["question"]) for _, qa in questions])
            ranked: dict[str, list[list[str]]] = {}
            for name in ("kuzu", "bolt"):
                db = None if name == "kuzu" else srv.create_database(f"locomo{ci}")
                user = str(sample.get("sample_id", ci))
                t = time.perf_counter()
                mem = Memory(db, user=user, embedder=embedder, llm=OfflineLLM(), bolt_auth=srv.auth if db else None)
                mem.record_events(items)
                timing[f"{name}_ingest_s"] += time.perf_counter() - t
                t, cpu = time.perf_counter(), time.process_time()
                ranked[name] = [[str(h.node.metadata.get("dia_id")) for h in  # type: ignore[union-attr]
                                 mem.search(str(qa["question"]), over="events", k=max(lm.KS))] for _, qa in questions]
                timing[f"{name}_search_s"] += time.perf_counter() - t
                timing[f"{name}_search_cpu_s"] += time.process_time() - cpu
                mem.close()
                for (qi, qa), got in zip(questions, ranked[name]):
                    cat = int(qa.get("category", 0))
                    for variant, gold in (("original", lm.parse_evidence(qa.get("evidence", []))),
                                          ("audited", audit.get((ci, qi), lm.parse_evidence(qa.get("evidence", []))))):
                        if gold:
                            rows[name][variant].append((cat, {k: lm.recall(got, gold, k) for k in lm.KS}, ci))
            same += sum(a == b for a, b in zip(ranked["kuzu"], ranked["bolt"]))
            total += len(questions)
            print(f"conversation {ci}: {len(items)} turns, {len(questions)} questions, "
                  f"same top-25 {same}/{total} so far", flush=True)
    embedder.save()
    out = {"conversations": chosen, "questions": total, "same_top25_share": round(same / max(1, total), 3),
           "kuzu": {v: lm.aggregate(r) for v, r in rows["kuzu"].items()},
           "bolt": {v: lm.aggregate(r) for v, r in rows["bolt"].items()},
           "timing": {k: round(v, 1) for k, v in timing.items()},
           "wall_s": round(time.perf_counter() - t_all, 1), "cpu_s": round(time.process_time() - cpu_all, 1)}
    print(json.dumps({k: v for k, v in out.items()}, indent=1))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bolt_locomo.json").write_text(json.dumps(out, indent=1))
    return [out]


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learnings", action="store_true",
                        help="run the labelled learnings benchmark on Kùzu and on ArcadeDB instead")
    parser.add_argument("--embedder", choices=["minilm", "hash"], default="minilm", help="--learnings: the embedder")
    parser.add_argument("--variants", default="hybrid", help="--learnings: semicolon-separated variants of benchmarks.learnings")
    parser.add_argument("--throughput", action="store_true", help="measure write throughput through servers instead")
    parser.add_argument("--locomo", action="store_true",
                        help="run LoCoMo evidence recall on Kùzu and on ArcadeDB instead (MiniLM)")
    parser.add_argument("--conversations", default=None, help="--locomo: conversation indices, e.g. 5-9 (default all)")
    parser.add_argument("--locomo-data", default=None, help="--locomo: the folder of locomo10.json")
    parser.add_argument("--embed-cache", default=None, help="--locomo: an .npz of MiniLM embeddings kept across runs")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--freshness", type=float, nargs="+", default=[0.0])
    parser.add_argument("--user", default="alice")
    parser.add_argument("--no-application-writes", action="store_true",
                        help="diagnostic: drop the Application record each context() writes in the background, "
                             "on both stores, to see what the writes cost the readers")
    parser.add_argument("--uncapped", action="store_true",
                        help="lift the graph expansion caps (they keep the first N learnings per anchor in the "
                             "engine's order, which differs between engines)")
    args = parser.parse_args(argv)
    if args.throughput:
        return main_throughput(args)
    if args.learnings:
        return main_learnings(args)
    if args.locomo:
        return main_locomo(args)

    from graphmem import HashEmbedder, Memory, Settings
    from graphmem.llm import OfflineLLM
    from graphmem.store import KuzuGraphStore
    from graphmem.store.bolt import open_bolt_store
    from graphmem.store.bolt.testing import ArcadeServer

    settings = Settings(graph_fanout_cap=10**6, graph_anchor_cap=10**6) if args.uncapped else Settings()
    embedder = HashEmbedder()
    now = datetime.now(UTC)  # one fixed clock for both stores: recency scores compare exactly
    trips = RoundTrips()
    trips.install()
    results: list[dict[str, Any]] = []
    with ArcadeServer(start_timeout=600) as srv, tempfile.TemporaryDirectory() as tmp:
        print(f"ArcadeDB server started in {srv.start_seconds:.1f} s")
        for size in args.sizes:
            specs = scale.generate(size)
            items = learnings(specs)
            vectors = embedder.embed([s["content"] for s in specs]).astype(np.float32)
            qs = scale.queries(args.queries)
            row: dict[str, Any] = {"size": size, "queries": len(qs), "server_start_s": round(srv.start_seconds, 2),
                                   "uncapped": args.uncapped, "loadavg_start": os.getloadavg()[0]}

            path = Path(tmp) / f"m{size}.kuzu"
            store = KuzuGraphStore(path, dim=embedder.dim, embedder_name=embedder.name)
            row["kuzu_load"] = fill(store, items, vectors)
            store.close()
            t = time.perf_counter()
            mem = Memory(path, user=args.user, embedder=embedder, llm=OfflineLLM(), settings=settings,
                         clock=lambda: now)
            row["kuzu_open_s"] = round(time.perf_counter() - t, 3)
            if args.no_application_writes:
                mem.store.defer_write = lambda fn: None
            kuzu = run_contexts(mem, qs, None)
            kuzu_order = list(mem.store.learning_catalog.ids)
            mem.close()

            url = srv.create_database(f"b{size}")
            store = open_bolt_store(url, dim=embedder.dim, embedder_name=embedder.name, auth=srv.auth)
            row["bolt_load"] = fill(store, items, vectors, srv._proc.pid if srv._proc is not None else None)
            store.close()
            t = time.perf_counter()
            mem = Memory(url, user=args.user, embedder=embedder, llm=OfflineLLM(), bolt_auth=srv.auth, settings=settings,
                         clock=lambda: now)
            row["bolt_open_s"] = round(time.perf_counter() - t, 3)
            if args.no_application_writes:
                mem.store.defer_write = lambda fn: None
                row["no_application_writes"] = True
            # the mirrors' row order is each engine's scan order; ties in ranking keep it
            row["same_mirror_row_order"] = list(mem.store.learning_catalog.ids) == kuzu_order
            row["kuzu"] = {k: v for k, v in kuzu.items() if not k.startswith("_")}
            row["bolt"] = {}
            for fresh in args.freshness:
                mem.store.freshness_seconds = fresh
                bolt = run_contexts(mem, qs, trips)
                row["bolt"][f"freshness_{fresh:g}s"] = {k: v for k, v in bolt.items() if not k.startswith("_")}
                if "same_learnings_share" not in row:  # first Bolt run: the same contexts came before it
                    pairs = list(zip(kuzu["_shown"], bolt["_shown"]))
                    row["same_learnings_share"] = round(sum([i for i, _ in a] == [i for i, _ in b] for a, b in pairs) / len(qs), 3)
                    # differing only by which of equally scored learnings made it (ties keep mirror order)
                    row["same_scores_share"] = round(sum([x for _, x in a] == [x for _, x in b] for a, b in pairs) / len(qs), 3)
            mem.close()
            row["loadavg_end"] = os.getloadavg()[0]
            for b in row["bolt"].values():  # same-run ratios (both stores measured back to back)
                b["p50_vs_kuzu"] = round(b["p50_ms"] / max(1e-9, row["kuzu"]["p50_ms"]), 2)
            print(json.dumps(row, indent=1))
            results.append(row)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / ("bolt_uncapped.json" if args.uncapped else "bolt.json")).write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
