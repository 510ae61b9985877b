"""Traces, judges and the reflector (seed 002), in its three modes.

- ``Memory.add_judge(name, criteria, node=None)``: a named LLM judge with its own criteria, for one
  node (agent step) or, with ``node=None``, for every node. Judges belong to the user who adds them
  (adding one of your existing names replaces its criteria and node; another user's judge of the
  same name is never touched). The built-in ``correctness`` judge is shared; a user's own judge
  of that name shadows it for that user only.
- ``Memory.trace(input_text, output, *, node, ground_truth=None, reasoning=None, mode="online")``:
  every judge for ``node`` (or a default ``correctness`` judge when none is configured) gives a
  verdict; the Trace and its Verdicts are stored (Trace-[:JUDGED]->Verdict-[:EVALUATED_BY]->Judge).
  When a verdict failed and the mode learns, the reflector writes bullets that become learnings
  (``source_type`` "online", or "offline" from :func:`train`), ``tool=node`` (so
  ``context(tool=node)`` finds them), DERIVED_FROM the Trace, through the curator.
- Modes: ``"vanilla"`` stores and judges, learns nothing; ``"online"`` (alias ``"online_only"``)
  and ``"offline+online"`` (alias ``"offline_online"``) learn online bullets from each trace (the
  difference is only whether offline training ran first, which the caller decides);
  ``"offline"`` is what :func:`train` uses. Anything else: InvalidInputError.
- ``Memory.train(examples, node=..., mode="offline")``: the offline mode over a dataset of dicts
  (``input_text``, ``output``, optional ``ground_truth``, ``reasoning``, ``node``); all examples are
  validated before any is run; an example whose LLM call fails is counted in ``errors`` and skipped.

Every LLM call of a trace (judges, then the reflector) runs before anything is written: an
LLMError propagates from :func:`trace` and nothing is stored. Trace outputs are untrusted: the
curator screens every bullet, and the output it came from, for injected instructions (refused when
sure, kept as a candidate when in doubt; see :mod:`graphmem.learn.screening`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from graphmem.errors import InvalidInputError, LLMError
from graphmem.inputs import optional_string, optional_text, require_text
from graphmem.learn.curator import Curator
from graphmem.learnings import LearningService
from graphmem.llm.prompts import judge_request, reflector_request
from graphmem.llm.schemas import JudgeVerdict, ReflectorOutput
from graphmem.models import Learning, new_id

if TYPE_CHECKING:
    from graphmem.deps import Deps

log = logging.getLogger("graphmem.learn")

DEFAULT_JUDGE = "correctness"
DEFAULT_CRITERIA = (
    "The output correctly and completely answers the input; when a ground truth is given, the output "
    "must agree with it."
)
MODES: dict[str, str | None] = {
    "vanilla": None,
    "online": "online",
    "online_only": "online",
    "offline+online": "online",
    "offline_online": "online",
    "offline": "offline",
}
"""Accepted modes → the source_type of the learnings they write (None: learn nothing)."""
_CANONICAL = {"online_only": "online", "offline_online": "offline+online"}


class VerdictResult(BaseModel):
    """One judge's verdict on a trace."""

    model_config = ConfigDict(frozen=True)

    judge: str
    passed: bool
    score: float
    reasoning: str


class TraceResult(BaseModel):
    """What :func:`trace` stored and learned."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    node: str
    mode: str
    passed: bool = Field(description="True when every judge passed the output.")
    verdicts: list[VerdictResult] = Field(default_factory=list)
    learnings: list[Learning] = Field(default_factory=list)


class TrainReport(BaseModel):
    """What :func:`train` did over a dataset."""

    model_config = ConfigDict(frozen=True)

    examples: int
    passed: int
    failed: int
    errors: int
    learnings: list[Learning] = Field(default_factory=list)
    trace_ids: list[str] = Field(default_factory=list)

    def stored(self) -> list[str]:
        """One line per learning: what was stored and where it went (served advice, candidate,
        or a shadow observation that context() never serves)."""
        lines = []
        for l in self.learnings:
            if l.kind == "observation" and l.status == "shadow":
                where = "shadow observation: not actionable enough, never served"
            elif l.status == "active":
                where = f"active {l.kind}: served by context()"
            else:
                where = f"{l.status} {l.kind}: enters the lifecycle, not served yet"
            lines.append(f"{l.id[:8]} {where}: {l.content[:100]}")
        return lines


def add_judge(deps: Deps, name: str, criteria: str, node: str | None = None) -> dict[str, Any]:
    """Configure a judge; returns ``{"name", "criteria", "node"}``."""
    judge = require_text("name", name, max_chars=200)
    text = require_text("criteria", criteria, max_chars=deps.settings.max_content_chars)
    scope = optional_text("node", node, max_chars=200)
    with deps.store.transaction():
        deps.store.upsert_judge(judge, text, scope, deps.now(), user_id=deps.user)
    return {"name": judge, "criteria": text, "node": scope}


def _mode(mode: Any) -> str:
    if not isinstance(mode, str) or mode not in MODES:
        raise InvalidInputError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
    return _CANONICAL.get(mode, mode)


def trace(
    deps: Deps,
    input_text: str,
    output: str,
    *,
    node: str,
    ground_truth: str | None = None,
    reasoning: str | None = None,
    mode: str = "online",
    session_id: str | None = None,
) -> TraceResult:
    """Judge one output, store the trace and verdicts, and learn from failures (see module doc)."""
    mode = _mode(mode)
    session_id = optional_string("session_id", session_id)
    limit = deps.settings.max_content_chars
    node_name = require_text("node", node, max_chars=200)
    inp = require_text("input_text", input_text, max_chars=limit)
    out = require_text("output", output, max_chars=limit, allow_empty=True)
    truth = optional_text("ground_truth", ground_truth, max_chars=limit)
    why = optional_text("reasoning", reasoning, max_chars=limit)
    judges = deps.store.judges_for(node_name, deps.user) or [
        {"name": DEFAULT_JUDGE, "criteria": DEFAULT_CRITERIA, "node": None, "key": DEFAULT_JUDGE}
    ]
    verdicts: list[VerdictResult] = []
    for judge in judges:
        answer = deps.llm.generate(
            judge_request(judge["name"], judge["criteria"], inp, out, truth, why), JudgeVerdict
        )
        verdicts.append(VerdictResult(judge=judge["name"], passed=answer.passed, score=answer.score,
                                      reasoning=answer.reasoning))
    passed = all(v.passed for v in verdicts)
    source_type = MODES[mode]
    bullets: ReflectorOutput | None = None
    if not passed and source_type is not None:
        bullets = deps.llm.generate(
            reflector_request(inp, out, truth, why, [v.model_dump() for v in verdicts]), ReflectorOutput
        )
    now = deps.now()
    trace_id = new_id()
    with deps.store.transaction():
        uses_default = any(j["key"] == DEFAULT_JUDGE for j in judges)
        if uses_default and not any(j["name"] == DEFAULT_JUDGE for j in deps.store.judges_for(None)):
            deps.store.upsert_judge(DEFAULT_JUDGE, DEFAULT_CRITERIA, None, now)
        deps.store.insert_trace({
            "id": trace_id, "user_id": deps.user, "node": node_name, "mode": mode, "input_text": inp,
            "output": out, "ground_truth": truth, "reasoning": why, "passed": passed, "pattern_id": None,
            "created_at": now, "session_id": session_id,
        })
        for v, judge in zip(verdicts, judges):
            deps.store.insert_verdict(trace_id, new_id(), v.judge, v.passed, v.score, v.reasoning, now,
                                        judge_key=judge["key"])
    learned: list[Learning] = []
    if bullets is not None and source_type is not None:
        learned = _store_bullets(deps, bullets, node_name, source_type, trace_id, out)
    return TraceResult(trace_id=trace_id, node=node_name, mode=mode, passed=passed, verdicts=verdicts,
                       learnings=learned)


def _store_bullets(
    deps: Deps, bullets: ReflectorOutput, node: str, source_type: str, trace_id: str, output: str = ""
) -> list[Learning]:
    curator = Curator(deps)
    out: list[Learning] = []
    status = deps.settings.reflector_bullet_status
    for bullet in bullets.bullets:
        try:
            learning, links = LearningService(deps).make_learning(
                bullet.content, kind="rule", tool=node, recommendation=bullet.recommendation,
                applies_when=bullet.applies_when, source_type=source_type, confidence=0.5, status=status,
            )
        except InvalidInputError as e:
            log.error("graphmem: skipped an unusable reflector bullet for trace %s: %s", trace_id, e)
            continue
        result = curator.curate(learning, links, derived=[("Trace", trace_id)], source_text=output, channel="trace")
        if result.learning is not None and all(x.id != result.learning.id for x in out):
            out.append(result.learning)
    return out


_EXAMPLE_KEYS = frozenset({"input_text", "output", "ground_truth", "reasoning", "node"})


def train(
    deps: Deps, examples: Sequence[Mapping[str, Any]], *, node: str = "default", mode: str = "offline"
) -> TrainReport:
    """Offline mode over a dataset: trace every example, learning ``offline`` bullets from failures."""
    mode = _mode(mode)
    if isinstance(examples, (str, bytes, Mapping)) or not isinstance(examples, Sequence):
        raise InvalidInputError("examples must be a list of dicts with input_text, output (and ground_truth)")
    for i, ex in enumerate(examples):
        if not isinstance(ex, Mapping):
            raise InvalidInputError(f"example {i} must be a dict, got {type(ex).__name__}")
        unknown = sorted(set(ex) - _EXAMPLE_KEYS)
        if unknown:
            raise InvalidInputError(f"example {i}: unknown field(s) {', '.join(unknown)}; use {', '.join(sorted(_EXAMPLE_KEYS))}")
        if not isinstance(ex.get("input_text"), str) or not ex["input_text"].strip():
            raise InvalidInputError(f"example {i} needs a non-empty 'input_text'")
        if not isinstance(ex.get("output"), str):
            raise InvalidInputError(f"example {i} needs an 'output' string")
    passed = failed = errors = 0
    learned: dict[str, Learning] = {}
    trace_ids: list[str] = []
    for i, ex in enumerate(examples):
        try:
            result = trace(
                deps, ex["input_text"], ex["output"], node=ex.get("node") or node,
                ground_truth=ex.get("ground_truth"), reasoning=ex.get("reasoning"), mode=mode,
            )
        except LLMError as e:
            log.error("graphmem: train example %d skipped, the LLM failed: %s", i, e)
            errors += 1
            continue
        trace_ids.append(result.trace_id)
        passed, failed = passed + result.passed, failed + (not result.passed)
        for learning in result.learnings:
            learned[learning.id] = learning
    return TrainReport(examples=len(examples), passed=passed, failed=failed, errors=errors,
                       learnings=list(learned.values()), trace_ids=trace_ids)


__all__ = [
    "DEFAULT_CRITERIA",
    "DEFAULT_JUDGE",
    "MODES",
    "TraceResult",
    "TrainReport",
    "VerdictResult",
    "add_judge",
    "trace",
    "train",
]
