"""Ingest and open speed: batched and single writes of learnings and events, file sizes, open time.

    python -m benchmarks.ingest [--n 300] [--batch 100] [--at 0] [--open-size 100000] [--embedder minilm|minilm-int8|hash|both]
                                [--save | --json-out PATH]

Batched writes are reported beside the embedder's own batch throughput measured in the same run
(the writes embed the same number of texts), with the CPU time per item, so a busy machine does
not hide where the time goes. ``--at N`` bulk-imports N learnings first (writes at scale), then
writes one untimed batch: the bulk import creates no summaries, and the first refresh of each new
summary links every learning it covers (a one-time cost of the import, not of later writes).
Single writes are reported as p50 / p95 of wall time and p50 of CPU time (this process).
Closed files holding 0, 1, 100 and 1,000 learnings (hash embedder, batches of 100) are reported
with their parts (column pages, free pages, the rest: primary-key indexes and catalog), and the
file at the end of the writes per 1,000 learnings (at ``--at N`` bulk-imported learnings).

Writes benchmarks/results/local/ingest.json (ignored) and its plot; ``--save`` writes the tracked
benchmarks/results/ingest.json instead. Data are generated deterministically.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from benchmarks.common import results_dir
from graphmem import HashEmbedder, Learning, Memory, SentenceTransformerEmbedder, Settings
from graphmem.embed import Embedder
from graphmem.llm import OfflineLLM
from graphmem.store import filesize

TOOLS = ["send_email", "web_search", "run_sql", "git_commit", "slack_message", "write_file", "http_request"]
PEOPLE = ["Dana", "Omar", "Priya", "Lena", "Marcus", "Yuki", "Acme", "Globex", "Initech"]
TOPICS = ["email style", "deploys", "sql performance", "meeting notes", "security", "testing", "billing"]
VERBS = ["Keep", "Always", "Never", "Prefer", "Avoid", "Check", "Use"]
OBJECTS = ["bullet points", "short paragraphs", "UTC timestamps", "the staging database", "a dry run first",
           "explicit column lists", "the release checklist", "a polite closing line", "retries with backoff"]


def synthetic_item(i: int) -> dict[str, Any]:
    """The i-th generated learning as add_learning arguments (deterministic)."""
    rng = np.random.default_rng(i)
    tool = TOOLS[i % len(TOOLS)]
    who = PEOPLE[int(rng.integers(len(PEOPLE)))]
    obj = OBJECTS[int(rng.integers(len(OBJECTS)))]
    verb = VERBS[int(rng.integers(len(VERBS)))]
    return {
        "content": f"{verb} {obj} when using {tool} for {who} (case {i})",
        "tool": tool,
        "entities": [who],
        "topics": [TOPICS[int(rng.integers(len(TOPICS)))]],
        "kind": "rule",
    }


def _embedder(name: str) -> Embedder:
    return HashEmbedder() if name == "hash" else SentenceTransformerEmbedder(quantize=name == "minilm-int8")


def _events(start: int, n: int) -> list[dict[str, Any]]:
    """n generated events (messages and tool results) as record_event arguments."""
    out: list[dict[str, Any]] = []
    for i in range(start, start + n):
        who = PEOPLE[i % len(PEOPLE)]
        if i % 3 == 0:
            tool = TOOLS[i % len(TOOLS)]
            out.append({"kind": "tool_result", "content": f"{tool} finished for {who} (run {i})", "tool": tool,
                        "success": i % 5 != 0, "session_id": f"s{i // 50}"})
        else:
            out.append({"kind": "message", "content": f"{who} asked about {OBJECTS[i % len(OBJECTS)]} (message {i})",
                        "role": who, "session_id": f"s{i // 50}"})
    return out


def _timed(fn: Any) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _singles(fn: Any, args: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds (this process) of ``fn`` called once per item."""
    lat, cpu = [], []
    for item in args:
        wall, used = _timed(lambda item=item: fn(item))
        lat.append(wall)
        cpu.append(used)
    return lat, cpu


@contextmanager
def _embedding_clock(embedder: Any) -> Iterator[list[float]]:
    """Inside the block, the wall seconds spent in ``embedder.embed`` add up in the yielded
    one-item list (the batch's own embedding and any summary the batch refreshes): the rest of a
    batch's time is graph writes, screening and the in-memory mirrors."""
    spent = [0.0]
    bound = embedder.embed

    def timed_embed(texts: Any) -> Any:
        start = time.perf_counter()
        try:
            return bound(texts)
        finally:
            spent[0] += time.perf_counter() - start

    embedder.embed = timed_embed  # an instance attribute: shadows the class's method
    try:
        yield spent
    finally:
        del embedder.embed


def _ms(seconds: list[float], q: float) -> float:
    return 1000 * float(np.percentile(seconds, q))


def _prefill(mem: Memory, size: int, dim: int) -> None:
    """``size`` generated learnings through the bulk import (random vectors)."""
    if size <= 0:
        return
    learnings = []
    for i in range(size):
        item = synthetic_item(10_000_000 + i)
        learnings.append(Learning(user_id="bench", content=item["content"], tool=item["tool"],
                                  entities=item["entities"], topics=item["topics"]))
    mem.store.bulk_insert_learnings(learnings, np.random.default_rng(7).standard_normal((size, dim)).astype(np.float32))


def _checkpoint(mem: Memory) -> tuple[float, float, int]:
    """(wall s, CPU s, log bytes) of checkpointing what the write-ahead log holds now: the
    batches commit into the log, and the store checkpoints once it passes ``checkpoint_bytes``."""
    store = mem.store
    with store.exclusive():
        log = store._wal_bytes()
        wall, cpu = _timed(lambda: store._conn_main.execute("CHECKPOINT"))
    return wall, cpu, log


def measure_add(embedder: Embedder, n: int, batch: int, base: int = 0, singles: int = 100) -> dict[str, Any]:
    """Batched and single writes of learnings and events on a file already holding ``base``
    learnings, beside the embedder's own batch throughput measured in the same run."""
    items = [synthetic_item(i) for i in range(n + singles)]
    texts = [it["content"] for it in items[:n]]
    embedder.embed(["warm up"])
    emb_wall, emb_cpu = _timed(lambda: [embedder.embed(texts[k : k + batch]) for k in range(0, n, batch)])
    out: dict[str, Any] = {"base_learnings": base, "embed_per_s": n / emb_wall, "embed_cpu_ms": 1000 * emb_cpu / n}
    # one text at a time (what a single add_learning embeds), beside add_learning's latency
    lat, used = _singles(lambda item: embedder.embed([item["content"]]), items[n:])
    out.update(embed_one_p50_ms=_ms(lat, 50), embed_one_cpu_p50_ms=_ms(used, 50))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.kuzu"
        with Memory(path, user="bench", embedder=embedder, llm=OfflineLLM()) as mem:
            _measure_writes(mem, out, items, n, batch, base, singles)
        # the same batches with the summaries refreshed later (the default refreshes them inline,
        # after each batch that makes one due): the writes alone
        with Memory(path, user="bench", embedder=embedder, llm=OfflineLLM(),
                    settings=Settings(summary_refresh="background")) as mem:
            more = [synthetic_item(30_000_000 + i) for i in range(n)]
            wall, cpu = _timed(lambda: [mem.add_learnings(more[k : k + batch]) for k in range(0, n, batch)])
            out.update(add_learnings_bg_per_s=n / wall, add_learnings_bg_cpu_ms=1000 * cpu / n)
            out["learnings_end"] = len(mem.store.learning_catalog)
        out["file_bytes_end"] = sum(f.stat().st_size for f in Path(tmp).iterdir() if f.name.startswith(path.name))
        out["file_parts_end"] = filesize.breakdown(path).as_dict()
    for kind in ("add_learnings", "add_learnings_bg", "record_events"):
        out[f"{kind}_vs_embedder"] = out[f"{kind}_per_s"] / out["embed_per_s"]
    return out


def _measure_writes(mem: Memory, out: dict[str, Any], items: list[dict[str, Any]], n: int, batch: int,
                    base: int, singles: int) -> None:
    wall, cpu = _timed(lambda: _prefill(mem, base, mem.embedder.dim))  # type: ignore[attr-defined]
    if base:
        out.update(bulk_import_per_s=base / wall, bulk_import_cpu_per_s=base / max(cpu, 1e-9))
    if base:  # untimed: the first summaries' first refresh links every bulk-imported learning once
        mem.add_learnings([synthetic_item(20_000_000 + i) for i in range(batch)])
        mem.record_events(_events(50_000_000, batch))  # and the first events' edges (COPYed once per file)
    _checkpoint(mem)
    with _embedding_clock(mem.embedder) as in_embedder:
        wall, cpu = _timed(lambda: [mem.add_learnings(items[k : k + batch]) for k in range(0, n, batch)])
    batches = -(-n // batch)
    out.update(add_learnings_per_s=n / wall, add_learnings_cpu_ms=1000 * cpu / n,
               add_learnings_embed_ms_per_batch=1000 * in_embedder[0] / batches,
               add_learnings_rest_ms_per_batch=1000 * (wall - in_embedder[0]) / batches)
    # The batches commit into the write-ahead log; the store checkpoints once it passes
    # ``checkpoint_bytes``. A checkpoint costs about the same for 1 or 10 batches of log (at 100k
    # learnings: ~150 ms CPU, mostly fixed), so its share per learning is its cost over the
    # learnings that fill the threshold.
    ck_wall, ck_cpu, log = _checkpoint(mem)
    per_checkpoint = max(n, mem.store.checkpoint_bytes / max(1.0, log / n))  # learnings between checkpoints
    out.update(checkpoint_s=ck_wall, checkpoint_cpu_s=ck_cpu, log_bytes_per_item=log / n,
               learnings_per_checkpoint=per_checkpoint,
               checkpoint_ms_per_item=1000 * ck_wall / per_checkpoint,
               checkpoint_cpu_ms_per_item=1000 * ck_cpu / per_checkpoint,
               add_learnings_with_checkpoint_per_s=n / (wall + ck_wall * n / per_checkpoint))
    lat, cpu = _singles(lambda item: mem.add_learning(**item), items[n:])
    out.update(add_learning_per_s=len(lat) / sum(lat), add_learning_p50_ms=_ms(lat, 50),
               add_learning_p95_ms=_ms(lat, 95), add_learning_cpu_p50_ms=_ms(cpu, 50))
    events = _events(0, n + singles)
    wall, cpu = _timed(lambda: [mem.record_events(events[k : k + batch]) for k in range(0, n, batch)])
    out.update(record_events_per_s=n / wall, record_events_cpu_ms=1000 * cpu / n)
    lat, cpu = _singles(lambda event: mem.record_event(**event), events[n:])
    out.update(record_event_p50_ms=_ms(lat, 50), record_event_p95_ms=_ms(lat, 95),
               record_event_cpu_p50_ms=_ms(cpu, 50))


def measure_sizes(counts: tuple[int, ...] = (0, 1, 100, 1000), batch: int = 100,
                  parts: dict[str, Any] | None = None) -> dict[str, int]:
    """Bytes of a closed database file holding each count of learnings (hash embedder); when
    ``parts`` is given, it receives each file's breakdown (column pages, free pages, the rest:
    primary-key indexes and catalog) by count."""
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for count in counts:
            path = Path(tmp) / f"size{count}.kuzu"
            items = [synthetic_item(i) for i in range(count)]
            with Memory(path, user="bench", embedder=HashEmbedder(384), llm=OfflineLLM()) as mem:
                for k in range(0, count, batch):
                    mem.add_learnings(items[k : k + batch])
            sizes[str(count)] = sum(f.stat().st_size for f in Path(tmp).iterdir() if f.name.startswith(path.name))
            if parts is not None:
                parts[str(count)] = filesize.breakdown(path).as_dict()
    return sizes


def measure_open(size: int, dim: int = 384) -> dict[str, float]:
    """Seconds to open a file holding ``size`` learnings (catalog rebuild included)."""
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.kuzu"
        embedder = HashEmbedder(dim)
        mem = Memory(path, user="bench", embedder=embedder, llm=OfflineLLM())
        learnings = []
        for i in range(size):
            item = synthetic_item(i)
            learnings.append(Learning(user_id="bench", content=item["content"], tool=item["tool"],
                                      entities=item["entities"], topics=item["topics"]))
        vectors = rng.standard_normal((size, dim)).astype(np.float32)
        start, cpu = time.perf_counter(), time.process_time()
        mem.store.bulk_insert_learnings(learnings, vectors)
        bulk_s, bulk_cpu = time.perf_counter() - start, time.process_time() - cpu
        mem.close()
        start, cpu = time.perf_counter(), time.process_time()
        mem = Memory(path, user="bench", embedder=embedder, llm=OfflineLLM())
        open_s, open_cpu = time.perf_counter() - start, time.process_time() - cpu
        assert len(mem.store.learning_catalog) == size
        mem.close()
        file_bytes = sum(f.stat().st_size for f in Path(tmp).iterdir() if f.name.startswith(path.name))
    return {"open_s": open_s, "open_cpu_s": open_cpu, "bulk_import_s": bulk_s, "bulk_import_cpu_s": bulk_cpu, "bulk_import_per_s": size / bulk_s, "size": size,
            "file_bytes": file_bytes}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print a table, write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="learnings (and events) written in batches per measurement")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--at", type=int, default=0, help="learnings already in the file (bulk-imported) when writing")
    parser.add_argument("--singles", type=int, default=100, help="single add_learning / record_event calls timed")
    parser.add_argument("--open-size", type=int, default=100_000, help="0 skips the open measurement")
    parser.add_argument("--embedder", choices=["minilm", "minilm-int8", "hash", "both"], default="both")
    parser.add_argument("--sizes", type=int, nargs="*", default=[0, 1, 100, 1000],
                        help="learnings in the files whose size is measured (none given: no size measurement)")
    parser.add_argument("--json-out", type=Path, default=None, help="where to write the JSON (and its PNG beside it)")
    parser.add_argument("--save", action="store_true", help="write the tracked benchmarks/results/ingest.json")
    args = parser.parse_args(argv)
    args.json_out = args.json_out or results_dir(args.save) / "ingest.json"
    names = ["minilm", "hash"] if args.embedder == "both" else [args.embedder]
    result: dict[str, Any] = {"n": args.n, "batch": args.batch, "at": args.at, "ingest": {}}
    for name in names:
        result["ingest"][name] = measure_add(_embedder(name), args.n, args.batch, args.at, args.singles)
    result["file_parts"] = {}
    result["file_bytes"] = measure_sizes(tuple(args.sizes), parts=result["file_parts"]) if args.sizes else {}
    if args.open_size:
        result["open"] = measure_open(args.open_size)
    table = Table(title=f"graphmem ingest (python -m benchmarks.ingest), {args.at:,} learnings in the file")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, f in result["ingest"].items():
        table.add_row(f"{name}: embedder alone, batches of {args.batch}", f"{f['embed_per_s']:.0f} texts/s ({f['embed_cpu_ms']:.1f} ms CPU each)")
        for kind, unit, label in (("add_learnings", "learnings", "add_learnings"), ("record_events", "events", "record_events"),
                                  ("add_learnings_bg", "learnings", "add_learnings, summaries refreshed later")):
            table.add_row(f"{name}: {label}, batches of {args.batch}",
                          f"{f[f'{kind}_per_s']:.0f} {unit}/s = {f[f'{kind}_vs_embedder']:.2f} x embedder "
                          f"({f[f'{kind}_cpu_ms']:.2f} ms CPU each)")
        table.add_row(f"{name}: add_learnings, a batch of {args.batch} split",
                      f"{f['add_learnings_embed_ms_per_batch']:.0f} ms in the embedder, "
                      f"{f['add_learnings_rest_ms_per_batch']:.0f} ms the rest (writes, screening, mirrors)")
        table.add_row(f"{name}: checkpoint of add_learnings' log",
                      f"{1000 * f['checkpoint_s']:.0f} ms ({1000 * f['checkpoint_cpu_s']:.0f} ms CPU), one per "
                      f"{f['learnings_per_checkpoint']:.0f} learnings ({f['log_bytes_per_item'] / 1e3:.1f} kB of log each): "
                      f"{f['checkpoint_ms_per_item']:.2f} ms each, {f['add_learnings_with_checkpoint_per_s']:.0f} learnings/s with it")
        part = f["file_parts_end"]
        table.add_row(f"{name}: database file at the end ({f['learnings_end']:,} learnings: {args.at:,} bulk + the writes)",
                      f"{part['file_bytes'] / 1e6:.0f} MB ({part['file_bytes'] / f['learnings_end'] * 1000 / 1e6:.2f} MB "
                      f"per 1,000 learnings); {f['file_bytes_end'] / 1e6:.0f} MB with the mirrors' snapshot beside it")
        table.add_row(f"{name}: that file's columns / free pages / indexes and catalog",
                      f"{part['column_bytes'] / 1e6:.1f} / {part['free_bytes'] / 1e6:.1f} / "
                      f"{part['index_and_catalog_bytes'] / 1e6:.1f} MB")
        if "bulk_import_per_s" in f:
            table.add_row(f"{name}: bulk import of {args.at:,} (COPY)",
                          f"{f['bulk_import_per_s']:.0f} learnings/s ({f['bulk_import_cpu_per_s']:.0f}/s of CPU)")
        table.add_row(f"{name}: add_learning", f"p50 {f['add_learning_p50_ms']:.1f} ms, p95 {f['add_learning_p95_ms']:.1f} ms "
                      f"(CPU p50 {f['add_learning_cpu_p50_ms']:.1f} ms)")
        table.add_row(f"{name}: embedding one text alone", f"p50 {f['embed_one_p50_ms']:.1f} ms "
                      f"(CPU p50 {f['embed_one_cpu_p50_ms']:.1f} ms)")
        table.add_row(f"{name}: record_event", f"p50 {f['record_event_p50_ms']:.1f} ms, p95 {f['record_event_p95_ms']:.1f} ms "
                      f"(CPU p50 {f['record_event_cpu_p50_ms']:.1f} ms)")
    for count, size in result["file_bytes"].items():
        table.add_row(f"file with {int(count):,} learnings (closed)", f"{size / 1e6:.1f} MB")
    for count, part in result["file_parts"].items():
        table.add_row(f"  {int(count):,} learnings: columns / free pages / indexes and catalog",
                      f"{part['column_bytes'] / 1e6:.2f} / {part['free_bytes'] / 1e6:.2f} / "
                      f"{part['index_and_catalog_bytes'] / 1e6:.2f} MB ({len(part['node_tables_with_rows'])} node "
                      f"tables with rows, {part['fulltext_indexes']} full-text indexes)")
    if "1000" in result["file_bytes"] and "100" in result["file_bytes"]:
        table.add_row("file growth per 1,000 learnings (100 -> 1,000, in batches)",
                      f"{(result['file_bytes']['1000'] - result['file_bytes']['100']) / 900 * 1000 / 1e6:.2f} MB")
    if "1000" in result["file_bytes"]:
        table.add_row("file per 1,000 learnings (1,000 added in batches)", f"{result['file_bytes']['1000'] / 1e6:.1f} MB")
    if args.open_size:
        o = result["open"]
        table.add_row(f"open a {args.open_size:,}-learning file", f"{o['open_s']:.2f} s ({o['open_cpu_s']:.2f} s CPU)")
        table.add_row(f"bulk import {args.open_size:,} (COPY)",
                      f"{o['bulk_import_per_s']:.0f} learnings/s ({o['size'] / o['bulk_import_cpu_s']:.0f}/s of CPU)")
        table.add_row(f"file with {args.open_size:,} learnings (bulk)", f"{o['file_bytes'] / 1e6:.0f} MB")
        table.add_row(f"file per 1,000 learnings at {args.open_size:,} (bulk)",
                      f"{o['file_bytes'] / o['size'] * 1000 / 1e6:.2f} MB")
    Console().print(table)
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(result, indent=2))
    from benchmarks.plots import named_bars

    rates = {f"{kind}, {name}": figures[f"{kind}_per_s"] for name, figures in result["ingest"].items()
             for kind in ("embed", "add_learnings", "record_events")}
    named_bars(rates, "graphmem ingest rate", "items per second", args.json_out.with_suffix(".png"))
    return result


if __name__ == "__main__":
    main()
