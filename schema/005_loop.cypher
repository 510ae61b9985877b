// graphmem schema 005: bookkeeping for the outcome loop (issue 6).
// window_mark: outcome_at of the newest outcome already counted in a lifecycle window, so a
//              window is only counted again once it holds new outcomes.
// decayed_at:  when confidence decay was last applied, so decay never compounds across cycles.
ALTER TABLE Learning ADD window_mark TIMESTAMP;
ALTER TABLE Learning ADD decayed_at TIMESTAMP;
