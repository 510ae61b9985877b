"""Retrieval metrics for the labelled benchmark: pure functions, no I/O.

Conventions (shared by every function here):

- ``ranked`` is the retriever's output, best first, as benchmark keys. A key repeated later in
  the list is ignored (a retriever gets no credit, and no extra blame, for returning an item
  twice).
- ``relevant`` maps keys to graded relevance: 2 = directly answers, 1 = useful. Keys not in the
  mapping, and keys with grade 0, are not relevant. An item *counts as relevant* (for precision,
  recall and MRR) when its grade is >= 1; nDCG uses the grades themselves.
- **Queries with no relevant item** (``no_answer`` queries, ``relevant == {}``): precision,
  recall, nDCG and MRR are undefined and return ``None``; :func:`aggregate` leaves ``None`` out of
  the means, so such queries never drag precision down nor push it up. :func:`noise_count` is
  still defined for them: returning anything that is noise for the user is an error everywhere.
- ``k`` must be a positive integer. Precision at k divides by ``k`` even when fewer than ``k``
  items were returned (returning nothing is not rewarded); :func:`max_precision_at_k` gives the
  best value reachable for a query with few relevant items.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence

Row = Mapping[str, object]

__all__ = [
    "aggregate",
    "dcg_at_k",
    "max_precision_at_k",
    "mrr",
    "ndcg_at_k",
    "noise_count",
    "precision_at_k",
    "recall_at_k",
]


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def _dedupe(ranked: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for key in ranked:
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def _relevant_set(relevant: Mapping[str, int]) -> set[str]:
    return {key for key, grade in relevant.items() if grade >= 1}


def precision_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 5) -> float | None:
    """Share of the top ``k`` slots holding a relevant item (grade >= 1): hits / ``k``.

    ``None`` when the query has no relevant item. Example: ranked ``[a, x, b]``, relevant
    ``{a: 2, b: 1}``, k 5 → 2 / 5 = 0.4.
    """
    _check_k(k)
    rel = _relevant_set(relevant)
    if not rel:
        return None
    hits = sum(1 for key in _dedupe(ranked)[:k] if key in rel)
    return hits / k


def max_precision_at_k(relevant: Mapping[str, int], k: int = 5) -> float | None:
    """The best :func:`precision_at_k` any ranking can reach: min(k, #relevant) / k (None if none)."""
    _check_k(k)
    n = len(_relevant_set(relevant))
    if n == 0:
        return None
    return min(k, n) / k


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 5) -> float | None:
    """Share of the relevant items (grade >= 1) found in the top ``k``; ``None`` if there are none.

    Example: ranked ``[a, x, b]``, relevant ``{a: 2, b: 1, c: 1}``, k 2 → 1 / 3.
    """
    _check_k(k)
    rel = _relevant_set(relevant)
    if not rel:
        return None
    hits = sum(1 for key in _dedupe(ranked)[:k] if key in rel)
    return hits / len(rel)


def dcg_at_k(grades: Sequence[int], k: int) -> float:
    """Discounted cumulative gain of a list of grades: sum of (2^g - 1) / log2(rank + 1), rank from 1."""
    _check_k(k)
    return sum((2.0**g - 1.0) / math.log2(i + 2) for i, g in enumerate(grades[:k]) if g > 0)


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 5) -> float | None:
    """Normalised DCG at ``k`` with graded gains 2^g - 1 and a log2(rank + 1) discount.

    The ideal ranking sorts all labelled grades in descending order. ``None`` when no item has a
    grade >= 1. Example: ranked ``[b, a]``, relevant ``{a: 2, b: 1}``, k 2 → DCG 1 + 3/log2(3),
    IDCG 3 + 1/log2(3), nDCG ≈ 0.7967.
    """
    _check_k(k)
    if not _relevant_set(relevant):
        return None
    gains = [max(0, relevant.get(key, 0)) for key in _dedupe(ranked)]
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)
    return dcg_at_k(gains, k) / dcg_at_k(ideal, k)


def mrr(ranked: Sequence[str], relevant: Mapping[str, int], k: int | None = None) -> float | None:
    """Reciprocal rank of the first relevant item (grade >= 1), 0.0 if none is found.

    Looks at the whole list, or only its top ``k`` when ``k`` is given. ``None`` when the query
    has no relevant item. (Averaged over queries by :func:`aggregate`, it is the mean reciprocal
    rank.) Example: ranked ``[x, y, a]``, relevant ``{a: 1}`` → 1/3.
    """
    if k is not None:
        _check_k(k)
    rel = _relevant_set(relevant)
    if not rel:
        return None
    items = _dedupe(ranked)
    if k is not None:
        items = items[:k]
    for i, key in enumerate(items, start=1):
        if key in rel:
            return 1.0 / i
    return 0.0


def noise_count(ranked: Sequence[str], noise: Collection[str], k: int | None = None) -> int:
    """How many of the returned items (the top ``k``, or all when ``k`` is None) are noise.

    Noise items must never be returned (disabled/shadow/candidate, archived, superseded, expired,
    another user's): see ``benchmarks.dataset.noise_keys``. Defined for every query, including
    those with nothing relevant. Example: ranked ``[a, n1, b, n2]``, noise ``{n1, n2}``, k 3 → 1.
    """
    if k is not None:
        _check_k(k)
    items = _dedupe(ranked)
    if k is not None:
        items = items[:k]
    noise_set = set(noise)
    return sum(1 for key in items if key in noise_set)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def aggregate(
    per_query_rows: Iterable[Row],
    by: str = "kind",
    *,
    totals: Collection[str] = ("noise",),
) -> dict[str, dict[str, float | int | None]]:
    """Means of every numeric column per group (the value of column ``by``) and ``"overall"``.

    ``per_query_rows`` holds one mapping per query, e.g.
    ``{"id": "Q001", "kind": "lexical", "p@5": 0.4, "ndcg@5": 0.8, "noise": 0}``. A column is
    numeric when its values are ints, floats or ``None`` (bools and strings are skipped). For each
    group the result holds ``"n"`` (the number of rows), each column's mean over its non-``None``
    values (``None`` when every value is ``None``, as for precision on ``no_answer`` queries), and,
    for every column named in ``totals`` (default: ``noise``), its sum as ``"<column>_total"``
    (the regression guard tolerates no noise at all). Groups appear in first-seen order, then
    ``"overall"``; a group may not itself be called ``"overall"``.
    """
    rows = list(per_query_rows)
    columns: list[str] = []
    non_numeric: set[str] = set()
    for row in rows:
        if by not in row:
            raise KeyError(f"row {dict(row)!r} has no {by!r} column")
        for col, value in row.items():
            if col == by:
                continue
            if value is not None and not _is_number(value):
                non_numeric.add(col)
            if col not in columns:
                columns.append(col)
    numeric = [c for c in columns if c not in non_numeric]
    if "n" in numeric or any(f"{t}_total" in numeric for t in totals):
        raise ValueError("columns may not be named 'n' or '<total>_total': those names are outputs")

    groups: dict[str, list[Row]] = {}
    for row in rows:
        name = str(row[by])
        if name == "overall":
            raise ValueError(f"a {by!r} value may not be 'overall': that name is the total")
        groups.setdefault(name, []).append(row)
    groups["overall"] = rows

    result: dict[str, dict[str, float | int | None]] = {}
    for name, members in groups.items():
        stats: dict[str, float | int | None] = {"n": len(members)}
        for col in numeric:
            values: list[int | float] = []
            for r in members:
                v = r.get(col)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    values.append(v)
            stats[col] = sum(values) / len(values) if values else None
            if col in totals:
                stats[f"{col}_total"] = sum(values)
        result[name] = stats
    return result
