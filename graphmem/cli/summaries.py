"""``graphmem refresh``: run the summary refresher once, or as a loop an operator leaves running.

``graphmem --db F refresh`` refreshes the summaries whose staleness reached their threshold;
``--force`` rebuilds all of the user's; ``--all-users`` covers every user's due summaries;
``--watch SECONDS`` repeats every SECONDS with a live status line until Ctrl-C (or SIGTERM). In the loop the
database file is opened only for the duration of each pass, so the file is free in between
(Kùzu allows one process per file); a pass that finds the file locked waits for the next one.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import typer
from rich.live import Live
from rich.text import Text

from graphmem.cli.common import command, console, open_memory, print_json, print_rows, state
from graphmem.errors import DatabaseLockedError
from graphmem.models import Summary


def summary_rows(summaries: list[Summary]) -> list[dict[str, Any]]:
    """The columns `refresh` shows for summaries."""
    return [
        {
            "user": s.user_id,
            "key": s.key,
            "bullets": len([ln for ln in s.text.splitlines() if ln.strip()]),
            "refreshed_at": s.refreshed_at.isoformat(timespec="seconds") if s.refreshed_at else "",
            "text": s.text[:120] + ("…" if len(s.text) > 120 else ""),
        }
        for s in summaries
    ]


def _release() -> None:
    """Close the Memory of this pass so the file is free until the next one."""
    if state._memory is not None:
        mem, state._memory = state._memory, None
        mem.close()


def run_once(*, force: bool, all_users: bool) -> list[Summary]:
    """One refresher pass on a freshly opened Memory, closed afterwards."""
    try:
        mem = open_memory()
        return list(mem.refresh_summaries(force=force, all_users=all_users))
    finally:
        _release()


@dataclass
class WatchStats:
    """What the watch loop has done so far (shown in its status line)."""

    interval: float
    passes: int = 0
    refreshed: int = 0
    busy: int = 0
    last: list[str] = field(default_factory=list)
    next_at: float = 0.0

    def render(self) -> Text:
        """The live status line."""
        wait = max(0.0, self.next_at - time.monotonic())
        last = ", ".join(self.last[:4]) + (" …" if len(self.last) > 4 else "") if self.last else "nothing due"
        line = Text()
        line.append("graphmem refresh ", style="bold")
        line.append(f"every {self.interval:g}s · passes {self.passes} · summaries refreshed {self.refreshed}")
        if self.busy:
            line.append(f" · busy {self.busy}", style="yellow")
        line.append(f"\nlast pass: {last} · next in {wait:4.1f}s · Ctrl-C to stop", style="dim")
        return line


def watch(interval: float, *, force: bool, all_users: bool, json_out: bool) -> WatchStats:
    """Run passes every ``interval`` seconds until KeyboardInterrupt; returns the totals."""
    stats = WatchStats(interval=interval)
    previous_term = signal.signal(signal.SIGTERM, _interrupt) if threading.current_thread() is threading.main_thread() else None
    live = None if json_out else Live(stats.render(), console=console, refresh_per_second=4, transient=False)
    try:
        if live is not None:
            live.start()
        first = True
        while True:
            stats.passes += 1
            try:
                done = run_once(force=force and first, all_users=all_users)
            except DatabaseLockedError:
                stats.busy += 1
                done = []
                stats.last = ["(database busy: another process holds the file)"]
            else:
                stats.refreshed += len(done)
                stats.last = [f"{s.user_id}/{s.key}" for s in done]
            first = False
            if json_out:
                record = {"at": datetime.now(UTC).isoformat(), "pass": stats.passes,
                          "refreshed": [{"user": s.user_id, "key": s.key} for s in done]}
                sys.stdout.write(json.dumps(record) + "\n")
                sys.stdout.flush()
            stats.next_at = time.monotonic() + interval
            while time.monotonic() < stats.next_at:
                if live is not None:
                    live.update(stats.render())
                time.sleep(min(0.25, max(0.0, stats.next_at - time.monotonic())))
    except KeyboardInterrupt:
        pass
    finally:
        if live is not None:
            live.update(stats.render())
            live.stop()
        _release()
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
    return stats


def _interrupt(signum: int, frame: Any) -> None:
    """SIGTERM stops the loop like Ctrl-C (service managers send it)."""
    raise KeyboardInterrupt


@command("refresh")
def refresh_cmd(
    force: bool = typer.Option(False, "--force", help="Rebuild every summary of the user, stale or not."),
    watch_s: float = typer.Option(None, "--watch", metavar="SECONDS", help="Repeat every SECONDS until Ctrl-C."),
    all_users: bool = typer.Option(False, "--all-users", help="Refresh every user's due summaries."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON (one line per pass with --watch)."),
) -> None:
    """Refresh the summaries whose staleness reached their threshold (user_preferences, tools, topics...)."""
    if watch_s is not None:
        if watch_s <= 0:
            from graphmem.errors import InvalidInputError

            raise InvalidInputError(f"--watch takes a number of seconds > 0, got {watch_s}")
        stats = watch(watch_s, force=force, all_users=all_users, json_out=json_out)
        if not json_out:
            console.print(f"stopped after {stats.passes} passes; {stats.refreshed} summaries refreshed")
        return
    done = run_once(force=force, all_users=all_users)
    if json_out:
        print_json(done)
    elif done:
        print_rows(summary_rows(done), title=f"refreshed {len(done)} summaries")
    else:
        console.print("nothing to refresh: no summary has reached its staleness threshold")
