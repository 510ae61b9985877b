"""Hops along the conversation for event search: the same speaker's next and previous turns.

In a conversation a speaker's story runs over several of their turns, interleaved with the
other speaker's replies: "I went to a castle in the UK last Friday!" / "Wow, how was it?" / "The
architecture was amazing, and I also visited London...". A question about the story ("Which
country has Tim visited most?") finds one of those turns; the others say less on their own.
So each of the best ``search_continuation_seeds`` hits passes a share of its score (its score
over the top score) to the nearest turn of the *same speaker* before and after it in its
session, at most ``search_continuation_reach`` turns away (the session-neighbour signal of
:mod:`graphmem.retrieve.search` lifts the adjacent turns, which in a dialogue are the other
speaker's replies). The score added is ``search_weight_continuation`` x that share.

On LoCoMo the evidence turns of multi-hop and open-domain questions that miss the top 10 are
a fifth of the time the same speaker's adjacent turn of a top-10 hit (``python -m
benchmarks.locomo_misses analyse``); the weight and seed count were chosen on conversations 0-4
and measured on 5-9 (docs/benchmarks.md, LoCoMo).

The work per query is bounded by seeds x 2 x reach lookups in the layout's neighbour index
(kept up to date as events are written), so the signal costs the same at any number of events.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from graphmem.config import Settings
from graphmem.retrieve.event_arrays import Scores, top_k
from graphmem.store.search import EventLayout


def same_speaker_turns(layout: EventLayout, position: int, reach: int) -> list[int]:
    """The nearest turn of the same speaker (role) before and after ``position`` in its session,
    at most ``reach`` turns away (0, 1 or 2 positions; none without a role or a session)."""
    role = layout.role[position]
    if not role or not layout.session[position] or reach <= 0:
        return []
    nb = layout.neighbour_index(reach)[position]
    out = []
    for side in (0, 1):  # columns: distance 1 before, 1 after, 2 before, 2 after...
        for d in range(reach):
            p = int(nb[2 * d + side])
            if p < 0:
                break
            if layout.role[p] == role:
                out.append(p)
                break
    return out


def continuation_shares(
    final: Scores, layout: EventLayout, settings: Settings, best: Callable[[int], np.ndarray] | None = None
) -> dict[int, float]:
    """Position -> the best share of the top score among the best ``search_continuation_seeds``
    hits whose same-speaker neighbour it is (see the module docstring), for the positions with a
    share above 0; empty when the weight or the seed count is 0. A hit does not lift itself,
    but two hits may lift each other. ``best(k)``: the ``k`` best positions of ``final``, ties
    in position order (default :func:`graphmem.retrieve.event_arrays.top_k`)."""
    out: dict[int, float] = {}
    s = settings
    if s.search_weight_continuation <= 0 or s.search_continuation_seeds <= 0 or final.shape[0] < 2:
        return out
    seeds = best(s.search_continuation_seeds) if best is not None else top_k(final, s.search_continuation_seeds)
    top = float(final[seeds[0]])  # the largest score
    if top <= 0:
        return out
    for seed in seeds:
        share = max(float(final[seed]) / top, 0.0)
        for p in same_speaker_turns(layout, int(seed), s.search_continuation_reach):
            if share > out.get(p, 0.0):
                out[p] = share
    return out


def continuation(final: np.ndarray, layout: EventLayout, settings: Settings) -> np.ndarray:
    """:func:`continuation_shares` as an array over every position (zeros elsewhere)."""
    out = np.zeros(final.shape[0])
    for p, share in continuation_shares(final, layout, settings).items():
        out[p] = share
    return out
