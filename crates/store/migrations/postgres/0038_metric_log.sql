-- Metrics past one machine (CONTRACT 26). `metric_log` is the order in which points were
-- stored, written in the ingest transaction while remote write is configured: one row per
-- (agent, timestamp) a transaction stored points at; the points themselves stay in
-- `metric_points` (read back by that key prefix), so a sample is written once.
-- A row's `txid` is its transaction's id: a reader takes only rows of transactions older
-- than every transaction still running (`pg_snapshot_xmin`), in (txid, id) order, so a row
-- whose transaction commits late is never skipped (sequence order is not commit order).
-- `remote_write_positions` holds, per receiver (its URL without userinfo), the last row it
-- accepted. Keep in step with ../sqlite/.
CREATE TABLE metric_log (
    id BIGSERIAL PRIMARY KEY,
    txid BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
    agent_seq BIGINT NOT NULL,
    ts BIGINT NOT NULL,
    stored_at BIGINT NOT NULL
);
CREATE INDEX metric_log_order ON metric_log (txid, id);

CREATE TABLE remote_write_positions (
    url TEXT PRIMARY KEY,
    txid BIGINT NOT NULL,
    log_id BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
