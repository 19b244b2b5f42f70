-- Metric points and rollups keyed by a small integer per agent instead of its 16-byte UUID:
-- smaller rows and cheaper key comparisons on the hottest write path (bench/RESULTS.md,
-- 2026-11-23). `agents.seq` is that integer, unique, assigned once per agent. Rows still go
-- with their agent (ON DELETE CASCADE). Keep in step with ../postgres/.

ALTER TABLE agents ADD COLUMN seq INTEGER;
UPDATE agents SET seq = rowid;
CREATE UNIQUE INDEX agents_seq ON agents (seq);
-- The next number for each new agent (numbers of deleted agents may come back: their rows
-- were deleted with them).
CREATE TRIGGER agents_seq AFTER INSERT ON agents FOR EACH ROW WHEN NEW.seq IS NULL
BEGIN
    UPDATE agents SET seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM agents) WHERE id = NEW.id;
END;

CREATE TABLE metric_points_new (
    agent_seq INTEGER NOT NULL REFERENCES agents(seq) ON DELETE CASCADE,
    ts BIGINT NOT NULL,
    series_id BIGINT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (agent_seq, ts, series_id)
) WITHOUT ROWID;
INSERT INTO metric_points_new (agent_seq, ts, series_id, value)
    SELECT a.seq, p.ts, p.series_id, p.value FROM metric_points p JOIN agents a ON a.id = p.agent_id;
DROP TABLE metric_points;
ALTER TABLE metric_points_new RENAME TO metric_points;

CREATE TABLE metric_rollup_1m_new (
    agent_seq INTEGER NOT NULL REFERENCES agents(seq) ON DELETE CASCADE,
    bucket BIGINT NOT NULL,
    series_id BIGINT NOT NULL,
    count BIGINT NOT NULL,
    sum REAL NOT NULL,
    min REAL NOT NULL,
    max REAL NOT NULL,
    PRIMARY KEY (agent_seq, bucket, series_id)
) WITHOUT ROWID;
INSERT INTO metric_rollup_1m_new (agent_seq, bucket, series_id, count, sum, min, max)
    SELECT a.seq, r.bucket, r.series_id, r.count, r.sum, r.min, r.max FROM metric_rollup_1m r JOIN agents a ON a.id = r.agent_id;
DROP TABLE metric_rollup_1m;
ALTER TABLE metric_rollup_1m_new RENAME TO metric_rollup_1m;

CREATE TABLE metric_rollup_1h_new (
    agent_seq INTEGER NOT NULL REFERENCES agents(seq) ON DELETE CASCADE,
    bucket BIGINT NOT NULL,
    series_id BIGINT NOT NULL,
    count BIGINT NOT NULL,
    sum REAL NOT NULL,
    min REAL NOT NULL,
    max REAL NOT NULL,
    PRIMARY KEY (agent_seq, bucket, series_id)
) WITHOUT ROWID;
INSERT INTO metric_rollup_1h_new (agent_seq, bucket, series_id, count, sum, min, max)
    SELECT a.seq, r.bucket, r.series_id, r.count, r.sum, r.min, r.max FROM metric_rollup_1h r JOIN agents a ON a.id = r.agent_id;
DROP TABLE metric_rollup_1h;
ALTER TABLE metric_rollup_1h_new RENAME TO metric_rollup_1h;
