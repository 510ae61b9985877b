"""Prometheus metrics of the server (``GET /metrics``), in a registry of its own per app."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

if TYPE_CHECKING:
    from graphmem.memory import Memory

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _Gate(Protocol):
    @property
    def in_flight(self) -> int: ...
    @property
    def rejected(self) -> int: ...


class Observed(Protocol):
    """What the metrics read from the server's owner (:class:`graphmem.server.core.Owner`)."""

    @property
    def root(self) -> Memory: ...
    @property
    def gate(self) -> _Gate: ...
    @property
    def last_refresh(self) -> float | None: ...
    @property
    def last_cycle(self) -> float | None: ...


class Metrics:
    """Request counts and latencies per endpoint, graph sizes, refresher and cycle times."""

    def __init__(self, owner: Observed) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "graphmem_requests", "HTTP requests by endpoint, method and status", ["endpoint", "method", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "graphmem_request_seconds", "HTTP request latency by endpoint", ["endpoint", "method"],
            buckets=_BUCKETS, registry=r,
        )
        self.summaries_refreshed = Counter(
            "graphmem_summaries_refreshed", "Summaries refreshed (background and on request)", registry=r
        )
        self.cycles = Counter("graphmem_cycles", "Lifecycle cycles run", registry=r)
        self.context_cpu = Counter(
            "graphmem_context_cpu_seconds", "CPU time the request threads spent in Memory.context (their own clock)",
            registry=r,
        )
        store = owner.root.store
        Gauge("graphmem_learnings", "Learnings in the database", registry=r).set_function(
            lambda: float(len(store.learning_catalog))
        )
        Gauge("graphmem_events", "Events in the database", registry=r).set_function(
            lambda: float(len(store.event_catalog))
        )
        Gauge(
            "graphmem_last_refresh_timestamp_seconds", "Unix time of the last summaries refresh (0: none yet)",
            registry=r,
        ).set_function(lambda: float(owner.last_refresh or 0.0))
        Gauge(
            "graphmem_last_cycle_timestamp_seconds", "Unix time of the last lifecycle cycle (0: none yet)",
            registry=r,
        ).set_function(lambda: float(owner.last_cycle or 0.0))
        Gauge("graphmem_writes_in_flight", "Writes admitted (running or waiting)", registry=r).set_function(
            lambda: float(owner.gate.in_flight)
        )
        Gauge("graphmem_writes_rejected", "Writes refused with 503 since start", registry=r).set_function(
            lambda: float(owner.gate.rejected)
        )

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)
