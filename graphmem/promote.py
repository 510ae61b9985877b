"""Promotion of learnings into instruction files, and the demotion sweep (seed 003 system 7).

``promote`` writes this user's pinned, high-confidence, active learnings into a marked section of
an instruction file (AGENTS.md, CLAUDE.md...)::

    <!-- GRAPHMEM_LEARNINGS_START -->
    - Keep emails to Dana under 3 paragraphs <!-- graphmem:3f2c...-->
    <!-- GRAPHMEM_LEARNINGS_END -->

Everything outside the section is preserved byte for byte; lines inside it that graphmem did not
write (hand-written ones) are kept; running it twice changes nothing.

``sweep`` reads the same sections back and removes the lines whose learnings were since
contradicted (contradictions ≥ validations × ratio), went stale (no validation for
``demote_stale_days`` and fewer than ``archive_stale_max_validations`` validations), or were
disabled, archived or superseded; never a learning younger than ``demote_min_age_days``. A line is
matched to its learning by the id comment, else by substring or word overlap above
``promote_match_overlap``; unmatched lines are kept. Demoted learnings are archived (a logged tier
transition) and every promotion or demotion is also logged as a Transition with field "promotion".
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from graphmem.errors import InvalidInputError
from graphmem.learnings import LearningService
from graphmem.models import Learning, Transition
from graphmem.store.text import STOPWORDS

if TYPE_CHECKING:
    from graphmem.deps import Deps

START = "<!-- GRAPHMEM_LEARNINGS_START -->"
END = "<!-- GRAPHMEM_LEARNINGS_END -->"
_ID_COMMENT = re.compile(r"\s*<!--\s*graphmem:([0-9a-fA-F-]{8,64})\s*-->\s*$")
_WORD = re.compile(r"[a-z0-9]+")


class PromotionChange(BaseModel):
    """One line added to or removed from an instruction file."""

    path: str
    action: Literal["promoted", "demoted"]
    learning_id: str
    line: str
    reason: str


class PromoteReport(BaseModel):
    """What ``Memory.promote`` did to one file."""

    path: str
    created: bool = False
    changed: bool = False
    promoted: list[PromotionChange] = Field(default_factory=list)
    already_present: int = 0
    hand_written: int = 0
    section_lines: int = 0


class FileSweep(BaseModel):
    """What the sweep found in one file."""

    path: str
    found: bool = True
    scanned: int = 0
    removed: int = 0
    kept_matched: int = 0
    kept_unmatched: int = 0
    kept_young: int = 0


class SweepReport(BaseModel):
    """What ``Memory.sweep`` did: per-file counts and every change, in order."""

    files: list[FileSweep] = Field(default_factory=list)
    changes: list[PromotionChange] = Field(default_factory=list)

    @property
    def summary(self) -> str:
        """One line: files scanned, lines removed, lines kept."""
        scanned = sum(f.scanned for f in self.files)
        kept = sum(f.kept_matched + f.kept_unmatched + f.kept_young for f in self.files)
        return f"{len(self.files)} file(s), {scanned} promoted line(s) scanned, {len(self.changes)} demoted, {kept} kept"


# --- the marked section ----------------------------------------------------------------------
class _Document:
    """An instruction file split into text before the section, its lines, and text after."""

    def __init__(self, text: str, path: Path) -> None:
        self.newline = "\r\n" if "\r\n" in text else "\n"
        start = text.find(START)
        if start < 0:
            self.has_section = False
            self.before, self.lines, self.after = text, [], ""
            return
        end = text.find(END, start + len(START))
        if end < 0:
            raise InvalidInputError(
                f"{path} has {START} but no {END}; add the end marker (or remove the start marker)"
            )
        self.has_section = True
        self.before = text[:start]
        body = text[start + len(START) : end]
        self.lines = [ln for ln in body.splitlines() if ln.strip()]
        self.after = text[end + len(END) :]

    def render(self, lines: Sequence[str]) -> str:
        nl = self.newline
        section = START + nl + "".join(ln + nl for ln in lines) + END
        if self.has_section:
            return self.before + section + self.after
        before = self.before
        if before and not before.endswith(nl):
            before += nl
        if before:
            before += nl
        return before + section + nl


def _read(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInputError(f"cannot read {path}: {e}") from e


def _write(path: Path, text: str) -> None:
    if not path.parent.exists():
        raise InvalidInputError(f"the folder {path.parent} does not exist; create it first")
    tmp = path.with_name(f".{path.name}.graphmem.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        raise InvalidInputError(f"cannot write {path}: {e}") from e


# --- matching lines to learnings ----------------------------------------------------------
def line_text(line: str) -> tuple[str, str | None]:
    """A section line's text (bullet and id comment stripped) and its learning id, if any."""
    match = _ID_COMMENT.search(line)
    ident = match.group(1) if match else None
    text = line[: match.start()] if match else line
    text = text.strip()
    if text[:2] in ("- ", "* ", "+ "):
        text = text[2:].strip()
    return text, ident


def format_line(learning: Learning) -> str:
    """The promoted line of a learning: ``- content <!-- graphmem:id -->`` on one line."""
    content = " ".join(learning.content.split()).replace("<!--", "< !--").replace("-->", "-- >")
    return f"- {content} <!-- graphmem:{learning.id} -->"


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def overlap(a: str, b: str) -> float:
    """Word overlap of two texts: shared content words / the larger word set (0..1)."""
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / max(len(wa), len(wb))


def match_line(text: str, learnings: Sequence[Learning], threshold: float) -> Learning | None:
    """The learning a line without an id comment stands for: substring, else best word overlap."""
    norm = " ".join(text.lower().split())
    if not norm:
        return None
    best: tuple[float, Learning] | None = None
    for learning in learnings:
        content = " ".join(learning.content.lower().split())
        if norm == content or (len(norm) >= 12 and (norm in content or content in norm)):
            return learning
        score = overlap(norm, content)
        if score > threshold and (best is None or score > best[0]):
            best = (score, learning)
    return best[1] if best else None


# --- promote -------------------------------------------------------------------------------
def promotable(deps: Deps, min_confidence: float) -> list[Learning]:
    """This user's pinned, active, unsuperseded learnings with confidence ≥ ``min_confidence``."""
    items = [
        l
        for l in LearningService(deps).learnings(status="active", tier="pinned")
        if l.user_id == deps.user and l.confidence >= min_confidence and not l.superseded_by
    ]
    items.sort(key=lambda l: (-l.confidence, l.created_at, l.id))
    return items


def promote(deps: Deps, path: str | os.PathLike[str], *, min_confidence: float | None = None) -> PromoteReport:
    """Write promotable learnings into ``path``'s marked section (see the module docstring)."""
    threshold = deps.settings.promote_min_confidence if min_confidence is None else float(min_confidence)
    if not 0.0 <= threshold <= 1.0:
        raise InvalidInputError(f"min_confidence must be between 0 and 1, got {threshold}")
    target = Path(path)
    if target.is_dir():
        raise InvalidInputError(f"{target} is a directory; pass an instruction file such as {target / 'AGENTS.md'}")
    existed = target.exists()
    original = _read(target)
    doc = _Document(original, target)
    candidates = promotable(deps, threshold)
    by_id = {l.id: l for l in candidates}
    report = PromoteReport(path=str(target), created=not existed)

    present: set[str] = set()
    lines: list[str] = []
    mine = [l for l in LearningService(deps).learnings() if l.user_id == deps.user]
    for line in doc.lines:
        text, ident = line_text(line)
        if ident is not None and ident in by_id:
            lines.append(format_line(by_id[ident]))  # refresh the text of an id-tagged line
            present.add(ident)
            report.already_present += 1
            continue
        if ident is None:
            matched = match_line(text, candidates, deps.settings.promote_match_overlap)
            if matched is None and match_line(text, mine, deps.settings.promote_match_overlap) is None:
                report.hand_written += 1
            elif matched is not None:
                present.add(matched.id)
                report.already_present += 1
        lines.append(line)
    now = deps.now()
    for learning in candidates:
        if learning.id in present:
            continue
        line = format_line(learning)
        lines.append(line)
        report.promoted.append(
            PromotionChange(
                path=str(target), action="promoted", learning_id=learning.id, line=line,
                reason=f"pinned, active, confidence {learning.confidence:.2f} >= {threshold:.2f}",
            )
        )
    report.section_lines = len(lines)
    new_text = doc.render(lines)
    if new_text != original or not existed:
        _write(target, new_text)
        report.changed = True
    _log(deps, report.promoted, now)
    return report


# --- sweep --------------------------------------------------------------------------------
def demotion_reason(deps: Deps, learning: Learning, now: datetime) -> str | None:
    """Why a promoted learning should leave the file now, or None to keep it (age not checked)."""
    s = deps.settings
    if learning.superseded_by:
        return f"superseded by {learning.superseded_by}"
    if learning.status == "disabled":
        return "disabled"
    if learning.tier == "archive":
        return "archived"
    if learning.contradictions > 0 and learning.contradictions >= learning.validations * s.demote_contradiction_ratio:
        return f"contradicted ({learning.contradictions} contradictions >= {learning.validations} validations)"
    last = learning.last_validated_at or learning.created_at
    idle_days = (now - last).total_seconds() / 86400.0
    if idle_days >= s.demote_stale_days and learning.validations < s.archive_stale_max_validations:
        return f"stale (no validation for {int(idle_days)} days, {learning.validations} validations)"
    return None


def default_targets(folder: str | os.PathLike[str] = ".") -> list[Path]:
    """The usual instruction files that exist in ``folder``."""
    names = ("AGENTS.md", "CLAUDE.md", "TOOLS.md", "SOUL.md")
    return [Path(folder) / n for n in names if (Path(folder) / n).is_file()]


def sweep(deps: Deps, paths: Iterable[str | os.PathLike[str]]) -> SweepReport:
    """Remove demoted learnings' lines from each file's section; archive and log them."""
    now = deps.now()
    report = SweepReport()
    mine = [l for l in LearningService(deps).learnings() if l.user_id == deps.user]
    by_id = {l.id: l for l in mine}
    to_archive: dict[str, tuple[Learning, str]] = {}
    for raw in paths:
        target = Path(raw)
        stats = FileSweep(path=str(target))
        report.files.append(stats)
        if not target.is_file():
            stats.found = False
            continue
        original = _read(target)
        doc = _Document(original, target)
        if not doc.has_section:
            continue
        kept: list[str] = []
        for line in doc.lines:
            stats.scanned += 1
            text, ident = line_text(line)
            learning = by_id.get(ident) if ident else None
            if learning is None:
                learning = match_line(text, mine, deps.settings.promote_match_overlap)
            if learning is None:
                stats.kept_unmatched += 1
                kept.append(line)
                continue
            why = demotion_reason(deps, learning, now)
            if why is None:
                stats.kept_matched += 1
                kept.append(line)
                continue
            age_days = (now - learning.created_at).total_seconds() / 86400.0
            if age_days < deps.settings.demote_min_age_days:
                stats.kept_young += 1
                kept.append(line)
                continue
            stats.removed += 1
            report.changes.append(
                PromotionChange(path=str(target), action="demoted", learning_id=learning.id, line=line, reason=why)
            )
            to_archive.setdefault(learning.id, (learning, why))
        if stats.removed:
            _write(target, doc.render(kept))
    for learning, why in to_archive.values():
        if learning.tier != "archive":
            LearningService(deps).apply_changes(learning, {"tier": "archive"}, reason=f"demoted from instruction file: {why}")
    _log(deps, report.changes, now)
    return report


def _log(deps: Deps, changes: Sequence[PromotionChange], now: datetime) -> None:
    """Record promotions/demotions as Transition rows (field "promotion")."""
    if not changes:
        return
    with deps.store.transaction():
        for change in changes:
            version = deps.store.get_learning(change.learning_id).version
            old, new = ("", change.path) if change.action == "promoted" else (change.path, "")
            deps.store.log_transition(
                Transition(
                    learning_id=change.learning_id, field="promotion", old=old, new=new,
                    reason=f"{change.action}: {change.reason}", version=version, created_at=now,
                )
            )
