"""The OfflineLLM's feedback rules: find feedback in an owner message and word it as a learning.

Cue words and regexes sort each clause into instruction, complaint or praise; the instruction
clause becomes the learning ("Actually, keep emails under 3 paragraphs." → "Keep emails under 3
paragraphs"). Only the owner's own words are read; action content never is.
"""

from __future__ import annotations

import re
from typing import Any

from graphmem.llm.offline_text import _cap, _gist, _rx, _sentences, _unique, _words
from graphmem.llm.schemas import FeedbackAnalysis

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
    ("travel", _rx(r"\b(flights?|fly|flying|hotels?|trains?|travel\w*|trips?|seats?|airlines?|boarding)\b")),
    ("dining", _rx(r"\b(restaurants?|dinner|lunch|breakfast|table for|reservations?|food|meals?)\b")),
]
_REFERS_BACK = _rx(r"\b(that|this|it|those|these|again|last (one|time)|the last|just now|you just|your (last|"
                   r"previous|reply|answer|email|message|summary|draft|search|result)s?)\b")
_CONTENT_FREE = frozenset({
    "great", "good", "job", "work", "well", "done", "nice", "perfect", "excellent", "awesome", "amazing",
    "fantastic", "brilliant", "thanks", "thank", "you", "exactly", "what", "needed", "wanted", "spot", "on",
    "love", "loved", "like", "liked", "it", "that", "this", "was", "is", "wrong", "bad", "terrible", "awful",
    "not", "right", "correct", "incorrect", "useless", "helpful", "unhelpful", "very", "so", "really", "much",
    "super", "quite", "totally", "completely", "all", "again", "one", "last", "the", "a", "an", "no", "nope",
    "yes", "ok", "okay", "wow", "hmm", "ugh", "oh", "superb", "impressive", "nailed", "poor", "mistake", "bit",
    "answer", "reply", "response", "result", "results", "output", "try", "attempt", "stuff", "thing", "i",
    "we", "me", "my", "just", "how", "did", "do", "have", "has", "had", "be", "been", "are", "were",
    "unacceptable", "disappointing", "disappointed", "confusing", "annoying", "sloppy", "hate", "cool",
    "asked", "asking", "for", "expected", "meant", "requested",
})
# a directive with nothing in it ("Don't do that again.", "Please stop doing that."): blame, not advice
_EMPTY_DIRECTIVE = frozenset({"don't", "don’t", "dont", "do", "doing", "never", "stop", "please", "ever", "make",
                              "same", "repeat"})
_NEGATORS = frozenset({"don't", "don’t", "dont", "never", "stop", "not"})
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


_NOT_VERB = frozenset({
    "that", "this", "it", "the", "a", "an", "you", "i", "we", "they", "he", "she", "there", "your", "my", "our",
    "those", "these", "its", "what", "why", "how", "not", "wrong", "bad", "too", "way", "also", "again",
})
_COPULA = _rx(r"^\S+\s+(\S+\s+)?(was|is|were|are|'s|seems?|looks?|feels?)\b")


def _bare_imperative(sentence: str, bare: str) -> bool:
    """"No, mask email columns…": after a leading "No,", a clause that starts with a verb, not a
    judgement ("No, that was wrong")."""
    if not re.match(r"^\s*no\b[\s,:;!-]", sentence, re.IGNORECASE):
        return False
    words = _words(bare)
    return bool(words) and words[0] not in _NOT_VERB and not _COPULA.match(bare) and len(words) >= 3


def empty_directive(text: str) -> bool:
    """True for a negative directive that names nothing to avoid ("Don't do that again.")."""
    words = _words(text)
    return (bool(words) and any(w in _NEGATORS for w in words)
            and all(w in _CONTENT_FREE or w in _EMPTY_DIRECTIVE or w.isdigit() for w in words))


def content_free(text: str) -> bool:
    """True when ``text`` carries no advice: only praise, blame or filler ("Great job, thanks!",
    "That was wrong.")."""
    return not [w for w in _words(text) if w not in _CONTENT_FREE and not w.isdigit()]


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
    spaced = " ".join(_words(text.replace("_", " ")))
    for cand in candidates:
        parts = [p for p in re.split(r"[_.\-\s]+", cand.lower()) if p and p not in generic]
        if tool and cand != tool:
            # with a hint, another tool wins only when named in full ("web search", "send_email")
            full = [p for p in re.split(r"[_.\-\s]+", cand.lower()) if p]
            if len(full) > 1 and re.search(rf"\b{' '.join(full)}(e?s)?\b", spaced):
                return cand
            if not (len(parts) > 1 and re.search(rf"\b{' '.join(parts)}(e?s)?\b", spaced)):
                continue
            return cand
        if any(w in (p, p + "s", p + "es") for p in parts for w in words):
            return cand
    if tool:
        return tool  # the caller's hint wins unless the text names another tool
    kind = _objective_type_of(text)
    same_kind = [c for c in candidates if kind and _objective_type_of(c) == kind]
    if same_kind:
        return same_kind[0]
    if not recent:
        return None
    # The last action only when the message is about it: it refers back ("that", "it", "again"…) or
    # names no other kind of work. "I prefer window seats when you book flights" after an email is
    # about travel, not about send_email.
    latest_kind = _objective_type_of(recent[0])
    if kind is None or latest_kind == kind or (latest_kind is None and _REFERS_BACK.search(text)):
        return recent[0]
    return None


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
        weak = weak or (is_corr and bool(_IMPERATIVE.match(bare) or _bare_imperative(s, bare))) or bool(_MUST.search(s))
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
    had_signal = bool(instructions or wrong or praise)
    obj_type = _objective_type_of(text, about_tool)
    instructions = [i for i in _unique(instructions) if len(_words(i)) >= 2]
    if any(empty_directive(i) for i in instructions):  # "Don't do that again.": blame, not advice
        instructions = [i for i in instructions if not empty_directive(i)]
        complaint = True
    # Praise and blame without content are outcomes on what was shown, not advice.
    kind_words = {w for c in ([about_tool] if about_tool else []) for w in _words(c.replace("_", " "))}
    kind_words |= {"research", "email", "emails", "search", "code", "summary", "report", "draft", "work"}
    praise = [p for p in praise if not content_free(" ".join(w for w in _words(p) if w not in kind_words))]
    wrong = [w for w in wrong if not content_free(w) or _too_instruction(w, about_tool)]
    if not instructions and wrong:
        instructions = _unique(d for d in (_too_instruction(w, about_tool) for w in wrong) if d)
    if had_signal and not (instructions or wrong or praise):
        # Content-free: an implicit outcome on the last thing shown (observe_message records it).
        negative_only = corr or complaint or (not _PRAISE.search(text) and not _THANKS.search(text))
        return FeedbackAnalysis(
            has_feedback=True, feedback_type="complaint" if negative_only else "praise", about_tool=about_tool,
            about_objective_type=_objective_type_of(text, about_tool),
            sentiment="negative" if negative_only else "positive", confidence=round(min(0.9, 0.5 + 0.1 * strong), 2),
            learning=None,
        )
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
