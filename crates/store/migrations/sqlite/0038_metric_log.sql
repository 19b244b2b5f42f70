-- Metrics past one machine (CONTRACT 26). `metric_log` is the order in which points were
-- stored, written in the ingest transaction while remote write is configured: one row per
-- (agent, timestamp) a transaction stored points at; the points themselves stay in
-- `metric_points` (read back by that key prefix), so a sample is written once.
-- SQLite has one writer, so ids are in commit order; AUTOINCREMENT never hands out an id
-- again after pruning. `txid` is 0 here (PostgreSQL's reader needs it).
-- `remote_write_positions` holds, per receiver (its URL without userinfo), the last row it
-- accepted. Keep in step with ../postgres/.
CREATE TABLE metric_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    txid INTEGER NOT NULL DEFAULT 0,
    agent_seq INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    stored_at INTEGER NOT NULL
);
CREATE INDEX metric_log_order ON metric_log (txid, id);

CREATE TABLE remote_write_positions (
    url TEXT PRIMARY KEY,
    txid INTEGER NOT NULL,
    log_id INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
