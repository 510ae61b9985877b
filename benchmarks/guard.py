"""The retrieval regression guard (seed 003 system 6): a JSONL history, floor/drop/noise checks, a trend.

    python -m benchmarks.guard [--history benchmarks/results/history.jsonl] [--embedder minilm]

prints the trend report of the stored history. ``python -m benchmarks.learnings --check``
(and ``graphmem bench learnings --check``) measures, checks and appends one entry.

A run fails when (thresholds from :class:`graphmem.config.Settings`):

- its hybrid P@5 is under ``p5_floor`` (0.45);
- its P@5 is more than ``p5_drop_alert`` (0.08) below the rolling average of the last
  ``guard_rolling_window`` (5) passing runs *with the same embedder* (MiniLM and the hash
  embedder are different retrievers, their figures are never compared);
- its noise (disabled, archived, superseded, expired or another user's learnings returned in the
  top 10 over all queries) exceeds ``noise_max`` (0).

Every run is appended with its status (``OK`` or ``ALERT``) and its alerts; the rolling average
only takes passing runs, so a regression never becomes the new normal by being recorded. The file
keeps the last :data:`HISTORY_CAP` entries.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphmem.config import Settings

REPO = Path(__file__).resolve().parents[1]
DEFAULT_HISTORY = REPO / "benchmarks" / "results" / "history.jsonl"
HISTORY_CAP = 365
#: A change in P@5 smaller than this (vs the rolling average) reads as "stable".
STABLE_BAND = 0.01

Entry = dict[str, Any]


def git_commit(repo: Path = REPO) -> str | None:
    """The short commit hash of ``repo``'s HEAD, with ``+dirty`` when files differ; None without git."""
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head or None


def load_history(path: Path) -> list[Entry]:
    """Every entry of a JSONL history, oldest first ([] when the file is absent); bad lines skipped."""
    if not path.exists():
        return []
    out: list[Entry] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict) and isinstance(item.get("p5"), (int, float)):
            out.append(item)
    return out


def append_history(path: Path, entry: Mapping[str, Any], cap: int = HISTORY_CAP) -> None:
    """Append one entry, keeping at most ``cap`` (the newest)."""
    history = [*load_history(path), dict(entry)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in history[-cap:]), encoding="utf-8")


def comparable(history: Sequence[Mapping[str, Any]], embedder: str, *, passing_only: bool = True) -> list[Mapping[str, Any]]:
    """The entries measured with ``embedder`` (and, by default, only those whose status is OK)."""
    return [
        e for e in history
        if e.get("embedder") == embedder and (not passing_only or e.get("status", "OK") == "OK")
    ]


def rolling_average(history: Sequence[Mapping[str, Any]], embedder: str, window: int) -> float | None:
    """Mean P@5 of the last ``window`` passing runs with ``embedder``; None when there are none."""
    runs = comparable(history, embedder)[-window:] if window > 0 else []
    if not runs:
        return None
    return sum(float(e["p5"]) for e in runs) / len(runs)


def check(
    p5: float,
    noise: int,
    history: Sequence[Mapping[str, Any]],
    embedder: str,
    settings: Settings | None = None,
    ceiling: float | None = None,
) -> list[str]:
    """The alerts for one measurement against the history *before* it ([] when it passes).

    With ``ceiling`` (the best P@5 any ranking can reach on the labelled set: many queries have
    fewer than 5 relevant learnings), the floor applies to P@5 / ceiling, the share of the
    reachable precision; seed 003's absolute 0.45 floor assumed a set where 1.0 is reachable.
    The drop check compares raw P@5 with earlier runs on the same set.
    """
    s = settings or Settings()
    alerts: list[str] = []
    if ceiling:
        if p5 / ceiling < s.p5_floor:
            alerts.append(
                f"P@5 {p5:.3f} is {p5 / ceiling:.2f} of the reachable {ceiling:.3f}, under the floor {s.p5_floor:.2f}"
            )
    elif p5 < s.p5_floor:
        alerts.append(f"P@5 {p5:.3f} is under the floor {s.p5_floor:.2f}")
    avg = rolling_average(history, embedder, s.guard_rolling_window)
    if avg is not None and avg - p5 > s.p5_drop_alert:
        alerts.append(
            f"P@5 {p5:.3f} dropped {avg - p5:.3f} below the rolling average {avg:.3f} of the last "
            f"{min(s.guard_rolling_window, len(comparable(history, embedder)))} {embedder} run(s) "
            f"(allowed {s.p5_drop_alert:.2f})"
        )
    if noise > s.noise_max:
        alerts.append(f"noise {noise} > {s.noise_max}: ineligible learnings were returned")
    return alerts


def make_entry(
    p5: float,
    noise: int,
    *,
    embedder: str,
    alerts: Sequence[str],
    per_kind: Mapping[str, float | None] | None = None,
    extra: Mapping[str, Any] | None = None,
    timestamp: datetime | None = None,
    commit: str | None = None,
) -> Entry:
    """One history line: timestamp, commit, embedder, P@5, noise, per-kind P@5, status, alerts."""
    entry: Entry = {
        "timestamp": (timestamp or datetime.now(UTC)).isoformat(timespec="seconds"),
        "commit": commit,
        "embedder": embedder,
        "p5": round(float(p5), 4),
        "noise": int(noise),
        "per_kind": {k: (None if v is None else round(float(v), 4)) for k, v in (per_kind or {}).items()},
        "status": "ALERT" if alerts else "OK",
        "alerts": list(alerts),
    }
    if extra:
        entry.update(extra)
    return entry


def trend(history: Sequence[Mapping[str, Any]], embedder: str, window: int = 5) -> dict[str, Any]:
    """Best, worst, latest, rolling average (of the passing runs before the latest), direction, per kind.

    Direction compares the latest P@5 with that rolling average: improving / degrading beyond
    :data:`STABLE_BAND`, else stable ("new" when there is nothing to compare with).
    """
    runs = comparable(history, embedder, passing_only=False)
    if not runs:
        return {"embedder": embedder, "runs": 0}
    latest = runs[-1]
    idx = max(i for i, e in enumerate(history) if e is latest)
    before = list(history)[:idx]
    avg = rolling_average(before, embedder, window)
    p5s = [float(e["p5"]) for e in runs]
    if avg is None:
        direction = "new"
    elif float(latest["p5"]) - avg > STABLE_BAND:
        direction = "improving"
    elif avg - float(latest["p5"]) > STABLE_BAND:
        direction = "degrading"
    else:
        direction = "stable"
    kinds: dict[str, dict[str, float | None]] = {}
    recent = runs[-window:]
    for kind in latest.get("per_kind", {}):
        vals = [e["per_kind"].get(kind) for e in recent if isinstance(e.get("per_kind"), dict)]
        nums = [float(v) for v in vals if isinstance(v, (int, float))]
        kinds[kind] = {"latest": latest["per_kind"].get(kind), "rolling": sum(nums) / len(nums) if nums else None}
    return {
        "embedder": embedder,
        "runs": len(runs),
        "best": max(p5s),
        "worst": min(p5s),
        "latest": float(latest["p5"]),
        "latest_status": latest.get("status", "OK"),
        "rolling_average": avg,
        "rolling_window": window,
        "direction": direction,
        "alerts": sum(1 for e in runs if e.get("status") == "ALERT"),
        "per_kind": kinds,
        "recent": [
            {"timestamp": e.get("timestamp"), "commit": e.get("commit"), "p5": e["p5"], "noise": e.get("noise"),
             "status": e.get("status", "OK")}
            for e in recent
        ],
    }


def print_trend(report: Mapping[str, Any], console: Any = None) -> None:
    """The trend report as rich tables (seed 003: best/worst, rolling average, direction, per kind)."""
    from rich.console import Console
    from rich.table import Table

    con = console or Console()
    if not report.get("runs"):
        con.print(f"guard: no history yet for embedder {report.get('embedder')!r}")
        return
    avg = report["rolling_average"]
    con.print(
        f"[bold]P@5 trend ({report['embedder']})[/bold]: {report['runs']} run(s), best {report['best']:.3f}, "
        f"worst {report['worst']:.3f}, latest {report['latest']:.3f} ({report['latest_status']}), "
        f"rolling average of the previous {report['rolling_window']} passing "
        f"{'n/a' if avg is None else f'{avg:.3f}'}, direction [bold]{report['direction']}[/bold]",
        highlight=False,
    )
    table = Table(title="recent runs")
    for col in ("timestamp", "commit", "P@5", "noise", "status"):
        table.add_column(col)
    for e in report["recent"]:
        table.add_row(str(e["timestamp"]), str(e["commit"]), f"{e['p5']:.3f}", str(e["noise"]), e["status"])
    con.print(table)
    if report["per_kind"]:
        kt = Table(title="P@5 per query kind (latest / rolling)")
        kt.add_column("kind")
        kt.add_column("latest", justify="right")
        kt.add_column("rolling", justify="right")
        for kind, v in report["per_kind"].items():
            kt.add_row(kind, _fmt(v["latest"]), _fmt(v["rolling"]))
        con.print(kt)


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{float(v):.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the trend report of the stored history."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.guard", description=__doc__.split("\n\n")[0])
    ap.add_argument("--history", type=Path, default=DEFAULT_HISTORY)
    ap.add_argument("--embedder", default=None, help="whose runs (default: the latest run's embedder)")
    args = ap.parse_args(argv)
    history = load_history(args.history)
    if not history:
        print(f"guard: no history at {args.history}")
        return 0
    embedder = args.embedder or str(history[-1].get("embedder"))
    print_trend(trend(history, embedder, Settings().guard_rolling_window))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
