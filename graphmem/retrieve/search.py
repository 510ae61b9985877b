"""Search over events (episodic memory) and the :class:`Hit` model ``Memory.search`` returns.

The events ranking is hybrid, over the calling user's events only:

1. **vector**: exact cosine of the query embedding to every one of the user's events (the
   in-memory event catalog, masked by user: no index, no approximation);
2. **fulltext**: BM25 over the normalised ``search_text`` of the user's events, from the event
   catalog's in-memory lexical index (statistics over that user's events only);
3. **graph**: events that ``MENTIONS`` an entity the caller passed or the query names (matched
   against the Entity nodes the user's events link to), events that ``USED_TOOL`` the tool;
4. **session neighbours**: conversations spread an answer over adjacent turns, so every event
   also receives a share of its best same-session neighbour's score (``search_neighbour_*``);
5. **time words**: a question asking *when* lifts events that contain a date or time expression;
6. **entities from text** (:mod:`graphmem.retrieve.entities`): events whose text names one of the
   query's entities (extracted from the question too) get an idf-weighted bonus
   (``search_weight_mention``); names the caller links (a speaker) count through those links only;
7. **second hop**: the entities of the best ``search_hop_seeds`` hits lead to the other events
   that name them (only entities named by at most ``search_hop_max_events`` events, so fan-out is
   bounded), scored by the seed's share of the top score x the entity's idf
   (``search_weight_hop``); optionally also events close in embedding space to the best hits
   (``search_weight_feedback``, off by default: no gain on LoCoMo);
8. **session dates**: a question naming a month or year (``in May 2023``) lifts events from
   sessions dated in that period (``search_weight_date``);
9. **query without names**: when the query names entities the events know (a speaker), the
   cosine is blended with the cosine of the query with those names removed
   (``search_weight_stripped``), so the embedding matches what is asked about that person;
10. **session relevance** (off by default: no gain on LoCoMo): each event gets the z-scored cosine
    of the query to its session's centroid (``search_weight_session``).
11. **addressed turns**: when the query names a speaker (an entity the events link to), a turn
    whose text names that speaker without being theirs ("Wow, Melanie!") loses
    ``search_weight_address``: it is someone talking *to* them, rarely what is asked about them;
12. **word feedback** (pseudo-relevance feedback through shared words): the rarer content words
    of the best ``search_prf_docs`` hits that the query lacks become a second BM25 query
    (``search_prf_terms`` words, ``search_weight_prf``), so turns that share the best hits'
    topic words rank up even when they share no word with the question;
13. **embedding feedback** (Rocchio): the query vector plus the score-weighted mean vector of the
    best ``search_rocchio_docs`` hits; each event gets its z-scored cosine to it
    (``search_weight_rocchio``), scaled down on other speakers' turns when the best hits are the
    query speaker's own.
14. **turn priors**: a longer turn than the user's usual one gains ``search_weight_length`` x its
    z-scored log length (clipped to [-2, 2]; shorter turns lose as much), and a turn that asks a
    question ("?") loses ``search_weight_question_turn``: in a conversation, the turns that answer
    a question about someone are their longer statements, not the questions put to them.
15. **continuation** (:mod:`graphmem.retrieve.event_hops`): the same speaker's next and previous
    turns of the best hits gain a share of their score (``search_weight_continuation``).
16. **soft term matching** (:mod:`graphmem.retrieve.event_terms`): each content word of the query
    that the user's events hold, against the most similar *other* word of each event (single
    words embedded alone, once; ``search_weight_terms``, added like the turn priors; users above
    ``search_terms_max_events`` events get none). Off by default (``search_weight_terms`` 0).

:meth:`EventSearch.signals` computes every signal once and :meth:`EventSearch.rank` applies the
weights, so ``benchmarks/locomo_tune.py`` fits the weights without recomputing the signals.

Vector and fulltext are fused first (``Settings.search_fusion``: reciprocal-rank fusion, or a
score fusion of the z-scored cosine and max-normalised BM25), the fused score is scaled to
[0, 1], then the graph, neighbour, time and turn-length bonuses are added (the addressed-turn and
question-turn penalties subtracted), then the second hop, then word feedback, then embedding feedback. Each hit says
in ``reasons`` which signals found it. ``benchmarks/locomo.py`` measures every signal (an ablation in the same run).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from graphmem.config import Settings
from graphmem.embed import Embedder
from graphmem.models import Event, Learning
from graphmem.retrieve.entities import EntityIndex
from graphmem.retrieve.event_arrays import (
    NamesAt,
    RankOf,
    Scores,
    asks_when,
    date_match,
    diverse_top,
    entity_arrays,
    entity_index,
    idf_weight,
    pool_z,
    query_entities,
    rank_array,
    row_position_array,
    session_centroids,
    strip_names,
    time_values,
    top_k,
    turn_priors,
    user_cosines,
    zeros_of,
)
from graphmem.retrieve.event_hops import continuation_shares
from graphmem.retrieve.event_rank import pruned_feedback, weighted_sum
from graphmem.retrieve.event_reasons import event_reasons
from graphmem.retrieve.event_score import Ranked, sparse_score
from graphmem.retrieve.event_shortlist import OUTSIDE, shortlist_cosines
from graphmem.retrieve.event_terms import event_terms, query_words
from graphmem.retrieve.query_vectors import QueryVectors, query_texts
from graphmem.retrieve.sparse_arrays import Filled, Overlay, Scattered, spread
from graphmem.store.search import EventLayout

HitKind = Literal["learning", "event"]

class Hit(BaseModel):
    """One search result: a learning or an event, its score and why it was found."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: HitKind
    node: Learning | Event
    score: float
    reasons: list[str]



@dataclass
class _Signals:
    """Per-event signal arrays in layout order (one entry per user event)."""

    dense: np.ndarray | Filled  # cosine to the query (Filled: OUTSIDE off the scanned positions)
    bm25: np.ndarray
    entity: np.ndarray
    tool: np.ndarray
    temporal: np.ndarray
    entity_names: NamesAt  # position -> the query entities that found it
    mention: np.ndarray
    date: np.ndarray
    hop_via: dict[int, str] | None = None
    stripped: np.ndarray | Filled | None = None  # cosine to the query without its anchored entity names
    session_sim: np.ndarray | None = None  # cosine of the query to the event's session centroid
    query_terms: tuple[str, ...] = ()  # the query's normalised terms (for the feedback query)
    address: np.ndarray | None = None  # 1 where the text names a query entity linked to other events only
    qvec: np.ndarray | None = None  # unit embedding of what is asked (the query without its anchored names)
    length: np.ndarray | None = None  # z-scored log text length of each event (turn prior)
    asks: np.ndarray | None = None  # 1 where the event's text asks a question (turn prior)
    dense_stats: tuple[float, float] | None = None  # mean, std of the blended cosine when not every event was scanned
    scanned: np.ndarray | None = None  # the positions whose cosines were scanned then (the others: OUTSIDE)
    named_at: np.ndarray | None = None  # (with scanned) positions where entity, mention, tool or address may be nonzero
    terms: np.ndarray | None = None  # soft term matching of the query's content words (event_terms.py)


def _query_threads(settings: Settings, events: int) -> int:
    """Worker threads for the query texts' embedding (retrieve/query_vectors.py): at most one
    from ``search_query_one_pass_from`` events on, where the signals computed meanwhile need a
    core for longer than the embedding takes."""
    large = 0 < settings.search_query_one_pass_from <= events
    return min(settings.search_query_threads, 1) if large else settings.search_query_threads


def _anchored(sig: _Signals) -> bool:
    """True when some event is linked to a query entity (a speaker's own turns: ``entity > 0``,
    looked at where it can be nonzero when those positions are known)."""
    values = sig.entity if sig.named_at is None else sig.entity[sig.named_at]
    return float(values.max(initial=0.0)) > 0


class EventSearch:
    """Ranks one user's events for a query (see the module docstring)."""

    def __init__(self, store: object, embedder: Embedder, settings: Settings, user: str) -> None:
        from graphmem.store import KuzuGraphStore

        assert isinstance(store, KuzuGraphStore)
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.user = user

    def search(
        self,
        query: str,
        *,
        k: int,
        tool: str | None = None,
        entities: tuple[str, ...] = (),
    ) -> list[Hit]:
        """The top ``k`` of the user's events for ``query`` (may be empty), best first."""
        store = self.store
        layout = store.event_layout(self.user)
        if len(layout.order) == 0:
            return []
        index = entity_index(store, self.user, layout)
        wanted = query_entities(query, entities, index)
        sig = self.signals(query, layout, index, wanted, tool)
        if not query:
            return self._anchor_only(layout.order, sig.entity + sig.mention + sig.tool, sig.entity_names, tool, k)
        top, final, parts = self.rank(sig, layout, index, wanted, k)
        ids = [layout.order[i] for i in top]
        events = store.layout_events(self.user, layout, ids, self.settings.search_event_rows_max)
        hits = []
        for i, ident in zip(top, ids):
            if ident in events:
                hits.append(Hit(id=ident, kind="event", node=events[ident], score=float(final[i]),
                                reasons=self._reasons(int(i), sig, parts, tool)))
        return hits

    def signals(
        self, query: str, layout: EventLayout, index: EntityIndex, wanted: list[str], tool: str | None = None
    ) -> _Signals:
        """Every per-event signal for ``query`` (the weights are applied later by :meth:`rank`,
        so a tuner can reuse the signals under many settings)."""
        store, s = self.store, self.settings
        n = len(layout.order)
        pos = layout.position
        names = [index.names.get(k, k) for k in wanted]
        # the model runs on a worker while the signals below that need no vector are computed
        pending = QueryVectors(self.embedder, query_texts(query, strip_names(query, names), s.search_weight_stripped),
                               threads=_query_threads(s, n)) if query else None
        entity, mention, entity_names, address = self._entity_signals(index, wanted, n, layout)
        tool_hit = np.zeros(n) if tool else zeros_of(layout)  # (shared and read only without a tool)
        tool_at: list[int] = []
        if tool:
            for ident in store.events_with_tool(self.user, tool, limit=s.search_entity_cap):
                p = pos.get(ident)
                if p is not None:
                    tool_hit[p] = 1.0
                    tool_at.append(p)
        # every position the entity, mention, address and tool signals may be nonzero at (the
        # query entities' postings, as _entity_signals caps them, and the tool's events)
        named_at = np.unique(np.concatenate(
            [entity_arrays(index, key, layout)[0][: s.search_entity_cap] for key in wanted]
            + [np.asarray(tool_at, dtype=np.int64), np.zeros(0, dtype=np.int64)]))
        if pending is None:
            zeros = np.zeros(n)
            return _Signals(zeros, zeros, entity, tool_hit, zeros, entity_names, mention, zeros, address=address)
        bm25 = np.zeros(n)
        bm25_at: list[int] = []  # its positions (BM25 scores are > 0)
        catalog = store.event_catalog  # in-memory BM25 over the user's own events (not Kùzu's FTS)
        for row, score in catalog.lexical.search(query, self.user, s.search_candidates, k1=s.bm25_k1, b=s.bm25_b):
            p = pos.get(catalog.vectors.ids[row])
            if p is not None:
                bm25[p] = score
                bm25_at.append(p)
        # events the other signals name (event_shortlist.py): where entity, mention or tool is
        # nonzero, and the BM25 hits
        named = (named_at[(entity[named_at] != 0) | (mention[named_at] != 0) | (tool_hit[named_at] != 0)],
                 np.asarray(bm25_at, dtype=np.int64))
        qwords = (query_words(query, names) if s.search_weight_terms > 0 and n <= s.search_terms_max_events
                  else [])
        temporal = time_values(layout) if asks_when(query) else zeros_of(layout)
        priors = s.search_weight_length > 0 or s.search_weight_question_turn > 0
        length, asks = turn_priors(layout) if priors else (None, None)
        date = date_match(query, layout)
        query_terms = tuple(catalog.lexical.query_terms(query))
        dense, stripped, session_sim, qvec, dense_stats, scanned = self._dense(pending, layout, named)
        terms = event_terms(store, self.embedder, self.user, layout, qwords, s.search_terms_floor,
                            s.search_terms_max_events)
        return _Signals(dense, bm25, entity, tool_hit, temporal, entity_names,
                        mention, date, stripped=stripped, session_sim=session_sim,
                        query_terms=query_terms, address=address,
                        qvec=qvec, length=length, asks=asks, dense_stats=dense_stats, scanned=scanned,
                        named_at=named_at if scanned is not None else None, terms=terms)

    def rank(
        self, sig: _Signals, layout: EventLayout, index: EntityIndex, wanted: list[str], k: int
    ) -> tuple[np.ndarray, Scores, dict[str, Any]]:
        """The ``k`` best layout positions under the current settings, the final scores (an
        array, or an :class:`graphmem.retrieve.sparse_arrays.Overlay` reading like one:
        ``np.asarray`` makes it an array) and their parts (fusion, bonuses, neighbours, second
        hop)."""
        s = self.settings
        final, parts = self._score(sig, layout.neighbour_index(s.search_neighbour_window), layout)
        keep = k if s.search_session_decay >= 1.0 else 4 * k
        # each addition below is nonnegative and lands on few events: the best positions are
        # kept aside for the seeds and the top (graphmem/retrieve/event_score.py)
        ranked = Ranked(final, max(keep, s.search_hop_seeds, s.search_prf_docs, s.search_rocchio_docs,
                                   s.search_continuation_seeds, 1))
        hop, via = self._second_hop(final, index, wanted, layout, ranked.top)
        if s.search_weight_feedback > 0:
            ranked.replace(ranked.dense() + s.search_weight_hop * np.asarray(hop) + s.search_weight_feedback
                           * self._feedback(ranked.dense(), layout))
        else:
            at = np.fromiter(via, dtype=np.int64, count=len(via))  # the positions the hop lifted
            ranked.add(at, s.search_weight_hop * hop[at])
        parts["hop"], sig.hop_via = hop, via
        prf, at = self._prf(ranked.values, sig, layout, ranked.top)
        ranked.add(at, s.search_weight_prf * prf[at])
        parts["prf"] = prf
        fb, fill, fb_at = self._rocchio(ranked.values, sig, layout, keep, ranked)
        if fb_at is None:
            ranked.replace(ranked.dense() + s.search_weight_rocchio * fb)
        else:
            ranked.add(fb_at, s.search_weight_rocchio * fb[fb_at])
        parts["rocchio"] = fb
        shares = continuation_shares(ranked.values, layout, s, ranked.top)  # graphmem/retrieve/event_hops.py
        lifted = np.fromiter(shares, dtype=np.int64, count=len(shares))
        cont = spread(len(layout), lifted, np.fromiter(shares.values(), dtype=np.float64, count=len(shares)),
                      isinstance(ranked.values, Overlay))
        if fill is not None:  # pruned feedback: the turns continuation lifts get theirs exactly
            exact = fill(lifted)
            ranked.add(lifted, s.search_weight_rocchio * (exact - fb[lifted]))
            if isinstance(fb, Scattered):
                fb.put(lifted, exact)
            else:
                fb[lifted] = exact
        parts["continuation"] = cont
        ranked.add(lifted, s.search_weight_continuation * cont[lifted])
        return diverse_top(ranked.values, layout.session, k, s.search_session_decay, ranked.top), ranked.values, parts

    def _rocchio(
        self, final: Scores, sig: _Signals, layout: EventLayout, keep: int = 0, ranked: Ranked | None = None
    ) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray] | None, np.ndarray | None]:
        """Pseudo-relevance feedback in embedding space (Rocchio): the query vector (without its
        anchored names) plus the score-weighted mean vector of the best ``search_rocchio_docs``
        hits; every event gets its cosine to that vector, z-scored and clipped at 0 like the
        vector signal (mean and spread taken over the other events). When the query anchors on a linked entity (a speaker), the other events
        get it scaled by the share of the best hits that are *not* that entity's: feedback
        drawn from a speaker's turns stays on that speaker's turns. Zeros when
        ``search_weight_rocchio`` is 0. With ``keep`` > 0 on a large int8 mirror, only the events
        that can still reach the ``keep`` best get it (:mod:`graphmem.retrieve.event_rank`); the
        second value then gives the exact feedback of any positions (None: every event has it),
        the third the positions that got it (None: every event may have). ``ranked``: ``final``
        with its best positions kept (:class:`graphmem.retrieve.event_score.Ranked`)."""
        s = self.settings
        n = final.shape[0]
        none = np.zeros(0, dtype=np.int64)
        if s.search_weight_rocchio <= 0 or s.search_rocchio_docs <= 0 or sig.qvec is None or n < 2:
            return np.zeros(n), None, none
        seeds = ranked.top(s.search_rocchio_docs) if ranked is not None else top_k(final, s.search_rocchio_docs)
        top = float(final[seeds[0]])
        if top <= 0:
            return np.zeros(n), None, none
        vectors = self.store.event_catalog.vectors
        share = np.clip(final[seeds] / top, 0.0, None).astype(np.float32)
        centroid = (vectors.vectors_of(layout.rows[seeds]) * share[:, None]).sum(axis=0)
        vec = sig.qvec + centroid / (float(np.linalg.norm(centroid)) or 1.0)
        unit = (vec / (float(np.linalg.norm(vec)) or 1.0)).astype(np.float32)
        pruned = pruned_feedback(self.store, vectors, layout, unit[None, :], seeds, final, s.search_weight_rocchio, keep,
                                 ranked)
        anchored = _anchored(sig)  # the anchor's events: entity > 0
        lower = 1.0 - float((sig.entity[seeds] > 0).mean()) if anchored else 1.0  # the factor off them

        def factor(positions: np.ndarray) -> np.ndarray:
            return np.where(sig.entity[positions] > 0, 1.0, lower) if anchored else np.ones(positions.size)

        if pruned is None:
            others = np.ones(n, dtype=bool)
            others[seeds] = False  # the statistics leave out the hits the vector came from
            out = pool_z(user_cosines(vectors, layout.rows, unit[None, :])[:, 0], others)
            return out * (np.where(sig.entity > 0, 1.0, lower) if anchored else np.ones(n)), None, None
        z, cand, exact_at = pruned
        fb = spread(n, cand, z[cand] * factor(cand), isinstance(final, Overlay))  # 0 x the factor elsewhere

        def fill(positions: np.ndarray) -> np.ndarray:
            return exact_at(positions) * factor(positions)  # type: ignore[no-any-return]

        return fb, fill, cand

    def _dense(
        self, pending: QueryVectors, layout: EventLayout, named: tuple[np.ndarray, np.ndarray] | tuple[()] = (),
    ) -> tuple[np.ndarray | Filled, np.ndarray | Filled | None, np.ndarray | None, np.ndarray,
               tuple[float, float] | None, np.ndarray | None]:
        """Cosine of every event to the query, and (when ``search_weight_stripped`` > 0 and the
        query names anchored entities) to the query without those names: the graph signals
        already cover the names, the rest is what the question asks about (``pending``: their
        vectors, :func:`graphmem.retrieve.query_vectors.query_texts`). The fourth value is the
        unit vector of what is asked (the query without the names when that was embedded); the
        fifth the mean and spread of the blended cosine when only a shortlist was scanned (large
        int8 mirrors, :mod:`graphmem.retrieve.event_shortlist`; ``named``: the positions the
        entity, mention and tool signals name and the positions of the BM25 hits, whose events
        are scanned too), else None; then the positions scanned (None: every event)."""
        a = self.settings.search_weight_stripped
        texts = pending.texts
        vecs = pending.result()  # embedded on the query workers meanwhile (retrieve/query_vectors.py)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        unit = (vecs / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        # most of the mirror is this user's: scan it whole and pick their rows (no copy of their
        # vectors per query); else multiply just their rows
        vectors = self.store.event_catalog.vectors
        blend = a if len(texts) > 1 else 0.0
        short = None
        if named:  # (positions where entity, mention or tool is nonzero, the BM25 hits' positions)
            short = shortlist_cosines(self.store, layout, unit, blend, named[0], named[1], self.settings)
        dense: np.ndarray | Filled
        stripped: np.ndarray | Filled | None
        if short is not None:  # exact at the scanned positions, OUTSIDE elsewhere
            sims, stats, scanned = short
            n = len(layout)
            dense = Filled(n, scanned, sims[:, 0], OUTSIDE)
            stripped = Filled(n, scanned, sims[:, 1], OUTSIDE) if sims.shape[1] > 1 else None
        else:
            sims, stats, scanned = user_cosines(vectors, layout.rows, unit), None, None
            dense, stripped = sims[:, 0], (sims[:, 1] if sims.shape[1] > 1 else None)
        session_sim = None
        if self.settings.search_weight_session > 0:
            centroids, member = session_centroids(layout, self.store.event_catalog.vectors)
            session_sim = np.where(member >= 0, (centroids @ unit[0]).astype(np.float64)[np.maximum(member, 0)], 0.0)
        return dense, stripped, session_sim, unit[-1], stats, scanned

    # --- scoring ----------------------------------------------------------------------------
    def _score(
        self, sig: _Signals, neighbours: np.ndarray, layout: EventLayout | None = None
    ) -> tuple[Scores, dict[str, Any]]:
        """Fused base score scaled to [0, 1] plus bonuses; returns (final, parts). After a
        shortlist scan, from the events other than the time flag and turn priors name only
        (the same values: :mod:`graphmem.retrieve.event_score`)."""
        s = self.settings
        sparse = sparse_score(sig, neighbours, layout, s) if layout is not None else None
        if sparse is not None:
            return sparse
        n = sig.dense.shape[0]
        cand = s.search_candidates
        dense = np.asarray(sig.dense)  # (a Filled one made whole)
        if sig.stripped is not None and s.search_weight_stripped > 0:
            dense = (1.0 - s.search_weight_stripped) * dense + s.search_weight_stripped * np.asarray(sig.stripped)
        dense_rank: Any = RankOf(dense, np.ones(n, dtype=bool))  # for the reasons of the hits
        bm_rank: Any = RankOf(sig.bm25, sig.bm25 > 0)
        if s.search_fusion == "rrf":
            dense_rank = rank_array(dense, np.ones(n, dtype=bool))
            bm_rank = rank_array(sig.bm25, sig.bm25 > 0)
            v = np.where(dense_rank <= cand, 1.0 / (s.rrf_k + dense_rank), 0.0)
            t = np.where(np.isfinite(bm_rank), 1.0 / (s.rrf_k + bm_rank), 0.0)
        else:  # "score": z-scored cosine (clipped at 0) and max-normalised BM25
            mean, std = sig.dense_stats if sig.dense_stats is not None else (float(dense.mean()), float(dense.std()))
            v = np.clip((dense - mean) / (std or 1.0), 0.0, None) / 4.0
            top = float(sig.bm25.max())
            t = sig.bm25 / top if top > 0 else np.zeros(n)
        base = s.search_weight_vector * v + s.search_weight_fulltext * t
        peak = float(base.max())
        if peak > 0:
            base = base / peak
        # terms that are all zero (no entity, tool or time in the query...) are left out: adding
        # zeros changes no value, and each term costs passes over every event
        graph = weighted_sum((s.search_weight_entity, sig.entity), (s.search_weight_mention, sig.mention),
                             (s.search_weight_tool, sig.tool))
        if sig.session_sim is not None and s.search_weight_session > 0:
            sim = sig.session_sim
            std = float(sim.std()) or 1.0
            session = s.search_weight_session * np.clip((sim - float(sim.mean())) / std, 0.0, None) / 4.0
            graph = session if graph is None else graph + session
        time = weighted_sum((s.search_weight_time, sig.temporal), (s.search_weight_date, sig.date))
        own = base if graph is None else base + graph
        if time is not None:
            own = own + time
        if sig.address is not None and s.search_weight_address > 0 and sig.address.any():
            own = own - s.search_weight_address * sig.address
        if sig.length is not None and sig.asks is not None:  # turn priors (computed when weighted)
            own = own + s.search_weight_length * sig.length - s.search_weight_question_turn * sig.asks
        if sig.terms is not None and s.search_weight_terms > 0:  # soft term matching, max-normalised
            peak_terms = float(sig.terms.max(initial=0.0))
            if peak_terms > 0:
                own = own + (s.search_weight_terms / peak_terms) * sig.terms
        # session neighbours: best same-session neighbour's base score, decayed by distance
        near = np.zeros(n)
        if s.search_weight_neighbour > 0 and neighbours.size:
            padded = np.append(base, 0.0)  # index n = "no neighbour"
            for d in range(neighbours.shape[1]):
                decay = s.search_neighbour_decay ** (d // 2)
                got = padded[neighbours[:, d]]
                near = np.maximum(near, got * decay if decay != 1.0 else got)
        final = own + s.search_weight_neighbour * near
        return final, {"vector": v, "fulltext": t, "base": base, "near": near,
                       "dense_rank": dense_rank, "bm_rank": bm_rank}

    def _entity_signals(
        self, index: EntityIndex, wanted: list[str], n: int, layout: EventLayout
    ) -> tuple[np.ndarray, np.ndarray, NamesAt, np.ndarray]:
        """``entity``: 1 where the caller linked a query entity to the event (``entities=``);
        ``mention``: the idf-weighted share of the query entities its text names; ``address``: 1
        where the text names a linked query entity (a speaker) that is not linked to the event
        (another speaker talking to them)."""
        entity, mention, address = np.zeros(n), np.zeros(n), np.zeros(n)
        names = NamesAt()
        if not wanted:
            return entity, mention, names, address
        idf = {key: idf_weight(len(index.postings[key]), n) for key in wanted}
        total = sum(idf.values()) or 1.0
        cap = self.settings.search_entity_cap
        own: list[np.ndarray] = []  # the positions set in entity
        for key in wanted:
            posting, linked = entity_arrays(index, key, layout)
            posting, linked = posting[:cap], linked[:cap]
            # a name the caller links (a speaker...) is anchored by those links, not by text
            by_link = bool(linked.any())
            found = np.zeros(n, dtype=bool)
            if by_link:
                entity[posting[linked]] = 1.0
                own.append(posting[linked])
                address[posting[~linked]] = 1.0
                found[posting[linked]] = True
            else:
                mention[posting] += idf[key] / total  # positions are distinct within a posting
                found[posting] = True
            names.parts.append((found, index.names.get(key, key)))
        for at in own:  # one speaker's own turn naming another query entity (entity > 0 there only)
            address[at] = 0.0
        return entity, mention, names, address

    def _second_hop(
        self, final: Scores, index: EntityIndex, wanted: list[str], layout: EventLayout,
        best: Callable[[int], np.ndarray] | None = None,
    ) -> tuple[Any, dict[int, str]]:
        """Follow the entities of the best ``search_hop_seeds`` hits to the other events that
        name them (entities named by more than ``search_hop_max_events`` events are not
        followed; the query's own entities neither): each such event gets the best of seed
        share (seed score / top score) x the entity's idf share. Fan-out is bounded by
        seeds x entities per event x ``search_hop_max_events``. ``best(k)``: the ``k`` best
        positions of ``final`` (default :func:`top_k`)."""
        s = self.settings
        n = final.shape[0]
        hop: dict[int, float] = {}
        via: dict[int, str] = {}
        if s.search_weight_hop > 0 and s.search_hop_seeds > 0 and n >= 2:
            seeds = best(s.search_hop_seeds) if best is not None else top_k(final, s.search_hop_seeds)
            top = float(final[seeds[0]])  # the largest score
            skip = set(wanted)
            norm = math.log(n + 1)
            for seed in seeds if top > 0 else ():
                share = float(final[seed]) / top
                for key in index.linked[seed] | index.mentioned[seed]:
                    posting = index.postings.get(key, ())
                    if key in skip or len(posting) < 2 or len(posting) > s.search_hop_max_events:
                        continue
                    weight = share * idf_weight(len(posting), n) / norm
                    for p in posting:
                        if p != seed and weight > hop.get(p, 0.0):
                            hop[p] = weight
                            via[p] = index.names.get(key, key)
        # (without an array of every event when the final scores have none: an Overlay)
        at = np.fromiter(hop, dtype=np.int64, count=len(hop))
        return spread(n, at, np.fromiter(hop.values(), dtype=np.float64, count=len(hop)),
                      isinstance(final, Overlay)), via

    def _feedback(self, final: np.ndarray, layout: EventLayout) -> np.ndarray:
        """Second hop in embedding space: each event's best cosine to the best
        ``search_hop_seeds`` hits (weighted by their share of the top score), z-scored and
        clipped at 0 like the vector signal. Zeros when ``search_weight_feedback`` is 0."""
        s = self.settings
        n = final.shape[0]
        if s.search_weight_feedback <= 0 or s.search_hop_seeds <= 0 or n < 2 or float(final.max()) <= 0:
            return np.zeros(n)
        seeds = top_k(final, s.search_hop_seeds)
        matrix = self.store.event_catalog.vectors.vectors_of(layout.rows)
        sims = (matrix @ matrix[seeds].T).astype(np.float64) * (final[seeds] / float(final.max()))[None, :]
        sims[seeds, np.arange(seeds.size)] = 0.0  # a seed does not feed back to itself
        best = sims.max(axis=1)
        std = float(best.std()) or 1.0
        return np.clip((best - float(best.mean())) / std, 0.0, None) / 4.0  # type: ignore[no-any-return]

    def _prf(
        self, final: Scores, sig: _Signals, layout: EventLayout, best: Callable[[int], np.ndarray] | None = None
    ) -> tuple[Any, np.ndarray]:
        """Pseudo-relevance feedback through shared words: the content words of the best
        ``search_prf_docs`` hits that the query lacks (named by 2 to ``search_hop_max_events``
        events; weighted by the hit's share of the top score x idf), the best
        ``search_prf_terms`` of them as a second BM25 query, max-normalised. With
        ``search_prf_anchored`` and a query entity linked to events (a speaker), only those
        events get it. Zeros when ``search_weight_prf`` is 0. Also the positions where it may be
        nonzero. ``best(k)``: the ``k`` best positions of ``final`` (default :func:`top_k`)."""
        s = self.settings
        n = final.shape[0]
        none = np.zeros(0, dtype=np.int64)
        sparse = isinstance(final, Overlay)  # (no array of every event then)
        out = spread(n, none, np.zeros(0), sparse)
        if s.search_weight_prf <= 0 or s.search_prf_docs <= 0 or s.search_prf_terms <= 0 or n < 2:
            return out, none
        seeds = best(s.search_prf_docs) if best is not None else top_k(final, s.search_prf_docs)
        top = float(final[seeds[0]])  # the largest score
        if top <= 0:
            return out, none
        lexical = self.store.event_catalog.lexical
        n_docs, _ = lexical.stats(self.user)
        skip = set(sig.query_terms)
        weight: dict[str, float] = {}
        for seed in seeds:
            share = float(final[seed]) / top
            for term in lexical.terms_of(int(layout.rows[seed])):
                if term in skip:
                    continue
                df = lexical.doc_freq(term, self.user)
                if 2 <= df <= s.search_hop_max_events:
                    weight[term] = weight.get(term, 0.0) + share * math.log((n_docs + 1) / (df + 0.5))
        if not weight:
            return out, none
        terms = sorted(weight, key=lambda t: (-weight[t], t))[: s.search_prf_terms]
        rows, scores = lexical.scores(terms, self.user, k1=s.bm25_k1, b=s.bm25_b)
        where = row_position_array(layout)
        inside = rows < where.shape[0]
        p = where[rows[inside]]
        at = p[p >= 0]  # (the rows are distinct: so are the positions)
        values = scores[inside][p >= 0]
        values[np.isin(at, seeds)] = 0.0  # the hits the words came from already rank high
        peak = max(float(values.max(initial=0.0)), 0.0)  # the largest value (0 off the positions)
        if peak > 0:
            values /= peak
        if s.search_prf_anchored and _anchored(sig):
            values *= sig.entity[at] > 0
        return spread(n, at, values, sparse), at

    def _reasons(self, i: int, sig: _Signals, parts: dict[str, np.ndarray], tool: str | None) -> list[str]:
        return event_reasons(i, sig, parts, tool, self.settings)

    def _anchor_only(
        self, order: list[str], anchor: np.ndarray, entity_names: NamesAt, tool: str | None, k: int
    ) -> list[Hit]:
        """No query text: events linked to the tool/entities, newest first."""
        idx = np.flatnonzero(anchor > 0)
        events = self.store.events_by_ids([order[i] for i in idx])
        found = sorted(events.values(), key=lambda e: e.created_at, reverse=True)[:k]
        where = {ident: i for i, ident in enumerate(order)}
        hits = []
        for e in found:
            p = where[e.id]
            reasons = []
            if p in entity_names:
                reasons.append("graph: via entity " + ", ".join(entity_names[p]))
            if tool and e.tool_name == tool:
                reasons.append(f"graph: via tool {tool}")
            hits.append(Hit(id=e.id, kind="event", node=e, score=float(anchor[p]), reasons=reasons))
        return hits
