"""WatchService: how the memory watches itself — weak domains, domain evolution, session
metrics and the auto-tuner's snapshots — for one user, over explicit :class:`~graphmem.deps.Deps`.

``Memory.weaknesses``, ``Memory.domains``, ``Memory.session_metrics`` and
``Memory.tuning_snapshots`` delegate here (tuning steps and rollbacks stay on ``Memory``, because
they change the Memory's effective settings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphmem.domain_evolution import DomainEvolution, DomainReport
from graphmem.inputs import require_count
from graphmem.sessions import SessionMetrics, session_metrics
from graphmem.tuning import TuningService, TuningSnapshot
from graphmem.weakness import WeaknessReport, WeaknessTrainer

if TYPE_CHECKING:
    from graphmem.deps import Deps


class WatchService:
    """Self-observation of one user's memory (see the module docstring)."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def weaknesses(self, *, train: bool = True, top: int | None = None) -> WeaknessReport:
        """Find weak domains from surprise moments and, with ``train``, store lessons for the ``top``
        weakest as candidate learnings (WeaknessReport). See README "How it watches its own domains"."""
        report = WeaknessTrainer(self.deps, on_changed=self.deps.changed_hook).run(train=train, top=top)
        if report.lessons:
            self.deps.after_write()
        return report

    def domains(self, *, record: bool = True) -> DomainReport:
        """Per domain: learnings, follow rate, surprises, events since the last run and gaps; with
        ``record``, store a snapshot of what changed (DomainReport)."""
        return DomainEvolution(self.deps).run(record=record)

    def session_metrics(self, session_id: str | None = None, *, limit: int = 20) -> list[SessionMetrics]:
        """Per-session figures (README "Session metrics"): one session, or the ``limit`` latest."""
        return session_metrics(self.deps, session_id, limit)

    def tuning_snapshots(self, limit: int = 10) -> list[TuningSnapshot]:
        """This user's TuningSnapshots (auto-tuning), newest first."""
        return TuningService(self.deps).snapshots(require_count("limit", limit))
