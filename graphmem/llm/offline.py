"""OfflineLLM: deterministic, rule-based answers for every task; no network, the embedded default.

It reads ``request.inputs`` (never ``request.prompt``) and answers with the requested model:

- feedback: cue words and regexes find corrections, preferences, complaints and praise in an owner
  message; the instruction clause becomes the learning ("Keep emails under 3 paragraphs").
- objective_eval: score from status, errors, retries and duration; one learning per failing tool.
- reflection: went-well / improvements / rules from the outcome, the tools and the feedback.
- judge: ground-truth match (normalised exact, containment, token F1) or criteria checks.
- reflector: one bullet per failed verdict ("When <input>, answer <truth> instead of <output>").
- summary: extractive and incremental: previous bullets minus removed plus new, corrections first.

Text from tools and traces is only ever quoted or classified, never reworded into an instruction:
only the owner's own words (feedback) are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from graphmem.errors import LLMError, LLMValidationError
from graphmem.llm.base import LLMRequest, T
from graphmem.llm.schemas import (
    EpisodeReflection,
    EvaluationLearning,
    FeedbackAnalysis,
    JudgeVerdict,
    ObjectiveEvaluation,
    ReflectorBullet,
    ReflectorOutput,
    SummaryOutput,
)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# --- shared text helpers ---------------------------------------------------------------------

_STOP = frozenset({
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by", "from", "as", "is",
    "are", "was", "were", "be", "been", "it", "its", "this", "that", "these", "those", "i", "you", "we", "they",
    "he", "she", "my", "your", "our", "their", "me", "us", "them", "do", "does", "did", "so", "if", "then", "than",
    "too", "very", "just", "not", "no", "please"
})


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:['’][a-z]+)?", text.lower())


def _tokens(text: str) -> set[str]:
    return {w for w in _words(text) if w not in _STOP}


def _norm(text: str) -> str:
    return " ".join(_words(text))


def _similar(a: str, b: str, threshold: float = 0.75) -> bool:
    """Near-identical: same normalised text, or token Jaccard >= threshold."""
    ta, tb = _tokens(a), _tokens(b)
    jaccard = len(ta & tb) / len(ta | tb) if ta and tb else 0.0
    return _norm(a) == _norm(b) or jaccard >= threshold


def _gist(text: str | None, n: int = 10) -> str:
    words = (text or "").split()
    return " ".join(words[:n]) + ("…" if len(words) > n else "")


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _sentences(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"(?<=[.!?;])\s+|\n+", text.strip()) if p.strip()]


def _unique(items: Iterable[str]) -> list[str]:
    out: dict[str, str] = {}
    for item in items:
        if item:
            out.setdefault(item.lower(), item)
    return list(out.values())


# --- feedback --------------------------------------------------------------------------------

_ACK = _rx(r"^(ok(ay)?|k|sure|yes|yep|yeah|no|nope|cool|fine|got it|thanks?( you)?( so much)?|thx|ty|"
           r"alright|right|hmm+|hi|hello|hey|good morning|noted)[\s!.]*$")
_PREFERENCE = _rx(r"\b(prefer(s|red)?|i'?d rather|would rather|i (really )?(like|love) it when|"
                  r"(i|we) (want|need|'d like|would like) you to)\b")
_STANDING = _rx(r"\b(always|never|from now on|going forward|in (the )?future|next time|every time|"
                r"each time|by default|make sure|remember to|don'?t forget)\b")
_NEG_DIRECTIVE = _rx(r"\b(don'?t|do not|stop|avoid|no more|quit)\b")
_CORRECTION = _rx(r"\b(actually|instead|wrong|incorrect|not (what|how) i|that'?s not|should(n'?t| not)? "
                  r"have|mistake|you forgot|you missed|not right)\b|^no[,!.]")
_TOO = _rx(r"\btoo (long|short|verbose|wordy|formal|casual|informal|slow|vague|generic|detailed|"
           r"technical|brief|late|early|much|many|few|complicated|complex|repetitive)\b")
_COMPLAINT = _rx(r"\b(hate|annoying|terrible|awful|useless|confusing|sloppy|bad|poor|unacceptable|"
                 r"frustrat\w*|disappoint\w*|not helpful|unhelpful|rambling)\b")
_PRAISE = _rx(r"\b(great|perfect|excellent|awesome|amazing|fantastic|brilliant|nice|good job|well done|"
              r"love(d)? it|spot on|exactly what i (needed|wanted)|i (really )?(like|love) (this|that|your|"
              r"the way)|very helpful|so helpful|superb|impressive|nailed it)\b")
_THANKS = _rx(r"\b(thanks|thank you)\b")
_PLEASE_STYLE = _rx(r"\bplease\b.*\b(keep|use|write|format|make|be|include|avoid|add|cc|sign|stick to|"
                    r"limit|shorten|summari[sz]e|cite|double-check)\b")
_SOFT_START = _rx(r"^(keep|avoid|stick to|limit|be (more|less)|stop|skip|prefer|cut)\b")
_IMPERATIVE = _rx(r"^(use|send|write|put|include|add|remove|call|ask|check|run|make|format|sign|cc|reply|"
                  r"mention|attach|list|start|end|set|give|show|tell|email|prefix|double-check|verify)\b")
_MUST = _rx(r"\b(must|needs? to|ha(s|ve) to)\b|\bshould\b(?! ?n?'?t? have| not have)")
_YOU_HABIT = _rx(r"^(you|u) (always|never|keep)\b")
_FORGOT = _rx(r"\b(you|u) (always |keep |often )?(forget|forgot|forgetting|missed|miss) to\b")
_DISLIKE = _rx(r"^(i|we) (really )?(hate|dislike|can'?t stand|don'?t like|do not like)\b")
_LIKE = _rx(r"^(i|we) (really )?(like|love) (?!(it|this|that|these|those|the|your|you)\b)")
_SUBJECT = _rx(r"([\w\s]+?)\s+(?:was|is|were|are|'s|’s|feels?|seems?)\s+(?:\w+\s+)?too\b")
_INSTEAD = _rx(r"\binstead\b")
_REQUEST_Q = _rx(r"^(can|could|would|will) you\b")
_LEADING = _rx(r"^(actually|also|and|but|so|ok(ay)?|no|nope|hey|hmm+|well|oh|btw|by the way|fyi|"
               r"one more thing|just|honestly|in (the )?future|from now on|going forward|next time|"
               r"please)\b[\s,:;!-]*")
_TRAILING = _rx(r"[\s,]*(next time|from now on|going forward|in (the )?future|please|thanks|thank you)?"
                r"[\s.!?;,]*$")
_REWRITES: list[tuple[re.Pattern[str], str]] = [
    (_rx(r"^(i|we) (would |'d )?prefer (that )?you (to )?"), ""),
    (_rx(r"^(i|we) (would |'d )?prefer "), "Prefer "),
    (_rx(r"^(i|we) (would|'d) (rather|like) (that )?you (to )?"), ""),
    (_rx(r"^(i|we) (want|need) you to "), ""),
    (_rx(r"^(you|u) (should not|shouldn'?t|must not|mustn'?t) "), "Do not "),
    (_rx(r"^(you|u) (should|must|need to|have to|ought to) "), ""),
    (_rx(r"^(can|could|would|will) you (please )?"), ""),
    (_rx(r"^(i|we) (really )?(don'?t|do not) (like|want|need) (it when you )?"), "Avoid "),
    (_rx(r"^(i|we) (really )?(hate|dislike|can'?t stand) it when you "), "Don't "),
    (_rx(r"^(i|we) (really )?(hate|dislike|can'?t stand) "), "Avoid "),
    (_rx(r"^(i|we) (really )?(like|love) it when you "), ""),
    (_rx(r"^didn'?t "), "Don't "),
    (_LIKE, "Prefer "),
    (_rx(r"^(you|u) (always |keep |often )?(forget|forgot|forgetting|missed|miss) to "), "Always "),
]
_OPPOSITE = {
    "long": "shorter", "short": "longer", "verbose": "more concise", "wordy": "more concise",
    "formal": "more casual", "casual": "more formal", "informal": "more formal", "slow": "faster",
    "vague": "more specific", "generic": "more specific", "detailed": "less detailed",
    "technical": "less technical", "brief": "more detailed", "complicated": "simpler",
    "complex": "simpler", "repetitive": "less repetitive", "late": "earlier", "early": "later",
}
_OBJECTIVE_TYPES: list[tuple[str, re.Pattern[str]]] = [
    ("email", _rx(r"e-?mails?|\bmail\b|inbox|newsletter")),
    ("research", _rx(r"\b(research|sources?|citations?|reports?|findings|competitors?|search)")),
    ("code", _rx(r"\b(code|coding|function|tests?|bugs?|refactor|python|javascript|commits?|pull request)\b")),
    ("scheduling", _rx(r"\b(meetings?|calendar|schedul\w*|invites?|appointments?)\b")),
    ("writing", _rx(r"\b(posts?|blog|articles?|drafts?|essays?|copy)\b")),
]
_STYLE = _rx(r"\b(long|short|length|concise|brief|verbose|wordy|paragraphs?|tone|formal|casual|friendly|"
             r"format\w*|bullet\w*|markdown|headings?)\b")
_NOT_ENTITY = frozenset({
    "i", "i'm", "i'd", "i've", "i'll", "ok", "okay", "ai", "please", "thanks", "actually", "also", "the", "this",
    "that", "it", "great", "perfect", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december"
})
_STARTERS = frozenset({
    "keep", "use", "send", "please", "always", "never", "don't", "do", "make", "write", "tell", "ask", "email",
    "call", "stop", "avoid", "add", "include", "when", "if", "for", "can", "could", "would", "will", "should", "is",
    "was", "did", "my", "our", "your", "great", "thanks", "actually", "also", "no", "yes", "next", "from", "in",
    "on", "at", "cc", "reply", "sign"
})


def _objective_type_of(*texts: str | None) -> str | None:
    for text in texts:
        for name, pattern in _OBJECTIVE_TYPES:
            if text and pattern.search(text.replace("_", " ")):
                return name
    return None


def _to_instruction(sentence: str) -> str:
    """Reword one owner sentence as a standing instruction ("Keep emails under 3 paragraphs")."""
    s = sentence.strip()
    for _ in range(4):
        s = _LEADING.sub("", s, count=1).strip()
    s = re.sub(r"\bplease\s+", "", s, flags=re.IGNORECASE)
    for pattern, repl in _REWRITES:
        s = pattern.sub(repl, s, count=1)
    return _cap(_TRAILING.sub("", s).strip(" ,;:-"))


def _too_instruction(sentence: str, tool: str | None) -> str | None:
    """"That email was too long" → "Make emails shorter"."""
    m = _TOO.search(sentence)
    better = _OPPOSITE.get(m.group(1).lower()) if m else None
    if better is None:
        return None
    subj = _SUBJECT.search(sentence)
    skip = {"that", "the", "this", "your", "last", "those", "these", "my", "one", "it", "actually", "but", "so"}
    words = [w.lower() for w in (subj.group(1).split() if subj else []) if w.lower() not in skip]
    if words:
        return f"Make {words[-1] if words[-1].endswith('s') else words[-1] + 's'} {better}"
    return f"Make {tool} output {better}" if tool else f"Make responses {better}"


def _entities(text: str) -> list[str]:
    """Capitalised names; a sentence's first word counts only inside a multi-word name."""
    found: list[str] = []
    for sentence in _sentences(text):
        for m in re.finditer(r"\b[A-Z][\w&'’-]*(?:\s+[A-Z][\w&-]*)*", sentence):
            words = [re.sub(r"['’]s$", "", w) for w in m.group(0).split()]
            at_start = not sentence[: m.start()].strip(" \"'([")
            if at_start and (len(words) == 1 or words[0].lower() in _STARTERS):
                words = words[1:]
            while words and words[0].lower() in _NOT_ENTITY:
                words = words[1:]
            while words and words[-1].lower() in _NOT_ENTITY:
                words = words[:-1]
            found.append(" ".join(words))
    return _unique(found)


def _topics(text: str, objective_type: str | None) -> list[str]:
    topics = [f"{objective_type or 'writing'} style"] if _STYLE.search(text) else []
    if re.search(r"\b(citations?|sources?|references?)\b", text, re.IGNORECASE):
        topics.append("citations")
    if re.search(r"\b(price|pricing|cost|budget|discount)\b", text, re.IGNORECASE):
        topics.append("pricing")
    return topics


def _pick_tool(text: str, actions: list[dict[str, Any]], tool: str | None) -> str | None:
    """The tool named in the text, else one of the text's kind, else the caller's, else the latest."""
    recent = [str(a["tool_name"]) for a in reversed(actions) if a.get("tool_name")]
    candidates = _unique(([tool] if tool else []) + recent)
    generic = {"send", "get", "run", "tool", "create", "do", "make", "call", "use", "the", "api"}
    words = set(_words(text))
    for cand in candidates:
        parts = [p for p in re.split(r"[_.\-\s]+", cand.lower()) if p and p not in generic]
        if any(w in (p, p + "s", p + "es") for p in parts for w in words):
            return cand
    kind = _objective_type_of(text)
    same_kind = [c for c in candidates if kind and _objective_type_of(c) == kind]
    if same_kind and not (tool and _objective_type_of(tool) == kind):
        return same_kind[0]
    return tool or (recent[0] if recent else None)


def analyse_feedback(content: str, recent_actions: list[dict[str, Any]] | None = None,
                     tool: str | None = None) -> FeedbackAnalysis:
    """Rule-based FeedbackExtractor: find feedback in an owner message and word it as a learning.

    ``recent_actions`` are oldest first (sorted by ``created_at`` when every item has one).
    """
    text = (content or "").strip()
    actions = [dict(a) for a in recent_actions or []]
    if actions and all(a.get("created_at") is not None for a in actions):
        actions.sort(key=lambda a: str(a["created_at"]))
    none = FeedbackAnalysis(has_feedback=False, sentiment="neutral", confidence=0.9)
    if not text or _ACK.match(text):
        return none
    instructions: list[str] = []
    wrong: list[str] = []
    praise: list[str] = []
    strong = 0
    pref = corr = complaint = False
    clauses = [c for s in _sentences(text) for c in re.split(r"[,;]?\s+but\s+", s, flags=re.IGNORECASE) if c.strip()]
    for s in clauses:
        bare = _LEADING.sub("", s).strip()
        is_pref = bool(_PREFERENCE.search(s) or _LIKE.match(bare))
        is_standing, is_neg, is_corr = bool(_STANDING.search(s)), bool(_NEG_DIRECTIVE.search(s)), bool(
            _CORRECTION.search(s))
        is_too, is_compl, is_praise = bool(_TOO.search(s)), bool(_COMPLAINT.search(s)), bool(_PRAISE.search(s))
        dislike, forgot = bool(_DISLIKE.match(bare)), bool(_FORGOT.search(s))
        weak = bool(_PLEASE_STYLE.search(s) or _SOFT_START.match(bare) or forgot)
        strong += sum((is_pref, is_standing, is_neg, is_corr, is_too, is_compl, is_praise))
        pref, corr, complaint = pref or is_pref, corr or is_corr or forgot, complaint or is_too or is_compl or dislike
        habit = bool(_YOU_HABIT.match(bare)) and not forgot
        if not bare or not _words(bare):  # "No." on its own: the correction flag is all it carries
            continue
        weak = weak or (is_corr and bool(_IMPERATIVE.match(bare))) or bool(_MUST.search(s))
        if s.endswith("?") and not _REQUEST_Q.match(bare):
            if is_corr or is_too or is_compl:
                wrong.append(s)
            continue
        directive = is_pref or is_standing or is_neg or weak or dislike or bool(_INSTEAD.search(s))
        if directive and not habit and not (is_too and not (is_pref or is_standing or weak)):
            instructions.append(_to_instruction(s))
        elif is_too or is_compl or is_corr or habit:
            wrong.append(_TRAILING.sub("", bare).strip())
        elif is_praise:
            praise.append(s.rstrip(" .!"))
    if not (instructions or wrong or praise):
        if not (_THANKS.search(text) and len(_words(text)) > 3):
            return none
        praise.append(text.rstrip(" .!"))
    about_tool = _pick_tool(text, actions, tool)
    obj_type = _objective_type_of(text, about_tool)
    instructions = [i for i in _unique(instructions) if len(_words(i)) >= 2]
    if not instructions and wrong:
        instructions = _unique(d for d in (_too_instruction(w, about_tool) for w in wrong) if d)
    if instructions:
        ftype = "preference" if pref or not (corr or complaint) else "correction"
    else:
        ftype = ("complaint" if complaint else "correction") if wrong else "praise"
    negative = ftype in ("correction", "complaint") or complaint
    if instructions:
        learning = "; ".join(instructions)
    elif wrong:
        learning = f"Avoid repeating what the owner disliked: {'; '.join(wrong)}"
    else:
        scope = f" for {about_tool}" if about_tool else f" for {obj_type} work" if obj_type else ""
        learning = f'Keep the approach the owner praised{scope} ("{_gist(praise[0], 16)}")'
    return FeedbackAnalysis(
        has_feedback=True,
        feedback_type=ftype,  # type: ignore[arg-type]
        about_tool=about_tool,
        about_objective_type=obj_type,
        what_was_wrong="; ".join(_unique(wrong)) or None,
        what_to_do_instead="; ".join(instructions) or None,
        sentiment="negative" if negative else "positive" if ftype == "praise" else "neutral",
        confidence=round(min(0.9, 0.5 + 0.1 * strong), 2),
        learning=learning,
        topics=_topics(text, obj_type),
        entities=_entities(text),
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
                    tools_used: list[str] | None = None, feedback: str | None = None) -> EpisodeReflection:
    """Rule-based episode reflection (seed 004) from the outcome, the tools and the feedback.

    The user's text is only quoted as a condition ("For requests like …"); only the feedback
    (the owner's words) becomes a rule.
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
    return EpisodeReflection(reflection=text, what_went_well=_unique(went_well), improvements=_unique(improvements),
                             rules=_unique(rules), prompt_suggestions=_unique(prompts))


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
            bullet = ReflectorBullet(content=f'When {applies}, answer "{truth}" instead of "{_gist(output, 12)}"',
                                     applies_when=applies, recommendation=f'Answer "{truth}"')
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


# --- the LLM ---------------------------------------------------------------------------------

_RULES: dict[str, tuple[Callable[..., BaseModel], tuple[str, ...], tuple[str, ...]]] = {
    # task: (rule, required inputs, optional inputs); input names are the rule's parameter names
    "feedback": (analyse_feedback, ("content",), ("recent_actions", "tool")),
    "objective_eval": (evaluate_objective, ("goal", "status"), ("result", "duration_s", "steps", "objective_type")),
    "reflection": (reflect_episode, ("user_text", "assistant_text"), ("success", "tools_used", "feedback")),
    "judge": (judge_output, ("output",), ("judge_name", "criteria", "input_text", "ground_truth", "reasoning")),
    "reflector": (reflect_failures, ("input_text", "output"), ("ground_truth", "reasoning", "verdicts")),
    "summary": (summarize, (), ("previous", "learnings", "removed", "max_bullets")),
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


__all__ = [
    "OfflineLLM",
    "analyse_feedback",
    "evaluate_objective",
    "judge_output",
    "reflect_episode",
    "reflect_failures",
    "summarize",
]
