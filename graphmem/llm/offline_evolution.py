"""OfflineLLM rules for bullet evolution (seed 002 Darwin-Gödel): deterministic crossover and
bullet tests, no network.

- crossover: candidate *k* pairs the failing bullet with sibling ``k // 4`` (most helpful first)
  and takes, by ``k % 4``: the failing bullet's scope ("When …") with the sibling's action; both
  actions (the failing bullet's first); both actions (the sibling's first); the sibling's scope
  with the failing bullet's action. Copies of a parent or of an earlier child are skipped. The first candidate also carries the expected answers of the failed cases that
  had a ground truth (what a real model is asked to do: fix the failures). With no sibling the
  failing bullet is only mutated (that repair).
- bullet_test: with a ground truth, helpful when the bullet names at least half of its content
  words (or the whole of a short answer such as a number); otherwise when it covers at least half
  of the keywords of the judge's failure reasoning (else of its criteria).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from graphmem.llm.offline_text import _STOP, _norm, _similar, _tokens, _unique, _words
from graphmem.llm.schemas import BulletTest, CrossoverOutput, ReflectorBullet

_WHEN = re.compile(r"^\s*when\s+(.+?),\s*(.+)$", re.IGNORECASE | re.DOTALL)
_KEY_STOP = _STOP | {"must", "should", "output", "answer", "response", "agent", "input", "correct", "correctly",
                     "given", "when", "always", "never", "avoid", "what", "judge", "flagged", "expected"}


def _scope(b: Mapping[str, Any]) -> str | None:
    if b.get("applies_when"):
        return str(b["applies_when"]).strip().rstrip(",.")
    m = _WHEN.match(str(b.get("content") or ""))
    return m.group(1).strip() if m else None


def _action(b: Mapping[str, Any]) -> str:
    content = str(b.get("content") or "").strip()
    m = _WHEN.match(content)
    text = m.group(2).strip() if m else (str(b.get("recommendation") or "").strip() or content)
    return text.rstrip(".")


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _compose(scope: str | None, action: str) -> str:
    return f"When {scope}, {_lower_first(action)}" if scope else action[:1].upper() + action[1:]


def crossover_bullets(original: Mapping[str, Any], parents: Sequence[Mapping[str, Any]] | None = None,
                      failures: Sequence[Mapping[str, Any]] | None = None, n: int = 4) -> CrossoverOutput:
    """Rule-based crossover (see the module docstring); deterministic for the same inputs."""
    scope, own = _scope(original), _action(original)
    truths = _unique(str(c.get("ground_truth")).strip() for c in failures or [] if c.get("ground_truth"))
    fix = ("answer " + " or ".join(f'"{t}"' for t in truths[:3]) + " for such inputs") if truths else None
    out: list[ReflectorBullet] = []
    sibs = list(parents or [])
    for k in range(max(1, n) * 2):  # extra rounds in case some children are duplicates
        if len(out) >= n:
            break
        partner = sibs[(k // 4) % len(sibs)] if sibs else None
        where = scope
        if partner is None:
            action = f"{own}; {fix}" if fix and k == 0 else ""
        elif k % 4 == 0:  # the original's scope, the sibling's action
            action = _action(partner)
        elif k % 4 == 1:  # both actions, the original's first
            action = f"{own}; {_lower_first(_action(partner))}"
        elif k % 4 == 2:  # both actions, the sibling's first
            action = f"{_action(partner)}; {_lower_first(own)}"
        else:  # the sibling's scope, the original's action
            where, action = _scope(partner) or scope, own
        if not action:
            break
        if k == 0 and fix and partner is not None:
            action = f"{action}; {fix}"
        content = _compose(where, action)
        known = [b.content for b in out] + [str(p.get("content") or "") for p in [original, *sibs]]
        if any(_similar(content, k_text, 0.95) for k_text in known):
            continue  # a copy of a parent or of an earlier child is no offspring
        out.append(ReflectorBullet(content=content, applies_when=where, recommendation=action[:1].upper() + action[1:]))
    return CrossoverOutput(candidates=out[:10])


def judge_bullet(bullet: str, judge_name: str | None = None, criteria: str | None = None,
                input_text: str | None = None, output: str | None = None, ground_truth: str | None = None,
                reasoning: str | None = None) -> BulletTest:
    """Rule-based bullet test (see the module docstring)."""
    name = judge_name or "judge"
    have = _tokens(bullet)
    if ground_truth and _norm(ground_truth):
        words = {w for w in _tokens(ground_truth) if len(w) >= 3}
        if words:
            found = len(words & have)
            ok = found >= len(words) / 2
            why = f"the bullet names {found}/{len(words)} words of the expected answer"
        else:
            ok = bool(re.search(rf"(^| ){re.escape(_norm(ground_truth))}( |$)", _norm(bullet)))
            why = "the bullet " + ("names" if ok else "does not name") + " the expected answer"
        return BulletTest(helpful=ok, reasoning=f"{name}: {why}")
    keys = _unique(w for w in _words(reasoning or criteria or "") if len(w) >= 4 and w not in _KEY_STOP
                   and not w.isdigit())
    if not keys:
        return BulletTest(helpful=False, reasoning=f"{name}: nothing shows the bullet would fix this case")
    stems = {w[:5] for w in have}
    hits = [k for k in keys if k[:5] in stems]
    return BulletTest(helpful=len(hits) >= len(keys) / 2,
                      reasoning=f"{name}: the bullet covers {len(hits)}/{len(keys)} keywords of the failure")



__all__ = ["crossover_bullets", "judge_bullet"]
