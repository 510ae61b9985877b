"""The self-improvement service: prompt versions with A/B tests, distillation, bullet
evolution and failures turned into tests.

``Memory.add_prompt(...)``, ``Memory.distill()`` etc. delegate here, and the lifecycle runs the
same steps. Thin methods: the work is done by :mod:`graphmem.prompts`, :mod:`graphmem.distill`,
:mod:`graphmem.evolution` and :mod:`graphmem.regression`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from graphmem.distill import Distiller, DistillReport
from graphmem.evolution import EvolutionReport, Evolver
from graphmem.inputs import optional_string, require_bool, require_text
from graphmem.prompts import ABTest, PromptServe, PromptService, PromptVersion
from graphmem.regression import TestExport

if TYPE_CHECKING:
    from graphmem.deps import Deps


class ImproveService:
    """add_prompt, prompts, active_prompt, prompt_for, prompt_test, propose_prompt,
    credit_prompts, distill, export_tests, evolve for ``deps.user``."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def prompt_service(self) -> PromptService:
        """The prompt versions of ``deps.user``."""
        d = self.deps
        return PromptService(d.store, d.embedder, d.settings, d.now, d.user, d.llm)

    def add_prompt(self, role: str, text: str, *, activate: bool = False, description: str | None = None) -> PromptVersion:
        """Store a new version of ``role``'s prompt. The first version is active; a later one
        becomes the candidate of an A/B test against the active version (``activate=True``:
        it replaces the active one at once, which is deprecated). See README "Prompt versions"."""
        return self.prompt_service().add(role, text, activate=require_bool("activate", activate),
                                          description=description)

    def prompts(self, role: str | None = None) -> list[PromptVersion]:
        """Every prompt version (of one ``role``) with its state and performance."""
        return self.prompt_service().versions(role)

    def active_prompt(self, role: str) -> PromptVersion:
        """The role's highest confidence × success-rate non-deprecated version not under test."""
        return self.prompt_service().active(role)

    def prompt_for(self, role: str, *, session_id: str | None = None, context_id: str | None = None) -> PromptServe:
        """The prompt to use now: the active version, or the candidate for the share of sessions
        ``Settings.prompt_ab_allocation`` while one is tested (the same session always gets the
        same version). Pass ``context_id`` (from ``context()``) to record the serve in that
        context; else a context is made. ``record_outcome(serve.context_id, ...)`` credits the
        version served."""
        if context_id is not None:
            from graphmem.trust import own_application

            context_id = own_application(self.deps, require_text("context_id", context_id, max_chars=200)).id
        return self.prompt_service().serve(role, session_id=optional_string("session_id", session_id),
                                            context_id=context_id)

    def prompt_test(self, role: str) -> ABTest:
        """Where ``role``'s A/B test stands: outcomes per arm, P(candidate better), the decision
        the next cycle would take."""
        return self.prompt_service().test(role)

    def propose_prompt(self, role: str, feedback: Iterable[str] | str) -> PromptVersion:
        """Let the reflector write a candidate version of ``role``'s prompt from negative
        feedback on the active one; it enters the A/B test like any candidate."""
        notes = [feedback] if isinstance(feedback, str) else list(feedback)
        return self.prompt_service().propose(role, notes)

    def credit_prompts(self, context_id: str, verdict: str) -> list[str]:
        """After an outcome: credit the prompt versions served in that context."""
        return self.prompt_service().credit(context_id, verdict)

    def distill(self, *, similarity: float | None = None, min_size: int | None = None) -> DistillReport:
        """Distil clusters of similar episodic learnings (observations, reflection rules) into
        rules with DERIVED_FROM edges to their members, which move to the archive tier.
        Incremental; also a step of ``run_cycle()``. ``similarity`` / ``min_size`` override
        ``Settings.distill_similarity`` / ``distill_min_size`` for this run. See README
        "Distillation"."""
        settings = self.deps.settings
        overrides = {k: v for k, v in (("distill_similarity", similarity), ("distill_min_size", min_size)) if v is not None}
        if overrides:
            from graphmem.config import Settings

            settings = Settings(**{**self.deps.settings.model_dump(), **overrides})  # validated
        d = self.deps
        report = Distiller(d.store, d.embedder, settings, d.now, d.user, d.llm, on_changed=d.changed_hook).run()
        if report.rules:
            self.deps.after_write()  # inline summary refreshes, if due
        return report

    def export_tests(self, directory: str | os.PathLike[str], *, agent: str) -> TestExport:
        """Turn this user's judged failures that later got a fix (a learning derived from the
        failed trace) into behaviour specs (YAML) and a pytest file that replays each input
        through ``agent`` (an import path ``module:function``). See README "From failures to tests"."""
        from graphmem import regression
        from graphmem.inputs import require_path

        require_path("directory", directory)
        return regression.export_tests(self.deps.store, self.deps.user, directory, agent=agent)

    def evolve(self, learning_id: str | None = None, *, judge: str | None = None) -> EvolutionReport:
        """Bullet evolution: rewrite a learning that keeps failing by LLM crossover with its most
        helpful siblings (same tool/topic), test the candidates and the original on the cases
        where it failed with the same judges, and let the fittest candidate SUPERSEDE it when it
        beats it (``source_type="evolution"``, EVOLVED_FROM its parents). ``learning_id=None``:
        every failing learning (harmful ≥ helpful after ``Settings.evolve_min_ratings``), as
        ``run_cycle()`` does. ``judge``: test with that judge only. See README "Bullet evolution"."""
        d = self.deps
        evolver = Evolver(d.store, d.embedder, d.llm, d.settings, d.now, d.user, on_changed=d.changed_hook)
        who = optional_string("judge", judge)
        if learning_id is None:
            report = evolver.run(judge=who)
        else:
            report = EvolutionReport(results=[evolver.evolve(require_text("learning_id", learning_id, max_chars=200),
                                                             judge=who)])
        if report.evolved:
            self.deps.after_write()
        return report
