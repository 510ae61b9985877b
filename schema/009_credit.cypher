// graphmem schema 009: how much of an outcome each learning shown in a context received.
// verdict: accepted | rejected | neutral for a credited learning, 'none' for one shown but not
//          credited (the agent named other learnings in used=); null on edges written before.
// credit:  the learning's share of the outcome (1 when used or tagged; the rank share otherwise).
ALTER TABLE APPLIED_IN ADD verdict STRING;
ALTER TABLE APPLIED_IN ADD credit DOUBLE;
