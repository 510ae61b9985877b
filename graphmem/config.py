"""Settings: every tunable of graphmem in one frozen model, defaulting to the seeds' values.

Nothing here reads the environment; only the CLI does. Make a variant with
``Settings().model_copy(update={...})`` or ``Settings(field=value)``.

The comment on each field names the seed document it comes from (shared/seeds/):
000 lifecycle/online scoring, 001 learnings and summaries, 002 selection and curation,
003 tiers, implicit outcomes, actionability, regression guard, 004 confidence, TTL and pruning.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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

    # --- models -------------------------------------------------------------------------
    anthropic_model: str = "claude-sonnet-4-5"
    anthropic_max_tokens: int = 1024
    llm_timeout_s: float = 30.0
    llm_max_retries: int = 3
    llm_backoff_s: float = 0.5

    # --- token budgets per context section (seed 001) -----------------------------------
    budget_user_preferences: int = 300
    budget_learnings: int = 200

    # --- retrieval (DESIGN.md "Retrieval"; seed 002 HybridSelector) ---------------------
    candidates_per_source: int = 50
    rrf_k: int = 10  # 3 lists of ~50: k=60 flattened rank differences (labelled bench: R@10 0.75 -> 0.84)
    weight_vector: float = 1.0
    weight_fulltext: float = 1.0
    weight_graph: float = 1.0
    graph_hop_decay: float = 0.5
    graph_fanout_cap: int = 50
    graph_second_hop_neighbours: int = 8  # second hop: the heaviest RELATED neighbours explored
    graph_anchor_cap: int = 500  # one-hop: at most this many learnings per anchor node (+ those other signals found)
    quality_weight: float = 0.15  # seed 002 stage 4 says 30 % of a cosine-scaled score; see README
    semantic_weight: float = 0.4  # seed 002 stage 4: semantic 40 %
    thompson_weight: float = 0.3  # seed 002 stage 4: Thompson sampling 30 %
    thompson_sampling: bool = False
    random_seed: int = 0
    quality_prior_enabled: bool = True
    recency_half_life_days: float = 90.0
    pinned_boost: float = 0.05
    pattern_boost: float = 0.1
    pattern_similarity: float = 0.8  # seed 002: a query joins the nearest Pattern at cosine >= this
    min_success_rate: float = 0.3  # seed 002 stage 2: drop rows rated below it ...
    min_success_samples: int = 3  # ... once they have at least this many helpful+harmful ratings
    # seed 002 stage 3 filters at cosine 0.5 for its embedder; MiniLM scores related texts 0.2-0.6,
    # so graphmem floors only the rows nothing but the vector signal found:
    vector_only_min_similarity: float = 0.2
    mmr_lambda: float = 0.7
    fulltext_max_postings: int = 2000  # rarest query terms up to this many postings (0: all)
    defer_application_writes: bool = True  # write each context's Application off the caller's path
    # search over events (Memory.search over="events"; benchmarks/locomo.py ablates each signal)
    search_fusion: str = "score"  # "score" (z-scored cosine + max-normalised BM25) or "rrf" (ranks)
    search_candidates: int = 100  # per ranked list (vector, full-text) before fusion
    search_weight_vector: float = 1.0
    search_weight_fulltext: float = 1.0
    search_weight_entity: float = 0.2  # bonus for events mentioning a query entity (fused score in [0, 1])
    search_weight_tool: float = 0.1  # bonus for events that used the query's tool
    search_weight_time: float = 0.2  # bonus for time expressions when the query asks "when"
    search_weight_neighbour: float = 0.5  # share of the best same-session neighbour's score
    search_neighbour_window: int = 1  # turns either side counted as neighbours
    search_neighbour_decay: float = 0.5  # per extra turn of distance
    search_entity_cap: int = 10_000  # most events read per entity or tool anchor

    # --- curation (seed 002 curator, DESIGN.md) ------------------------------------------
    dedup_similarity: float = 0.85
    contradiction_similarity: float = 0.6
    actionability_threshold: float = 0.50  # seed 003 system 9
    actionability_w_directive: float = 0.35
    actionability_w_condition: float = 0.15
    actionability_w_specificity: float = 0.30
    actionability_w_not_observation: float = 0.20
    feedback_recent_actions: int = 5  # seed 001: last five outbound actions
    reflector_bullet_status: str = "active"  # seed 002: online/offline bullets join the playbook at once

    # --- online scoring (seed 000 markSkillUsage) ----------------------------------------
    accept_score_delta: float = 0.03
    accept_confidence_delta: float = 0.015
    reject_score_delta: float = -0.05
    reject_confidence_delta: float = -0.025

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

    # --- input limits --------------------------------------------------------------------
    max_content_chars: int = 20_000
    max_query_chars: int = 4_000
