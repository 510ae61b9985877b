"""Retrieval precision on the labelled learnings set, with signal ablations and the regression guard.

    python -m benchmarks.learnings [--embedder minilm|minilm-int8|hash] [--check] [--json]
                                         [--json-out benchmarks/results/learnings.json]

The 179 learnings of ``benchmarks/data/learnings.json`` go into a fresh Kùzu file through the
public API: one ``Memory`` and ``for_user`` per user, ``created_at`` = NOW − ``age_days`` under a
fixed clock, status / tier / shared as stored, helpful / harmful / validations set with
``update_learning`` at the learning's own creation time (so ``updated_at`` = ``created_at`` and
the recency prior sees the stored age). A ``supersedes`` link becomes a SUPERSEDES edge and sets
the older learning's ``superseded_by`` (the store's ``link_conflict`` and ``save_learning``, the
helpers the curator uses); its tier stays as stored. No lifecycle cycle runs before measuring.

Each query is asked with ``mem.for_user(q.user).context(q.text, tool=, entities=, topics=,
objective_type=, limit=10)`` (a token budget large enough that ``limit`` decides, so the
ranking itself is measured), ids map back to keys, and P@5, R@10, nDCG@10, MRR (over the 10)
and noise@10 (learnings ``benchmarks.dataset.noise_keys`` says the user must never see) are
computed per query, then averaged per query kind and overall. In the same run, with the same
file, the variants of ``VARIANTS`` (only ``Settings`` changes): hybrid (defaults), each signal
alone (a zero weight drops that signal's list from the fusion; graph only also under rank fusion,
where its list is ordered by cosine within equal path weights), and ablations of the hybrid (no
quality prior, the earlier rank-fusion defaults, rank fusion alone, no tool-mismatch penalty, the
summed second hop, the earlier MMR, equal list weights, no full-text). The fusion defaults
(score fusion, ``weight_graph``, ``tool_mismatch_penalty``, ``graph_second_hop_max``,
``mmr_lambda``) were chosen on the even-numbered queries; a last table gives P@5 and nDCG@10 on
that tuning half and on the held-out odd-numbered queries.

``--check`` is the regression guard (:mod:`benchmarks.guard`): it appends the hybrid P@5 and
noise to ``benchmarks/results/history.jsonl`` and exits 1 under the floor, on a drop from the
rolling average, or on any noise, after printing the trend.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import guard
from benchmarks.common import guard_history, results_dir
from benchmarks.dataset import QUERY_KINDS, BenchDataset, load_dataset, noise_keys, noise_reasons
from benchmarks.metrics import aggregate, max_precision_at_k, mrr, ndcg_at_k, noise_count, precision_at_k, recall_at_k
from graphmem.config import Settings
from graphmem.embed import Embedder, HashEmbedder
from graphmem.memory import Memory

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
#: The fixed "now" of every run: ages, TTLs and recency are computed from it.
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
LIMIT = 10
TOKEN_BUDGET = 100_000  # large enough that ``limit`` decides what comes back
#: Variant name → Settings changes. A zero weight removes that signal's ranked list from the RRF.
VARIANTS: dict[str, dict[str, Any]] = {
    "hybrid": {},
    "vector only": {"weight_fulltext": 0.0, "weight_graph": 0.0},
    "full-text only": {"weight_vector": 0.0, "weight_graph": 0.0},
    "graph only": {"weight_vector": 0.0, "weight_fulltext": 0.0},
    "graph only, rank fusion (cosine breaks ties)": {"weight_vector": 0.0, "weight_fulltext": 0.0, "rank_fusion": "rrf"},
    "hybrid, no quality prior": {"quality_prior_enabled": False},
    "hybrid, rank fusion (earlier default)": {"rank_fusion": "rrf", "weight_graph": 2.0, "mmr_lambda": 0.7,
                                              "tool_mismatch_penalty": 0.0, "graph_second_hop_max": False},
    "hybrid, rank fusion": {"rank_fusion": "rrf"},
    "hybrid, no tool-mismatch penalty": {"tool_mismatch_penalty": 0.0},
    "hybrid, summed second hop": {"graph_second_hop_max": False},
    "hybrid, mmr_lambda 0.7": {"mmr_lambda": 0.7},
    "hybrid, equal list weights": {"weight_fulltext": 1.0, "weight_graph": 1.0},
    "hybrid, full-text weight 0": {"weight_fulltext": 0.0},
}
METRICS = ("p@5", "r@10", "ndcg@10", "mrr", "noise")


class FixedClock:
    """A settable clock: ``clock()`` returns ``clock.now`` (the loader moves it to each creation time)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def make_embedder(name: str) -> Embedder:
    """``minilm`` (the bundled all-MiniLM-L6-v2, offline), ``minilm-int8`` (the same model with
    int8 linear layers) or ``hash`` (instant, lexical)."""
    if name == "hash":
        return HashEmbedder()
    if name in ("minilm", "minilm-int8"):
        from graphmem.embed import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(quantize=name == "minilm-int8")
    raise ValueError(f"unknown embedder {name!r}; use minilm, minilm-int8 or hash")


class _QueryCache:
    """An embedder that remembers the vectors of the texts given to :meth:`remember`."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.dim = getattr(inner, "name", type(inner).__name__), inner.dim
        self._cache: dict[str, Any] = {}

    def remember(self, texts: Sequence[str]) -> None:
        """Embed ``texts`` once (one batch) and keep their vectors."""
        for text, vector in zip(texts, self.inner.embed(list(texts))):
            self._cache[text] = vector

    def embed(self, texts: Sequence[str]) -> Any:
        """Cached vectors when every text is known, else the inner embedder's."""
        import numpy as np

        if texts and all(t in self._cache for t in texts):
            return np.stack([self._cache[t] for t in texts])
        return self.inner.embed(texts)


def load_into(dataset: BenchDataset, path: Path, embedder: Embedder, now: datetime = NOW) -> dict[str, str]:
    """Insert every learning of ``dataset`` into the file at ``path``; returns graphmem id → key."""
    clock = FixedClock(now)
    # Summaries play no part in ranking learnings: refreshing them inline on every write would
    # triple the load time with MiniLM (each refresh embeds a summary), so they wait.
    base = Memory(path, user=dataset.users[0], embedder=embedder, clock=clock,
                  settings=Settings(summary_refresh="background"))
    try:
        mems = {u: base.for_user(u) for u in dataset.users}
        ids: dict[str, str] = {}
        for user in dataset.users:  # one batch per user: one embedding call, one transaction
            mine = [bl for bl in dataset.learnings if bl.user == user]
            stored = mems[user].add_learnings([
                {"content": bl.content, "kind": bl.kind, "tool": bl.tool, "entities": bl.entities,
                 "topics": bl.topics, "objective_type": bl.objective_type, "recommendation": bl.recommendation,
                 "applies_when": bl.applies_when, "sentiment": bl.sentiment, "source_type": bl.source_type,
                 "confidence": bl.confidence, "status": bl.status, "tier": bl.tier, "shared": bl.shared,
                 "created_at": bl.created_at(now)}
                for bl in mine
            ])
            for bl, learning in zip(mine, stored):
                if learning.id in ids.values():
                    raise RuntimeError(f"{bl.key} was merged into an existing learning (duplicate content?)")
                ids[bl.key] = learning.id
        for bl in dataset.learnings:
            counters = {"helpful": bl.helpful, "harmful": bl.harmful, "validations": bl.validations}
            if any(counters.values()):
                clock.now = bl.created_at(now)  # keeps updated_at = created_at (the recency prior)
                mems[bl.user].update_learning(ids[bl.key], **counters)
        for bl in dataset.learnings:
            if bl.supersedes is None:
                continue
            clock.now = bl.created_at(now)
            _supersede(base, ids[bl.key], ids[bl.supersedes], clock.now)
        clock.now = now
        for m in mems.values():
            m.close()
        return {gid: key for key, gid in ids.items()}
    finally:
        base.close()


def _supersede(mem: Memory, newer_id: str, older_id: str, when: datetime) -> None:
    """newer SUPERSEDES older, and older.superseded_by = newer (the older one's tier is kept).

    Not ``Memory.supersede`` (which also archives the older one): the labelled set keeps some
    superseded learnings in tier active, to check that the superseded filter works on its own.
    """
    store = mem.store
    with store.transaction():
        older = store.get_learning(older_id)
        store.save_learning(older.model_copy(update={"superseded_by": newer_id, "updated_at": when}))
        store.link_conflict("SUPERSEDES", newer_id, older_id, "benchmark: labelled replacement", when)


def run_variant(
    dataset: BenchDataset,
    path: Path,
    embedder: Embedder,
    settings: Settings,
    keys_by_id: Mapping[str, str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Ask every query with ``settings``; returns (one metrics row per query, noise findings)."""
    base = Memory(path, user=dataset.users[0], embedder=embedder, settings=settings, clock=lambda: NOW)
    mems = {u: base.for_user(u) for u in dataset.users}
    noise_by_user = {u: noise_keys(dataset, u) for u in dataset.users}
    rows: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    try:
        for q in dataset.queries:
            cpu = time.process_time()
            ctx = mems[q.user].context(
                q.text, tool=q.tool, entities=q.entities, topics=q.topics, objective_type=q.objective_type,
                limit=LIMIT, token_budget=TOKEN_BUDGET,
            )
            cpu_ms = (time.process_time() - cpu) * 1000.0
            ranked = [keys_by_id.get(item.learning.id, f"?{item.learning.id}") for item in ctx.learnings]
            noise = noise_count(ranked, noise_by_user[q.user], k=LIMIT)
            rows.append({
                "id": q.id, "kind": q.kind,
                "p@5": precision_at_k(ranked, q.relevant, 5),
                "r@10": recall_at_k(ranked, q.relevant, LIMIT),
                "ndcg@10": ndcg_at_k(ranked, q.relevant, LIMIT),
                "mrr": mrr(ranked, q.relevant, LIMIT),
                "noise": noise,
                "returned": len(ranked),
                "cpu_ms": cpu_ms,
                "ranked": ranked,
            })
            for key in ranked[:LIMIT]:
                if key in noise_by_user[q.user]:
                    findings.append({"query": q.id, "user": q.user, "key": key,
                                     "why": noise_reasons(dataset.learning(key), q.user, dataset)})
    finally:
        for m in mems.values():
            m.close()
        base.close()
    return rows, findings


def evaluate(
    dataset: BenchDataset,
    embedder_name: str,
    variants: Sequence[str] = tuple(VARIANTS),
    *,
    embedder: Embedder | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Load the set once into a temporary file and measure every variant on it."""
    # query embeddings are computed once and reused by every variant, so the CPU time per query
    # measures the ranking, not MiniLM (the stored learnings are embedded as usual)
    emb = _QueryCache(embedder or make_embedder(embedder_name))
    t0 = time.perf_counter()
    result: dict[str, Any] = {
        "benchmark": "learnings", "embedder": embedder_name, "now": NOW.isoformat(), "limit": LIMIT,
        "learnings": len(dataset.learnings), "queries": len(dataset.queries), "variants": {},
    }
    with tempfile.TemporaryDirectory(prefix="graphmem-learnings-") as tmp:
        path = Path(tmp) / "bench.kuzu"
        keys_by_id = load_into(dataset, path, emb.inner)
        emb.remember([q.text for q in dataset.queries])
        ceilings = [max_precision_at_k(q.relevant, 5) for q in dataset.queries]
        reachable = [c for c in ceilings if c is not None]
        result["p5_ceiling"] = sum(reachable) / len(reachable) if reachable else None  # best any ranking reaches
        result["load_s"] = round(time.perf_counter() - t0, 2)
        for name in variants:
            t1 = time.perf_counter()
            settings = Settings(**VARIANTS[name])
            rows, findings = run_variant(dataset, path, emb, settings, keys_by_id)
            numeric = [{k: v for k, v in r.items() if k != "ranked"} for r in rows]
            agg = aggregate([{k: v for k, v in r.items() if k not in ("id", "returned", "cpu_ms")} for r in numeric])
            cpu = sorted(r["cpu_ms"] for r in rows)
            result["variants"][name] = {
                "settings": VARIANTS[name], "overall": agg["overall"],
                "cpu_ms_mean": sum(cpu) / len(cpu) if cpu else None, "cpu_ms_p50": cpu[len(cpu) // 2] if cpu else None,
                "per_kind": {k: agg[k] for k in QUERY_KINDS if k in agg},
                "noise_findings": findings, "queries": rows, "seconds": round(time.perf_counter() - t1, 2),
            }
            if progress:
                progress(f"{name}: {result['variants'][name]['seconds']:.1f} s")
    result["total_s"] = round(time.perf_counter() - t0, 2)
    return result


def _fmt(v: Any, total: Any = None) -> str:
    if total is not None:
        return str(int(total))
    return "-" if v is None else f"{float(v):.3f}"


def print_tables(result: Mapping[str, Any], console: Any) -> None:
    """One rich table per variant (per kind + overall), then a one-line-per-variant summary."""
    from rich.table import Table

    for name, v in result["variants"].items():
        table = Table(title=f"{name} ({result['embedder']} embedder, {result['queries']} queries)")
        table.add_column("kind")
        table.add_column("n", justify="right")
        for m in METRICS:
            table.add_column(m, justify="right")
        for kind, agg in [*v["per_kind"].items(), ("overall", v["overall"])]:
            table.add_row(kind, str(agg["n"]), *[_fmt(agg.get(m), agg.get("noise_total") if m == "noise" else None)
                                                 for m in METRICS])
        console.print(table)
    summary = Table(title="ablation: overall per variant (noise = total ineligible returned, top 10; "
                          "context() CPU ms per query, query embeddings cached)")
    summary.add_column("variant")
    for m in METRICS:
        summary.add_column(m, justify="right")
    summary.add_column("CPU ms mean", justify="right")
    summary.add_column("CPU ms p50", justify="right")
    for name, v in result["variants"].items():
        o = v["overall"]
        summary.add_row(name, *[_fmt(o.get(m), o.get("noise_total") if m == "noise" else None) for m in METRICS],
                        _fmt(v.get("cpu_ms_mean")), _fmt(v.get("cpu_ms_p50")))
    console.print(summary)
    halves = Table(title="split: the fusion defaults were chosen on the even-numbered queries (1st, 3rd, ...); "
                         "the odd-numbered ones are held out")
    halves.add_column("variant")
    for half in ("tuning", "held-out"):
        for m in ("p@5", "ndcg@10"):
            halves.add_column(f"{m} {half}", justify="right")
    for name, v in result["variants"].items():
        cells = []
        for parity in (0, 1):
            rows = [r for i, r in enumerate(v["queries"]) if i % 2 == parity]
            for m in ("p@5", "ndcg@10"):
                vals = [r[m] for r in rows if r[m] is not None]
                cells.append(_fmt(sum(vals) / len(vals) if vals else None))
        halves.add_row(name, *cells)
    console.print(halves)
    for name, v in result["variants"].items():
        for f in v["noise_findings"]:
            console.print(f"[red]NOISE[/red] {name}: {f['query']} ({f['user']}) returned {f['key']}: "
                          f"{', '.join(f['why'])}", highlight=False)


def guard_check(result: Mapping[str, Any], history_path: Path, settings: Settings, console: Any) -> int:
    """Run the regression guard on the hybrid variant, append to the history, print the trend."""
    hybrid = result["variants"]["hybrid"]
    p5 = float(hybrid["overall"]["p@5"] or 0.0)
    noise = int(hybrid["overall"]["noise_total"] or 0)
    history = guard.load_history(history_path)
    ceiling = result.get("p5_ceiling")
    alerts = guard.check(p5, noise, history, result["embedder"], settings, ceiling=ceiling)
    entry = guard.make_entry(
        p5, noise, embedder=result["embedder"], alerts=alerts,
        per_kind={k: v.get("p@5") for k, v in hybrid["per_kind"].items()},
        extra={"ndcg@10": hybrid["overall"]["ndcg@10"], "mrr": hybrid["overall"]["mrr"],
               "r@10": hybrid["overall"]["r@10"], "p5_ceiling": result.get("p5_ceiling"),
               "seconds": result.get("total_s")},
        commit=guard.git_commit(),
    )
    guard.append_history(history_path, entry)
    guard.print_trend(guard.trend(guard.load_history(history_path), result["embedder"], settings.guard_rolling_window),
                      console)
    if alerts:
        for a in alerts:
            console.print(f"[red]REGRESSION[/red] {a}", highlight=False)
        return 1
    share = f" ({p5 / ceiling:.2f} of the reachable {ceiling:.3f})" if ceiling else ""
    console.print(f"[green]guard OK[/green]: P@5 {p5:.3f}{share}, floor {settings.p5_floor}, noise {noise}",
                  highlight=False)
    return 0


@contextlib.contextmanager
def _stdout_to_stderr(active: bool) -> Iterator[None]:
    if not active:
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (1 when ``--check`` finds a regression)."""
    from rich.console import Console

    ap = argparse.ArgumentParser(prog="python -m benchmarks.learnings", description=__doc__.split("\n\n")[0])
    ap.add_argument("--embedder", choices=["minilm", "minilm-int8", "hash"], default="minilm")
    ap.add_argument("--check", action="store_true", help="regression guard: append to the history, fail on a regression")
    ap.add_argument("--history", type=Path, default=None,
                    help="the guard's history (default: a local copy of benchmarks/results/history.jsonl; "
                         "--save: that tracked file)")
    ap.add_argument("--variants", default=";".join(VARIANTS), help="semicolon-separated subset of: " + ", ".join(VARIANTS))
    ap.add_argument("--json", action="store_true", help="print the result as JSON on stdout (tables go to stderr)")
    ap.add_argument("--json-out", type=Path, default=None, help="default: benchmarks/results/local/learnings.json")
    ap.add_argument("--png-out", type=Path, default=None, help="default: benchmarks/results/local/learnings.png")
    ap.add_argument("--save", action="store_true",
                    help="write the tracked benchmarks/results/ files (default: benchmarks/results/local/)")
    ap.add_argument("--data", type=Path, default=None, help="the labelled set (default benchmarks/data/learnings.json)")
    args = ap.parse_args(argv)
    out_dir = results_dir(args.save)
    args.json_out = args.json_out or out_dir / "learnings.json"
    args.png_out = args.png_out or out_dir / "learnings.png"
    args.history = args.history or guard_history(args.save)
    variants = [v.strip() for v in args.variants.split(";") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or (args.check and "hybrid" not in variants):
        print(f"choose variants from {list(VARIANTS)} (--check needs hybrid)", file=sys.stderr)
        return 2
    console = Console(stderr=args.json)
    dataset = load_dataset(args.data)
    with _stdout_to_stderr(args.json):
        result = evaluate(dataset, args.embedder, variants, progress=lambda m: console.print(f"[dim]{m}[/dim]"))
        print_tables(result, console)
        console.print(f"P@5 ceiling of this set (best any ranking can reach): {result['p5_ceiling']:.3f}; "
                      f"load {result['load_s']:.1f} s, total {result['total_s']:.1f} s ({args.embedder})")
        if args.json_out:
            args.json_out.parent.mkdir(parents=True, exist_ok=True)
            args.json_out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        if args.png_out:
            from benchmarks.plots import learnings_bars

            learnings_bars({n: v["overall"] for n, v in result["variants"].items()}, args.png_out,
                           title=f"graphmem retrieval, {result['queries']} labelled queries ({args.embedder})")
        status = guard_check(result, args.history, Settings(), console) if args.check else 0
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
