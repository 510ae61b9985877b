"""PNG figures for the benchmarks (matplotlib, Agg backend: no display needed).

- :func:`learnings_bars`: overall P@5 / R@10 / nDCG@10 / MRR per retrieval variant.
- :func:`loop_curves`: success rate per window of episodes, one line per mode (and prior on/off).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def learnings_bars(
    overall: Mapping[str, Mapping[str, Any]],
    path: Path,
    *,
    metrics: Sequence[str] = ("p@5", "r@10", "ndcg@10", "mrr"),
    title: str = "graphmem retrieval (benchmarks/data/learnings.json)",
) -> Path:
    """Grouped bars: one group per metric, one bar per variant (``overall[variant][metric]``)."""
    plt = _pyplot()
    variants = list(overall)
    width = 0.8 / max(1, len(variants))
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for i, variant in enumerate(variants):
        values = [float(overall[variant].get(m) or 0.0) for m in metrics]
        xs = [j + (i - (len(variants) - 1) / 2) * width for j in range(len(metrics))]
        bars = ax.bar(xs, values, width, label=variant)
        for b, v in zip(bars, values):
            ax.text(b.get_x() + b.get_width() / 2, v + 0.01, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(metrics)))
    ax.set_xticklabels([m.upper().replace("NDCG", "nDCG") for m in metrics])
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("mean over queries")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, ncol=len(variants), loc="upper center", bbox_to_anchor=(0.5, -0.08), frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def loop_curves(
    curves: Mapping[str, Sequence[float]],
    window: int,
    path: Path,
    *,
    title: str = "closed-loop success rate per window (python -m benchmarks.loop)",
) -> Path:
    """One line per curve name (e.g. ``"online (prior on)"``): success rate per window of episodes.

    Curves whose name contains "prior off" are dashed, so each mode's pair reads at a glance.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    colours: dict[str, Any] = {}
    for name, rates in curves.items():
        mode = name.split(" (")[0]
        xs = [(i + 1) * window for i in range(len(rates))]
        style = "--" if "prior off" in name else "-"
        kwargs: dict[str, Any] = {"linestyle": style, "marker": "o", "markersize": 3, "label": name}
        if mode in colours:
            kwargs["color"] = colours[mode]
        (line,) = ax.plot(xs, [100.0 * r for r in rates], **kwargs)
        colours.setdefault(mode, line.get_color())
    ax.set_xlabel("episodes")
    ax.set_ylabel(f"success rate per {window} episodes (%)")
    ax.set_ylim(0, 102)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def scale_latency(results: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """context() p50/p95 (back-to-back and isolated) against the number of learnings, log x."""
    plt = _pyplot()
    sizes = [r["learnings"] for r in results]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for key, label, style in (
        ("context_p50_ms", "p50 back-to-back", "o-"), ("context_p95_ms", "p95 back-to-back", "o--"),
        ("context_isolated_p50_ms", "p50 isolated", "s-"), ("context_isolated_p95_ms", "p95 isolated", "s--"),
        ("embed_query_p50_ms", "query embedding alone, p50", "^:"),
    ):
        if all(key in r for r in results):
            ax.plot(sizes, [r[key] for r in results], style, label=label)
    # the targets: p50 <= 15 ms at 10k, p50 <= 20 / p95 <= 35 ms at 100k, p50 <= 40 ms at 1M
    for x, y, mark, label in ((1e4, 15, "_", "target p50"), (1e5, 20, "_", None), (1e6, 40, "_", None),
                              (1e5, 35, "x", "target p95")):
        ax.plot([x], [y], mark, color="red", markersize=18, mew=2, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("learnings in memory")
    ax.set_ylabel("ms")
    ax.set_title("graphmem context() latency (MiniLM, 2 cores)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def named_bars(values: Mapping[str, float], title: str, ylabel: str, path: Path) -> Path:
    """One horizontal bar per named figure (ingest rates, refresh times)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(values) + 1.5))
    names = list(values)
    ax.barh(names, [values[n] for n in names], color="#4c72b0")
    for i, n in enumerate(names):
        ax.text(values[n], i, f" {values[n]:,.1f}", va="center", fontsize=8)
    ax.set_xlabel(ylabel)
    ax.set_title(title)
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
