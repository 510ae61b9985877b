// graphmem schema 012: the agent's domains (the tools, topics and objective types its work is
// about, see graphmem/domains.py), how well advice works in each, and lessons from surprises.
// APPLIED_IN.confidence: the learning's confidence when the context showed it (the prediction a
//                        surprise is measured against: gap = |confidence - outcome|).
// Domain:         one user's view of one domain; id = user_id|kind:name. follow_rate and the
//                 top/weak sources are the latest snapshot's, compared with the next one.
// DomainSnapshot: the figures of one domain at one run (learnings, follow rate, surprises...).
// DomainEvent:    a change seen between two snapshots (effectiveness_shift, top_source, weak_source).
// DomainGap:      a diagnosed gap (no_insights, unused_knowledge, low_effectiveness) at one snapshot.
// COVERS:         Domain -> the Tool, Topic or ObjectiveType node it is about.
// WEAKNESS_OF:    a lesson the weakness trainer proposed -> the weak Domain it is for.
// SURPRISED_BY:   that lesson -> each surprise episode (Application) it consolidates; learning_id
//                 is the learning that surprised there, gap its confidence gap.
ALTER TABLE APPLIED_IN ADD confidence DOUBLE;
CREATE NODE TABLE Domain(
    id STRING PRIMARY KEY,
    user_id STRING,
    kind STRING,
    name STRING,
    follow_rate DOUBLE,
    top_source STRING,
    weak_source STRING,
    snapshot_id STRING,
    created_at TIMESTAMP,
    updated_at TIMESTAMP
);
CREATE NODE TABLE DomainSnapshot(
    id STRING PRIMARY KEY,
    user_id STRING,
    domain STRING,
    learnings INT64,
    live_learnings INT64,
    avg_confidence DOUBLE,
    showings INT64,
    followed INT64,
    unhelpful INT64,
    follow_rate DOUBLE,
    surprises INT64,
    avg_gap DOUBLE,
    weak BOOLEAN,
    sources STRING,
    created_at TIMESTAMP
);
CREATE NODE TABLE DomainEvent(
    id STRING PRIMARY KEY,
    user_id STRING,
    domain STRING,
    snapshot_id STRING,
    kind STRING,
    source STRING,
    old DOUBLE,
    new DOUBLE,
    detail STRING,
    created_at TIMESTAMP
);
CREATE NODE TABLE DomainGap(
    id STRING PRIMARY KEY,
    user_id STRING,
    domain STRING,
    snapshot_id STRING,
    kind STRING,
    severity STRING,
    detail STRING,
    created_at TIMESTAMP
);
CREATE REL TABLE COVERS(FROM Domain TO Tool, FROM Domain TO Topic, FROM Domain TO ObjectiveType);
CREATE REL TABLE HAS_SNAPSHOT(FROM Domain TO DomainSnapshot);
CREATE REL TABLE HAS_EVENT(FROM Domain TO DomainEvent);
CREATE REL TABLE HAS_GAP(FROM Domain TO DomainGap);
CREATE REL TABLE WEAKNESS_OF(FROM Learning TO Domain);
CREATE REL TABLE SURPRISED_BY(FROM Learning TO Application, learning_id STRING, gap DOUBLE);
