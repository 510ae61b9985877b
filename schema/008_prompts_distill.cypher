// graphmem schema 008: prompt versions with A/B tests, and distilled rules.
// Learning.prompt_role:    for kind 'prompt': the role the prompt is for (e.g. 'orchestrator').
// Learning.prompt_version: 1, 2, 3... within the role (labels read '<role>_v<n>').
// Learning.prompt_state:   active (served) | candidate (under A/B test) | deprecated (lost; kept).
// SERVED_IN:               which prompt version a context was served, in which arm of the A/B
//                          split and for which session; verdict is the outcome credited to it
//                          (accepted | rejected | neutral), NULL until an outcome arrives.
// DERIVED_FROM Learning->Learning: a distilled rule and the episodic learnings it summarises.
// Learning.distilled_at:   when distillation last covered this learning (member or rule), so a
//                          run only redoes the clusters that gained new members since.
ALTER TABLE Learning ADD prompt_role STRING;
ALTER TABLE Learning ADD prompt_version INT64;
ALTER TABLE Learning ADD prompt_state STRING;
ALTER TABLE Learning ADD distilled_at TIMESTAMP;
CREATE REL TABLE SERVED_IN(FROM Learning TO Application, role STRING, arm STRING, session_id STRING, verdict STRING, created_at TIMESTAMP);
ALTER TABLE DERIVED_FROM ADD FROM Learning TO Learning;
