// graphmem schema 006: facts about the user and the people and things they deal with.
// fact_key:   "<subject>|<attribute>" (a multi-valued attribute adds "|<value>"): the learnings that
//             state the same fact; a new value for a single-valued key supersedes the old one.
// valid_from: when the fact became true (the owner's message that stated it).
// valid_to:   when it stopped being true (the message that replaced it); null while current.
ALTER TABLE Learning ADD fact_key STRING;
ALTER TABLE Learning ADD valid_from TIMESTAMP;
ALTER TABLE Learning ADD valid_to TIMESTAMP;
