"""LoCoMo evidence recall through graphmem's public ``search`` API.

    python -m benchmarks.locomo [--limit-conversations N] [--json-out benchmarks/results/locomo.json]

Data: the public LoCoMo dataset's ``locomo10.json`` (https://github.com/snap-research/locomo, folder
``data/``; not bundled), from ``--data DIR``, else ``$GRAPHMEM_LOCOMO_DATA``, else
``../shared/benchdata/locomo/`` next to the repository,
read in place; the benchmark skips with a message when it is absent. Per conversation, one
in-memory Memory with the bundled MiniLM embedder; every turn goes in through
``Memory.record_events`` (one batch, the same fields as ``record_event("message", text,
role=speaker, entities=[speaker], session_id=..., created_at=session date, metadata={"dia_id":
...})``). A turn that shares an image carries its caption in the text ("[shares an image: ...]";
``--no-captions`` leaves it out). Each question is asked with ``search(question, over="events",
k=25)``; hits map back to ``dia_id`` through their metadata.

Split: the default ``search_*`` weights were fitted on conversations 0-4 only (the tuning half,
by ``python -m benchmarks.locomo_tune --tune 0-4 --report 5-9``); the report gives every
ranking's R@10 on that half and on conversations 5-9 (the held-out half) separately, so the
held-out figures are untouched by the tuning. ``--conversations 5-9`` runs one half only, and
``--embed-cache FILE`` keeps the MiniLM embeddings across runs (ingest timing then excludes them).

Metric: Recall@k of evidence turns, averaged over the questions that have evidence, overall and
per category, with the original evidence and with the corrected evidence of the LoCoMo audit
(``locomo_audit_errors.json``: where an item gives ``correct_evidence``, it replaces the cited
one). In the same run, over the same turns: **cosine** (MiniLM cosine alone), **bm25** (the event
lexical mirror alone, BM25 over graphmem's normalised text), and an ablation that switches off
one signal of the full ranking at a time. Only ``Memory.settings`` changes between the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import results_dir

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "benchdata" / "locomo"
KS = (5, 10, 25)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DIA = re.compile(r"^D(\d+):(\d+)$")

# the signals the entity extraction added (text mentions, the second hop, session dates)
_NO_HOP: dict[str, Any] = {"search_weight_mention": 0.0, "search_weight_hop": 0.0, "search_weight_date": 0.0,
                           "search_weight_prf": 0.0, "search_weight_address": 0.0,
                           "search_weight_stripped": 0.0, "search_weight_session": 0.0}
# the defaults before benchmarks/locomo_tune.py fitted them on conversations 0-4
EARLIER: dict[str, Any] = {"search_weight_entity": 0.3, "search_weight_time": 0.2, "search_weight_neighbour": 0.5,
                           "search_hop_seeds": 5, "search_weight_date": 0.2, "search_weight_stripped": 0.0,
                           "search_weight_session": 0.0, "search_weight_prf": 0.0, "search_weight_address": 0.0}
# the defaults before word feedback and the addressed-turn penalty
BEFORE_WORDS: dict[str, Any] = {"search_weight_prf": 0.0, "search_weight_address": 0.0}
# name -> Settings changes; "full" is graphmem's default ranking
CONFIGS: dict[str, dict[str, Any]] = {
    "full": {},
    "cosine": {"search_weight_fulltext": 0.0, "search_weight_entity": 0.0, "search_weight_time": 0.0,
               "search_weight_neighbour": 0.0, "search_weight_tool": 0.0, **_NO_HOP},
    "bm25": {"search_weight_vector": 0.0, "search_weight_entity": 0.0, "search_weight_time": 0.0,
             "search_weight_neighbour": 0.0, "search_weight_tool": 0.0, **_NO_HOP},
    "cosine+bm25 (rrf)": {"search_fusion": "rrf", "search_weight_entity": 0.0, "search_weight_time": 0.0,
                          "search_weight_neighbour": 0.0, **_NO_HOP},
    "cosine+bm25 (score)": {"search_fusion": "score", "search_weight_entity": 0.0, "search_weight_time": 0.0,
                            "search_weight_neighbour": 0.0, **_NO_HOP},
    "full - neighbours": {"search_weight_neighbour": 0.0},
    "full - entity": {"search_weight_entity": 0.0},
    "full - time words": {"search_weight_time": 0.0},
    "full with rrf fusion": {"search_fusion": "rrf"},
    "full - text mentions": {"search_weight_mention": 0.0},
    "full - query without names": {"search_weight_stripped": 0.0},
    "full + session relevance": {"search_weight_session": 0.2},
    "earlier defaults (before the fit)": EARLIER,
    "full - second hop": {"search_weight_hop": 0.0},
    "full - session dates": {"search_weight_date": 0.0},
    "full + embedding feedback": {"search_weight_feedback": 0.2},
    "full + session diversity": {"search_session_decay": 0.8},
    "without the multi-hop signals": {**EARLIER, **_NO_HOP, "search_weight_entity": 0.2},
    "before word feedback and the addressed-turn penalty": BEFORE_WORDS,
    "full - word feedback": {"search_weight_prf": 0.0},
    "full - addressed-turn penalty": {"search_weight_address": 0.0},
    "full, word feedback on the speaker's turns only": {"search_prf_anchored": True},
    "full + speaker scope (entity 0.4, addressed-turn penalty 0.2)": {"search_weight_entity": 0.4,
                                                                      "search_weight_address": 0.2},
    "full - embedding feedback (Rocchio)": {"search_weight_rocchio": 0.0},
    "full - turn priors": {"search_weight_length": 0.0, "search_weight_question_turn": 0.0},
    "full - length prior": {"search_weight_length": 0.0},
    "full - question-turn penalty": {"search_weight_question_turn": 0.0},
    "full - continuation (same speaker's turns next to the best hits)": {"search_weight_continuation": 0.0},
    "full + soft term matching (off by default)": {"search_weight_terms": 0.15},
}
BASELINES = ("cosine", "bm25")


def dia_key(raw: str) -> str | None:
    """``D<session>:<turn>`` with leading zeros dropped, or None for a malformed id."""
    m = _DIA.match(raw.strip())
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else None


def parse_evidence(evidence: Sequence[Any]) -> list[str]:
    """Evidence ids, split on ``;``, ``,`` and spaces, malformed ones dropped (README)."""
    out: list[str] = []
    for item in evidence:
        for part in re.split(r"[;,\s]+", str(item)):
            key = dia_key(part) if part else None
            if key and key not in out:
                out.append(key)
    return out


def session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' as an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_items(sample: dict[str, Any], *, captions: bool) -> list[dict[str, Any]]:
    """``record_events`` items for every turn of one conversation, session by session."""
    conv = sample["conversation"]
    sessions = sorted(
        (int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k)),
    )
    items = []
    for n in sessions:
        when = session_date(conv[f"session_{n}_date_time"])
        for turn in conv[f"session_{n}"]:
            text = str(turn.get("text", "")).strip()
            if captions and turn.get("blip_caption"):
                text = f"{text} [shares an image: {turn['blip_caption']}]".strip()
            key = dia_key(str(turn["dia_id"]))
            if not text or key is None:
                continue
            items.append({
                "kind": "message", "content": text, "role": turn["speaker"], "entities": [turn["speaker"]],
                "session_id": f"session_{n}", "created_at": when, "metadata": {"dia_id": key},
            })
    return items


def load_audit(path: Path) -> dict[tuple[int, int], list[str]]:
    """(conversation index, question index) -> corrected evidence, from the audit errata."""
    if not path.exists():
        return {}
    out: dict[tuple[int, int], list[str]] = {}
    for item in json.loads(path.read_text()):
        m = re.fullmatch(r"locomo_(\d+)_qa(\d+)", str(item.get("question_id", "")))
        if m and "correct_evidence" in item and item["correct_evidence"] is not None:
            out[(int(m.group(1)), int(m.group(2)))] = parse_evidence(item["correct_evidence"])
    return out


class CachingEmbedder:
    """Wraps an embedder and remembers query embeddings in memory (the same questions are asked
    once per configuration). Nothing is written to disk."""

    def __init__(self, inner: Any, disk: Path | None = None) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self._cache: dict[str, np.ndarray] = {}
        self.disk = disk  # optional .npz of text -> vector kept across runs (an ignored local folder)
        if disk is not None and disk.exists():
            with np.load(disk, allow_pickle=False) as data:
                if str(data["model"]) == self.name:
                    self._cache = {str(t): v for t, v in zip(data["texts"], data["vectors"])}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for t, v in zip(missing, self.inner.embed(missing)):
                self._cache[t] = np.asarray(v, dtype=np.float32)
        return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def remember(self, texts: Sequence[str]) -> None:
        """Embed many texts in one batch ahead of time."""
        self.embed(list(texts))

    def forget(self) -> None:
        """Drop cached turn embeddings (keep memory small), unless they are kept on disk."""
        if self.disk is None:
            self._cache.clear()

    def save(self) -> None:
        """Write the cache to ``disk`` (when given): the next run skips embedding the same texts."""
        if self.disk is None or not self._cache:
            return
        self.disk.parent.mkdir(parents=True, exist_ok=True)
        texts = list(self._cache)
        np.savez(self.disk, model=np.array(self.name), texts=np.array(texts),
                 vectors=np.stack([self._cache[t] for t in texts]))


def recall(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Share of ``gold`` among the first ``k`` of ``ranked``."""
    top = set(ranked[:k])
    return sum(1 for g in gold if g in top) / len(gold)


def run(data_dir: Path, *, limit: int | None, captions: bool, configs: Sequence[str],
        embed_cache: Path | None = None, only: Sequence[int] | None = None, int8: bool = False) -> dict[str, Any]:
    """Ingest, search every question under every configuration, and aggregate recall."""
    from rich.progress import track

    from graphmem import Memory
    from graphmem.config import Settings
    from graphmem.embed import SentenceTransformerEmbedder

    data = json.loads((data_dir / "locomo10.json").read_text())
    audit = load_audit(data_dir / "locomo_audit_errors.json")
    chosen = [ci for ci in range(len(data)) if (not limit or ci < limit) and (only is None or ci in only)]
    embedder = CachingEmbedder(SentenceTransformerEmbedder(quantize=int8), embed_cache)
    base = Settings()
    # per config, per evidence variant: list of (category, {k: recall}, conversation index)
    scores: dict[str, dict[str, list[tuple[int, dict[int, float], int]]]] = {
        c: {"original": [], "audited": []} for c in configs
    }
    timing = {"ingest_s": 0.0, "turns": 0, "search_ms": [],
              "search_cpu_ms": {c: [] for c in configs}}  # type: dict[str, Any]
    for ci in track(chosen, description="conversations"):
        sample = data[ci]
        items = turn_items(sample, captions=captions)
        t0 = time.perf_counter()
        mem = Memory(None, user=str(sample.get("sample_id", ci)), embedder=embedder)
        mem.record_events(items)
        timing["ingest_s"] += time.perf_counter() - t0
        timing["turns"] += len(items)
        embedder.forget()
        questions = [(qi, qa) for qi, qa in enumerate(sample["qa"]) if qa.get("question")]
        embedder.remember([str(qa["question"]) for _, qa in questions])
        for name in configs:
            mem.settings = base.model_copy(update=CONFIGS[name])
            for qi, qa in questions:
                t1, c1 = time.perf_counter(), time.process_time()
                hits = mem.search(str(qa["question"]), over="events", k=max(KS))
                timing["search_cpu_ms"][name].append((time.process_time() - c1) * 1e3)
                if name == "full":
                    timing["search_ms"].append((time.perf_counter() - t1) * 1e3)
                ranked = [str(h.node.metadata.get("dia_id")) for h in hits]  # type: ignore[union-attr]
                cat = int(qa.get("category", 0))
                for variant, gold in (("original", parse_evidence(qa.get("evidence", []))),
                                      ("audited", audit.get((ci, qi), parse_evidence(qa.get("evidence", []))))):
                    if gold:
                        scores[name][variant].append((cat, {k: recall(ranked, gold, k) for k in KS}, ci))
        mem.close()
    embedder.save()
    return {"scores": scores, "timing": timing, "conversations": len(chosen), "indices": chosen}


def aggregate(rows: list[tuple[int, dict[int, float], int]]) -> dict[str, Any]:
    """Mean recall (in %) overall and per category, with question counts."""
    out: dict[str, Any] = {"n": len(rows)}
    for k in KS:
        out[f"R@{k}"] = round(100 * float(np.mean([r[k] for _, r, _ in rows])), 1) if rows else None
    per: dict[int, list[dict[int, float]]] = defaultdict(list)
    for cat, r, _ in rows:
        per[cat].append(r)
    out["per_category"] = {
        CATEGORIES.get(c, str(c)): {"n": len(v), **{f"R@{k}": round(100 * float(np.mean([x[k] for x in v])), 1) for k in KS}}
        for c, v in sorted(per.items())
    }
    return out


def report(result: dict[str, Any], json_out: Path | None, png_out: Path | None) -> dict[str, Any]:
    """Print the tables; write JSON and the bar chart."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    summary = {name: {v: aggregate(rows) for v, rows in by.items()} for name, by in result["scores"].items()}
    n_conv = result["conversations"]
    halves = {"tuning half (conversations 0-4)": range(0, 5), "held-out half (conversations 5-9)": range(5, 10)}
    split = {
        half: {name: aggregate([r for r in by["original"] if r[2] in convs]) for name, by in result["scores"].items()}
        for half, convs in halves.items() if any(ci in convs for ci in result.get("indices", range(n_conv)))
    }
    table = Table(title=f"LoCoMo evidence recall (%), {result['conversations']} conversations, search(over='events')")
    table.add_column("ranking")
    for k in KS:
        table.add_column(f"R@{k}", justify="right")
    for k in KS:
        table.add_column(f"R@{k} audited", justify="right")
    for name, by in summary.items():
        table.add_row(name, *[str(by["original"][f"R@{k}"]) for k in KS], *[str(by["audited"][f"R@{k}"]) for k in KS])
    console.print(table)
    if "full" in summary:
        cat_table = Table(title="full ranking per category (original evidence / audited)")
        cat_table.add_column("category")
        cat_table.add_column("n", justify="right")
        for k in KS:
            cat_table.add_column(f"R@{k}", justify="right")
        audited = summary["full"]["audited"]["per_category"]
        for cat, vals in summary["full"]["original"]["per_category"].items():
            other = audited.get(cat, {})
            cat_table.add_row(cat, str(vals["n"]), *[f"{vals[f'R@{k}']} / {other.get(f'R@{k}', '-')}" for k in KS])
        console.print(cat_table)
    for half, by_name in split.items():
        half_table = Table(title=f"R@10 (%) on the {half}, original evidence")
        half_table.add_column("ranking")
        for col in ("all", *CATEGORIES.values()):
            half_table.add_column(col, justify="right")
        for name, agg in by_name.items():
            per = agg["per_category"]
            half_table.add_row(name, str(agg["R@10"]), *[str(per.get(c, {}).get("R@10", "-")) for c in CATEGORIES.values()])
        console.print(half_table)
    ms = result["timing"]["search_ms"]
    timing = {
        "turns": result["timing"]["turns"],
        "ingest_s": round(result["timing"]["ingest_s"], 1),
        "search_p50_ms": round(float(np.percentile(ms, 50)), 1) if ms else None,
        "search_p95_ms": round(float(np.percentile(ms, 95)), 1) if ms else None,
    }
    cpu = result["timing"].get("search_cpu_ms", {})
    timing["search_cpu_ms"] = {name: {"mean": round(float(np.mean(v)), 2), "p50": round(float(np.percentile(v, 50)), 2)}
                               for name, v in cpu.items() if v}
    console.print(f"ingest {timing['turns']} turns in {timing['ingest_s']} s (MiniLM, batched); "
                  f"search p50 {timing['search_p50_ms']} ms, p95 {timing['search_p95_ms']} ms (full ranking)")
    for name, c in timing["search_cpu_ms"].items():
        console.print(f"search CPU time per question, {name}: mean {c['mean']} ms, p50 {c['p50']} ms "
                      "(query embeddings cached)")
    out = {"benchmark": "locomo", "conversations": result["conversations"], "results": summary, "split": split,
           "timing": timing,
           "reference": {"DRAGON (LoCoMo paper)": {"R@5": 56.7, "R@10": 66.2, "R@25": 76.7}}}
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(out, indent=2) + "\n")
        console.print(f"wrote {json_out}")
    if png_out:
        plot(summary, png_out)
        console.print(f"wrote {png_out}")
    return out


def plot(summary: dict[str, Any], path: Path) -> None:
    """Grouped bars: R@5/10/25 per ranking (original evidence)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary)
    x = np.arange(len(names))
    width = 0.27
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(names)), 4.5))
    for i, k in enumerate(KS):
        vals = [summary[n]["original"][f"R@{k}"] or 0 for n in names]
        ax.bar(x + (i - 1) * width, vals, width, label=f"R@{k}")
    ax.axhline(66.2, color="grey", linestyle="--", linewidth=1, label="DRAGON R@10 (paper)")
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("evidence recall (%)")
    ax.set_ylim(0, 100)
    ax.set_title("LoCoMo evidence recall, graphmem search(over='events')")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_indices(text: str | None) -> list[int] | None:
    """'0-4' / '0,3,5-6' as a list of indices; None for None."""
    if not text:
        return None
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.locomo", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data", type=Path, default=Path(os.environ.get("GRAPHMEM_LOCOMO_DATA") or DEFAULT_DATA),
        help="folder holding locomo10.json (default: $GRAPHMEM_LOCOMO_DATA, else ../shared/benchdata/locomo)",
    )
    ap.add_argument("--limit-conversations", type=int, default=None)
    ap.add_argument("--conversations", default=None,
                    help="only these conversation indices, e.g. 0-4 (the tuning half) or 5-9 or 0,3")
    ap.add_argument("--json-out", type=Path, default=None, help="default: benchmarks/results/local/locomo.json")
    ap.add_argument("--png-out", type=Path, default=None, help="default: benchmarks/results/local/locomo.png")
    ap.add_argument("--save", action="store_true",
                    help="write the tracked benchmarks/results/ files (default: benchmarks/results/local/)")
    ap.add_argument("--embed-cache", type=Path, default=None,
                    help="keep MiniLM embeddings of turns and questions in this .npz across runs "
                         "(e.g. benchmarks/results/local/locomo_embeddings.npz; ingest timing then excludes embedding)")
    ap.add_argument("--no-captions", action="store_true", help="leave shared images' captions out of the turns")
    ap.add_argument("--embedder", choices=["minilm", "minilm-int8"], default="minilm",
                    help="minilm-int8: the bundled model with int8 linear layers (give it its own --embed-cache)")
    ap.add_argument("--configs", default=";".join(CONFIGS), help="semicolon-separated subset of: " + ", ".join(CONFIGS))
    args = ap.parse_args(argv)
    if not (args.data / "locomo10.json").exists():
        print(f"locomo: skipped, {args.data / 'locomo10.json'} is absent (download locomo10.json from "
              "https://github.com/snap-research/locomo (folder data/) and pass --data DIR or set GRAPHMEM_LOCOMO_DATA)")
        return 0
    configs = [c.strip() for c in args.configs.split(";") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        print(f"unknown config(s) {unknown}; choose from {list(CONFIGS)}", file=sys.stderr)
        return 2
    result = run(args.data, limit=args.limit_conversations, captions=not args.no_captions, configs=configs,
                 embed_cache=args.embed_cache, only=parse_indices(args.conversations),
                 int8=args.embedder == "minilm-int8")
    out_dir = results_dir(args.save)
    report(result, args.json_out or out_dir / "locomo.json", args.png_out or out_dir / "locomo.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
