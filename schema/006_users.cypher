// graphmem schema 006: users and trust.
// RELATED.user_id: whose learning counted the co-occurrence, so the second hop of one user's
//                  retrieval never travels over an association only another user's private
//                  learning holds, and forgetting a user removes exactly their counts.
// Judge.user_id:   the user who configured the judge (NULL: a built-in judge for everyone);
// Judge.label:     the judge's name as its user wrote it (Judge.name, the key, is user|label).
// Existing RELATED edges are rebuilt per user from the learnings' edges.
ALTER TABLE RELATED ADD user_id STRING;
ALTER TABLE Judge ADD user_id STRING;
ALTER TABLE Judge ADD label STRING;
MATCH ()-[r:RELATED]->() DELETE r;
MATCH (l:Learning)-[:ABOUT_TOPIC]->(a:Topic), (l)-[:ABOUT_TOPIC]->(b:Topic) WHERE a.name < b.name WITH l.user_id AS u, a, b, count(*) AS w CREATE (a)-[:RELATED {weight: w, user_id: u}]->(b);
MATCH (l:Learning)-[:MENTIONS]->(a:Entity), (l)-[:MENTIONS]->(b:Entity) WHERE a.name < b.name WITH l.user_id AS u, a, b, count(*) AS w CREATE (a)-[:RELATED {weight: w, user_id: u}]->(b);
MATCH (l:Learning)-[:ABOUT_TOPIC]->(a:Topic), (l)-[:MENTIONS]->(b:Entity) WITH l.user_id AS u, a, b, count(*) AS w CREATE (a)-[:RELATED {weight: w, user_id: u}]->(b);
