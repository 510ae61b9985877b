// graphmem schema 013: fusion weights learned from outcomes (graphmem/retrieve/learned.py).
// FusionWeights: one per user (id = user_id). weights: JSON signal -> multiplier on the Settings
//                weight of that signal (vector, fulltext, graph, quality, recency; 1.0 = the
//                default); best: the multipliers that ranked the recorded outcomes best so far
//                (the ratchet rolls a harmful step back to them); examples: JSON list of the last
//                Settings.fusion_learn_examples outcomes as per-learning signal features and labels;
//                updates / rollbacks: steps kept / steps rolled back.
CREATE NODE TABLE FusionWeights(
    id STRING PRIMARY KEY,
    user_id STRING,
    weights STRING,
    best STRING,
    examples STRING,
    updates INT64,
    rollbacks INT64,
    updated_at TIMESTAMP
);
