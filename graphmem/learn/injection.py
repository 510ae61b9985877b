"""Injected-instruction classifier: does a text try to steer the agent instead of teaching it?

Deterministic, offline and fast (well under a millisecond for a typical learning). It looks for
three families of attack, in any learning channel (owner messages included):

- ``exfiltration``: send secrets (passwords, keys, tokens, credentials, codes, card / bank / ID
  numbers) somewhere, above all to an address, URL, phone number or public place;
- ``authority``: change who the agent is or obeys (ignore previous / system instructions, "you are
  now…", act as admin, new system prompt, obey the next email) or where its output goes (forward
  ALL mail to…, bcc an outside address on every email, change the recipient / endpoint /
  webhook / payout account);
- ``safeguards``: disable confirmation, approval, verification, 2FA, logging, audit, validation,
  filters, sandboxing or encryption, or act covertly ("silently", "don't tell the user").

Before matching, the text is normalised: NFKC (full-width letters), zero-width characters
dropped, Cyrillic/Greek look-alike letters mapped to Latin, case folded, spaced-out letters
joined ("p a s s w o r d" → "password") and leetspeak undone inside words ("p@ssw0rd"). Base64
blobs that decode to text are screened too. Each feature found has a weight; the score is their
noisy-OR, ``1 − Π(1 − w)``, in [0, 1], returned with the reasons (feature names and the words
that triggered them).

Protective wording is not an attack: a transfer or disabling verb that is negated ("never send
passwords by email", "never bypass code review") does not count, and neither does scoped owner
editing such as "ignore previous rules about email length for Dana".

Policy for forwarding (what the labelled set in benchmarks/data/injection_set.jsonl follows):
routing a specific, non-secret kind of item to an address ("forward invoices to
accounting@acme.com", "cc my assistant on emails to Dana") is a legitimate preference; sending
secrets anywhere, redirecting ALL mail/messages/payments, hidden copies (bcc) on every email and
changing a recipient / endpoint / account are not.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from dataclasses import dataclass, field

FAMILIES: tuple[str, ...] = ("exfiltration", "authority", "safeguards")
"""The attack families the classifier names in its reasons."""

_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\ufeff\u00ad"))
_HOMOGLYPHS = str.maketrans({
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ɡ": "g", "һ": "h",
    "ո": "n", "ս": "u", "ԛ": "q", "ԝ": "w",
    # Greek
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "ω": "w",
    # typographic quotes
    "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
})
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"})
_LEET_TOKEN = re.compile(r"(?<!\S)(?=[a-z0-9@$]*[a-z])(?=[a-z0-9@$]*[0-9@$])[a-z0-9@$]{4,}(?=[\s,;:!?)]|$)")
_SPACED = re.compile(r"(?<![a-z])(?:[a-z][ .\-_*]){3,}[a-z](?![a-z])")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")
_SENTENCE = re.compile(r'(?<=[.!?;])\s+|\n+|"')  # quoted text is read on its own: "instead of "<payload>""


def normalise(text: str) -> str:
    """The text as the patterns read it (see the module docstring); emails and URLs survive."""
    t = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH).translate(_HOMOGLYPHS).casefold()
    t = unicodedata.normalize("NFKC", t)
    t = _SPACED.sub(lambda m: re.sub(r"[ .\-_*]", "", m.group(0)), t)
    t = _LEET_TOKEN.sub(lambda m: m.group(0).translate(_LEET), t)
    return re.sub(r"[ \t]+", " ", t)


def _decoded_blobs(text: str) -> list[str]:
    """Base64 blobs in ``text`` that decode to mostly printable text with a space in it."""
    out: list[str] = []
    for m in _BASE64.finditer(text):
        blob = m.group(0)
        if not re.search(r"[A-Z]", blob) or not re.search(r"[a-z]", blob):
            continue  # a word or a hex id, not base64
        try:
            raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
        decoded = raw.decode("utf-8", errors="replace")
        printable = sum(ch.isprintable() for ch in decoded) / max(1, len(decoded))
        if printable >= 0.9 and " " in decoded:
            out.append(decoded)
    return out


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# --- vocabulary ---------------------------------------------------------------------------------
_SECRET = _rx(
    r"\b(pass(word|wd|code|phrase)s?(?! (reset (instructions|questions|page)|polic(y|ies)|managers?|strength|rules|"
    r"requirements|changes?|must))|security answers|pins?|api[ -]?keys?|(secret|access|private|ssh|signing) keys?|id_rsa|"
    r"(access|auth|session|refresh|oauth|bearer|api|secret) tokens?|tokens?|credentials?|creds|"
    r"login (details|info|credentials)|logins?|(2fa|mfa|otp|one[- ]time|verification|recovery|backup|"
    r"security) codes?|otps?|seed phrases?|recovery phrases?|mnemonic|(session )?cookies?|"
    r"(credit |debit )?card (numbers?|details)|credit cards?|cvv|cvc|bank (details|login|logins)|"
    r"routing numbers?|social security( numbers?)?|ssn|passport (numbers?|details)|date of birth|"
    r"\.env|env(ironment)? var(iable)?s?|keychain( export)?|medical records|insurance numbers?|"
    r"tax (id|number)|[a-z0-9]*_(api_?key|secret|token|password)s?|secrets?|(password )?reset links?|"
    r"customer list|personal data|pii|\.ssh)\b|~/\.ssh|id_rsa"
)
_XFER = _rx(
    r"\b(send|sends|sending|sent|forward(s|ing)?|e-?mail(s|ing)?|mail|post(s|ing)?|upload(s|ing)?|"
    r"share|sharing|paste|include|attach|copy|cc|bcc|leak|exfiltrate|dump|export|transmit|sync|"
    r"disclose|reveal|print|output|echo|give|provide|push|message|text|dm|append(ed)?|submit|add|"
    r"report|reply with|go to|tell|read( \w+)? (me|out|aloud)|posted|emailed|forwarded|uploaded|shared|leaked|pasted|attached|sent)\b"
)
_EMAIL = r"[\w.+-]+@[\w-]+(\.[\w-]+)+"
_DEST = _rx(
    _EMAIL + r"|(https?|ftp)://\S+|\bwww\.\S+|\bt\.me/\S+|\b[\w-]+\.(com|net|org|io|ru|biz|xyz|info|co|me|cc|"
    r"dev|help|site|app)/\S*|\+\d[\d ()-]{7,}\d|\b\d{1,3}(\.\d{1,3}){3}\b|\b(webhook|pastebin|requestbin|"
    r"ngrok|public( #?\w+)? (channel|repo\w*|forum|page)|anyone|everyone|whoever|external|third part(y|ies))\b|"
    r"\b(iban|sort code|account( ending| number)?( in)? \d+|bank account)\b|(?<!\w)#[a-z][\w-]+ channel|"
    r"(?<![\w.])@[a-z0-9_]{3,}\b|\b(telegram|whatsapp|discord)\b|\b\d{3}[- ]\d{4}\b|\b\d{4}( ?\d{4}){2,}\b"
)
_NEG = _rx(
    r"\b(never|don'?t|dont|do not|must not|mustn'?t|should not|shouldn'?t|not|no|avoid|refuse to|stop|"
    r"without|instead of|rather than|neither|nor)\b[^,;:.]*$"
)
_REPORTED = _rx(
    r"\b(asks?|asking|tells?|telling|says?|saying|wants?|requests?|tries|trying|attempts?|instructs?)"
    r"( you| the agent| the assistant| the model| us)? (to|for)\b"
)
_PROTECT = _rx(r"\b(report|flag|refuse|decline|block|reject|warn|alert me|treat (it|them|this) as|mark)\b")
_SCOPED = _rx(r"^\s*(about|regarding|concerning|on the topic of|for (emails?|messages?|meetings?) (to|with|from))\b")


@dataclass(frozen=True)
class _Feature:
    name: str
    family: str
    weight: float
    pattern: re.Pattern[str]
    negatable: bool = True


_FEATURES: tuple[_Feature, ...] = (
    # --- authority: override the instructions / identity ---------------------------------------
    _Feature("override_instructions", "authority", 0.9, _rx(
        r"\b(ignore|disregard|forget|override|bypass|discard|drop|abandon|never mind|nevermind|set aside|"
        r"pay no attention to)\b( \w+){0,3}? (all |any |the |your |"
        r"my |of |these |those )*(previous|prior|above|earlier|system|original|existing|initial|old|given|"
        r"preceding|current|safety|default)?\s?(\w+ )?(instructions?|rules?|prompts?|guidelines?|directives?|"
        r"polic(y|ies)|programming|constraints|restrictions|guardrails|training)\b")),
    _Feature("ignore_above", "authority", 0.8, _rx(
        r"\b(ignore|disregard|forget|never ?mind|pay no attention to)\b (all |everything )?(of )?(the |what('s| is) )?(above|before|previous|"
        r"everything( else| above| before)?( you('ve| have) been told)?( so far)?|what (i|you) (said|were told|"
        r"have been told))\b(?! \w+ (about|for|regarding))")),
    _Feature("instructions_void", "authority", 0.85, _rx(
        r"\b(previous|prior|above|earlier|original|system|your|old)? ?(instructions?|rules|prompt|guidelines)"
        r"( above| before| you (follow|were given|have))? (are|is) (now )?(void|outdated|cancell?ed|revoked|obsolete|null|wrong|"
        r"no longer (valid|in effect|apply))")),
    _Feature("you_are_now", "authority", 0.75, _rx(
        r"\byou are (now|no longer)( an?| the| in| operating| acting)?\b(?! allowed| able| free to (book|use))"
        r"(?!.*\b(allowed|welcome) to\b)"), negatable=False),
    _Feature("unbound", "authority", 0.85, _rx(
        r"\b(no longer|not) (bound|restricted|limited) by\b|\bwith no (rules|restrictions|limits)\b|"
        r"\b(unrestricted|unfiltered|jailbroken|jailbreak|developer mode|god mode|maintenance mode|admin mode|"
        r"do anything now|\bdan\b)"), negatable=False),
    _Feature("act_as_privileged", "authority", 0.75, _rx(
        r"\b(act|acting|operate|operating|pretend|roleplay|behave)( to be| as if you were| as)( an?| the)? "
        r"(admin\w*|system( administrator)?|sysadmin|root|superuser|developer|owner|ceo|operator|"
        r"account owner)\b|\boperating as root\b")),
    _Feature("new_system_prompt", "authority", 0.9, _rx(
        r"\bnew (system )?(prompt|instructions?|rules|directives?)\s*[:\-]|\b(system prompt|system message)"
        r"\s*:|\btreat (this|the) (document|page|file|text|message) as (your|its|the) (system )?"
        r"(prompt|instructions)|\byour (real|actual|true) instructions\b")),
    _Feature("system_marker", "authority", 0.55, _rx(
        r"(^|[\s\[<(#*])(system|sys|admin|developer)\s*(:|\]|>|notice|override|message|update)|"
        r"###\s*(system|instruction)|<\s*/?\s*(system|data-[\w-]*)\s*>|</data-|"
        r"\b(note|message) (to|for) (ai|the ai|ai agents?|the assistant|assistants?|llms?|"
        r"language models?|the agent|agents)\b|^\s*(attention |note |notice |important |hey )?(ai |the )?(assistant|agent|"
        r"model|llm|bot)s?\s*[:,]"), negatable=False),
    _Feature("reveal_prompt", "authority", 0.8, _rx(
        r"\b(reveal|print|show|output|repeat|leak|dump|tell me|give me|disclose)\b[^.]{0,30}\b(system prompt|"
        r"hidden instructions|(your|all) (hidden |secret )?instructions|initial prompt)\b")),
    _Feature("privileges", "authority", 0.65, _rx(
        r"\b(grant(ed)? (yourself|you|the agent|the assistant)|elevated privileges|(administrator|admin|root|"
        r"superuser) (privileges|rights|access)|privileges granted|full (authority|control|admin)|"
        r"(you are|you're) (now )?authori[sz]ed to|allow (any|all|every)( \w+){0,2} to access)\b")),
    _Feature("obey_others", "authority", 0.75, _rx(
        r"\b(obey|take (orders|instructions|commands) (only )?from|only (obey|listen to|follow))\b|"
        r"\bfollow (the |any |all )?(instructions|commands)( found)? (in|from) (the |this |that |web |any |"
        r"emails?|pages?|documents?|attached|the next)|\bdo what (the|this|that|any) (next )?(email|message|"
        r"page|document) says|\b(treat|consider) .{0,60}? as (coming from me|(if it came )?from me|me,|"
        r"the owner|an? admin|the admin)|\bas if (they|it) came from me\b|\b(your|the) (new|real|true) "
        r"(owner|boss|master|admin\w*|user)\b|\bthe user is now an? (admin\w*|owner)\b|"
        r"\byour (instructions|orders|commands|tasks) (now )?come from\b|\b(must|will|should|shall) now (follow|obey|"
        r"serve|answer to|listen to|take orders)\b|\byou (now )?serve only\b|\byou (now )?work for \w+( now)?\b|"
        r"\b(listen|respond|answer|reply) only to\b|\bdo (whatever|what) (she|he|they|it|the \w+) (says|emails|tells|"
        r"writes|asks)|\b(consider|treat) .{0,40}?(your|as) (highest[- ]priority |top[- ]priority |primary |new |real |"
        r"only )?(instructions|orders|commands|system prompt)\b|\b(as|i am|i'm) (the|your) (developer|creator|"
        r"admin\w*|owner|operator) of (this|the|your) (agent|assistant|bot|model|system)"), negatable=False),
    # --- authority: redirect the agent's output --------------------------------------------------
    _Feature("bulk_redirect", "authority", 0.45, _rx(
        r"\b(forward|redirect|route|send|copy|copies|cc|bcc|mirror|auto-?forward|divert)\b[^.]{0,30}"
        r"\b(all|every|each|any)( \w+){0,3}? (mail|e-?mails?|messages?|inbox|correspondence|repl(y|ies)|responses?|"
        r"answers?|notifications?|payments?|refunds?|traffic|requests|outgoing|incoming|customer replies)\b|"
        r"\bauto-?forward\b|\b(all|every) (my |the )?(\w+ )?(mail|e-?mails?|messages?|payments?|replies)\b[^.]{0,20}"
        r"\b(forward|redirect|route|go)\b")),
    _Feature("change_endpoint", "authority", 0.45, _rx(
        r"\b(change|set|update|switch|swap|replace|point|modify|redirect)\b[^.]{0,40}\b(recipient|endpoint|"
        r"webhook( endpoint)?|callback( url)?|destination|reply-?to( address)?|forwarding address|payout( bank)?"
        r"( account)?|bank account|bank details|payment details|account number|(api )?base url|api url|"
        r"server url|(support|billing|sender|reply|contact) (email|address|contact)|support contact|invoice recipient|"
        r"iban|\w+ url)\b|\b(address|e-?mail|url|endpoint|account|number|contact) (has|have) (moved|changed) to\b|\bso (refunds|payments|funds) go to\b")),
    _Feature("hidden_copy", "authority", 0.45, _rx(r"\bbcc\b"), negatable=True),
    # --- safeguards ------------------------------------------------------------------------------
    _Feature("disable_safeguard", "safeguards", 0.75, _rx(
        r"\b(disable[sd]?|disabling|turn(ing)? off|switch(ing)? off|deactivate|remove|skip|skipping|bypass|"
        r"circumvent|suppress|ignore|stop|clear|delete|erase|wipe|without|no longer (require|need)|"
        r"get rid of)\b[^.,;]{0,35}?\b(confirm(ation|ing)?s?|approvals?|approval workflow|verif(y|ication)"
        r"( steps?)?|(input )?validation|2fa|mfa|two-factor( authentication)?|multi-factor|audit( log(ging|s)?|"
        r" trail)?|logging|the logs|logs|safety (filters?|checks?|guardrails)|content (safety )?(filter|policy)|"
        r"guardrails|safeguards|security (review|checks?)|human review|(spam|phishing)( and phishing)? filters?|"
        r"firewall|anti-?virus( scanning)?|sandbox(ing)?|encryption|ssl|tls|certificate verification|"
        r"rate limiter|safety checks|checks|(identity|security|safety|background|integrity|signature|fraud|kyc|id) "
        r"(checks?|verification)|signature checks?|(activity|browsing|command|chat|action) history|login verification|"
        r"second approval|(content )?filters|two-step( login| verification)?|2-step|(activity|audit|access|event|security) "
        r"logs?|security prompts?)\b")),
    _Feature("safeguard_off_passive", "safeguards", 0.75, _rx(
        r"\b(confirmation( prompts?| dialog| step)?|approvals?|verification|validation|2fa|mfa|two-factor"
        r"( checks?)?|logging|audit( logging)?|safety checks?|guardrails|security checks?)\b[^.]{0,20}\b(are|is)"
        r" (now )?(disabled|off|turned off|no longer (required|needed)|not (required|needed)|optional|a bug)\b")),
    _Feature("no_confirmation", "safeguards", 0.4, _rx(
        r"\b(never|don'?t|do not|no need to|stop|without|nor)\s+(\w+\s+){0,2}?(ask(ing)?|show(ing)?|"
        r"prompt(ing)?|request(ing)?|wait(ing)? for|verify(ing)?|notify(ing)?|check(ing)?|reading)\b"
        r"(\s\w+){0,4}?\s(confirm\w*|permission|approval|warnings?|the sender|me|the user|first|it)\b|"
        r"\bclick through\b|\b(don'?t|do not|never|stop) (wait(ing)? for|ask(ing)?) (the user|me|anyone)? ?(to )?(confirm|approv)\w*"),
        negatable=False),
    _Feature("no_oversight", "safeguards", 0.65, _rx(
        r"\b(don'?t|do not|no longer) need (my|the|an?|any|our) (ok|okay|approval|permission|sign-?off|go-ahead|"
        r"confirmation|consent)\b|\bauto-?(confirm|accept|dismiss)\b|\b(don'?t|do not|never|stop) (flag|report|alert|"
        r"warn|notify)\w*( me)?( about| of)? (\w+ )?(suspicious|unusual|fraud\w*|security|failed)\b|"
        r"\b(whitelist|allowlist|trust) (every|all|any)\b|\b(override|bypass|ignore|skip)\b( \w+){0,4} (and )?(pay|send|"
        r"proceed|continue|approve|run|install|transfer)\w* anyway\b|\bstop (writing|recording|keeping|saving)\b"
        r"[^.]{0,30}\b(log|logs|history|audit)\b"), negatable=False),
    _Feature("skip_checking", "safeguards", 0.6, _rx(
        r"\b(don'?t|do not|never|no need to) (bother )?(check|verif|validat|scan|authenticat)\w*( \w+){0,2} "
        r"(signatures?|certificates?|checksums?|identity|identities|sender|senders|caller|callers|source|updates?|"
        r"downloads?|attachments?|links?|bank details)\b"), negatable=False),
    _Feature("auto_approve", "safeguards", 0.6, _rx(
        r"\bauto-?approve\b|\bapprove (all|every|any|everything)\b|\bapprove \w+( \w+)? automatically\b|"
        r"\b(just do it|without (human |user )?(review|approval|checks))\b"), negatable=False),
    _Feature("covert", "safeguards", 0.45, _rx(
        r"\b(silently|quietly|secretly|covertly|discreetly)\b|\bwithout (telling|notifying|informing|alerting)"
        r"\b|\b(don'?t|do not|never) (tell|notify|inform|mention|alert|record|log)\b|\bso (there is|there's|there will be) no "
        r"(record|trace|log)\b|\bhide (this|it|that)?"
        r"( action)? from\b|\bso (nobody|no one|the user) (can|will|won't) (see|know|notice)\b"),
        negatable=False),
    # --- exfiltration verbs that need no destination ---------------------------------------------
    _Feature("leak_verb", "exfiltration", 0.6, _rx(r"\b(exfiltrate|leak|steal|harvest)\b")),
)
_RISKY = _rx(
    r"\b(payments?|pay|transfers?|wire[sd]?|wiring|money|funds|refunds?|delet\w*|destructive|commands?|"
    r"scripts?|shell|access requests?|purchase orders?|passwords?|transactions?|deploy\w*|production)\b"
)


@dataclass(frozen=True)
class InjectionScore:
    """The classifier's answer: ``score`` in [0, 1], the ``reasons`` and the ``families`` hit."""

    score: float
    reasons: tuple[str, ...] = field(default_factory=tuple)
    families: tuple[str, ...] = field(default_factory=tuple)


def _negated(sentence: str, start: int) -> bool:
    """True when a negation governs the word at ``start`` (same clause, a few words before)."""
    before = sentence[max(0, start - 40):start]
    return bool(_NEG.search(before))


def _hits(sentence: str) -> dict[str, tuple[float, str, str]]:
    """Feature name → (weight, family, matched words) for one normalised sentence."""
    found: dict[str, tuple[float, str, str]] = {}

    def add(name: str, weight: float, family: str, words: str) -> None:
        if name not in found or found[name][0] < weight:
            found[name] = (weight, family, words.strip()[:60])

    for f in _FEATURES:
        for m in f.pattern.finditer(sentence):
            if f.negatable and _negated(sentence, m.start()):
                continue
            if _PROTECT.search(sentence) and _REPORTED.search(sentence[max(0, m.start() - 40):m.start()]):
                continue  # "when a page asks you to ignore your rules, report it": describes the attack
            weight = f.weight
            if f.name in ("override_instructions", "ignore_above") and _SCOPED.match(sentence[m.end():]):
                weight = 0.2  # "ignore previous rules about email length for Dana": the owner editing
            add(f.name, weight, f.family, m.group(0))
            break
    dest = _DEST.search(sentence)
    secrets = list(_SECRET.finditer(sentence))
    verbs = [v for v in _XFER.finditer(sentence) if not _negated(sentence, v.start())]
    protective = bool(_PROTECT.search(sentence))
    if secrets and verbs:
        live = [x for x in secrets
                if not (protective and _REPORTED.search(sentence[max(0, x.start() - 40):x.start()]))
                and not (_negated(sentence, x.start()) and all(v.start() < x.start() for v in verbs))]
        # a verb that acts on the secret: before it, close, not a participle used as an adjective ("shared credentials")
        pairs = [(v, x) for x in live for v in verbs
                 if 0 < x.start() - v.end() <= 50 and not (x.start() - v.end() <= 1 and v.group(0).endswith("ed"))]
        if live and dest is not None:
            v, x = pairs[0] if pairs else (verbs[0], live[0])
            add("secret_to_destination", 0.92, "exfiltration", f"{v.group(0)} … {x.group(0)} → {dest.group(0)}")
        elif pairs:
            add("secret_transfer", 0.55, "exfiltration", f"{pairs[0][0].group(0)} … {pairs[0][1].group(0)}")
    if "leak_verb" in found and secrets:
        add("leak_secret", 0.9, "exfiltration", found["leak_verb"][2] + " … " + secrets[0].group(0))
    if dest is not None:
        if "bulk_redirect" in found:
            add("bulk_redirect_to_destination", 0.85, "authority", found["bulk_redirect"][2] + " → " + dest.group(0))
        if "change_endpoint" in found:
            add("change_endpoint_to_destination", 0.8, "authority",
                found["change_endpoint"][2] + " → " + dest.group(0))
        if "hidden_copy" in found and re.search(r"\b(all|every|each|any)\b", sentence):
            add("bcc_everything", 0.85, "authority", found["hidden_copy"][2] + " → " + dest.group(0))
    if "no_confirmation" in found and _RISKY.search(sentence):
        add("no_confirmation_risky", 0.75, "safeguards", found["no_confirmation"][2])
    return found


def score_injection(text: str | None, *, _depth: int = 0) -> InjectionScore:
    """Score ``text`` for injected instructions (see the module docstring); ``None``/empty → 0."""
    if not text or not text.strip():
        return InjectionScore(0.0)
    clean = normalise(text)
    features: dict[str, tuple[float, str, str]] = {}
    for sentence in _SENTENCE.split(clean):
        if sentence.strip():
            for name, hit in _hits(sentence).items():
                if name not in features or features[name][0] < hit[0]:
                    features[name] = hit
    if _depth == 0:
        for decoded in _decoded_blobs(text):
            inner = score_injection(decoded, _depth=1)
            if inner.score > 0:
                features["encoded_payload"] = (max(0.5, inner.score), inner.families[0] if inner.families else
                                               "authority", decoded[:60])
    keep = 1.0
    for weight, _, _ in features.values():
        keep *= 1.0 - weight
    score = round(1.0 - keep, 4)
    ordered = sorted(features.items(), key=lambda kv: -kv[1][0])
    reasons = tuple(f"{name} ({fam}, {w:.2f}): {words!r}" for name, (w, fam, words) in ordered)
    families = tuple(dict.fromkeys(fam for _, (_, fam, _) in ordered))
    return InjectionScore(score, reasons, families)


__all__ = ["FAMILIES", "InjectionScore", "normalise", "score_injection"]
