// graphmem schema 011: auto-tuning (graphmem/tuning.py) and session metrics (graphmem/sessions.py).
// TuningSnapshot: the tunable settings in effect before one tuning step (settings: JSON name -> value),
//                 the changes it made (JSON list), the health it saw (JSON), the guard's P@5 and noise
//                 before and after, and its status: kept | rolled_back | restored (by hand).
//                 The last Settings.tune_keep_snapshots per user are kept.
// TunedSettings:  one per user (id = user_id): the tuned values in effect (JSON name -> value); a
//                 Memory opened with Settings(auto_tune=True) overlays them on its Settings. reference_p5:
//                 the guard's P@5 before the user's first step (later steps may not drift below it).
// Application.session_id, Trace.session_id: the session a context was served in / a trace was judged in.
CREATE NODE TABLE TuningSnapshot(
    id STRING PRIMARY KEY,
    user_id STRING,
    created_at TIMESTAMP,
    settings STRING,
    changes STRING,
    health STRING,
    p5_before DOUBLE,
    noise_before INT64,
    p5_after DOUBLE,
    noise_after INT64,
    status STRING,
    reason STRING,
    restored_at TIMESTAMP
);
CREATE NODE TABLE TunedSettings(id STRING PRIMARY KEY, user_id STRING, settings STRING, snapshot_id STRING, reference_p5 DOUBLE, updated_at TIMESTAMP);
ALTER TABLE Application ADD session_id STRING;
ALTER TABLE Trace ADD session_id STRING;
