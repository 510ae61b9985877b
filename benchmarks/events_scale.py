"""search(over="events") and record_event at scale, beside the bare query embedding of the same run.

    python -m benchmarks.events_scale [--events 600 100000] [--queries 100] [--pool 2000] [--batch 5000]

For each size, a child process builds a fresh file of one user's conversation: ``--events``
message turns (20 speakers, sessions of 30 turns, speaker linked as entity), written with the
store's batch path (``insert_event_batch``: one transaction per ``--batch`` events, the same
path ``Memory.record_events`` ends in). The first ``--pool`` turn texts are embedded by the
bundled MiniLM (cached under benchmarks/results/local/); beyond the pool, turn i reuses turn
i % pool's text (with its own turn number appended) and its vector plus small noise,
re-normalised: latency does not depend on the vectors' values, and embedding a million texts
on this machine would take hours. Then, in this process:

- open time (CPU and wall) and RSS after open;
- recall@10 of the int8 event mirror's scan against the file's own float32 embeddings (up to 200k events);
- ``search(query, over="events", k=10)`` p50/p95 (wall, and CPU time of the process), once the
  embedding feedback's kept sums are ready (grown in the background after the first search), over
  ``--queries`` questions, each followed by the same question embedded alone (the bare
  embedding, same process, same moment): the ratio of the two p50s is the figure to read on a
  busy machine;
- ``record_event`` p50 (MiniLM embedding included), then with ``event_embed_later`` (the row
  written at once, the embedding with the next search), each followed by a search for it: the
  search's time right after a write, and a check that it finds the event;
- RSS after the queries and the peak;
- with ``--check-exact``: each question's hits against those of the full scan of every event
  (the vector signal's shortlist off, graphmem/retrieve/event_shortlist.py): same hits in the
  same order on N of the questions, and the largest score difference.

Results go to benchmarks/results/local/events_scale.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.scale import FIRST, ORGS, RESULTS, TOPICS, pct, rss_mb

PLACES = ["Paris", "the lake", "the museum", "Lisbon", "the gym", "the office", "Kyoto", "the beach", "Berlin", "the park"]
TURNS = [
    "I went to {place} with {o} last {day} and we talked about {topic}.",
    "Have you finished the {topic} report? {o} keeps asking me about it.",
    "My sister painted a picture of {place}; she wants to show it at {o}.",
    "We should plan the {topic} workshop before {month}.",
    "I started learning about {topic} because of a podcast from {o}.",
    "Remember when we got lost near {place} in {month}?",
    "The {topic} meeting moved to {day}, can you tell {o}?",
    "I adopted a dog and named him after a street in {place}.",
    "{o} offered me a job in {topic}; I am thinking about it.",
    "Thanks for the book about {topic}, I read it on the way to {place}.",
]
QUESTIONS = [
    "What did {p} say about {topic}?",
    "When did {p} go to {place}?",
    "Who offered {p} a job?",
    "What did {p}'s sister paint?",
    "Where did {p} get lost?",
    "Which book did {p} read about {topic}?",
    "When is the {topic} meeting?",
    "What is the name of {p}'s dog?",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "March", "May", "July", "September", "November"]
RARE = ["aardvark", "quasar", "zeppelin", "marmalade", "obsidian", "tuba", "glacier", "walrus", "origami",
        "saxophone", "volcano", "cactus", "lantern", "nebula", "pretzel", "harpoon", "igloo", "kazoo", "mosaic"]
USER = "alice"
SESSION_TURNS = 30


def turns(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` conversation turns (speaker, text, session); the first k of turns(n) equal turns(k)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        speaker = FIRST[int(rng.integers(len(FIRST)))]
        text = TURNS[int(rng.integers(len(TURNS)))].format(
            place=PLACES[int(rng.integers(len(PLACES)))], o=ORGS[int(rng.integers(len(ORGS)))],
            topic=TOPICS[int(rng.integers(len(TOPICS)))], day=DAYS[int(rng.integers(len(DAYS)))],
            month=MONTHS[int(rng.integers(len(MONTHS)))],
        )
        out.append({"speaker": speaker, "text": text, "session": f"s{i // SESSION_TURNS}"})
    return out


def questions(count: int, seed: int = 1) -> list[str]:
    """``count`` questions about the generated conversation."""
    rng = np.random.default_rng(seed)
    return [
        QUESTIONS[int(rng.integers(len(QUESTIONS)))].format(
            p=FIRST[int(rng.integers(len(FIRST)))], topic=TOPICS[int(rng.integers(len(TOPICS)))],
            place=PLACES[int(rng.integers(len(PLACES)))],
        )
        for _ in range(count)
    ]


SUFFIX = {"minilm": "", "minilm-int8": "-int8"}  # --embedder -> file and cache name suffix


def make_embedder(name: str) -> Any:
    """The bundled MiniLM (``minilm``) or the same model in int8 (``minilm-int8``)."""
    from graphmem.embed import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(quantize=name == "minilm-int8")


def pool_vectors(texts: list[str], embedder: Any) -> np.ndarray:
    """MiniLM vectors of the pool texts, cached under benchmarks/results/local/."""
    folder = RESULTS / "local"
    folder.mkdir(parents=True, exist_ok=True)
    prefix = "events_pool" + ("-int8" if embedder.name.endswith("-int8") else "")
    cache = folder / f"{prefix}_{len(texts)}.npy"
    if cache.exists():
        return np.load(cache)
    for bigger in sorted(folder.glob(f"{prefix}_*.npy"), key=lambda f: int(f.stem.rsplit("_", 1)[1])):
        if int(bigger.stem.rsplit("_", 1)[1]) >= len(texts):  # turns(n) is a prefix of turns(n + k)
            return np.load(bigger, mmap_mode="r")[: len(texts)].astype(np.float32)
    t = time.perf_counter()
    unique = list(dict.fromkeys(texts))  # turns repeat: each distinct text is embedded once
    where = {text: i for i, text in enumerate(unique)}
    done = np.vstack([embedder.embed(unique[s : s + 256]) for s in range(0, len(unique), 256)]).astype(np.float32)
    vectors = done[[where[text] for text in texts]]
    print(f"  embedded the pool of {len(texts)} texts ({len(unique)} distinct) in {time.perf_counter() - t:.0f} s",
          flush=True)
    np.save(cache, vectors)
    return vectors


def _event_table(columns: list[tuple[str, str]], lo: int, hi: int, specs: list[dict[str, Any]], m: int,
                 vecs: np.ndarray) -> Any:
    """Turns ``lo`` to ``hi`` as an Arrow table in the Event table's column order (for COPY)."""
    import uuid

    import pyarrow as pa

    from graphmem.store.copy import arrow_type
    from graphmem.store.text import search_text

    start_time = datetime(2025, 1, 1)
    texts, sessions, roles = [], [], []
    for i in range(lo, hi):
        s = specs[i] if i < m else specs[i % m]
        texts.append(s["text"] if i < m else f"{s['text']} (turn {i})")
        sessions.append(specs[i]["session"])
        roles.append(s["speaker"])
    n = hi - lo
    values: dict[str, Any] = {
        "id": [str(uuid.uuid4()) for _ in range(n)], "user_id": [USER] * n, "session_id": sessions,
        "kind": ["message"] * n, "role": roles, "direction": ["inbound"] * n, "is_owner": [False] * n,
        "content": texts, "search_text": [search_text(t) for t in texts], "entities": [[r] for r in roles],
        "created_at": [start_time + timedelta(minutes=i) for i in range(lo, hi)], "metadata": ["{}"] * n,
    }
    arrays = {}
    for name, kuzu_type in columns:
        if name == "embedding":
            arrays[name] = pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), vecs.shape[1])
        elif name in values:
            arrays[name] = pa.array(values[name], type=arrow_type(kuzu_type))
        else:
            arrays[name] = pa.nulls(n, type=arrow_type(kuzu_type))
    return pa.table(arrays)


def _build_child(path: Path, n: int, pool: int, batch: int, embedder_name: str = "minilm") -> None:
    """Build the file with Kùzu's COPY (runs in a spawned child, so its memory is not counted in
    the parent): Event nodes ``batch`` at a time, the speakers as Entity nodes, MENTIONS edges."""
    import pyarrow as pa

    from graphmem.store import KuzuGraphStore
    from graphmem.store.copy import copy_into

    embedder = make_embedder(embedder_name)
    specs = turns(n)
    m = min(n, pool)
    base = pool_vectors([s["text"] for s in specs[:m]], embedder)
    rng = np.random.default_rng(7)
    store = KuzuGraphStore(path, dim=embedder.dim, embedder_name=embedder.name)
    t = time.perf_counter()
    try:
        columns = [(str(r["name"]), str(r["type"])) for r in store.read("CALL table_info('Event') RETURN name, type")]
        with store.exclusive():
            conn = store._conn_main
            for name in FIRST:
                conn.execute("MERGE (n:Entity {name: $n}) ON CREATE SET n.kind = 'thing', n.created_at = $ts",
                             {"n": name, "ts": datetime(2025, 1, 1)})
        for lo in range(0, n, batch):
            hi = min(n, lo + batch)
            vecs = base[np.arange(lo, hi) % m].copy()
            if hi > m:
                far = np.arange(lo, hi) >= m
                vecs[far] += rng.normal(0, 0.02, (int(far.sum()), vecs.shape[1])).astype(np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            table = _event_table(columns, lo, hi, specs, m, vecs)
            edges = pa.table({"from": table.column("id"), "to": table.column("role")})
            with store.exclusive():
                copy_into(store._conn_main, "Event", table)
                copy_into(store._conn_main, "MENTIONS", edges, "(from='Event', to='Entity')")
            if (hi // batch) % 5 == 0 or hi == n:
                print(f"  wrote {hi}/{n} events ({time.perf_counter() - t:.0f} s)", flush=True)
    finally:
        store.close()


def int8_recall(mem: Any, embedder: Any, qs: list[str], n: int, limit: int = 200_000,
                tolerance: float = 1e-6) -> float | None:
    """Recall@10 of the event mirror's scan (int8 codes from 50,000 events on) against the exact
    float32 cosines of the file's own embeddings (read back from Kùzu in chunks), over the
    questions (a row whose exact cosine ties the 10th best counts as found: the corpus repeats
    each text ~6 times with the same vector, so row identities among ties are arbitrary); None when the mirror is float32 or holds more than ``limit`` events (the float32
    copy this needs is what the int8 mirror avoids)."""
    from graphmem.store.catalog_load import _embeddings
    from graphmem.store.vectors import scan_cosines, unit_rows

    store = mem.store
    vectors = store.event_catalog.vectors
    if not vectors.quantised or len(vectors) > limit:
        return None
    exact_rows = np.zeros((len(vectors), vectors.dim), dtype=np.float32)
    with store.snapshot():
        for chunk in store.scan_chunks("Event", "e", "e.id AS id, e.embedding AS embedding"):
            rows = np.asarray([vectors.rows.get(i, -1) for i in chunk.column("id").to_pylist()], dtype=np.int64)
            found = rows >= 0
            exact_rows[rows[found]] = unit_rows(_embeddings(chunk, vectors.dim))[found]
    units = unit_rows(np.asarray(embedder.embed(qs), dtype=np.float32))
    exact, approx = exact_rows @ units.T, scan_cosines(vectors, units)
    del exact_rows
    hits = []
    for j in range(len(qs)):  # a row tied with the exact 10th best counts (the corpus repeats its texts)
        tenth = float(np.sort(exact[:, j])[-10])
        hits.append(float(np.mean(exact[np.argsort(-approx[:, j])[:10], j] >= tenth - tolerance)))
    return round(float(np.mean(hits)), 4)


def same_as_full_scan(mem: Any, qs: list[str]) -> dict[str, Any]:
    """The hits of each question as searched (a shortlist of the vector signal from
    ``search_shortlist_min_events`` events on, graphmem/retrieve/event_shortlist.py) against
    the full scan of every event (the shortlist off): questions with the same hits in the same
    order, and the largest score difference."""
    settings = mem.settings
    got = [[(h.id, h.score) for h in mem.search(q, over="events", k=10)] for q in qs]
    mem.settings = settings.model_copy(update={"search_shortlist_min_events": 0})
    try:
        want = [[(h.id, h.score) for h in mem.search(q, over="events", k=10)] for q in qs]
    finally:
        mem.settings = settings
    same = [[i for i, _ in a] == [i for i, _ in b] for a, b in zip(got, want)]
    diff = max((abs(x - y) for a, b in zip(got, want) for (_, x), (_, y) in zip(a, b)), default=0.0)
    return {"hits_equal_full_scan": f"{sum(same)}/{len(qs)}", "max_score_diff_full_scan": float(f"{diff:.3g}"),
            "different_questions": [q for q, ok in zip(qs, same) if not ok][:5]}


def measure(n: int, n_queries: int, pool: int, batch: int, workdir: Path, check_exact: bool = False,
            embedder_name: str = "minilm") -> dict[str, Any]:
    """Build a file of ``n`` events and measure search and record_event on it (``check_exact``:
    also compare the hits to the full scan's, :func:`same_as_full_scan`)."""
    from graphmem import Memory
    from graphmem.retrieve.event_rank import wait_for_sums

    path = workdir / f"events_{n}_{pool}{SUFFIX[embedder_name]}.kuzu"
    t = time.perf_counter()
    if not path.exists():  # a kept file (--workdir) is reused
        proc = multiprocessing.get_context("spawn").Process(target=_build_child,
                                                            args=(path, n, pool, batch, embedder_name))
        proc.start()
        proc.join()
        if proc.exitcode != 0:
            raise RuntimeError(f"building {path} failed (exit code {proc.exitcode})")
    build_s = time.perf_counter() - t
    file_mb = sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6
    print(f"[{n}] built in {build_s:.1f} s ({file_mb:.0f} MB); opening", flush=True)
    embedder = make_embedder(embedder_name)
    embedder.embed(["warm up the model"])
    rss_model = rss_mb()
    t, cpu = time.perf_counter(), time.process_time()
    mem = Memory(path, user=USER, embedder=embedder)
    open_s, open_cpu = time.perf_counter() - t, time.process_time() - cpu
    rss_open = rss_mb()
    try:
        qs = questions(n_queries + 10)
        recall = int8_recall(mem, embedder, qs, n)
        quantised = bool(mem.store.event_catalog.vectors.quantised)
        for q in qs[:10]:
            mem.search(q, over="events", k=10)
        # the embedding feedback's kept sums grow on a background thread after the first search
        # (large int8 mirrors): measure the steady state
        t = time.perf_counter()
        sums_ready = wait_for_sums(mem.store, USER, timeout=600)
        sums_s = time.perf_counter() - t
        wall, cpu_ms, bare, bare_cpu = [], [], [], []
        for q in qs[10:]:
            t, c = time.perf_counter(), time.process_time()
            mem.search(q, over="events", k=10)
            wall.append((time.perf_counter() - t) * 1e3)
            cpu_ms.append((time.process_time() - c) * 1e3)
            t, c = time.perf_counter(), time.process_time()
            embedder.embed([q])
            bare.append((time.perf_counter() - t) * 1e3)
            bare_cpu.append((time.process_time() - c) * 1e3)
        rss_queries = rss_mb()
        exact = same_as_full_scan(mem, qs[10:]) if check_exact else {}
        writes: dict[str, dict[str, list[float]]] = {}
        found = {"now": 0, "later": 0}
        rng = np.random.default_rng()
        nonce = "".join(chr(97 + int(x)) for x in rng.integers(0, 26, 6))
        for mode in ("now", "later"):
            mem.settings = mem.settings.model_copy(update={"event_embed_later": mode == "later"})
            w = writes[mode] = {"record": [], "record_cpu": [], "search": [], "search_cpu": []}
            for i in range(30):
                # drawn afresh each run: on a kept file, earlier runs' events with the same three
                # words (and the neighbours they lift each other with) would crowd the new one out
                words = " ".join(str(w) for w in rng.choice(RARE, 3, replace=False))
                text = f"Zq{nonce}{mode[0]}{i} {words}"  # a word no other event holds (the file may be reused)
                t, c = time.perf_counter(), time.process_time()
                event = mem.record_event("message", text, role="Dana", session_id=f"bench{i % 3}")
                w["record"].append((time.perf_counter() - t) * 1e3)
                w["record_cpu"].append((time.process_time() - c) * 1e3)
                t, c = time.perf_counter(), time.process_time()
                hits = mem.search(text, over="events", k=5)
                w["search"].append((time.perf_counter() - t) * 1e3)
                w["search_cpu"].append((time.process_time() - c) * 1e3)
                found[mode] += any(h.id == event.id for h in hits)
    finally:
        mem.close()
    p50, e50 = pct(wall, 50), pct(bare, 50)
    out = {
        "events": n, "embedded_by_model": min(n, pool), "build_s": round(build_s, 1), "file_mb": round(file_mb, 1),
        "open_s": round(open_s, 2), "open_cpu_s": round(open_cpu, 2),
        "search_p50_ms": round(p50, 2), "search_p95_ms": round(pct(wall, 95), 2),
        "search_cpu_p50_ms": round(pct(cpu_ms, 50), 2), "search_cpu_p95_ms": round(pct(cpu_ms, 95), 2),
        "feedback_sums_ready": sums_ready, "feedback_sums_wait_s": round(sums_s, 2),
        "embed_query_p50_ms": round(e50, 2), "embed_query_cpu_p50_ms": round(pct(bare_cpu, 50), 2),
        "search_over_embed": round(p50 / e50, 2) if e50 else None,
        "record_event_p50_ms": round(pct(writes["now"]["record"], 50), 2),
        "record_event_cpu_p50_ms": round(pct(writes["now"]["record_cpu"], 50), 2),
        "search_after_write_p50_ms": round(pct(writes["now"]["search"], 50), 2),
        "search_after_write_cpu_p50_ms": round(pct(writes["now"]["search_cpu"], 50), 2),
        "record_event_found_by_next_search": f"{found['now']}/30",
        "later_record_event_p50_ms": round(pct(writes["later"]["record"], 50), 2),
        "later_record_event_p95_ms": round(pct(writes["later"]["record"], 95), 2),
        "later_record_event_cpu_p50_ms": round(pct(writes["later"]["record_cpu"], 50), 2),
        "later_search_after_write_p50_ms": round(pct(writes["later"]["search"], 50), 2),
        "later_search_after_write_cpu_p50_ms": round(pct(writes["later"]["search_cpu"], 50), 2),
        "later_found_by_next_search": f"{found['later']}/30",
        "event_mirror_int8": quantised, "int8_recall_at_10": recall,
        "vector_shortlist": quantised and 0 < mem.settings.search_shortlist_min_events <= n,
        "rss_with_model_mb": round(rss_model, 1), "rss_after_open_mb": round(rss_open, 1),
        "rss_after_queries_mb": round(rss_queries, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "load_average": Path("/proc/loadavg").read_text().split()[0],
        **exact,
    }
    print(json.dumps(out), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.events_scale", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[600, 100000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--pool", type=int, default=2000, help="turn texts embedded by MiniLM; the rest reuse them")
    parser.add_argument("--batch", type=int, default=50000, help="events per COPY while building")
    parser.add_argument("--workdir", type=Path, default=None, help="where the files are built (default: a temp dir)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="build the files in this folder and keep them (a file already there is reused)")
    parser.add_argument("--build-only", action="store_true", help="only build the files (with --keep)")
    parser.add_argument("--embedder", choices=sorted(SUFFIX), default="minilm",
                        help="minilm-int8: the same model with int8 linear layers (its own files)")
    parser.add_argument("--check-exact", action="store_true",
                        help="also compare each question's hits to those of the full scan of every event")
    args = parser.parse_args(argv)
    results = []
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        for n in args.events:
            if args.build_only:
                path = args.keep / f"events_{n}_{args.pool}{SUFFIX[args.embedder]}.kuzu"
                if not path.exists():
                    _build_child(path, n, args.pool, args.batch, args.embedder)
            else:
                results.append(measure(n, args.queries, args.pool, args.batch, args.keep, args.check_exact,
                                       args.embedder))
        if args.build_only:
            return 0
    else:
        with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
            for n in args.events:
                results.append(measure(n, args.queries, args.pool, args.batch, Path(tmp), args.check_exact,
                                       args.embedder))
    folder = RESULTS / "local"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "events_scale.json").write_text(json.dumps(results, indent=2))
    print(f"-> {folder / 'events_scale.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
