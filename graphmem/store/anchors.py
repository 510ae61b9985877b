"""An in-memory mirror of the learnings' association edges, for graph expansion on the hot path.

An *anchor* is a node a learning links to: ``("tool", name)`` over ABOUT_TOOL, ``("entity", name)``
over MENTIONS, ``("topic", name)`` over ABOUT_TOPIC, ``("objective_type", name)`` over
FOR_OBJECTIVE_TYPE. The index maps each anchor to the catalog rows linked to it, and counts how
many learnings link each pair of entity/topic anchors together: the co-occurrence the RELATED
edges record, by which the second hop travels.

Co-occurrence is counted per *owner*: a private learning counts for its user only, a shared one
in a common bucket (:data:`SHARED`). A user's second hop travels over their own counts plus the
shared ones, never over an association only another user's private learning holds.

Measured at 10k learnings on this machine, a one-hop expansion from a busy entity through Kùzu
took 16 ms and a capped second hop 12–25 ms; from this mirror both take well under a
millisecond. The graph in Kùzu stays the source of truth: the mirror is rebuilt from it on
open and updated after every commit, like the embedding matrix.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

Anchor = tuple[str, str]
ANCHOR_KINDS = ("tool", "entity", "topic", "objective_type")
_RELATED_KINDS = frozenset({"entity", "topic"})
SHARED = "\x00shared"
"""The co-occurrence bucket of shared learnings (not a possible user id: user ids are text)."""


def members(sorted_rows: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """True where ``rows[i]`` is in ``sorted_rows`` (ascending, as :meth:`AnchorIndex.rows_of`
    gives): a binary search per row, so the cost follows ``rows``, not the anchor's degree."""
    if sorted_rows.size == 0 or rows.size == 0:
        return np.zeros(rows.size, dtype=bool)
    pos = np.searchsorted(sorted_rows, rows)
    pos[pos == sorted_rows.size] = 0
    return np.asarray(sorted_rows[pos] == rows)


def owner_bucket(user_id: str, shared: bool) -> str:
    """The co-occurrence bucket one learning counts in: :data:`SHARED`, or its user."""
    return SHARED if shared else user_id


def anchors_of(
    tool: str | None, entities: Iterable[str], topics: Iterable[str], objective_type: str | None
) -> tuple[Anchor, ...]:
    """The anchors one learning links to, in a stable order."""
    out: list[Anchor] = []
    if tool:
        out.append(("tool", tool))
    out.extend(("entity", e) for e in entities if e)
    out.extend(("topic", t) for t in topics if t)
    if objective_type:
        out.append(("objective_type", objective_type))
    return tuple(dict.fromkeys(out))


class AnchorRows(dict[Anchor, set[int]]):
    """anchor → set of rows. The anchors a snapshot held keep its sorted row array (mapped from
    the file: no Python int and set slot per link, ~350 MB at 1M learnings) until a write or a
    caller needs the set; :meth:`size` and :meth:`array_of` read them without building it."""

    def __init__(self, base: dict[Anchor, np.ndarray] | None = None) -> None:
        super().__init__()
        self.base: dict[Anchor, np.ndarray] = dict(base or {})

    def _take(self, anchor: Anchor) -> set[int] | None:
        arr = self.base.pop(anchor, None)
        if arr is None:
            return None
        members = set(arr.tolist())
        dict.__setitem__(self, anchor, members)
        return members

    def __missing__(self, anchor: Anchor) -> set[int]:
        members = self._take(anchor)
        if members is None:
            raise KeyError(anchor)
        return members

    def get(self, anchor: Anchor, default: Any = None) -> Any:  # type: ignore[override]
        if dict.__contains__(self, anchor):
            return dict.__getitem__(self, anchor)
        members = self._take(anchor)
        return default if members is None else members

    def setdefault(self, anchor: Anchor, default: Any = None) -> Any:  # type: ignore[override]
        members = self.get(anchor)
        if members is None:
            dict.__setitem__(self, anchor, default)
            return default
        return members

    def __contains__(self, anchor: object) -> bool:
        return dict.__contains__(self, anchor) or anchor in self.base

    def __len__(self) -> int:
        return dict.__len__(self) + len(self.base)

    def keys(self) -> list[Anchor]:  # type: ignore[override]
        return [*dict.keys(self), *self.base]

    def __iter__(self) -> Iterator[Anchor]:
        return iter(self.keys())

    def _all(self) -> None:
        for anchor in list(self.base):
            self._take(anchor)

    def items(self) -> Any:
        self._all()
        return dict.items(self)

    def values(self) -> Any:
        self._all()
        return dict.values(self)

    def __eq__(self, other: object) -> bool:
        self._all()
        return dict.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]

    def size(self, anchor: Anchor) -> int:
        """How many rows link ``anchor`` (no set built)."""
        arr = self.base.get(anchor)
        return int(arr.size) if arr is not None else len(dict.get(self, anchor, ()))

    def array_of(self, anchor: Anchor) -> np.ndarray:
        """The rows of ``anchor``, ascending, as an int64 array (no set built)."""
        arr = self.base.get(anchor)
        if arr is not None:
            return arr
        members = dict.get(self, anchor)
        out = np.fromiter(members, dtype=np.int64, count=len(members)) if members else np.zeros(0, np.int64)
        out.sort()
        return out


class AnchorIndex:
    """anchor → rows, row → anchors, and per-owner entity/topic co-occurrence counts."""

    def __init__(self) -> None:
        self.rows = AnchorRows()
        self.of_row: list[tuple[Anchor, ...]] = []
        self.owner: list[str] = []
        self.cooc: dict[str, dict[Anchor, dict[Anchor, int]]] = {}
        self._arrays: dict[Anchor, np.ndarray] = {}

    def set_row(self, row: int, anchors: tuple[Anchor, ...], owner: str = SHARED) -> None:
        """Record that catalog row ``row`` links exactly ``anchors`` and counts its co-occurrences
        in ``owner``'s bucket (:func:`owner_bucket`); a new row is appended."""
        if row == len(self.of_row):
            self.of_row.append(())
            self.owner.append(owner)
        old, old_owner = self.of_row[row], self.owner[row]
        if old == anchors and old_owner == owner:
            return
        for a in old:
            self.rows[a].discard(row)
            self._arrays.pop(a, None)
        self._count(old, -1, old_owner)
        for a in anchors:
            members = self.rows.setdefault(a, set())
            cached = self._arrays.pop(a, None)
            if cached is not None and row not in members and (cached.size == 0 or row > cached[-1]):
                self._arrays[a] = np.append(cached, row)  # a new last row: still sorted, no rebuild
            members.add(row)
        self._count(anchors, +1, owner)
        self.of_row[row] = anchors
        self.owner[row] = owner

    def _count(self, anchors: tuple[Anchor, ...], delta: int, owner: str) -> None:
        related = [a for a in anchors if a[0] in _RELATED_KINDS]
        if len(related) < 2:
            return
        bucket = self.cooc.setdefault(owner, {})
        for i, a in enumerate(related):
            for b in related[i + 1 :]:
                for x, y in ((a, b), (b, a)):
                    counts = bucket.setdefault(x, {})
                    value = counts.get(y, 0) + delta
                    if value > 0:
                        counts[y] = value
                    else:
                        counts.pop(y, None)
                        if not counts:
                            del bucket[x]
        if not bucket:
            del self.cooc[owner]  # a forgotten user leaves no bucket behind

    def move(self, from_row: int, to_row: int) -> None:
        """Follow a swap-remove in the catalog: ``from_row`` (the last) now lives at ``to_row``."""
        removed = self.of_row[to_row]
        for a in removed:
            self.rows[a].discard(to_row)
            self._arrays.pop(a, None)
        self._count(removed, -1, self.owner[to_row])
        if from_row != to_row:
            moved = self.of_row[from_row]
            for a in moved:
                self.rows[a].discard(from_row)
                self.rows[a].add(to_row)
                self._arrays.pop(a, None)
            self.of_row[to_row] = moved
            self.owner[to_row] = self.owner[from_row]
        self.of_row.pop()
        self.owner.pop()

    def load(self, of_row: list[tuple[Anchor, ...]], owners: list[str] | None = None) -> None:
        """Rebuild from every row's anchors and co-occurrence bucket (on open)."""
        self.of_row = list(of_row)
        self.owner = list(owners) if owners is not None else [SHARED] * len(self.of_row)
        self.cooc, self._arrays = {}, {}
        rows: dict[Anchor, set[int]] = {}
        pairs: dict[str, Counter[tuple[Anchor, Anchor]]] = {}
        for row, (anchors, owner) in enumerate(zip(self.of_row, self.owner)):
            for a in anchors:
                members = rows.get(a)
                if members is None:
                    rows[a] = members = set()
                members.add(row)
            related = [a for a in anchors if a[0] in _RELATED_KINDS]
            if len(related) >= 2:  # both directions of every pair, as _count adds them
                counts = pairs.get(owner)
                if counts is None:
                    pairs[owner] = counts = Counter()
                counts.update(itertools.permutations(related, 2))
        self.rows = AnchorRows()
        dict.update(self.rows, rows)
        for owner, counts in pairs.items():
            bucket: dict[Anchor, dict[Anchor, int]] = {}
            for (x, y), value in counts.items():
                if value > 0:
                    bucket.setdefault(x, {})[y] = value
            if bucket:
                self.cooc[owner] = bucket

    def rows_of(self, anchor: Anchor) -> np.ndarray:
        """The catalog rows linked to ``anchor``, ascending (a cached int64 array; empty when
        unknown). Sorted, so membership of a few rows is a binary search (:func:`members`)."""
        arr = self._arrays.get(anchor)
        if arr is None:
            arr = self.rows.array_of(anchor)
            self._arrays[anchor] = arr
        return arr

    def degree(self, anchor: Anchor) -> int:
        """How many rows link ``anchor`` (no array built)."""
        return self.rows.size(anchor)

    def neighbours(
        self, anchors: Iterable[Anchor], k: int, user: str | None = None
    ) -> list[tuple[Anchor, Anchor, int]]:
        """The ``k`` heaviest co-occurring entity/topic neighbours of ``anchors``.

        ``user``: count only that user's own learnings and the shared ones (None: every
        learning, for maintenance). Returns (neighbour, via anchor, weight), heaviest first; the
        anchors themselves are excluded, and a neighbour reached from several anchors keeps its
        heaviest link.
        """
        given = set(anchors)
        buckets = list(self.cooc.values()) if user is None else [
            b for b in (self.cooc.get(user), self.cooc.get(SHARED)) if b
        ]
        best: dict[Anchor, tuple[int, Anchor]] = {}
        for a in sorted(given):  # ties keep the first anchor in a fixed order, not the set's hash order
            summed: dict[Anchor, int] = {}
            for bucket in buckets:
                for nb, w in bucket.get(a, {}).items():
                    summed[nb] = summed.get(nb, 0) + w
            for nb, w in summed.items():
                if nb in given:
                    continue
                if nb not in best or w > best[nb][0]:
                    best[nb] = (w, a)
        ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))[: max(k, 0)]
        return [(nb, via, w) for nb, (w, via) in ranked]

    def names(self, kind: str) -> list[str]:
        """Every known anchor name of one kind."""
        return [name for (k, name) in self.rows if k == kind and self.rows.size((k, name))]
