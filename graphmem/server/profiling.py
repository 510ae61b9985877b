"""Where the server's CPU goes: an opt-in profile, for measuring (never on by default).

Set ``GRAPHMEM_SERVER_PROFILE=PATH`` before ``graphmem serve``: the event loop thread is profiled
as a whole and every Memory call the routes make (``deps.read`` / ``deps.write``) on the worker
threads, with ``cProfile`` timed by each thread's own CPU clock (``time.thread_time``). When the
server stops, ``PATH`` (JSON) holds each thread's CPU time from ``/proc`` with its role
(``event-loop``, ``worker``, ``writer``, ``native`` for threads Python did not start, e.g. the
database's), and the top functions by own CPU time; ``PATH.prof`` holds the merged cProfile data
(``python -m pstats PATH.prof``).

Calls into C that release the GIL (the database's query execution, numpy's BLAS) show up as
builtins; everything else the profiled threads spend is Python run under the GIL.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

ENV = "GRAPHMEM_SERVER_PROFILE"


class ServerProfile:
    """cProfile per thread (thread CPU clock), merged and written at shutdown."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._profiles: list[cProfile.Profile] = []
        self._lock = threading.Lock()
        self._others: list[tuple[str, cProfile.Profile]] = []
        self._loop: cProfile.Profile | None = None
        self._loop_tid: int | None = None
        self.calls = 0
        self.worker_cpu_s = 0.0  # CPU of the profiled calls (worker threads may exit before the report)

    def _profile(self) -> cProfile.Profile:
        prof = getattr(self._local, "prof", None)
        if prof is None:
            prof = cProfile.Profile(time.thread_time)
            self._local.prof = prof
            with self._lock:
                self._profiles.append(prof)
        return prof

    def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` profiled on this (worker) thread."""
        prof = self._profile()
        t0 = time.thread_time()
        prof.enable()
        try:
            return fn()
        finally:
            prof.disable()
            with self._lock:
                self.calls += 1
                self.worker_cpu_s += time.thread_time() - t0

    def start_loop(self) -> None:
        """Profile the calling thread (the event loop's) until :meth:`stop_loop`, and every
        thread started from now on that is not a worker (the store's writer)."""
        self._loop = cProfile.Profile(time.thread_time)
        self._loop_tid = threading.get_native_id()
        self._loop.enable()
        threading.setprofile(self._thread_started)

    def _thread_started(self, *_: Any) -> None:
        sys.setprofile(None)
        name = threading.current_thread().name
        if name.startswith("AnyIO worker"):
            return  # profiled per call by run()
        prof = cProfile.Profile(time.thread_time)
        with self._lock:
            self._others.append((name, prof))
        prof.enable()

    def stop_loop(self) -> None:
        """Stop the event loop's profile and write the report."""
        threading.setprofile(None)  # type: ignore[arg-type]
        if self._loop is not None:
            self._loop.disable()
        self.write()

    def write(self) -> None:
        """The JSON report and the merged pstats file."""
        threads = thread_cpu(self._loop_tid)
        merged: pstats.Stats | None = None
        groups: dict[str, Any] = {}
        others: dict[str, list[cProfile.Profile]] = {}
        for name, prof in list(self._others):
            others.setdefault(name.split("-")[0] if name.startswith("Thread-") else name, []).append(prof)
        cpu: dict[str, float] = {"workers (profiled calls)": self.worker_cpu_s}
        for name, profs in (("event-loop", [self._loop] if self._loop else []), ("workers", list(self._profiles)),
                            *others.items()):
            stats: pstats.Stats | None = None
            for p in profs:
                stats = pstats.Stats(p) if stats is None else (stats.add(p) or stats)
                merged = pstats.Stats(p) if merged is None else (merged.add(p) or merged)
            if stats is not None:
                groups[name] = top(stats)
                if name != "workers":
                    cpu[name] = stats.total_tt  # type: ignore[attr-defined]
        if merged is not None:
            merged.dump_stats(str(self.path) + ".prof")
        self.path.write_text(json.dumps({"profiled_calls": self.calls, "profiled_cpu_s": cpu,
                                               "threads": threads, "top": groups}, indent=1))


def top(stats: pstats.Stats, n: int = 40) -> list[dict[str, Any]]:
    """The ``n`` functions with the most own CPU time (ms), with cumulative time and calls."""
    rows = []
    for (file, line, func), (_cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(file).name}:{line}({func})", "calls": nc,
                     "own_ms": round(tt * 1e3, 1), "cum_ms": round(ct * 1e3, 1)})
    rows.sort(key=lambda r: -r["own_ms"])
    return rows[:n]


def thread_cpu(loop_tid: int | None = None) -> list[dict[str, Any]]:
    """Every thread of this process: native id, role, name, CPU ms (Linux /proc; [] elsewhere)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    out: list[dict[str, Any]] = []
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu = (int(fields[11]) + int(fields[12])) * 1e3 / tick
        name = names.get(int(tid), "")
        if int(tid) == loop_tid:
            role = "event-loop"
        elif name.startswith("AnyIO worker"):
            role = "worker"
        elif name.startswith("graphmem-writer"):
            role = "writer"
        elif name:
            role = "python:" + name
        else:
            role = "native"
        out.append({"tid": int(tid), "role": role, "name": name, "cpu_ms": cpu})
    return out


ACTIVE: ServerProfile | None = None  # set by loop_profile() while a profiled server runs


def active() -> ServerProfile | None:
    """The profile of this process when ``GRAPHMEM_SERVER_PROFILE`` is set, else None."""
    global ACTIVE
    path = os.environ.get(ENV)
    if not path:
        return None
    if ACTIVE is None:
        ACTIVE = ServerProfile(path)
    return ACTIVE


@contextmanager
def loop_profile() -> Iterator[None]:
    """Around the app's lifespan: profiles the event loop thread when the switch is on."""
    prof = active()
    if prof is None:
        yield
        return
    prof.start_loop()
    try:
        yield
    finally:
        prof.stop_loop()
