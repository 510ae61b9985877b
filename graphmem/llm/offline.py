"""OfflineLLM: deterministic, rule-based answers for every task; no network, the embedded default.

It reads ``request.inputs`` (never ``request.prompt``) and answers with the requested model:

- feedback: cue words and regexes find corrections, preferences, complaints and praise in an owner
  message; the instruction clause becomes the learning ("Keep emails under 3 paragraphs").
- objective_eval: score from status, errors, retries and duration; one learning per failing tool.
- reflection: went-well / improvements / rules from the outcome, the tools and the feedback.
- judge: ground-truth match (normalised exact, containment, token F1) or criteria checks.
- reflector: one bullet per failed verdict ("When <input>, answer <truth> instead of <output>").
- summary: extractive and incremental: previous bullets minus removed plus new, corrections first.
- crossover / bullet_test: bullet evolution (:mod:`graphmem.llm.offline_evolution`).
- weakness: lessons from surprise moments (:mod:`graphmem.llm.offline_weakness`).

Text from tools and traces is only ever quoted or classified, never reworded into an instruction:
only the owner's own words (feedback) are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from graphmem.errors import LLMError, LLMValidationError
from graphmem.llm.base import LLMRequest, T
from graphmem.llm.offline_evolution import crossover_bullets, judge_bullet
from graphmem.llm.offline_facts import extract_facts
from graphmem.llm.offline_feedback import _objective_type_of, analyse_feedback
from graphmem.llm.offline_text import _STOP, _cap, _gist, _norm, _rx, _sentences, _similar, _tokens, _unique, _words
from graphmem.llm.offline_weakness import weakness_lessons
from graphmem.llm.schemas import (
    ContradictionJudgement,
    EpisodeReflection,
    EvaluationLearning,
    FeedbackAnalysis,
    InjectionVerdict,
    JudgeVerdict,
    ObjectiveEvaluation,
    ReflectorBullet,
    ReflectorOutput,
    SummaryOutput,
)

# --- objective evaluation --------------------------------------------------------------------

_ERROR_KINDS: list[tuple[str, re.Pattern[str], str]] = [
    ("rate limited", _rx(r"\b429\b|rate[ -]?limit|too many requests|throttl|quota"),
     "Space out {tool} calls and back off before retrying after a rate limit"),
    ("timed out", _rx(r"time[ds]?[ -]?out|timed out|deadline"),
     "Use smaller requests or a longer timeout for {tool}, and retry with backoff"),
    ("target not found", _rx(r"\b404\b|not found|no such|does(n't| not) exist"),
     "Verify that the target exists before calling {tool}"),
    ("permission denied", _rx(r"\b40[13]\b|unauthori[sz]ed|forbidden|permission|access denied"),
     "Check credentials and permissions before calling {tool}"),
    ("invalid input", _rx(r"\b(400|422)\b|invalid|malformed|validation|bad request|parse error|syntax error"),
     "Validate the arguments of {tool} against its expected format before calling it"),
    ("server error", _rx(r"\b5\d\d\b|internal server error|service unavailable|overloaded|bad gateway"),
     "Retry {tool} with backoff on server errors and keep a fallback ready"),
    ("connection error", _rx(r"connection|network|unreachable|\bdns\b|refused"),
     "Retry {tool} with backoff on connection errors"),
]
_DEFAULT_ADVICE = "Check the inputs and result of each {tool} call, and change approach instead of repeating it"
_ERROR_TEXT = _rx(r"^\s*(error|exception|traceback)\b|\b(failed|timed out|rate[ -]?limited)\b")
_FAILED = {"failed", "failure", "error", "errored", "aborted"}
_DONE = {"completed", "complete", "succeeded", "success", "done"}


def _step_failed(step: dict[str, Any]) -> bool:
    """success False, or an unflagged tool result that reads like an error."""
    if step.get("success") is False:
        return True
    return step.get("success") is None and step.get("kind") == "tool_result" and bool(
        _ERROR_TEXT.search(str(step.get("content") or "")))


def _sequence(tools: list[str]) -> str:
    """["a", "a", "b"] → "a ×2 → b"."""
    runs: list[list[Any]] = []
    for t in tools:
        if runs and runs[-1][0] == t:
            runs[-1][1] += 1
        else:
            runs.append([t, 1])
    return " → ".join(f"{t} ×{n}" if n > 1 else t for t, n in runs)


def evaluate_objective(goal: str, status: str, result: str | None = None, duration_s: float | None = None,
                       steps: list[dict[str, Any]] | None = None,
                       objective_type: str | None = None) -> ObjectiveEvaluation:
    """Rule-based ObjectiveEvaluator: score, learnings per failing tool, well/poorly used tools.

    The error text of tools is classified (rate limit, timeout…), never copied into a learning.
    """
    steps = [dict(s) for s in steps or []]
    state = (status or "").strip().lower()
    obj_type = objective_type or _objective_type_of(goal)
    goal_gist, scope = _gist(goal, 8), "objective_type" if obj_type else "general"
    failures: dict[str, list[dict[str, Any]]] = {}
    retries: dict[str, int] = {}
    recovered: set[str] = set()
    ok_tools = [str(s["tool_name"]) for s in steps if s.get("success") is True and s.get("tool_name")]
    calls = [str(s["tool_name"]) for s in steps if s.get("tool_name") and s.get("kind") != "tool_result"]
    for i, step in enumerate(steps):
        if not _step_failed(step):
            continue
        tool = str(step.get("tool_name") or "")
        failures.setdefault(tool or "general", []).append(step)
        later = [s for s in steps[i + 1:] if tool and s.get("tool_name") == tool]
        if later:
            retries[tool] = retries.get(tool, 0) + 1
            if any(s.get("success") is True for s in later):
                recovered.add(tool)
    n_fail, n_retry = sum(len(v) for v in failures.values()), sum(retries.values())
    score = 9.0 if state in _DONE else 3.0 if state in _FAILED else 6.0
    score -= min(4, n_fail) * (1.0 if state in _DONE else 0.5) + min(2, n_retry) * 0.5
    if duration_s is not None:
        score -= 1.5 if duration_s > 3600 else 1.0 if duration_s > 1800 else 0.0
    score -= 1.0 if len(steps) > 25 else 0.0
    learnings: list[EvaluationLearning] = []
    for tool, failed in failures.items():
        kinds, advice = [], _DEFAULT_ADVICE
        for name, pattern, tip in _ERROR_KINDS:
            hits = sum(1 for s in failed if pattern.search(str(s.get("content") or "")))
            if hits:
                kinds.append(f"{name} ×{hits}" if hits > 1 else name)
                advice = tip if advice == _DEFAULT_ADVICE else advice
        n = len(failed)
        insight = (f"{tool if tool != 'general' else 'A step'} failed {n} time{'s' if n > 1 else ''}: "
                   f"{', '.join(kinds) or 'errors'} while working on \"{goal_gist}\"")
        if tool in recovered:
            insight += f" (succeeded after {retries[tool]} retr{'ies' if retries[tool] > 1 else 'y'})"
        learnings.append(EvaluationLearning(
            insight=insight, applies_to=tool if tool != "general" else scope, sentiment="negative",
            recommendation=advice.format(tool=tool if tool != "general" else "each tool")))
    notable = False
    if state in _FAILED:
        bad = ", ".join(t for t in failures if t != "general")
        learnings.append(EvaluationLearning(
            insight=f"The objective \"{goal_gist}\" failed" + (f" after errors in {bad}" if bad else ""),
            applies_to=scope, sentiment="negative",
            recommendation="Fix or work around a failing step before moving on, and report a blocker early"
            if failures else "Confirm what the objective needs before starting, and check each step's result"))
    elif state in _DONE and not failures and len(set(calls)) >= 2:
        notable, seq = True, _sequence(calls)
        learnings.append(EvaluationLearning(
            insight=f"\"{goal_gist}\" completed without errors using {seq}", applies_to=scope,
            recommendation=f"For {obj_type or 'similar'} objectives, follow the sequence {seq}", sentiment="positive"))
    if state in _DONE and duration_s is not None and duration_s > 3600:
        notable = True
        learnings.append(EvaluationLearning(
            insight=f"\"{goal_gist}\" took {duration_s / 60:.0f} minutes", applies_to=scope, sentiment="neutral",
            recommendation=f"Plan the steps of {obj_type or 'long'} objectives up front and batch similar tool calls"))
    return ObjectiveEvaluation(
        overall_score=round(max(1.0, min(10.0, score)), 1), learnings=learnings,
        tools_used_well=_unique(t for t in ok_tools if t not in failures),
        tools_used_poorly=[t for t in failures if t != "general"],
        should_remember=bool(failures) or state in _FAILED or notable)


# --- reflection ------------------------------------------------------------------------------

_FB_GOOD = _rx(r"^\s*(/good|good|positive|👍|\+1|yes)\s*$")
_FB_BAD = _rx(r"^\s*(/bad|bad|negative|👎|-1|no)\s*$")


def reflect_episode(user_text: str, assistant_text: str, success: bool | None = None,
                    tools_used: list[str] | None = None, feedback: str | None = None,
                    shown: list[str] | None = None) -> EpisodeReflection:
    """Rule-based episode reflection (seed 004) from the outcome, the tools and the feedback.

    The user's text is only quoted as a condition ("For requests like …"); only the feedback
    (the owner's words) becomes a rule. With ``shown`` (the learnings the assistant was shown), a
    learning counts as followed when at least half of its content words appear in the answer
    (:func:`followed`); a followed learning is tagged ``helped`` when the episode succeeded and
    ``hurt`` when it failed; one not followed is not tagged.
    """
    gist, tools = _gist(user_text, 10), ", ".join(_unique(tools_used or []))
    fb: FeedbackAnalysis | None = None
    if not feedback or not feedback.strip():
        fb_sent = "neutral"
    elif _FB_GOOD.match(feedback) or _FB_BAD.match(feedback):
        fb_sent = "positive" if _FB_GOOD.match(feedback) else "negative"
    else:
        fb = analyse_feedback(feedback)
        fb_sent = fb.sentiment if fb.has_feedback else "neutral"
    outcome = success if success is not None else {"positive": True, "negative": False}.get(fb_sent)
    went_well: list[str] = []
    improvements: list[str] = []
    rules: list[str] = []
    prompts: list[str] = []
    if outcome is True:
        went_well.append("The response satisfied the request")
        if tools:
            went_well.append(f"Used {tools} to complete it")
            rules.append(f'For requests like "{gist}", use {tools}')
    elif outcome is False:
        improvements.append("The response did not satisfy the request")
        if tools:
            improvements.append(f"Check the results of {tools} before answering")
    if fb_sent == "positive" and feedback:
        went_well.append(f'The user gave positive feedback: "{_gist(feedback, 16)}"')
    if fb is not None and fb.has_feedback:
        if fb.what_was_wrong:
            improvements.append(f"Fix: {fb.what_was_wrong}")
        if fb.learning and fb.feedback_type != "praise":
            improvements.append(fb.learning)
            rules.append(fb.learning)
            prompts.append(f'Add "{fb.learning}" to the system prompt')
    if outcome is False and not rules:
        rules.append(f'For requests like "{gist}", check the answer against the request before responding')
        prompts.append(f'Add a self-check step for requests like "{gist}"')
    state = {True: "succeeded", False: "failed", None: "had an unknown outcome"}[outcome]
    text = f'The episode "{gist}" {state}' + (f" using {tools}" if tools else "") + "."
    text += f" Feedback was {fb_sent}." if feedback else ""
    text += f" {len(_unique(improvements))} improvement(s) noted." if improvements else ""
    used = [i for i, s in enumerate(shown or [], start=1) if followed(s, assistant_text)] if outcome is not None else []
    return EpisodeReflection(reflection=text, what_went_well=_unique(went_well), improvements=_unique(improvements),
                             rules=_unique(rules), prompt_suggestions=_unique(prompts),
                             helped=used if outcome else [], hurt=used if outcome is False else [])


def followed(learning_text: str, answer: str, share: float = 0.5) -> bool:
    """True when at least ``share`` of the learning's content words (3+ letters, no stop words)
    appear in the answer: the offline reflector's sign that the answer acted on it."""
    words = {w for w in _tokens(learning_text) if len(w) >= 3}
    return bool(words) and len(words & _tokens(answer)) >= share * len(words)


# --- judge and reflector ---------------------------------------------------------------------

_NEGATIONS = {"not", "no", "never", "non", "isn't", "isnt", "don't", "dont", "cannot", "can't", "false"}
_CRIT_STOP = _STOP | {
    "must", "should", "output", "answer", "response", "agent", "contain", "contains", "include", "includes",
    "correct", "correctly", "valid", "well", "clear", "clearly", "given", "input", "mention", "mentions"
}
_LIMIT = _rx(r"\b(under|at most|no more than|fewer than|less than|max(?:imum)?(?: of)?)\s+(\d+)\s+"
             r"(words?|sentences?|paragraphs?|characters?|chars|lines?)\b")


def _numbers(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)]


def _truth_verdict(output: str, ground_truth: str) -> JudgeVerdict:
    out_n, gt_n = _norm(output), _norm(ground_truth)
    if out_n == gt_n:
        return JudgeVerdict(passed=True, score=1.0, reasoning="The output matches the ground truth exactly")
    gt_nums, out_nums = _numbers(ground_truth), _numbers(output)
    if len(gt_nums) == 1 and len(_tokens(ground_truth)) <= 2:
        hit = any(abs(x - gt_nums[0]) <= 1e-9 * max(1.0, abs(gt_nums[0])) for x in out_nums)
        seen = ", ".join(f"{n:g}" for n in out_nums) or "no number"
        return JudgeVerdict(passed=hit, score=1.0 if hit else 0.0, reasoning=f"Expected the number "
                            f"{ground_truth.strip()}; " + ("found it" if hit else f"the output has {seen}"))
    neg_differs = bool(_NEGATIONS & set(out_n.split())) != bool(_NEGATIONS & set(gt_n.split()))
    if not neg_differs and re.search(rf"(^| ){re.escape(gt_n)}( |$)", out_n):
        return JudgeVerdict(passed=True, score=0.9, reasoning="The output contains the ground truth")
    gt_t, out_t = _tokens(ground_truth) or set(gt_n.split()), _tokens(output) or set(out_n.split())
    common = len(gt_t & out_t)
    f1 = (2 * common / (len(gt_t) + len(out_t)) if common else 0.0) * (0.5 if neg_differs else 1.0)
    why = "one of them negates the other; " if neg_differs else ""
    return JudgeVerdict(passed=f1 >= 0.6, score=round(f1, 3), reasoning=f"{why}token overlap with the ground "
                        f"truth is {f1:.2f} (expected \"{_gist(ground_truth, 12)}\", got \"{_gist(output, 12)}\")")


def judge_output(output: str, judge_name: str | None = None, criteria: str | None = None,
                 input_text: str | None = None, ground_truth: str | None = None,
                 reasoning: str | None = None) -> JudgeVerdict:
    """Rule-based judge: a ground-truth match when one is given, else the criteria's checkable parts.

    Criteria checks: "JSON" (the output parses), "under/at most N words|sentences|paragraphs|
    characters|lines" (counted), otherwise keyword coverage (at least half the criteria's words).
    """
    name, crit = judge_name or "judge", criteria or ""
    if not _norm(output):
        return JudgeVerdict(passed=False, score=0.0, reasoning=f"{name}: the output is empty")
    if ground_truth is not None and _norm(ground_truth):
        return _truth_verdict(output, ground_truth)
    checks: list[tuple[bool, str]] = []
    if re.search(r"\bjson\b", crit, re.IGNORECASE):
        try:
            json.loads(output)
            checks.append((True, "is valid JSON"))
        except ValueError:
            checks.append((False, "is not valid JSON"))
    for m in _LIMIT.finditer(crit):
        limit, unit = int(m.group(2)), m.group(3).lower()
        count = {"w": len(output.split()), "c": len(output), "s": len(_sentences(output)),
                 "p": len([p for p in re.split(r"\n\s*\n", output) if p.strip()]),
                 "l": len(output.splitlines())}[unit[0]]
        ok = count < limit if m.group(1).lower() in ("under", "fewer than", "less than") else count <= limit
        checks.append((ok, f"has {count} {unit} (limit: {m.group(1)} {limit})"))
    keywords = _unique(w for w in _words(crit) if len(w) >= 4 and w not in _CRIT_STOP and not w.isdigit())
    if keywords and not checks:
        stems = {w[:5] for w in _words(output)}
        hits = [k for k in keywords if k[:5] in stems]
        checks.append((len(hits) >= len(keywords) / 2, f"covers {len(hits)}/{len(keywords)} criteria keywords"))
    if not checks:
        return JudgeVerdict(passed=True, score=0.5, reasoning=f"{name}: nothing checkable; the output is non-empty")
    return JudgeVerdict(passed=all(ok for ok, _ in checks), score=round(sum(ok for ok, _ in checks) / len(checks), 3),
                        reasoning=f"{name}: the output " + "; ".join(msg for _, msg in checks))


def reflect_failures(input_text: str, output: str, ground_truth: str | None = None, reasoning: str | None = None,
                     verdicts: list[dict[str, Any]] | None = None) -> ReflectorOutput:
    """Rule-based reflector: one bullet per failed verdict, near-duplicates merged; none if all passed."""
    verdicts = list(verdicts or [])
    failed = [v for v in verdicts if not v.get("passed")]
    if not verdicts and ground_truth and _norm(ground_truth) != _norm(output):
        failed = [{"judge": "ground_truth", "passed": False, "reasoning": "the output differs from the ground truth"}]
    applies = f'the input is like "{_gist(input_text, 12)}"'
    bullets: list[ReflectorBullet] = []
    for v in failed:
        if ground_truth and _norm(ground_truth):
            truth = _gist(ground_truth, 12)
            bullet = ReflectorBullet(  # worded as an action, so the curator keeps it as advice
                content=f'When {applies}, always answer "{truth}"; do not answer "{_gist(output, 12)}"',
                applies_when=applies, recommendation=f'Always answer "{truth}" for inputs like this')
        else:
            issue = _gist(str(v.get("reasoning") or "the output failed this check"), 20).rstrip(".")
            bullet = ReflectorBullet(
                content=f"When {applies}, avoid what the {v.get('judge') or 'judge'} judge flagged: {issue}",
                applies_when=applies, recommendation=f"Address: {issue}")
        if not any(_similar(bullet.content, b.content, 0.9) for b in bullets):
            bullets.append(bullet)
    return ReflectorOutput(bullets=bullets[:10])


# --- summary ---------------------------------------------------------------------------------


def _parse_bullets(text: str) -> list[str]:
    lines = (re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip() for line in (text or "").splitlines())
    return [line for line in lines if line and not line.endswith(":")]


def summarize(previous: str | None = None, learnings: list[dict[str, Any]] | None = None,
              removed: list[str] | None = None, max_bullets: int | None = None) -> SummaryOutput:
    """Extractive, incremental summary: previous bullets − removed + one bullet per new learning.

    A new learning's bullet is its recommendation, else its content. Order: new corrections
    (negative sentiment) first, then the kept previous bullets, then the other new ones (rules and
    preferences before the rest). Near-identical bullets are merged (the earlier wins), and the
    list is cut at ``max_bullets`` (at most 10).
    """
    cap = max(0, min(10, 10 if max_bullets is None else int(max_bullets)))
    gone = [r for r in (removed or []) if _norm(r)]
    kept = [b for b in _parse_bullets(previous or "")
            if not any(_similar(b, r, 0.6) or _norm(r) in _norm(b) for r in gone)]
    rank = {"negative": 0, "neutral": 1, "positive": 2}
    new = sorted((rank.get(str(item.get("sentiment") or "neutral"), 1),
                  0 if item.get("kind") in ("preference", "rule") else 1, i,
                  _cap(str(item.get("recommendation") or item.get("content") or "").strip().rstrip(".")))
                 for i, item in enumerate(learnings or []))
    first = [text for r, _, _, text in new if text and r == 0]
    rest = [text for r, _, _, text in new if text and r != 0]
    bullets: list[str] = []
    for text in first + kept + rest:
        if len(bullets) >= cap:
            break
        if not any(_similar(b, text) for b in bullets):
            bullets.append(text)
    return SummaryOutput(bullets=bullets)


# --- injection screening --------------------------------------------------------------------


def screen_injection(text: str, channel: str | None = None) -> InjectionVerdict:
    """The rule-based classifier (:mod:`graphmem.learn.injection`) as an :class:`InjectionVerdict`."""
    from graphmem.learn.injection import score_injection

    found = score_injection(text)
    return InjectionVerdict.model_validate({
        "is_injection": found.score >= 0.5, "score": min(1.0, max(0.0, found.score)),
        "families": list(found.families), "reasons": list(found.reasons),
    })


# --- the LLM ---------------------------------------------------------------------------------

def judge_contradictions(new: dict[str, Any], candidates: list[dict[str, Any]]) -> ContradictionJudgement:
    """The offline rule (:func:`graphmem.learn.contradiction.supersedes`) over each candidate."""
    from graphmem.learn.contradiction import supersedes

    hits = [i for i, c in enumerate(candidates) if supersedes(
        str(new.get("content") or ""), new.get("tool"), new.get("entities") or [],
        str(c.get("content") or ""), c.get("tool"), c.get("entities") or [])]
    return ContradictionJudgement(replaces=hits, reasoning="same scope, same aspect, different value" if hits else None)


def feedback_and_facts(content: str, recent_actions: list[dict[str, Any]] | None = None,
                       tool: str | None = None) -> FeedbackAnalysis:
    """:func:`analyse_feedback` plus the facts the owner states (:func:`extract_facts`)."""
    analysis = analyse_feedback(content, recent_actions, tool)
    return analysis.model_copy(update={"facts": extract_facts(content)})


_RULES: dict[str, tuple[Callable[..., BaseModel], tuple[str, ...], tuple[str, ...]]] = {
    # task: (rule, required inputs, optional inputs); input names are the rule's parameter names
    "feedback": (lambda content, recent_actions=None, tool=None: feedback_and_facts(content, recent_actions, tool),
                 ("content",), ("recent_actions", "tool")),
    "objective_eval": (evaluate_objective, ("goal", "status"), ("result", "duration_s", "steps", "objective_type")),
    "reflection": (reflect_episode, ("user_text", "assistant_text"), ("success", "tools_used", "feedback", "shown")),
    "judge": (judge_output, ("output",), ("judge_name", "criteria", "input_text", "ground_truth", "reasoning")),
    "reflector": (reflect_failures, ("input_text", "output"), ("ground_truth", "reasoning", "verdicts")),
    "summary": (summarize, (), ("previous", "learnings", "removed", "max_bullets")),
    "injection": (screen_injection, ("text",), ("channel",)),
    "contradiction": (judge_contradictions, ("new", "candidates"), ()),
    "crossover": (crossover_bullets, ("original",), ("parents", "failures", "n")),
    "bullet_test": (judge_bullet, ("bullet",), ("judge_name", "criteria", "input_text", "output", "ground_truth",
                                               "reasoning")),
    "weakness": (weakness_lessons, ("domain", "surprises"), ("n",)),
}


class OfflineLLM:
    """Deterministic, rule-based LLM: reads ``request.inputs``, never the network."""

    name = "offline"

    def generate(self, request: LLMRequest, schema: type[T]) -> T:
        """Answer ``request`` by the rules of its task and validate the answer as ``schema``."""
        rule, required, optional = _RULES[request.task]
        missing = [k for k in required if request.inputs.get(k) is None]
        if missing:
            raise LLMError(f"OfflineLLM needs request.inputs[{missing[0]!r}] for task {request.task!r}; "
                           "build requests with the graphmem.llm.prompts builders")
        answer = rule(**{k: request.inputs[k] for k in required + optional if k in request.inputs})
        if isinstance(answer, schema):
            return answer
        try:
            return schema.model_validate(answer.model_dump())
        except ValidationError as e:
            raise LLMValidationError(
                f"OfflineLLM answers task {request.task!r} with {type(answer).__name__}, which does not "
                f"validate as {schema.__name__}: {e.error_count()} error(s)"
            ) from e

    def judge_injection(self, text: str, *, channel: str = "unknown") -> InjectionVerdict:
        """Screen ``text`` with the rule-based classifier (no network)."""
        return screen_injection(text, channel)


__all__ = [
    "OfflineLLM",
    "analyse_feedback",
    "evaluate_objective",
    "judge_output",
    "reflect_episode",
    "reflect_failures",
    "screen_injection",
    "summarize",
]
