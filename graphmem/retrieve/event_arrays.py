"""Per-query helpers of event search: time words, names in a query, and the arrays a user's
event layout yields (rows, sessions, entity postings, turn priors), cached on the layout.

:mod:`graphmem.retrieve.search` ranks with them; they hold no state of their own.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from graphmem.retrieve.entities import EntityIndex, date_keys, extract_entities, normalise_entity
from graphmem.store.search import EventLayout
from graphmem.store.vectors import scan_cosines

_MONTH_NUMBER = {m[:3]: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"], start=1)}

_MONTHS = "january february march april may june july august september october november december"
_DAYS = "monday tuesday wednesday thursday friday saturday sunday"
TIME_EXPRESSION = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|recently|lately|weekend|"
    r"(?:last|next|this|past|previous|coming)\s+(?:few\s+)?(?:week|month|year|night|time|summer|winter|"
    r"spring|fall|autumn|weekend|days|weeks|months|years|" + _DAYS.replace(" ", "|") + r")s?|"
    + _MONTHS.replace(" ", "|") + "|" + _DAYS.replace(" ", "|") + r"|(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_TIME_QUESTION = re.compile(
    r"\b(?:when|what\s+(?:year|month|day|date|time)|how\s+long\s+ago|which\s+(?:year|month|day))\b",
    re.IGNORECASE,
)


def asks_when(query: str) -> bool:
    """True if the query asks for a time (when, what year, how long ago...)."""
    return bool(_TIME_QUESTION.search(query))


def has_time_expression(text: str) -> bool:
    """True if ``text`` holds a date or time expression (yesterday, last week, May, 2022...)."""
    return bool(TIME_EXPRESSION.search(text))


def named_entities(query: str, known: list[str]) -> list[str]:
    """The known entity names that occur in ``query`` as whole words (case-insensitive)."""
    low = query.lower()
    found = []
    for name in known:
        n = name.strip().lower()
        if n and re.search(r"(?<![\w])" + re.escape(n) + r"(?![\w])", low):
            found.append(name)
    return found


def strip_names(query: str, names: Sequence[str]) -> str:
    """``query`` without the given entity names (and their possessive ``'s``), spaces collapsed."""
    out = query
    for name in sorted(names, key=len, reverse=True):
        if name:
            out = re.sub(r"(?<![\w])" + re.escape(name) + r"(?:['’]s?)?(?![\w])", " ", out, flags=re.IGNORECASE)
    return " ".join(out.split())


def idf_weight(df: int, n: int) -> float:
    """Inverse document frequency of an entity named by ``df`` of ``n`` events (> 0)."""
    return math.log((n + 1) / (df + 0.5))


def entity_index(store: object, user: str, layout: EventLayout) -> EntityIndex:
    """The user's event-entity links in layout order (cached on the layout)."""
    index = layout.derived.get("entity_index")
    if index is None:
        rows = store.event_mention_rows(user)  # type: ignore[attr-defined]
        index = EntityIndex.build(layout.position, layout.linked or [[] for _ in layout.order], rows)
        layout.derived["entity_index"] = index
        layout.keep_on_append.add("entity_index")  # grown below with the appended events' links
    elif len(index.linked) < len(layout):
        # the appended positions only (the whole position map costs ~0.1 s per write at 1M events)
        new = {layout.order[p]: p for p in range(len(index.linked), len(layout))}
        index.extend(new, layout.linked, [r for r in layout.mention_rows if r[0] in new])
    return index  # type: ignore[no-any-return]


class Scores(Protocol):
    """What the later ranking steps read of the final scores: a numpy array, or an
    :class:`graphmem.retrieve.event_score.Overlay` standing for one (``x[i]``, ``x[positions]``)."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    def __getitem__(self, i: Any) -> Any: ...


def entity_arrays(index: EntityIndex, key: str, layout: EventLayout) -> tuple[np.ndarray, np.ndarray]:
    """``key``'s posting as positions and, aligned, whether each event is linked to it (not
    just naming it), cached on the layout and grown with it (postings only grow): the entity
    signals then cost numpy operations, not a Python loop over a speaker's every turn."""
    cache: dict[str, tuple[np.ndarray, np.ndarray]] = layout.derived.setdefault("entity_arrays", {})
    layout.keep_on_append.add("entity_arrays")
    posting = index.postings[key]
    got = cache.get(key)
    if got is None or got[0].size < len(posting):
        start = 0 if got is None else got[0].size
        tail = posting[start:]  # (a copy: the index may grow meanwhile)
        pos = np.frombuffer(tail, dtype=np.int64) if isinstance(tail, array) else np.asarray(tail, dtype=np.int64)
        flags = index.linked_flags.get(key, ())
        end = start + len(tail)  # the copied positions only: the posting may have grown since
        if len(flags) >= end:  # (kept beside the posting: read at once)
            linked = np.array(flags[start:end], dtype=bool)
        else:
            linked = np.fromiter((key in index.linked[p] for p in tail), dtype=bool, count=len(tail))
        got = (pos, linked) if got is None else (np.concatenate([got[0], pos]), np.concatenate([got[1], linked]))
        cache[key] = got
    return got


class NamesAt:
    """Position -> the query entity names that found it (for the reasons of the few hits
    returned), read from per-entity masks on demand instead of a dict filled for every event."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, str]] = []  # (boolean mask over positions, name)

    def get(self, p: int, default: list[str] | None = None) -> list[str]:
        names = [name for mask, name in self.parts if mask[p]]
        return names if names else (default if default is not None else [])

    def __contains__(self, p: object) -> bool:
        return isinstance(p, (int, np.integer)) and any(bool(mask[p]) for mask, _ in self.parts)

    def __getitem__(self, p: int) -> list[str]:
        names = self.get(p)
        if not names:
            raise KeyError(p)
        return names


def years_months(layout: EventLayout) -> tuple[np.ndarray, np.ndarray]:
    """Per position, the year and month of the event's time (0 when it has none); cached on the
    layout and grown with it."""
    got = layout.derived.get("years_months")
    n = len(layout)
    if got is None or got[0].size < n:
        start = 0 if got is None else got[0].size
        tail = layout.created[start:]
        years = np.fromiter((ts.year if ts is not None else 0 for ts in tail), dtype=np.int32, count=n - start)
        months = np.fromiter((ts.month if ts is not None else 0 for ts in tail), dtype=np.int32, count=n - start)
        got = (years, months) if got is None else (np.concatenate([got[0], years]), np.concatenate([got[1], months]))
        layout.derived["years_months"] = got
        layout.keep_on_append.add("years_months")
    return got  # type: ignore[no-any-return]


def query_entities(query: str, passed: Sequence[str], index: EntityIndex) -> list[str]:
    """Merge keys of the entities a query anchors on: the ones passed, and the ones its text
    names (extracted, known names matched case-insensitively) that the user's events know."""
    keys = [normalise_entity(x) for x in passed]
    if query:
        keys += [m.key for m in extract_entities(query, known_keys=index.known_keys())]
    return [k for k in dict.fromkeys(keys) if k in index.postings]


def date_match(query: str, layout: EventLayout) -> np.ndarray:
    """1 for events whose session date falls in a month / year the query names (``in May
    2023``, ``in 2022``), else 0; the layout's shared :func:`zeros_of` when the query names no
    date."""
    if not query or not layout.created:
        return zeros_of(layout)
    months: set[int] = set()
    years: set[int] = set()
    for key in date_keys(query):  # the date mentions of extract_entities
        for word in key.replace(",", " ").split():
            if word.isdigit() and len(word) == 4:
                years.add(int(word))
            elif word[:3] in _MONTH_NUMBER:
                months.add(_MONTH_NUMBER[word[:3]])
    if not months and not years:
        return zeros_of(layout)
    out = np.zeros(len(layout))
    year, month = years_months(layout)
    hit = year > 0
    if years:
        hit &= np.isin(year, list(years))
    if months:
        hit &= np.isin(month, list(months))
    out[hit] = 1.0
    return out


def diverse_top(
    final: Scores, session: list[str], k: int, decay: float, tops: Callable[[int], np.ndarray] | None = None
) -> np.ndarray:
    """The ``k`` best positions, where each further hit from a session already in the list
    counts ``decay`` times less (1.0: plain top k). Answers spread over sessions (multi-hop
    questions) then reach the list instead of more turns around one strong hit. ``tops(k)``:
    :func:`top_k` of ``final`` (a caller that keeps the best positions aside)."""
    top = tops if tops is not None else (lambda m: top_k(final, m))
    if decay >= 1.0 or k <= 0:
        return top(k) if k > 0 else top_k(final, k)
    pool = top(4 * k)
    seen: dict[str, int] = {}
    chosen: list[int] = []
    left = [int(p) for p in pool]
    while left and len(chosen) < k:
        best = max(left, key=lambda p: final[p] * decay ** seen.get(session[p], 0) if session[p] else final[p])
        left.remove(best)
        chosen.append(best)
        if session[best]:
            seen[session[best]] = seen.get(session[best], 0) + 1
    return np.asarray(chosen, dtype=np.int64)


def row_positions(layout: EventLayout) -> dict[int, int]:
    """Event catalog row -> layout position (cached on the layout)."""
    where: dict[int, int] | None = layout.derived.get("row_positions")
    if where is None:
        where = {}
        layout.derived["row_positions"] = where
        layout.keep_on_append.add("row_positions")  # positions never move: grown below
    if len(where) < len(layout):
        rows = layout.rows
        where.update((int(rows[p]), p) for p in range(len(where), len(layout)))
    return where


def row_position_array(layout: EventLayout) -> np.ndarray:
    """Event catalog row -> layout position (-1: not this user's), as an array cached on the
    layout and grown with it: maps a BM25 result's rows without a Python loop."""
    arr: np.ndarray | None = layout.derived.get("row_position_array")
    filled: int = layout.derived.get("row_position_filled", 0)
    n = len(layout)
    if arr is None or filled < n:
        rows = layout.rows
        top = int(rows.max()) + 1 if n else 0
        if arr is None or arr.shape[0] < top:
            grown = np.full(max(16, 2 * top), -1, dtype=np.int64)
            if arr is not None:
                grown[: arr.shape[0]] = arr
            arr = grown
        arr[rows[filled:]] = np.arange(filled, n, dtype=np.int64)
        layout.derived["row_position_array"] = arr
        layout.derived["row_position_filled"] = n
        layout.keep_on_append.update(("row_position_array", "row_position_filled"))
    return arr


def time_flags(layout: EventLayout) -> np.ndarray:
    """Per event of the layout: does its text hold a time expression? (cached on the layout)"""
    flags = layout.derived.get("time_flags")
    if flags is None or len(flags) < len(layout):
        start = 0 if flags is None else len(flags)
        tail = np.fromiter((has_time_expression(t) for t in layout.content[start:]), dtype=bool,
                           count=len(layout) - start)
        flags = tail if flags is None else np.concatenate([flags, tail])
        layout.derived["time_flags"] = flags
        layout.keep_on_append.add("time_flags")  # positions never move: only new ones are computed
    return flags  # type: ignore[no-any-return]


def zeros_of(layout: EventLayout) -> np.ndarray:
    """A read-only array of one 0.0 per event, kept on the layout until the next write: the
    signals that are zero for a query (no tool, no date, not a *when* question) share it
    instead of filling a new one (~1 ms each at a million events). :func:`known_zero` tells it
    apart without a pass over it."""
    got: np.ndarray | None = layout.derived.get("zeros")
    if got is None or got.shape[0] != len(layout):
        got = np.zeros(len(layout))
        got.flags.writeable = False
        layout.derived["zeros"] = got
    return got


def known_zero(values: np.ndarray, layout: EventLayout) -> bool:
    """True when ``values`` is the layout's shared :func:`zeros_of` (all zero, known without a
    pass); False says nothing."""
    return values is layout.derived.get("zeros")


def time_values(layout: EventLayout) -> np.ndarray:
    """:func:`time_flags` as 1.0 / 0.0 (the time signal of a question asking *when*), kept on
    the layout until the next write (a copy of a million flags per such question otherwise)."""
    got: np.ndarray | None = layout.derived.get("time_values")
    if got is None or got.shape[0] != len(layout):
        got = time_flags(layout).astype(np.float64)
        got.flags.writeable = False  # shared by the searches until the next write
        layout.derived["time_values"] = got
    return got


def turn_priors(layout: EventLayout) -> tuple[np.ndarray, np.ndarray]:
    """Per event of the layout: its log text length z-scored over the layout's events (clipped
    to [-2, 2]), and 1.0 where its text asks a question ("?"), else 0.0. The log lengths and
    flags are cached on the layout and extended for appended events only; the z-scores are
    cached until the next append (they move with the mean)."""
    cached = layout.derived.get("turn_priors")
    n = len(layout)
    if cached is None or cached[0].shape[0] < n:
        start = 0 if cached is None else cached[0].shape[0]
        tail = layout.content[start:n]
        lengths = np.log1p(np.fromiter((len(t) for t in tail), dtype=np.float64, count=n - start))
        asks = np.fromiter(("?" in t for t in tail), dtype=np.float64, count=n - start)
        if cached is not None:
            lengths, asks = np.concatenate([cached[0], lengths]), np.concatenate([cached[1], asks])
        cached = (lengths, asks)
        layout.derived["turn_priors"] = cached
        layout.keep_on_append.add("turn_priors")  # positions never move: only new ones are computed
    lengths, asks = cached[0][:n], cached[1][:n]
    z = layout.derived.get("turn_length_z")  # dropped by the next append (the mean moves)
    if z is None or z.shape[0] != n:
        std = float(lengths.std()) if n > 1 else 0.0
        z = np.clip((lengths - float(lengths.mean())) / (std or 1.0), -2.0, 2.0) if n else lengths
        layout.derived["turn_length_z"] = z
    return z, asks


def session_centroids(layout: EventLayout, matrix: Any) -> tuple[np.ndarray, np.ndarray]:
    """Unit mean vector of each session's events, and each position's session index (-1 for
    events without a session); cached on the layout."""
    cached = layout.derived.get("session_centroids")
    if cached is None:
        names: dict[str, int] = {}
        member = np.array([names.setdefault(x, len(names)) if x else -1 for x in layout.session], dtype=np.int64)
        vectors = matrix.vectors_of(layout.rows)
        centroids = np.zeros((max(len(names), 1), vectors.shape[1]), dtype=np.float32)
        ok = member >= 0
        np.add.at(centroids, member[ok], vectors[ok])
        norms = np.linalg.norm(centroids, axis=1, keepdims=True)
        cached = (centroids / np.where(norms > 0, norms, 1.0), member)
        layout.derived["session_centroids"] = cached
    return cached  # type: ignore[no-any-return]


def user_cosines(vectors: Any, rows: np.ndarray, units: np.ndarray) -> np.ndarray:
    """``(len(rows), k)`` cosines of the catalog rows ``rows`` to ``k`` unit vectors, as float64.
    When most of the mirror is this user's, the whole mirror is scanned in one pass for all
    ``k`` vectors (no copy of their rows per query; a view when ``rows`` is the whole mirror in
    order, as for a file with one user); else just their rows are multiplied. int8 rows (from
    50,000 events on) are scanned as int8 (:func:`graphmem.store.vectors.scan_cosines`)."""
    n = len(vectors)
    if 2 * rows.size < n:
        return np.asfortranarray(scan_cosines(vectors, units, rows), dtype=np.float64)  # type: ignore[no-any-return]
    sims = scan_cosines(vectors, units)
    if not (rows.size == n and rows[0] == 0 and rows[-1] == n - 1):  # rows rise strictly (layout order)
        sims = sims[rows]
    # column-major: each vector's cosines are contiguous (the ranking works column by column)
    return np.asfortranarray(sims, dtype=np.float64)  # type: ignore[no-any-return]


def pool_z(values: np.ndarray, among: np.ndarray) -> np.ndarray:
    """``values`` z-scored by the mean and standard deviation over the positions ``among``
    (a boolean mask), clipped at 0 and divided by 4 (the vector signal's scale)."""
    sub = values[among]
    if sub.size < 2:
        return np.zeros(values.shape[0])
    std = float(sub.std()) or 1.0
    return np.clip((values - float(sub.mean())) / std, 0.0, None) / 4.0  # type: ignore[no-any-return]


def top_k(values: np.ndarray | Scores, k: int) -> np.ndarray:
    """The first ``k`` of ``np.argsort(-values, kind="stable")`` (best first, ties in position
    order) without sorting every value: a bound on the k-th best (from the maxima of blocks of
    values on long arrays, one pass without a copy; else a partition), then only the values at
    least as good are sorted."""
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    values = values if isinstance(values, np.ndarray) else np.asarray(values)  # an Overlay: made whole
    if 4 * k >= values.shape[0]:
        return np.argsort(-values, kind="stable")[:k]
    cand, _ = top_candidates(values, k)
    return cand[np.argsort(-values[cand], kind="stable")][:k]  # type: ignore[no-any-return]


def top_candidates(values: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """``(positions, floor)``: every position whose value is at least ``floor``, ascending,
    where ``floor`` is at most the ``k``-th best value (so the ``k`` best are among them; every
    position when ``4 k`` reaches the length, with ``floor`` -inf). See :func:`top_k`."""
    n = values.shape[0]
    if k <= 0 or 4 * k >= n:
        return np.arange(n), -math.inf
    if n >= _BLOCKED_TOP_MIN and k * _TOP_BLOCK * 8 <= n:
        floor = _kth_block_max(values, k)  # at most the k-th best value: one pass, no copy
        return np.flatnonzero(values >= floor), floor
    kth = np.partition(-values, k - 1)[k - 1]  # minus the k-th best value
    return np.flatnonzero(-values <= kth), -float(kth)  # every value at least as good, in position order


_BLOCKED_TOP_MIN = 65_536  # from this many values on, top_k bounds the k-th best by block maxima
_TOP_BLOCK = 256


def _kth_block_max(values: np.ndarray, k: int) -> float:
    """The k-th largest of the maxima of consecutive blocks of ``values``: k blocks hold a value
    at least this large, so at least k values are, and the k-th best value is not below it."""
    n = values.shape[0]
    whole = n - n % _TOP_BLOCK
    maxima = values[:whole].reshape(-1, _TOP_BLOCK).max(axis=1)
    if whole < n:
        maxima = np.append(maxima, values[whole:].max())
    return float(np.partition(maxima, maxima.shape[0] - k)[maxima.shape[0] - k])


class RankOf:
    """1-based rank by descending score (+inf where not present) of single positions, computed
    on demand: the reasons of a few hits need it, and ranking every event costs a sort. The
    present positions scoring at least the lowest score asked so far are kept, so the next
    hits count among those few instead of passing over every event again."""

    def __init__(self, scores: np.ndarray, present: np.ndarray) -> None:
        self.scores, self.present = scores, present
        self._floor = math.inf  # the positions kept score at least this
        self._above = np.zeros(0, dtype=np.int64)

    def __getitem__(self, i: int) -> float:
        if not self.present[i]:
            return float("inf")
        v = self.scores[i]
        if v < self._floor:
            self._floor = float(v)
            self._above = np.flatnonzero((self.scores >= v) & self.present)
        vals = self.scores[self._above]
        better = np.count_nonzero(vals > v) + np.count_nonzero((vals == v) & (self._above < i))
        return float(better + 1)


def rank_array(scores: np.ndarray, present: np.ndarray) -> np.ndarray:
    """1-based rank of each entry by descending score; +inf where not present."""
    ranks = np.full(scores.shape[0], np.inf)
    idx = np.flatnonzero(present)
    if idx.size:
        order = idx[np.argsort(-scores[idx], kind="stable")]
        ranks[order] = np.arange(1, order.size + 1)
    return ranks


