"""Latency and scale benchmark for ``Memory.context()`` (issue 4).

    python -m benchmarks.scale [--sizes 1000 10000 100000] [--queries 200] [--embedder minilm|minilm-int8|hash] \
        [--corpus-embed-limit 10000] [--no-baseline] [--ann-check] [--save | --json-out PATH]

For each size it generates learnings deterministically (templates over tools, entities, topics,
five users, a few canary/candidate/disabled/archived ones), embeds them with the bundled MiniLM
(cached in benchmarks/results/emb_<embedder>_<n>_<seed>.npy, so reruns skip the minutes of
embedding), bulk-loads a fresh Kùzu file, and measures:

- open: opening the file and rebuilding the catalog (matrix + columns), wall and CPU time, the
  resident memory after it and the process's peak so far (``peak_rss_at_open_mb``: the open's
  transient, before the model is loaded);
- context(): p50/p95/mean over ``--queries`` queries (query embedding included, Application
  recorded), throughput, and the p50 of each stage;
- embed: the p50 of embedding the same query texts alone, and context p50 / embed p50;
- ingest: learnings/s through add_learning (one at a time) and add_learnings (batches of 100);
- record_event p50 (one event, MiniLM embedding included);
- RSS: the file is built in a child process, so the measuring process's resident memory
  (current after open and peak after the context() calls) is what serving the file costs;
- file size per 100 learnings of the freshly built file;
- the vector mirror: its storage (float32 or int8, ``Settings.vector_storage``), its bytes,
  recall@10 of its scan against an exact float32 scan of the same vectors (over the whole store
  and over one user's eligible rows), both scans' p50 and their ratio, all in the same process;
- baseline: context() again with the mirror forced to float32 (an exact scan), same queries,
  same process; the ratios to it are the figures to compare across runs on a busy machine;
- ``--ann-check``: a usearch HNSW index over the same vectors (build time, query p50, recall@10),
  for sizes up to 20,000.

Results go to benchmarks/results/local/scale.json (ignored); ``--save`` writes the tracked
benchmarks/results/scale.json (and its plot) instead.

The machine may be shared: treat figures as indicative and rerun on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import tempfile
import time
from datetime import UTC
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"

TOOLS = [
    "send_email", "search_web", "create_ticket", "schedule_meeting", "write_code", "query_crm",
    "post_slack", "book_travel", "generate_report", "update_spreadsheet", "translate_text",
    "summarize_doc", "file_expense", "deploy_service", "run_tests", "review_pr", "draft_contract",
    "order_supplies", "call_api", "publish_blog",
]
FIRST = [
    "Dana", "Ravi", "Mei", "Omar", "Lena", "Tomas", "Aisha", "Kenji", "Sofia", "Lukas", "Priya",
    "Mateo", "Hana", "Jonas", "Amara", "Felix", "Nadia", "Oscar", "Yuki", "Elena",
]
ORGS = [
    "Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark", "Wayne", "Wonka", "Tyrell",
    "Cyberdyne", "Soylent", "Vandelay", "Pied Piper", "Aperture", "Massive Dynamic", "Oscorp",
    "Gringotts", "Monarch", "Nakatomi", "Dunder Mifflin",
]
TOPICS = [
    "email style", "tone", "formatting", "pricing", "security", "deadlines", "travel policy",
    "code review", "testing", "deployment", "budget", "legal", "onboarding", "customer support",
    "data privacy", "meeting etiquette", "reporting", "accessibility", "localization", "billing",
    "performance", "documentation", "hiring", "vendor management", "incident response",
    "branding", "social media", "analytics", "compliance", "scheduling",
]
RULES = [
    "{p} at {o} prefers {fmt} when using {tool}",
    "Never {bad} for {o}; {p} asked to {good} instead",
    "Always {good} before you {verb} anything about {topic}",
    "When {p} mentions {topic}, {good}",
    "Keep {topic} messages to {o} under {n} {unit}",
    "For {topic} work, {good} and avoid {badn}",
    "{o} requires {good} for every {topic} request",
    "Check {topic} guidelines with {p} before calling {tool}",
    "Use {fmt} for {topic} updates sent to {o}",
    "Do not {bad} when {p} is on the thread",
]
FMT = ["bullet points", "a short summary first", "plain text", "a table", "numbered steps", "bold headings"]
GOOD = [
    "confirm the time zone", "cc the account manager", "attach the latest invoice",
    "link the design doc", "state the deadline explicitly", "ask for written approval",
    "double-check the figures", "use the shared template", "mention the ticket number",
    "summarise the decision",
]
BAD = [
    "send attachments over 10 MB", "use exclamation marks", "promise delivery dates",
    "share internal pricing", "schedule before 9am", "reply-all", "paste raw logs",
    "use first names only", "mention competitors", "skip the greeting",
]
BADN = ["jargon", "long paragraphs", "passive voice", "vague estimates", "emoji", "acronyms"]
VERB = ["send", "publish", "deploy", "book", "sign", "announce"]
UNIT = ["paragraphs", "sentences", "bullets", "lines"]
QUERIES = [
    "Email {p} at {o} about the {topic} changes",
    "Draft a note to {o} regarding {topic}",
    "What should I know before I {verb} the {topic} update?",
    "Prepare the {topic} summary for {p}",
    "{p} asked for help with {topic}",
    "Schedule time with {o} to review {topic}",
    "Reply to {p} about the invoice",
    "Write the weekly report",
]
USERS = ["alice", "bob", "carol", "dave", "erin"]


def count_related(pairs: dict[str, dict[tuple[str, str, str, str], int]], items: Any) -> None:
    """Add the learnings' topic/entity co-occurrences to ``pairs`` (per owner: label pair →
    count), the weights of the RELATED edges a bulk load writes."""
    for l in items:
        names = [("Topic", x) for x in l.topics] + [("Entity", x) for x in l.entities]
        mine = pairs.setdefault(l.user_id, {})
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                key = (names[a][0], names[a][1], names[b][0], names[b][1])
                mine[key] = mine.get(key, 0) + 1


def entities() -> list[str]:
    """People and organisations (400 people × ORGS)."""
    people = [f"{f} {chr(65 + i % 26)}." if i >= len(FIRST) else f for i, f in enumerate(FIRST * 20)]
    return list(dict.fromkeys(people)) + ORGS


def generate(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` learning specs; the first k of generate(n) equal generate(k) (same seed)."""
    rng = np.random.default_rng(seed)
    ents = entities()
    people = [e for e in ents if e not in ORGS]
    out: list[dict[str, Any]] = []
    for i in range(n):
        tool = TOOLS[int(rng.integers(len(TOOLS)))]
        p = people[int(rng.zipf(1.6) - 1) % len(people)]
        o = ORGS[int(rng.integers(len(ORGS)))]
        topic = TOPICS[int(rng.zipf(1.4) - 1) % len(TOPICS)]
        text = RULES[int(rng.integers(len(RULES)))].format(
            p=p, o=o, tool=tool, topic=topic, fmt=FMT[int(rng.integers(len(FMT)))],
            good=GOOD[int(rng.integers(len(GOOD)))], bad=BAD[int(rng.integers(len(BAD)))],
            badn=BADN[int(rng.integers(len(BADN)))], verb=VERB[int(rng.integers(len(VERB)))],
            n=int(rng.integers(2, 9)), unit=UNIT[int(rng.integers(len(UNIT)))],
        )
        r = rng.random()
        status = "active" if r < 0.85 else "canary" if r < 0.9 else "candidate" if r < 0.95 else "disabled"
        out.append({
            "content": f"{text} (#{i})",
            "user": USERS[int(rng.integers(len(USERS)))],
            "shared": bool(rng.random() < 0.02),
            "tool": tool if rng.random() < 0.8 else None,
            "entities": sorted({p, o}) if rng.random() < 0.7 else [p],
            "topics": [topic],
            "status": status,
            "tier": "archive" if rng.random() < 0.03 else "active",
            "helpful": int(rng.poisson(2)),
            "harmful": int(rng.poisson(1)),
            "confidence": float(np.round(rng.uniform(0.3, 0.95), 2)),
        })
    return out


def queries(count: int, seed: int = 1) -> list[dict[str, Any]]:
    """Query texts with a tool half the time and an explicit entity a third of the time."""
    rng = np.random.default_rng(seed)
    people = [e for e in entities() if e not in ORGS]
    out = []
    for _ in range(count):
        p = people[int(rng.integers(60))]
        o = ORGS[int(rng.integers(len(ORGS)))]
        topic = TOPICS[int(rng.integers(len(TOPICS)))]
        text = QUERIES[int(rng.integers(len(QUERIES)))].format(p=p, o=o, topic=topic, verb=VERB[int(rng.integers(len(VERB)))])
        out.append({
            "query": text,
            "tool": TOOLS[int(rng.integers(len(TOOLS)))] if rng.random() < 0.5 else None,
            "entities": [p] if rng.random() < 0.33 else [],
        })
    return out


def make_embedder(name: str) -> Any:
    """The embedder under test."""
    from graphmem.embed import HashEmbedder, SentenceTransformerEmbedder

    return HashEmbedder() if name == "hash" else SentenceTransformerEmbedder(batch_size=128,
                                                                             quantize=name == "minilm-int8")


def embeddings(specs: list[dict[str, Any]], embedder: Any, tag: str, seed: int, limit: int = 0) -> np.ndarray:
    """Embeddings of the specs' texts, cached on disk (a larger cached run's prefix is reused).

    With ``limit`` > 0 only the first ``limit`` texts are embedded by the model; row i ≥ limit
    reuses row i % limit plus small deterministic noise (re-normalised). Latency does not depend
    on the vectors' values, and embedding 100k texts with MiniLM on a busy 2-core machine takes
    close to an hour; pass --corpus-embed-limit 0 to embed everything.
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    n = len(specs)
    m = min(n, limit) if limit > 0 else n
    base = None
    for path in sorted(RESULTS.glob(f"emb_{tag}_*_{seed}.npy")):
        if int(path.stem.split("_")[2]) >= m:
            base = np.load(path, mmap_mode="r")[:m].copy()
            break
    if base is None:
        t = time.perf_counter()
        base = np.zeros((m, embedder.dim), dtype=np.float32)
        step = 1024
        for start in range(0, m, step):
            base[start : start + step] = embedder.embed([s["content"] for s in specs[start : min(m, start + step)]])
            print(f"  embedded {min(m, start + step)}/{m} ({time.perf_counter() - t:.0f} s)", flush=True)
        np.save(RESULTS / f"emb_{tag}_{m}_{seed}.npy", base)
    if m == n:
        return base
    rng = np.random.default_rng(seed + 1)
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    out[:m] = base
    for start in range(m, n, m):
        stop = min(n, start + m)
        block = base[: stop - start] + rng.normal(0, 0.02, (stop - start, base.shape[1])).astype(np.float32)
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


BUILD_CHUNK = 100_000  # learnings per bulk COPY when building (bounds the models held at once)


def build(path: Path, specs: list[dict[str, Any]], vectors: np.ndarray, embedder: Any) -> float:
    """A fresh database file holding the specs (bulk COPY + RELATED co-occurrence edges), written
    ``BUILD_CHUNK`` learnings at a time (the catalog is loaded once, at the end)."""
    from graphmem.models import Learning
    from graphmem.store import KuzuGraphStore

    t = time.perf_counter()
    base = time.time() - 200 * 86400
    all_ids: list[str] = []
    pairs: dict[str, dict[tuple[str, str, str, str], int]] = {}  # co-occurrence per owner
    store = KuzuGraphStore(path, dim=embedder.dim, embedder_name=embedder.name, vector_storage="int8")
    reload_catalog = store.load_learning_catalog
    store.load_learning_catalog = lambda: None  # type: ignore[method-assign]  # once, at the end
    try:
        for start in range(0, len(specs), BUILD_CHUNK):
            learnings = []
            for i in range(start, min(len(specs), start + BUILD_CHUNK)):
                s = specs[i]
                when = _utc(base + i * (180 * 86400 / max(1, len(specs))))
                learnings.append(Learning(
                    user_id=s["user"], shared=s["shared"], content=s["content"], tool=s["tool"],
                    entities=s["entities"], topics=s["topics"], status=s["status"], tier=s["tier"],
                    canary_allocation=0.2 if s["status"] == "canary" else 1.0, helpful=s["helpful"],
                    harmful=s["harmful"], confidence=s["confidence"], created_at=when, updated_at=when,
                ))
            store.bulk_insert_learnings(learnings, vectors[start : start + len(learnings)])
            all_ids.extend(l.id for l in learnings)
            count_related(pairs, learnings)
            del learnings
            print(f"  built {len(all_ids)}/{len(specs)} ({time.perf_counter() - t:.0f} s)", flush=True)
        for user, counted in pairs.items():
            store.bulk_insert_related([(*k, w) for k, w in counted.items()], user_id=user)
        store.load_learning_catalog = reload_catalog  # type: ignore[method-assign]
    finally:
        store.close()
    (path.parent / (path.name + ".ids.json")).write_text(json.dumps(all_ids))
    return time.perf_counter() - t


def _build_child(path: Path, size: int, seed: int, tag: str, limit: int) -> None:
    """Build the file in a child process (so its memory does not count in the parent's RSS)."""
    embedder = make_embedder(tag)
    specs = generate(size, seed)
    build(path, specs, embeddings(specs, embedder, tag, seed, limit), embedder)


def build_apart(path: Path, size: int, seed: int, tag: str, limit: int) -> float:
    """:func:`build` in a spawned child process; returns the seconds it took."""
    import multiprocessing

    t = time.perf_counter()
    proc = multiprocessing.get_context("spawn").Process(target=_build_child, args=(path, size, seed, tag, limit))
    proc.start()
    proc.join()
    if proc.exitcode != 0:
        raise RuntimeError(f"building {path} failed in the child process (exit code {proc.exitcode})")
    return time.perf_counter() - t


def rss_mb() -> float:
    """The process's current resident memory (VmRSS), in MB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _utc(ts: float) -> Any:
    from datetime import datetime

    return datetime.fromtimestamp(ts, tz=UTC)


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) of values."""
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


GAP_S = 0.02  # idle time before each isolated context() call
ANN_CHECK_MAX = 20_000  # --ann-check builds HNSW only up to this size (100k took 11 min on 2 busy cores)


def measure(
    size: int, n_queries: int, embedder: Any, tag: str, seed: int, workdir: Path, limit: int = 0,
    *, with_baseline: bool = True, ann: bool = False, buffer_pool_mb: int | None = None, keep: bool = False,
    ann_min_rows: int | None = None, ann_wait_s: float = 3600.0,
) -> dict[str, Any]:
    """Build a file of ``size`` learnings and measure it."""
    from graphmem import Memory, Settings

    path = workdir / f"scale_{size}_{tag}_{limit}_{seed}.kuzu"
    ids_file = path.parent / (path.name + ".ids.json")
    if keep and path.exists() and ids_file.exists():
        print(f"[{size}] reusing {path}", flush=True)
        build_s = float("nan")
    else:
        print(f"[{size}] generating, embedding and building in a child process", flush=True)
        for p in (path, Path(str(path) + ".wal"), Path(str(path) + ".ann"), Path(str(path) + ".ann.ids"), ids_file):
            if p.exists():
                p.unlink()
        build_s = build_apart(path, size, seed, tag, limit)
    file_bytes = sum(p.stat().st_size for p in (path, Path(str(path) + ".wal")) if p.exists())
    print(f"[{size}] built in {build_s:.1f} s; opening", flush=True)
    overrides: dict[str, Any] = {}
    if buffer_pool_mb is not None:
        overrides["kuzu_buffer_pool_mb"] = buffer_pool_mb
    if ann_min_rows is not None:
        overrides["vector_ann_min_rows"] = ann_min_rows
    settings = Settings(**overrides)
    t, cpu = time.perf_counter(), time.process_time()
    mem = Memory(path, user="alice", embedder=embedder, settings=settings)
    open_s, open_cpu_s = time.perf_counter() - t, time.process_time() - cpu
    rss_open = rss_mb()
    peak_open = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # this process's peak so far
    vectors = mem.store.learning_catalog.vectors
    ann_info: dict[str, Any] = {"min_rows": settings.vector_ann_min_rows, "loaded_at_open": vectors.ann_ready,
                                "building_at_open": vectors._builder is not None}
    if vectors._builder is not None:
        print(f"[{size}] opened in {open_s:.1f} s; waiting for the HNSW build (background thread)", flush=True)
        t, cpu = time.perf_counter(), time.process_time()
        vectors.wait_ann(ann_wait_s)
        ann_info.update(build_wait_s=round(time.perf_counter() - t, 1), build_cpu_s=round(time.process_time() - cpu, 1))
    ann_info.update(ready=vectors.ann_ready, error=vectors.ann_error,
                    mb=round(vectors.ann.nbytes / 1e6, 1) if vectors.ann is not None else 0.0,
                    rss_with_index_mb=round(rss_mb(), 1))
    vector_info: dict[str, Any] = {}
    baseline: dict[str, Any] = {}
    try:
        qs = queries(n_queries + 20)
        for q in qs[:20]:  # warm-up: model, Kùzu caches, name index
            mem.context(q["query"], tool=q["tool"], entities=q["entities"])
        totals: list[float] = []
        cpu_ms: list[float] = []  # CPU time of the whole process per call (the writer thread included)
        stages: dict[str, list[float]] = {}
        shown = 0
        t_all = time.perf_counter()
        for q in qs[20:]:
            t, cpu = time.perf_counter(), time.process_time()
            ctx = mem.context(q["query"], tool=q["tool"], entities=q["entities"])
            totals.append((time.perf_counter() - t) * 1e3)
            cpu_ms.append((time.process_time() - cpu) * 1e3)
            shown += len(ctx.learnings)
            for k, v in ctx.timings_ms.items():
                stages.setdefault(k, []).append(v)
        wall = time.perf_counter() - t_all
        isolated: list[float] = []  # the same calls with idle time between them, as between tool calls
        for q in qs[20:]:
            time.sleep(GAP_S)
            t = time.perf_counter()
            mem.context(q["query"], tool=q["tool"], entities=q["entities"])
            isolated.append((time.perf_counter() - t) * 1e3)
        embed_alone = []
        query_vectors = []
        for q in qs[20:]:
            t = time.perf_counter()
            query_vectors.append(embedder.embed([q["query"]])[0])
            embed_alone.append((time.perf_counter() - t) * 1e3)
        rss_after = rss_mb()
        peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        events_ms = []
        for i in range(30):
            t = time.perf_counter()
            mem.record_event("message", f"Benchmark event {i}: {qs[i]['query']}", role="user")
            events_ms.append((time.perf_counter() - t) * 1e3)
        vector_info = vector_check(mem, path, size, seed, tag, embedder, limit, np.asarray(query_vectors), ann)
        if with_baseline:
            baseline = baseline_run(mem, qs[20:], vector_info)
        t = time.perf_counter()
        for i in range(50):
            mem.add_learning(f"Benchmark single learning {i} about {TOPICS[i % len(TOPICS)]}", tool=TOOLS[i % len(TOOLS)], entities=[FIRST[i % len(FIRST)]])
        single_rate = 50 / (time.perf_counter() - t)
        batch = [{"content": f"Benchmark batch learning {i} on {TOPICS[i % len(TOPICS)]}", "tool": TOOLS[i % len(TOOLS)], "topics": [TOPICS[i % len(TOPICS)]]} for i in range(200)]
        t = time.perf_counter()
        for start in range(0, len(batch), 100):
            mem.add_learnings(batch[start : start + 100])
        batch_rate = len(batch) / (time.perf_counter() - t)
    finally:
        mem.close()
    ctx_p50, emb_p50 = pct(totals, 50), pct(embed_alone, 50)
    extra: dict[str, Any] = {
        "rss_after_open_mb": round(rss_open, 1),
        "peak_rss_at_open_mb": round(peak_open, 1),
        "open_cpu_s": round(open_cpu_s, 3),
        "context_cpu_p50_ms": round(pct(cpu_ms, 50), 2),
        "kuzu_buffer_pool_mb": settings.kuzu_buffer_pool_mb,
        "rss_after_queries_mb": round(rss_after, 1),
        "record_event_p50_ms": round(pct(events_ms, 50), 2),
        "file_mb_per_100_learnings": round(file_bytes / 1e6 / max(1, size) * 100, 3),
        "file_mb": round(file_bytes / 1e6, 1),
        "vector": vector_info,
        "ann": ann_info,
        "baseline_float32": baseline,
    }
    if baseline:
        extra["context_p50_over_baseline"] = round(ctx_p50 / baseline["context_p50_ms"], 2)
        extra["context_p95_over_baseline"] = round(pct(totals, 95) / baseline["context_p95_ms"], 2)
    return {
        "learnings": size,
        "corpus_embedded_by_model": min(size, limit) if limit > 0 else size,
        "build_s": round(build_s, 2),
        "open_s": round(open_s, 3),
        "context_p50_ms": round(ctx_p50, 2),
        "context_p95_ms": round(pct(totals, 95), 2),
        "context_mean_ms": round(statistics.fmean(totals), 2),
        "context_per_s": round(len(totals) / wall, 1),
        "context_isolated_p50_ms": round(pct(isolated, 50), 2),
        "context_isolated_p95_ms": round(pct(isolated, 95), 2),
        "embed_query_p50_ms": round(emb_p50, 2),
        "context_over_embed": round(ctx_p50 / emb_p50, 2) if emb_p50 else None,
        "stage_p50_ms": {k: round(pct(v, 50), 2) for k, v in stages.items()},
        "avg_learnings_shown": round(shown / max(1, len(totals)), 2),
        "add_learning_per_s": round(single_rate, 1),
        "add_learnings_per_s": round(batch_rate, 1),
        "peak_rss_mb": round(peak_rss, 1),
        **extra,
    }


def vector_check(
    mem: Any, path: Path, size: int, seed: int, tag: str, embedder: Any, limit: int, qv: np.ndarray, ann: bool
) -> dict[str, Any]:
    """Recall@10 and scan time of the mirror against an exact float32 scan of the same vectors."""
    import torch

    from graphmem.store.vectors import unit_rows

    catalog = mem.store.learning_catalog
    exact = unit_rows(embeddings(generate(size, seed), embedder, tag, seed, limit))
    spec_of = {ident: i for i, ident in enumerate(json.loads((path.parent / (path.name + ".ids.json")).read_text()))}
    n = len(catalog)
    order = np.asarray([spec_of.get(i, -1) for i in catalog.ids[:n]])
    known = order >= 0
    ref = np.zeros((n, exact.shape[1]), dtype=np.float32)
    ref[known] = exact[order[known]]
    mine = np.asarray([u == "alice" for u in catalog.user[:n]]) | (catalog.col("shared") > 0)
    mine &= known
    from graphmem.retrieve.candidates import vector_candidates

    ann_below = mem.settings.vector_ann_exact_below
    rec_all, rec_user, t_mirror, t_exact, t_subset = [], [], [], [], []
    path_all, path_user, t_path_all, t_path_user = [], [], [], []
    ref_t = torch.from_numpy(ref)
    rows = np.flatnonzero(mine)
    for q in qv:
        qn = unit_rows(q)[0]
        t = time.perf_counter()
        want = torch.mv(ref_t, torch.from_numpy(qn)).numpy()
        t_exact.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        got = catalog.vectors.cosine(q)
        t_mirror.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        catalog.vectors.cosine(q, rows)
        t_subset.append((time.perf_counter() - t) * 1e3)
        want_k, got_k = np.where(known, want, -np.inf), np.where(known, got, -np.inf)
        rec_all.append(len(set(np.argsort(-want_k)[:10]) & set(np.argsort(-got_k)[:10])) / 10)
        want_u, got_u = np.where(mine, want, -np.inf), np.where(mine, got, -np.inf)
        rec_user.append(len(set(np.argsort(-want_u)[:10]) & set(np.argsort(-got_u)[:10])) / 10)
        # the path context() takes (HNSW when the mirror has it, else the scan), top 10
        for msk, rec, times, wanted in ((known, path_all, t_path_all, want_k), (mine, path_user, t_path_user, want_u)):
            t = time.perf_counter()
            rows_found, _ = vector_candidates(catalog, q, msk, 50, mem.settings.vector_scan_subset_below, ann_below)
            times.append((time.perf_counter() - t) * 1e3)
            rec.append(len(set(np.argsort(-wanted)[:10].tolist()) & set(rows_found[:10])) / 10)
    out: dict[str, Any] = {
        "storage": "int8" if catalog.vectors.quantised else "float32",
        "mirror_mb": round(catalog.vectors.nbytes / 1e6, 1),
        "float32_mb": round(n * exact.shape[1] * 4 / 1e6, 1),
        "recall_at_10": round(float(np.mean(rec_all)), 4),
        "recall_at_10_min": round(float(np.min(rec_all)), 2),
        "recall_at_10_one_user": round(float(np.mean(rec_user)), 4),
        "scan_p50_ms": round(pct(t_mirror, 50), 2),
        "scan_eligible_rows_p50_ms": round(pct(t_subset, 50), 2),
        "eligible_share": round(float(mine.mean()), 3),
        "exact_float32_scan_p50_ms": round(pct(t_exact, 50), 2),
        "scan_over_exact": round(pct(t_mirror, 50) / pct(t_exact, 50), 2),
        "search_path": "hnsw" if catalog.vectors.ann_ready else "scan",
        "path_recall_at_10": round(float(np.mean(path_all)), 4),
        "path_recall_at_10_min": round(float(np.min(path_all)), 2),
        "path_recall_at_10_one_user": round(float(np.mean(path_user)), 4),
        "path_p50_ms": round(pct(t_path_all, 50), 2),
        "path_one_user_p50_ms": round(pct(t_path_user, 50), 2),
    }
    if ann and n <= ANN_CHECK_MAX:
        out["hnsw"] = hnsw_check(ref[known], qv)
    del ref, ref_t, exact
    return out


def hnsw_check(vectors: np.ndarray, qv: np.ndarray) -> dict[str, Any]:
    """usearch HNSW (cosine, f16, M=16, ef_add=128) over the same vectors: build, query, recall."""
    from usearch.index import Index

    idx = Index(ndim=vectors.shape[1], metric="cos", dtype="f16", connectivity=16, expansion_add=128)
    t = time.perf_counter()
    idx.add(np.arange(len(vectors)), vectors, threads=1)
    build_s = time.perf_counter() - t
    out: dict[str, Any] = {"build_s": round(build_s, 1), "mb": round(idx.memory_usage / 1e6, 1)}
    for ef in (64, 128):
        idx.expansion_search = ef
        recalls, times = [], []
        for q in qv:
            want = set(np.argsort(-(vectors @ (q / np.linalg.norm(q))))[:10].tolist())
            t = time.perf_counter()
            got = idx.search(q, 10, threads=1).keys
            times.append((time.perf_counter() - t) * 1e3)
            recalls.append(len(want & set(int(k) for k in got)) / 10)
        out[f"ef{ef}"] = {"recall_at_10": round(float(np.mean(recalls)), 4), "query_p50_ms": round(pct(times, 50), 3)}
    return out


def baseline_run(mem: Any, qs: list[dict[str, Any]], vector_info: dict[str, Any]) -> dict[str, Any]:
    """context() over the same queries with the mirror forced to float32 (exact scan)."""
    settings = mem.settings
    mem.store.configure_vectors("float32", settings.vector_int8_min_rows)
    mirror_mb = round(mem.store.learning_catalog.vectors.nbytes / 1e6, 1)
    try:
        totals: list[float] = []
        cpu_ms: list[float] = []
        stages: list[float] = []
        for q in qs:
            t, cpu = time.perf_counter(), time.process_time()
            ctx = mem.context(q["query"], tool=q["tool"], entities=q["entities"])
            totals.append((time.perf_counter() - t) * 1e3)
            cpu_ms.append((time.process_time() - cpu) * 1e3)
            stages.append(ctx.timings_ms.get("vector", float("nan")))
    finally:
        mem.store.configure_vectors(settings.vector_storage, settings.vector_int8_min_rows)
    return {
        "context_p50_ms": round(pct(totals, 50), 2),
        "context_p95_ms": round(pct(totals, 95), 2),
        "context_cpu_p50_ms": round(pct(cpu_ms, 50), 2),
        "vector_stage_p50_ms": round(pct(stages, 50), 2),
        "mirror_mb": mirror_mb,
    }


def print_table(results: list[dict[str, Any]]) -> None:
    """The results as a rich table."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="graphmem context() scale benchmark")
    cols = [
        ("learnings", "learnings"), ("open_s", "open s"), ("context_p50_ms", "p50 ms"),
        ("context_p95_ms", "p95 ms"), ("context_isolated_p50_ms", "isolated p50"),
        ("context_isolated_p95_ms", "isolated p95"), ("context_per_s", "ctx/s"), ("embed_query_p50_ms", "embed p50 ms"),
        ("context_over_embed", "ctx/embed"), ("add_learning_per_s", "add/s"),
        ("add_learnings_per_s", "batch add/s"), ("peak_rss_mb", "peak RSS MB"),
        ("context_p50_over_baseline", "p50 / float32 p50"), ("record_event_p50_ms", "event p50 ms"),
        ("file_mb_per_100_learnings", "MB per 100"),
    ]
    for _, title in cols:
        table.add_column(title, justify="right")
    for r in results:
        table.add_row(*[str(r.get(k)) for k, _ in cols])
    Console().print(table)
    for r in results:
        print(f"  {r['learnings']}: stage p50 ms {r['stage_p50_ms']}")
        print(f"  {r['learnings']}: vector {r.get('vector')}; float32 baseline {r.get('baseline_float32')}")


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run the benchmark from the command line."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--embedder", choices=["minilm", "minilm-int8", "hash"], default="minilm")
    ap.add_argument("--json-out", type=Path, default=None)
    ap.add_argument("--corpus-embed-limit", type=int, default=10000,
                    help="Embed at most this many corpus texts with the model; larger corpora reuse them with noise (0: all).")
    ap.add_argument("--embed-only", action="store_true", help="Only fill the embedding cache.")
    ap.add_argument("--save", action="store_true", help="write the tracked benchmarks/results/scale.json")
    ap.add_argument("--no-baseline", action="store_true", help="skip the float32 (exact scan) baseline run")
    ap.add_argument("--ann-check", action="store_true", help="also build a usearch HNSW index and measure it")
    ap.add_argument("--keep-dir", type=Path, default=None,
                    help="build the files here and reuse them on later runs (default: a temporary folder)")
    ap.add_argument("--ann-min-rows", type=int, default=None,
                    help="Settings.vector_ann_min_rows for the measured Memory (default: the Settings default)")
    ap.add_argument("--buffer-pool-mb", type=int, default=None,
                    help="Settings.kuzu_buffer_pool_mb for the measured Memory (default: the Settings default)")
    args = ap.parse_args(argv)
    embedder = make_embedder(args.embedder)
    if args.embed_only:
        embeddings(generate(max(args.sizes), args.seed), embedder, args.embedder, args.seed, args.corpus_embed_limit)
        return []
    keep = args.keep_dir is not None
    workdir = args.keep_dir if keep else Path(tempfile.mkdtemp(prefix="graphmem-scale-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        for size in args.sizes:
            results.append(measure(size, args.queries, embedder, args.embedder, args.seed, workdir, args.corpus_embed_limit,
                                   with_baseline=not args.no_baseline, ann=args.ann_check,
                                   buffer_pool_mb=args.buffer_pool_mb, keep=keep, ann_min_rows=args.ann_min_rows))
            print(json.dumps(results[-1]), flush=True)
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print_table(results)
    out = args.json_out or (RESULTS if args.save else RESULTS / "local") / "scale.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "cpu_count": os.cpu_count(), "load_average": os.getloadavg(), "embedder": args.embedder,
        "queries": args.queries, "corpus_embed_limit": args.corpus_embed_limit, "results": results,
    }
    out.write_text(json.dumps(payload, indent=2) + "\n")
    from benchmarks.plots import scale_latency

    print(f"wrote {out} and {scale_latency(results, out.with_suffix('.png'))}")
    return results


if __name__ == "__main__":
    main()
