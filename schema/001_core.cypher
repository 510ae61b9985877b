// graphmem schema 001: the core graph.
// Applied by graphmem/store/migrations.py. {{DIM}} is replaced by the embedder's dimension.
// Timestamps are UTC. JSON-valued properties (metadata, reasons...) are JSON text.

// --- bookkeeping ------------------------------------------------------------------------
CREATE NODE TABLE Meta(key STRING PRIMARY KEY, value STRING);

// --- what the agent learned ---------------------------------------------------------------
// kind: rule | preference | checklist | bug_fix | prompt | observation | hypothesis
// status: shadow | candidate | canary | active | disabled        (seed 000)
// tier: pinned | active | archive                                  (seed 003)
// tool/objective_type/topics/entities repeat the edges for convenience; the edges are the truth.
CREATE NODE TABLE Learning(
    id STRING PRIMARY KEY,
    user_id STRING,
    shared BOOLEAN,
    kind STRING,
    content STRING,
    content_key STRING,
    search_text STRING,
    recommendation STRING,
    applies_when STRING,
    source_type STRING,
    source_event_id STRING,
    sentiment STRING,
    confidence DOUBLE,
    score DOUBLE,
    status STRING,
    canary_allocation DOUBLE,
    tier STRING,
    helpful INT64,
    harmful INT64,
    validations INT64,
    contradictions INT64,
    times_applied INT64,
    last_applied_at TIMESTAMP,
    last_validated_at TIMESTAMP,
    pass_streak INT64,
    fail_streak INT64,
    version INT64,
    ttl_days INT64,
    superseded_by STRING,
    tool STRING,
    objective_type STRING,
    topics STRING[],
    entities STRING[],
    created_at TIMESTAMP,
    updated_at TIMESTAMP,
    embedding FLOAT[{{DIM}}]
);

// --- what happened (episodic memory, seed 004) ---------------------------------------------
// kind: message | tool_call | tool_result | objective_start | objective_end | feedback | trace
CREATE NODE TABLE Event(
    id STRING PRIMARY KEY,
    user_id STRING,
    session_id STRING,
    kind STRING,
    role STRING,
    direction STRING,
    is_owner BOOLEAN,
    content STRING,
    search_text STRING,
    tool_name STRING,
    success BOOLEAN,
    objective_id STRING,
    entities STRING[],
    created_at TIMESTAMP,
    metadata STRING,
    embedding FLOAT[{{DIM}}]
);

// --- what learnings and events are about ------------------------------------------------------
CREATE NODE TABLE Tool(name STRING PRIMARY KEY, success_count INT64, error_count INT64, created_at TIMESTAMP);
CREATE NODE TABLE Topic(name STRING PRIMARY KEY, created_at TIMESTAMP);
CREATE NODE TABLE Entity(name STRING PRIMARY KEY, kind STRING, created_at TIMESTAMP);
CREATE NODE TABLE ObjectiveType(name STRING PRIMARY KEY, created_at TIMESTAMP);
CREATE NODE TABLE Objective(
    id STRING PRIMARY KEY,
    user_id STRING,
    goal STRING,
    objective_type STRING,
    status STRING,
    result STRING,
    score DOUBLE,
    started_at TIMESTAMP,
    ended_at TIMESTAMP
);

// --- summaries (seed 001); id = user_id + '|' + key ----------------------------------------------
CREATE NODE TABLE Summary(
    id STRING PRIMARY KEY,
    key STRING,
    user_id STRING,
    kind STRING,
    text STRING,
    staleness INT64,
    threshold INT64,
    refreshed_at TIMESTAMP,
    embedding FLOAT[{{DIM}}]
);

// --- the loop: contexts handed out, patterns, judges, traces, transitions -------------------
CREATE NODE TABLE Application(
    id STRING PRIMARY KEY,
    user_id STRING,
    query STRING,
    tool STRING,
    pattern_id STRING,
    created_at TIMESTAMP,
    outcome STRING,
    rating STRING,
    reasons STRING,
    outcome_at TIMESTAMP
);
CREATE NODE TABLE Pattern(id STRING PRIMARY KEY, user_id STRING, label STRING, size INT64, created_at TIMESTAMP, centroid FLOAT[{{DIM}}]);
CREATE NODE TABLE Judge(name STRING PRIMARY KEY, node STRING, criteria STRING, active BOOLEAN, created_at TIMESTAMP);
CREATE NODE TABLE Trace(
    id STRING PRIMARY KEY,
    user_id STRING,
    node STRING,
    mode STRING,
    input_text STRING,
    output STRING,
    ground_truth STRING,
    reasoning STRING,
    passed BOOLEAN,
    pattern_id STRING,
    created_at TIMESTAMP
);
CREATE NODE TABLE Verdict(id STRING PRIMARY KEY, judge STRING, passed BOOLEAN, score DOUBLE, reasoning STRING, created_at TIMESTAMP);
CREATE NODE TABLE Reflection(
    id STRING PRIMARY KEY,
    user_id STRING,
    text STRING,
    what_went_well STRING,
    improvements STRING,
    rules STRING,
    prompt_suggestions STRING,
    confidence DOUBLE,
    ttl_days INT64,
    created_at TIMESTAMP
);
CREATE NODE TABLE Transition(
    id STRING PRIMARY KEY,
    learning_id STRING,
    field STRING,
    old STRING,
    new STRING,
    reason STRING,
    version INT64,
    created_at TIMESTAMP
);

// --- typed edges ----------------------------------------------------------------------------
CREATE REL TABLE DERIVED_FROM(FROM Learning TO Event, FROM Learning TO Trace, FROM Learning TO Reflection);
CREATE REL TABLE ABOUT_TOOL(FROM Learning TO Tool);
CREATE REL TABLE ABOUT_TOPIC(FROM Learning TO Topic);
CREATE REL TABLE MENTIONS(FROM Learning TO Entity, FROM Event TO Entity);
CREATE REL TABLE FOR_OBJECTIVE(FROM Learning TO Objective);
CREATE REL TABLE FOR_OBJECTIVE_TYPE(FROM Learning TO ObjectiveType, FROM Objective TO ObjectiveType);
CREATE REL TABLE PART_OF(FROM Event TO Objective);
CREATE REL TABLE USED_TOOL(FROM Event TO Tool);
CREATE REL TABLE SUPERSEDES(FROM Learning TO Learning, reason STRING, created_at TIMESTAMP);
CREATE REL TABLE CONTRADICTS(FROM Learning TO Learning, reason STRING, created_at TIMESTAMP);
CREATE REL TABLE SUMMARIZED_IN(FROM Learning TO Summary);
CREATE REL TABLE APPLIED_IN(FROM Learning TO Application, rank INT64, score DOUBLE, reasons STRING);
CREATE REL TABLE MATCHED(FROM Application TO Pattern, FROM Trace TO Pattern);
CREATE REL TABLE EFFECTIVE_FOR(FROM Learning TO Pattern, helpful INT64, harmful INT64);
CREATE REL TABLE RELATED(FROM Topic TO Topic, FROM Entity TO Entity, FROM Topic TO Entity, FROM Entity TO Topic, weight INT64);
CREATE REL TABLE HAS_TRANSITION(FROM Learning TO Transition);
CREATE REL TABLE JUDGED(FROM Trace TO Verdict);
CREATE REL TABLE EVALUATED_BY(FROM Verdict TO Judge);
CREATE REL TABLE REFLECTS_ON(FROM Reflection TO Event, FROM Reflection TO Objective, FROM Reflection TO Trace);

// --- full-text indexes (BM25; they follow inserts, updates and deletes) -------------------------
// search_text is written by graphmem (graphmem/store/text.py: lowercase, light stemming, a short
// stopword list). Kùzu's own stemmers apply a default stopword list that drops words such as
// "never" and "keep", and a custom list crashes 0.11.3, so the index itself does no stemming.
CALL CREATE_FTS_INDEX('Learning', 'learning_fts', ['search_text'], stemmer := 'none');
CALL CREATE_FTS_INDEX('Event', 'event_fts', ['search_text'], stemmer := 'none');
