// graphmem schema 004: incremental summaries (issue 5).
// Summary.pending lists the ids of the learnings written since the summary's last refresh
// (created, merged, updated, retired...). The refresher hands only those to the summarizer, so a
// refresh costs what changed, not what the summary covers. Cleared as a refresh consumes them.
ALTER TABLE Summary ADD pending STRING[] DEFAULT [];
