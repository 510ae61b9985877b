"""Settings: every tunable of graphmem in one frozen model, defaulting to the seeds' values.

Nothing here reads the environment; only the CLI does. Make a variant with
``Settings(field=value)`` (validated: an out-of-range value raises InvalidInputError, a
ValueError) or ``Settings().model_copy(update={...})`` (not validated by pydantic).

The comment on each field names the seed document it comes from (shared/seeds/):
000 lifecycle/online scoring, 001 learnings and summaries, 002 selection and curation,
003 tiers, implicit outcomes, actionability, regression guard, 004 confidence, TTL and pruning.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from graphmem.errors import InvalidInputError
from graphmem.models import STATUSES as _STATUSES


def _ttl_defaults() -> dict[str, int | None]:
    # seed 004: episodic 90 d, reflection 180 d, everything distilled is indefinite (None).
    return {
        "observation": 90,
        "hypothesis": 180,
        "rule": None,
        "preference": None,
        "checklist": None,
        "bug_fix": None,
        "prompt": None,
    }


def _summary_thresholds() -> dict[str, int]:
    # seed 001: user_preferences is always in context, so it refreshes sooner.
    return {"user_preferences": 3, "tool": 5, "topic": 5, "objective_type": 5}


class Settings(BaseModel):
    """All thresholds and weights. Frozen: build a new one to change a value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **data: Any) -> None:
        """Validate every value; a bad one raises InvalidInputError (a ValueError) naming it."""
        try:
            super().__init__(**data)
        except ValidationError as e:
            problems = "; ".join(
                (f"{'.'.join(str(p) for p in err['loc'])}: " if err.get("loc") else "")
                + str(err.get("msg", "")).removeprefix("Value error, ")
                for err in e.errors()
            )
            raise InvalidInputError(f"invalid Settings: {problems}") from e

    # --- models -------------------------------------------------------------------------
    anthropic_model: str = "claude-sonnet-5-5"
    anthropic_max_tokens: int = 1024
    llm_timeout_s: float = 30.0
    llm_max_retries: int = 3
    llm_backoff_s: float = 0.5  # unused since the SDKs retry with their own backoff; kept for old configs

    # --- token budgets per context section (seed 001) -----------------------------------
    budget_user_preferences: int = 300
    budget_learnings: int = 200

    # --- retrieval (DESIGN.md "Retrieval"; seed 002 HybridSelector) ---------------------
    candidates_per_source: int = 50
    # how the three candidate lists combine: "score" (each signal's own score, min-max scaled over
    # the candidates, weighted) or "rrf" (weighted reciprocal ranks, the earlier default); see README
    rank_fusion: str = "score"
    rrf_k: int = 10  # 3 lists of ~50: k=60 flattened rank differences (labelled bench: R@10 0.75 -> 0.84)
    weight_vector: float = 1.0
    weight_fulltext: float = 0.1  # chosen with weight_graph on half the labelled queries (README)
    weight_graph: float = 3.0  # chosen with rank_fusion, the tool penalty and mmr_lambda on half the labelled queries
    graph_hop_decay: float = 0.5
    graph_fanout_cap: int = 50
    graph_second_hop_neighbours: int = 8  # second hop: the heaviest RELATED neighbours explored
    graph_anchor_cap: int = 500  # one-hop: at most this many learnings per anchor node (+ those other signals found)
    # graph: at most this many eligible learnings reached per anchor or neighbour (its best by cosine;
    # with an HNSW search the rows it scored, then the newest), so a hub's cost does not follow its
    # degree; 0: no cap. Below it every eligible learning is reached, as without it.
    graph_max_reached: int = 2000
    graph_second_hop_max: bool = True  # second hop: a row gets its best two-hop path once, not one per path
    tool_mismatch_penalty: float = 0.5  # relevance share lost by a learning bound to another tool than the caller's
    quality_weight: float = 0.15  # seed 002 stage 4 says 30 % of a cosine-scaled score; see README
    semantic_weight: float = 0.4  # seed 002 stage 4: semantic 40 %
    thompson_weight: float = 0.3  # seed 002 stage 4: Thompson sampling 30 %
    thompson_sampling: bool = False
    random_seed: int = 0
    quality_prior_enabled: bool = True
    recency_half_life_days: float = 90.0
    pinned_boost: float = 0.05
    # exploration: a learning with few ratings gets a bonus on its quality that fades linearly to 0
    # at exploration_ratings helpful+harmful ratings (0 turns it off; part of the quality prior)
    exploration_bonus: float = 0.0
    exploration_ratings: int = 5
    # learned fusion (graphmem/retrieve/learned.py): per-user multipliers on weight_vector,
    # weight_fulltext, weight_graph, quality_weight and the recency share, moved by outcomes
    fusion_learning: bool = False  # off: the loop benchmark showed no gain (README)
    fusion_learn_rate: float = 0.2  # step size of the multiplicative update
    fusion_weight_min: float = 0.5  # bounds of every multiplier
    fusion_weight_max: float = 2.0
    fusion_learn_examples: int = 50  # outcomes kept for the ratchet's replay
    fusion_ratchet_tolerance: float = 0.0  # a step may lower the replay accuracy of the best weights by this much
    # evidence-weighted record (part of the quality prior): record_weight · (Beta mean − ½) ·
    # n / (n + record_ratings) added to the score, n = helpful + harmful: few ratings, small effect;
    # many ratings outrank a relevance tie (0 turns it off; README "Counters that pay")
    record_weight: float = 0.5
    record_ratings: float = 3.0
    # clearly harmful: the Wilson upper bound (z = harmful_z) of helpful / n below harmful_max_success
    # drops the learning even when the success-rate filter would relax (0 turns it off)
    harmful_max_success: float = 0.5
    harmful_z: float = 1.96
    retire_harmful_in_cycle: bool = True  # run_cycle retires (disabled, archive) the clearly harmful learnings
    # the owner's correction right after a context overrules a reported success of the learning the
    # agent acted on, and supersedes it when its record does not say it helps (graphmem/learn/corrected.py)
    correction_replaces_used: bool = True
    # failing lifecycle windows do not demote a learning whose record says it helps (helpful > harmful)
    record_holds_status: bool = True
    pattern_boost: float = 0.1
    pattern_similarity: float = 0.8  # seed 002: a query joins the nearest Pattern at cosine >= this
    min_success_rate: float = 0.3  # seed 002 stage 2: drop rows rated below it ...
    min_success_samples: int = 3  # ... once they have at least this many helpful+harmful ratings
    # seed 002 stage 3 filters at cosine 0.5 for its embedder; MiniLM scores related texts 0.2-0.6,
    # so graphmem floors only the rows nothing but the vector signal found:
    vector_only_min_similarity: float = 0.2
    mmr_lambda: float = 0.95  # 0.7 under rank fusion; scaled scores sit closer together (README)
    fulltext_max_postings: int = 2000  # rarest query terms up to this many postings (0: all)
    bm25_k1: float = 1.2  # BM25 term-frequency saturation of the in-memory lexical index (Kùzu's FTS default)
    bm25_b: float = 0.75  # BM25 document-length normalisation (Kùzu's FTS default)
    defer_application_writes: bool = True  # write each context's Application off the caller's path
    # torch threads of the bundled MiniLM embedder: 1 for a single query keeps context() steady on
    # a busy machine (torch's worker threads stall under CPU contention); 0 = torch's default
    embed_query_threads: int = 1
    embed_batch_threads: int = 0
    # torch's OpenMP worker threads sleep between parallel regions (OMP_WAIT_POLICY=PASSIVE, set
    # before the bundled MiniLM model first imports torch, unless the environment sets a policy)
    # instead of spinning on the cores the graph writes and other processes need (see
    # graphmem.embed._passive_openmp); False leaves OpenMP's default
    embed_passive_omp: bool = True
    # add_learning embeds the learning's text on a worker thread while it writes the learning's
    # node, edges and summary counts, and writes the vector last in the same transaction (the
    # same rows; graphmem/embed_workers.py). False: embeds first, on the caller's thread (as an
    # in-memory database always does: there a rolled-back write cannot be cleaned up)
    embed_beside_writes: bool = True
    # the bundled MiniLM with its linear layers in int8 (torch's dynamic quantisation): one text
    # embeds ~3.5x faster here, at a small cost in retrieval quality (README, "The bundled model in int8").
    # Its vectors differ from the float model's, so a file made with one is not opened with the other
    embed_int8: bool = False
    # the learnings' vector mirror (graphmem/store/vectors.py): "auto" keeps float32 rows below
    # vector_int8_min_rows learnings and int8 codes (a quarter of the memory, recall@10 0.993 at 100k)
    # from there on; "float32" / "int8" force one. Applied when the file is opened.
    vector_storage: str = "auto"
    vector_int8_min_rows: int = 50_000
    vector_scan_subset_below: float = 0.5  # scan only the eligible rows when fewer than this share are
    # ... and then scan the user's own plus shared rows kept gathered in a block between calls
    # (ScanMatrix.cosine_block; the same cosines, without gathering the rows every call)
    vector_scan_blocks: bool = True
    # context(): run the filters, name linking and full-text search in a helper thread while the
    # caller's thread embeds the query (the same results; graphmem/retrieve/service.py Aside).
    # Off: on a quiet 2-core machine it measured slower (the helper's Python work and the
    # embedding's operators take turns on the GIL), see docs/benchmarks.md "Kept vector blocks"
    context_overlap_embedding: bool = False
    # from vector_ann_min_rows learnings on (0: never) the mirror also keeps an HNSW index
    # (graphmem/store/ann.py, usearch): built in the background after open, saved beside the file
    # (<file>.ann); it proposes the vector candidates (reranked exactly) when at least
    # vector_ann_exact_below rows are eligible, else the eligible rows are scanned exactly
    # off by default: at 1M its recall@10 was 0.943 (ef 1024), under the 0.95 goal (docs/benchmarks.md)
    vector_ann_min_rows: int = 0
    vector_ann_exact_below: int = 20_000
    # from vector_binary_min_rows learnings on (0: never) context() ranks the scanned rows by the
    # Hamming distance of their sign bits (48 bytes a row at 384 dims, graphmem/store/binary_scan.py)
    # and rescores the vector_binary_candidates nearest exactly; chosen on the 1M scale benchmark
    # (docs/benchmarks.md "Binary first pass")
    vector_binary_min_rows: int = 500_000
    vector_binary_candidates: int = 2_000
    # Kùzu's buffer pool (its page cache and the memory of its queries and open writes), in MB.
    # 0 (the default): sized from the file when it opens, 4 × its size (with its write-ahead log)
    # and at least 1,024 MB, at most Kùzu's own default (80 % of the machine's RAM). The pool's
    # pages are only taken when used, but Kùzu keeps 8 bytes of state per page of the pool from
    # the start: ~37 MB for 80 % of 23 GB, ~2 MB for 1 GB. The hot path reads the in-memory
    # mirrors, so the pool need not hold the file; it must hold what one statement or transaction
    # works on: a new file needs ~20 MB to open, a batch of 3,000 learnings failed at 32 MB, and
    # a capped pool that is too small makes the operation fail with BufferPoolError (nothing is
    # written; raise this setting and open the file again). Applied on open.
    kuzu_buffer_pool_mb: int = 0
    # a snapshot of the in-memory mirrors beside the file (<file>.mirrors), written when the file
    # closes cleanly and mapped by the next open instead of scanning the file; ignored (the file is
    # read) whenever it does not match the file; safe to delete. Files with fewer learnings and
    # events (together) than mirror_snapshot_min_rows get none (their open is fast anyway). Applied on open.
    mirror_snapshot: bool = True
    mirror_snapshot_min_rows: int = 10_000
    # Kùzu's own full-text indexes (for analysts; ranking uses the in-memory lexical mirror) are
    # built when a query reads them and dropped by the next write; True also builds them when the
    # Memory closes, so other readers of the closed file find them (~1.5 s at 100k learnings).
    fulltext_index_at_close: bool = False
    # search over events (Memory.search over="events"; benchmarks/locomo.py ablates each signal)
    search_fusion: str = "score"  # "score" (z-scored cosine + max-normalised BM25) or "rrf" (ranks)
    search_candidates: int = 100  # per ranked list (vector, full-text) before fusion
    search_weight_vector: float = 1.0
    search_weight_fulltext: float = 1.0
    search_weight_entity: float = 0.2  # bonus for events linked to a query entity (fused score in [0, 1])
    search_weight_tool: float = 0.1  # bonus for events that used the query's tool
    search_weight_time: float = 0.3  # bonus for time expressions when the query asks "when"
    search_weight_neighbour: float = 0.4  # share of the best same-session neighbour's score
    search_neighbour_window: int = 1  # turns either side counted as neighbours
    search_neighbour_decay: float = 0.5  # per extra turn of distance
    search_entity_cap: int = 10_000  # most events read per entity or tool anchor
    # event rows kept in memory per user for the hits of event search (~1 KB each): a user with at
    # most this many events has them all (read once, grown with each write); a larger one keeps
    # its latest hits' and writes' rows up to this many; 0: every hit is read from the file
    search_event_rows_max: int = 10_000
    # from this many events of a user on (int8 event mirror; 0: never) the vector signal scans only
    # the search_shortlist_candidates events nearest by sign bits plus the events the other signals
    # name, its mean and spread over all events coming from kept sums (retrieve/event_shortlist.py)
    search_shortlist_min_events: int = 50_000
    # 2,000 chosen on benchmarks.events_scale (its questions' hits equal the full scan's as often as
    # with 4,000: 99/100 at 100k events, 97/100 at 1M; search p50 -4 ms and -9 ms)
    search_shortlist_candidates: int = 2_000
    # from this many rows on (0: never), the sign-bit pass's second half runs on an idle worker
    # thread (chosen on benchmarks.events_scale: search p50 at 1M events 74.4 -> 67.8 ms in one process)
    search_shortlist_split_from: int = 250_000
    # from this many shortlisted events on (0: never), the exact scan's second half runs on an idle
    # worker too (benchmarks.events_scale, in one process: p50 -1.7 ms at 1M events, -2.7 at 100k)
    search_scan_split_from: int = 8_192
    # event search embeds its query texts on this many worker threads while the signals that need
    # no vector are computed (retrieve/query_vectors.py): 2 each text on its own thread, 1 one
    # padded pass on one thread, 0 one padded pass on the caller's thread first
    search_query_threads: int = 2
    # from this many of the user's events on (0: never), at most one worker: one padded pass leaves
    # the other core to the signals computed meanwhile, which then take longer than the embedding
    # (chosen on benchmarks.events_scale, the two alternated in one process: search p50 at 1M events
    # 73.4 against 85.4 ms; at 300k about even, at 100k and 600 two workers are faster)
    search_query_one_pass_from: int = 500_000
    # entities from text and the multi-hop expansion (graphmem/retrieve/entities.py, search.py)
    extract_entities: bool = True  # link events to the names and dates their text mentions
    search_weight_mention: float = 0.1  # bonus for events whose text names a query entity
    search_weight_hop: float = 0.4  # second hop: events sharing a rare entity with the best hits
    search_hop_seeds: int = 12  # best hits whose entities the second hop follows
    search_hop_max_events: int = 30  # entities mentioned by more of the user's events are not followed
    search_weight_date: float = 0.3  # events from a session in the month/year the query names
    search_weight_feedback: float = 0.0  # second hop in embedding space: events like the best hits
    # the search_* weights above and below were fitted by benchmarks/locomo_tune.py on LoCoMo conversations 0-4
    search_weight_stripped: float = 0.75  # share of the query's cosine taken without its anchored entity names
    search_weight_session: float = 0.0  # events of sessions whose centroid is close to the query (off: see docs/benchmarks.md)
    search_session_decay: float = 1.0  # each further hit from one session counts this much less (1: off)
    # pseudo-relevance feedback: the rarer content words of the best hits, as a second BM25 query
    # (fitted with the addressed-turn penalty on LoCoMo conversations 0-4, see docs/benchmarks.md)
    search_weight_prf: float = 0.1
    search_prf_docs: int = 5  # best hits the words come from
    search_prf_terms: int = 12  # words in the second query
    search_prf_anchored: bool = False  # when the query names a linked entity (a speaker): only its events
    # a turn that names the query's speaker without being theirs ("Wow, Melanie!") is about them
    # only as the one addressed: its score drops by this much
    search_weight_address: float = 0.1
    # embedding feedback (Rocchio): the query vector plus the mean vector of the best hits; kept on
    # the anchored speaker's turns when those are the best hits (fitted on LoCoMo conversations 0-4)
    search_weight_rocchio: float = 0.1
    search_rocchio_docs: int = 5
    # turn priors (fitted on LoCoMo conversations 0-4, see docs/benchmarks.md): longer turns carry the facts
    # asked about (the log length, z-scored over the user's events, clipped to [-2, 2]), a turn
    # that asks a question ("?") rarely answers one
    search_weight_length: float = 0.05
    search_weight_question_turn: float = 0.2
    # the same speaker's next/previous turn of a best hit gains this x the hit's share of the top
    # score (graphmem/retrieve/event_hops.py; chosen on LoCoMo conversations 0-4, see docs/benchmarks.md)
    search_weight_continuation: float = 0.4
    search_continuation_seeds: int = 2  # best hits whose same-speaker neighbours are lifted
    search_continuation_reach: int = 2  # turns either side looked at for the same speaker
    # soft term matching (graphmem/retrieve/event_terms.py): each content word of the query
    # against the most similar *other* word of each event (single words embedded once per store),
    # the idf-weighted sum of the similarities above the floor, max-normalised. Weight and floor
    # chosen on LoCoMo conversations 0-4 only (best overall R@10 there over floors 0.3-0.55 x
    # weights 0.05-0.4; conversations 5-9 held out). Off by default (0): at 0.15, the best there,
    # LoCoMo R@10 rose 83.4 -> 83.8 (held-out half 82.1 -> 82.4, multi-hop +0.3, open-domain -0.8)
    # for ~3 ms more CPU per search, about twice the ingest CPU at conversation size, and the
    # user's vocabulary embedded again on the first search after an open
    search_weight_terms: float = 0.0
    search_terms_floor: float = 0.4  # word cosines up to this count nothing (chosen on conversations 0-4)
    # users with more events get no term signal (the per-user word arrays and the words to embed
    # grow with the events: the signal is off above this size, not approximated)
    search_terms_max_events: int = 20_000
    # record_event writes the event row at once and queues its embedding: the next search over
    # events (or record_events, or this many queued events) embeds the queue in one batch first
    event_embed_later: bool = False
    event_embed_queue_max: int = 256

    # --- curation (seed 002 curator, DESIGN.md) ------------------------------------------
    dedup_similarity: float = 0.85
    contradiction_similarity: float = 0.6
    actionability_threshold: float = 0.50  # seed 003 system 9
    actionability_w_directive: float = 0.35
    actionability_w_condition: float = 0.15
    actionability_w_specificity: float = 0.30
    actionability_w_not_observation: float = 0.20
    actionability_instruction_form: bool = True  # an imperative / must-should text without observation signs is advice
    feedback_recent_actions: int = 5  # seed 001: last five outbound actions
    reflector_bullet_status: str = "active"  # seed 002: online/offline bullets join the playbook at once
    # injected-instruction screening of every learning (graphmem/learn/screening.py): a score at or
    # above the doubt threshold keeps a learning as a "candidate" (never served, never summarised);
    # at or above the refuse threshold (and confirmed by the LLM judge when one runs) it is not stored
    injection_doubt_threshold: float = 0.5
    injection_refuse_threshold: float = 0.85
    injection_llm_judge: bool = True  # ask a non-offline LLM's judge_injection too (one call per learning)

    # --- online scoring (seed 000 markSkillUsage) ----------------------------------------
    accept_score_delta: float = 0.03
    accept_confidence_delta: float = 0.015
    reject_score_delta: float = -0.05
    reject_confidence_delta: float = -0.025
    # credit by rank when the agent names no learning (graphmem/outcomes.py "Credit by rank")
    credit_rank_power: float = 1.0  # share of rank r ∝ r^-power (1: 1/rank normalised)
    credit_min_share: float = 0.2  # learnings below this share get nothing (the first always does)

    # --- lifecycle windows (seed 000 runSelfImprovementCycle) ----------------------------
    window_size: int = 80
    window_min_samples: int = 20
    promote_quality: float = 0.68
    promote_pass_rate: float = 0.72
    promote_max_fallback_rate: float = 0.20
    promote_max_regenerate: float = 1.3
    promotion_streak: int = 2
    demotion_streak: int = 2
    disable_streak: int = 3
    canary_min_allocation: float = 0.2
    new_reflection_status: str = "candidate"
    candidate_promote_validations: int = 3  # re-derivations that put a candidate on canary (0: never)
    self_eval_active_confidence: float = 0.5  # self-evaluation rules below this enter as candidates

    # --- tiers (seed 003 system 4) -------------------------------------------------------
    pinned_min_validations: int = 10
    archive_stale_days: int = 30
    archive_stale_max_validations: int = 5
    archive_min_age_days: int = 7
    archive_low_confidence: float = 0.3
    archive_low_confidence_max_validations: int = 3

    # --- implicit outcomes (seed 003 system 3) -------------------------------------------
    advice_ttl_s: float = 120.0
    correction_window_s: float = 30.0

    # --- TTL, pruning and decay (seed 004) -----------------------------------------------
    ttl_days: dict[str, int | None] = Field(default_factory=_ttl_defaults)
    never_prune_confidence: float = 0.9
    prune_low_confidence: float = 0.3
    prune_low_confidence_age_days: int = 30
    confidence_decay_per_day: float = 0.002
    confidence_decay_grace_days: int = 14

    # --- hypotheses (seed 003 system 8) --------------------------------------------------
    hypothesis_promote_accuracy: float = 0.70
    hypothesis_promote_min_samples: int = 3
    hypothesis_invalidate_accuracy: float = 0.30
    hypothesis_invalidate_min_samples: int = 3

    # --- promotion / demotion of instruction files (seed 003 system 7) -------------------
    promote_min_confidence: float = 0.8
    demote_stale_days: int = 60
    demote_contradiction_ratio: float = 1.0
    demote_min_age_days: int = 7
    promote_match_overlap: float = 0.5

    # --- prompt versions and A/B tests (seed 004; graphmem/prompts.py) ---------------------
    prompt_ab_allocation: float = 0.5  # share of sessions served the candidate while it is tested
    prompt_ab_min_trials: int = 50  # outcomes each arm needs before the test may decide
    prompt_ab_max_trials: int = 300  # both arms this far without a decision: the candidate is dropped
    prompt_ab_confidence: float = 0.99  # posterior P(better) needed (0.95 promoted equal pairs 10-14 %)
    prompt_initial_confidence: float = 0.7  # seed 004: a new (reflected) prompt version

    # --- distillation (seed 004; graphmem/distill.py) --------------------------------------
    distill_similarity: float = 0.5  # cosine to a cluster centroid to join it (MiniLM; benchmarks/distill.py)
    distill_min_size: int = 3  # members a cluster needs to become a rule
    distill_confidence: float = 0.85  # seed 004: distilled rules 0.8-0.9

    # --- bullet evolution (seed 002 Darwin-Gödel; graphmem/evolution.py) ----------------------
    evolve_in_cycle: bool = True  # run_cycle evolves the learnings that keep failing
    evolve_min_ratings: int = 4  # helpful + harmful a learning needs before it counts as failing
    evolve_candidates: int = 4  # seed 002: 4 candidates bred by crossover
    evolve_parents: int = 6  # seed 002: up to 6 siblings used as parents (most helpful first)
    evolve_test_cases: int = 4  # seed 002: fitness = helpful / 4 failed cases
    evolve_max_per_run: int = 5  # failing learnings one evolve()/cycle tries (LLM calls: ~1 + 5 x cases x judges each)

    # --- weakness trainer and domain evolution (seed 003 systems 4 and 9; graphmem/weakness.py,
    #     graphmem/domain_evolution.py; a domain is a tool, topic or objective type: graphmem/domains.py)
    weakness_surprise_gap: float = 0.5  # a showing is a surprise when |confidence - outcome| exceeds this
    weakness_min_gap: float = 0.5  # seed MIN_CONFIDENCE_GAP: weak when the domain's average gap exceeds this
    weakness_min_surprises: int = 2  # seed MIN_SURPRISE_COUNT: ... and it holds at least this many surprises
    weakness_max_domains: int = 5  # weak domains trained per run, weakest first (the seed's --top 5)
    weakness_max_lessons: int = 3  # lessons proposed per weak domain per run
    weakness_in_cycle: bool = True  # run_cycle runs the weakness trainer
    domain_shift_min: float = 0.05  # seed: an event when a domain's follow rate moved more than this since the last run
    domain_low_effectiveness: float = 0.05  # seed: follow rate below this is a low_effectiveness gap
    domain_min_showings: int = 3  # showings a domain needs for a low_effectiveness gap, a source to be its top/weak one
    domains_in_cycle: bool = True  # run_cycle takes a domain snapshot

    # --- summaries (seed 001) ------------------------------------------------------------
    summary_thresholds: dict[str, int] = Field(default_factory=_summary_thresholds)
    summary_refresh: str = "inline"  # "inline" (after a write crosses a threshold) or "background"
    summary_max_bullets: int = 10
    user_preferences_min_confidence: float = 0.7  # self-learned general rules join user_preferences from here
    summary_max_learnings: int = 50

    # --- regression guard (seed 003 system 6) --------------------------------------------
    p5_floor: float = 0.45
    p5_drop_alert: float = 0.08
    noise_max: int = 0
    guard_rolling_window: int = 5

    # --- auto-tuning (seed 003 system 1; graphmem/tuning.py): off by default -----------------
    auto_tune: bool = False  # run_cycle runs a tuning step, and a Memory uses the persisted tuned values
    tune_p5_drop: float = 0.10  # roll back when the guard's P@5 drops more than this share (relative)
    tune_noise_max: int = 0  # ... or when the guard returns more ineligible learnings than this
    tune_max_changes: int = 3  # tunables changed per step (each by one step within its bounds)
    tune_min_outcomes: int = 20  # rated contexts needed before the follow rate drives a change
    tune_window_days: float = 30.0  # health is measured over the contexts of this many last days
    tune_low_follow_rate: float = 0.5  # below: tighten the filters (the agent rejects what it is shown)
    tune_high_follow_rate: float = 0.8  # above: loosen them (more learnings may reach the agent)
    tune_latency_ms: float = 250.0  # median context latency on the guard set above this: fewer candidates
    tune_keep_snapshots: int = 10  # TuningSnapshot nodes kept per user

    # --- input limits --------------------------------------------------------------------
    max_content_chars: int = 20_000
    max_query_chars: int = 4_000

    # --- the server (`graphmem serve`): one owner process serves every other -------------
    server_max_body_bytes: int = 1_000_000  # larger request bodies get 413
    server_write_queue: int = 64  # writes admitted at once (running + waiting); more get 503 + Retry-After
    server_retry_after_s: int = 1  # the Retry-After a 503 carries
    cypher_timeout_ms: int = 5_000  # an analyst's read-only Cypher through the server is interrupted after this
    cypher_max_rows: int = 10_000  # ... and returns at most this many rows (``truncated`` says so)
    server_refresh_interval_s: float = 5.0  # background refresher: check summaries' staleness this often (0: off)
    server_cycle_interval_s: float = 86_400.0  # run_cycle for every user this often (0: off)
    server_metrics_public: bool = False  # /metrics without a key (for scrapers on a private network)
    server_embed_batch: int = 16  # queries arriving during an embedding pass share the next one, up to this many (1: off)

    @model_validator(mode="after")
    def _check_ranges(self) -> Settings:
        """Every numeric setting is finite and within its range (see ``SETTING_RANGES``)."""
        for name, value in self.__dict__.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value}")
            low, high, strict = SETTING_RANGES.get(name, (-math.inf, math.inf, False))
            if (value <= low if strict else value < low) or value > high:
                raise ValueError(f"{name} must be {_describe(low, high, strict)}, got {value}")
        for kind, days in self.ttl_days.items():
            if days is not None and days <= 0:
                raise ValueError(f"ttl_days[{kind!r}] must be a whole number of days > 0 or None, got {days}")
        for kind, threshold in self.summary_thresholds.items():
            if threshold <= 0:
                raise ValueError(f"summary_thresholds[{kind!r}] must be > 0, got {threshold}")
        choices = {
            "search_fusion": ("score", "rrf"),
            "rank_fusion": ("score", "rrf"),
            "vector_storage": ("auto", "float32", "int8"),
            "summary_refresh": ("inline", "background"),
            "reflector_bullet_status": _STATUSES,
            "new_reflection_status": _STATUSES,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        return self


# (low, high, strict): value > low when strict else value >= low, and value <= high.
_POSITIVE = (0.0, math.inf, True)  # budgets, sizes, limits: > 0
_COUNT = (0.0, math.inf, False)  # counts, days, weights, boosts: >= 0
_UNIT = (0.0, 1.0, False)  # probabilities, thresholds, shares: [0, 1]
_NEG_UNIT = (-1.0, 0.0, False)  # the reject deltas: [-1, 0]

SETTING_RANGES: dict[str, tuple[float, float, bool]] = {
    "anthropic_max_tokens": _POSITIVE, "llm_timeout_s": _POSITIVE, "llm_max_retries": _COUNT,
    "llm_backoff_s": _COUNT,
    "budget_user_preferences": _POSITIVE, "budget_learnings": _POSITIVE,
    "candidates_per_source": _POSITIVE, "rrf_k": _COUNT, "weight_vector": _COUNT, "weight_fulltext": _COUNT,
    "weight_graph": _COUNT, "graph_hop_decay": _UNIT, "graph_fanout_cap": _COUNT,
    "graph_second_hop_neighbours": _COUNT, "graph_anchor_cap": _COUNT, "graph_max_reached": _COUNT, "tool_mismatch_penalty": _UNIT, "quality_weight": _UNIT,
    "semantic_weight": _UNIT, "thompson_weight": _UNIT, "random_seed": _COUNT,
    "recency_half_life_days": _POSITIVE, "pinned_boost": _COUNT, "pattern_boost": _COUNT,
    "pattern_similarity": _UNIT, "min_success_rate": _UNIT, "min_success_samples": _COUNT,
    "vector_only_min_similarity": _UNIT, "mmr_lambda": _UNIT, "fulltext_max_postings": _COUNT,
    "search_candidates": _POSITIVE, "search_weight_vector": _COUNT, "search_weight_fulltext": _COUNT,
    "search_weight_entity": _COUNT, "search_weight_tool": _COUNT, "search_weight_time": _COUNT,
    "search_weight_neighbour": _COUNT, "search_neighbour_window": _COUNT, "search_neighbour_decay": _UNIT,
    "search_entity_cap": _POSITIVE, "search_event_rows_max": _COUNT,
    "search_shortlist_min_events": _COUNT, "search_shortlist_candidates": _POSITIVE, "search_shortlist_split_from": _COUNT, "search_scan_split_from": _COUNT, "search_query_threads": _COUNT, "search_query_one_pass_from": _COUNT, "search_weight_mention": _COUNT, "search_weight_hop": _COUNT,
    "search_hop_seeds": _COUNT, "search_hop_max_events": _COUNT, "search_weight_date": _COUNT,
    "search_session_decay": _UNIT, "search_weight_feedback": _COUNT, "search_weight_stripped": _UNIT,
    "search_weight_session": _COUNT,
    "search_weight_rocchio": _COUNT, "search_rocchio_docs": _COUNT, "event_embed_queue_max": _POSITIVE,
    "search_weight_prf": _COUNT, "search_weight_address": _COUNT, "search_prf_docs": _COUNT, "search_prf_terms": _COUNT,
    "search_weight_length": _COUNT, "search_weight_question_turn": _COUNT,
    "search_weight_continuation": _COUNT, "search_continuation_seeds": _COUNT, "search_continuation_reach": _COUNT,
    "search_weight_terms": _COUNT, "search_terms_floor": _UNIT, "search_terms_max_events": _COUNT,
    "dedup_similarity": _UNIT, "contradiction_similarity": _UNIT, "actionability_threshold": _UNIT,
    "actionability_w_directive": _UNIT, "actionability_w_condition": _UNIT,
    "actionability_w_specificity": _UNIT, "actionability_w_not_observation": _UNIT,
    "feedback_recent_actions": _COUNT,
    "accept_score_delta": _UNIT, "accept_confidence_delta": _UNIT, "reject_score_delta": _NEG_UNIT,
    "reject_confidence_delta": _NEG_UNIT,
    "credit_rank_power": _COUNT, "credit_min_share": _UNIT, "exploration_bonus": _COUNT,
    "exploration_ratings": _COUNT,
    "fusion_learn_rate": _COUNT, "fusion_weight_min": _COUNT, "fusion_weight_max": _COUNT,
    "fusion_learn_examples": _COUNT, "fusion_ratchet_tolerance": _UNIT,
    "record_weight": _COUNT, "record_ratings": _POSITIVE,
    "harmful_max_success": _UNIT, "harmful_z": _COUNT,
    "window_size": _POSITIVE, "window_min_samples": _COUNT, "promote_quality": _UNIT,
    "promote_pass_rate": _UNIT, "promote_max_fallback_rate": _UNIT, "promote_max_regenerate": _COUNT,
    "promotion_streak": _POSITIVE, "demotion_streak": _POSITIVE, "disable_streak": _POSITIVE,
    "canary_min_allocation": _UNIT, "candidate_promote_validations": _COUNT,
    "pinned_min_validations": _COUNT, "archive_stale_days": _COUNT, "archive_stale_max_validations": _COUNT,
    "archive_min_age_days": _COUNT, "archive_low_confidence": _UNIT,
    "archive_low_confidence_max_validations": _COUNT,
    "advice_ttl_s": _COUNT, "correction_window_s": _COUNT,
    "never_prune_confidence": _UNIT, "prune_low_confidence": _UNIT, "prune_low_confidence_age_days": _COUNT,
    "confidence_decay_per_day": _UNIT, "confidence_decay_grace_days": _COUNT,
    "hypothesis_promote_accuracy": _UNIT, "hypothesis_promote_min_samples": _COUNT,
    "hypothesis_invalidate_accuracy": _UNIT, "hypothesis_invalidate_min_samples": _COUNT,
    "promote_min_confidence": _UNIT, "demote_stale_days": _COUNT, "demote_contradiction_ratio": _COUNT,
    "demote_min_age_days": _COUNT, "promote_match_overlap": _UNIT,
    "summary_max_bullets": _POSITIVE, "summary_max_learnings": _POSITIVE,
    "p5_floor": _UNIT, "p5_drop_alert": _UNIT, "noise_max": _COUNT, "guard_rolling_window": _POSITIVE,
    "max_content_chars": _POSITIVE, "max_query_chars": _POSITIVE,
    "embed_query_threads": _COUNT, "embed_batch_threads": _COUNT,
    "vector_int8_min_rows": _COUNT, "vector_scan_subset_below": _UNIT,
    "vector_ann_min_rows": _COUNT, "vector_ann_exact_below": _COUNT,
    "vector_binary_min_rows": _COUNT, "vector_binary_candidates": _POSITIVE, "kuzu_buffer_pool_mb": _COUNT, "mirror_snapshot_min_rows": _COUNT,
    "self_eval_active_confidence": _UNIT, "user_preferences_min_confidence": _UNIT,
    "bm25_k1": _COUNT, "bm25_b": _UNIT, "injection_doubt_threshold": _COUNT, "injection_refuse_threshold": _COUNT,  # above 1: never
    "server_max_body_bytes": _POSITIVE, "server_write_queue": _POSITIVE, "server_retry_after_s": _COUNT,
    "cypher_timeout_ms": _POSITIVE, "cypher_max_rows": _POSITIVE, "server_refresh_interval_s": _COUNT,
    "server_cycle_interval_s": _COUNT, "server_embed_batch": _POSITIVE,
    "prompt_ab_allocation": _UNIT, "prompt_ab_min_trials": _COUNT, "prompt_ab_max_trials": _POSITIVE,
    "prompt_ab_confidence": _UNIT, "prompt_initial_confidence": _UNIT,
    "distill_similarity": _UNIT, "distill_min_size": _POSITIVE, "distill_confidence": _UNIT,
    "evolve_min_ratings": _POSITIVE, "evolve_candidates": _POSITIVE, "evolve_parents": _POSITIVE,
    "evolve_test_cases": _POSITIVE, "evolve_max_per_run": _POSITIVE,
    "tune_p5_drop": _UNIT, "tune_noise_max": _COUNT, "tune_max_changes": _POSITIVE, "tune_min_outcomes": _COUNT,
    "tune_window_days": _POSITIVE, "tune_low_follow_rate": _UNIT, "tune_high_follow_rate": _UNIT,
    "tune_latency_ms": _POSITIVE, "tune_keep_snapshots": _POSITIVE,
    "weakness_surprise_gap": _UNIT, "weakness_min_gap": _UNIT, "weakness_min_surprises": _POSITIVE,
    "weakness_max_domains": _POSITIVE, "weakness_max_lessons": _POSITIVE, "domain_shift_min": _UNIT,
    "domain_low_effectiveness": _UNIT, "domain_min_showings": _POSITIVE,
}
"""The allowed range of every numeric setting; a numeric setting missing here must only be finite
(tests/test_input_validation.py checks that every numeric setting is listed)."""


def _describe(low: float, high: float, strict: bool) -> str:
    if (low, high) == (0.0, 1.0):
        return "between 0 and 1"
    if (low, high) == (-1.0, 0.0):
        return "between -1 and 0"
    return f"{'>' if strict else '>='} {low:g}"
