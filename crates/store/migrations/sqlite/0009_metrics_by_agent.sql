-- Metric points and rollups keyed by agent first, then time: a batch's samples land next to
-- each other at the end of the agent's range, so a commit dirties a page or two per batch
-- instead of the newest page of every series it touches (bench/RESULTS.md). Rows go with
-- their agent (ON DELETE CASCADE on the key's prefix); series are only ever deleted with their
-- agent. Keep in step with ../postgres/.

CREATE TABLE metric_points_new (
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    ts BIGINT NOT NULL,
    series_id BIGINT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (agent_id, ts, series_id)
) WITHOUT ROWID;
INSERT INTO metric_points_new (agent_id, ts, series_id, value)
    SELECT s.agent_id, p.ts, p.series_id, p.value
    FROM metric_points p JOIN metric_series s ON s.id = p.series_id;
DROP TABLE metric_points;
ALTER TABLE metric_points_new RENAME TO metric_points;

CREATE TABLE metric_rollup_1m_new (
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    bucket BIGINT NOT NULL,
    series_id BIGINT NOT NULL,
    count BIGINT NOT NULL,
    sum REAL NOT NULL,
    min REAL NOT NULL,
    max REAL NOT NULL,
    PRIMARY KEY (agent_id, bucket, series_id)
) WITHOUT ROWID;
INSERT INTO metric_rollup_1m_new (agent_id, bucket, series_id, count, sum, min, max)
    SELECT s.agent_id, r.bucket, r.series_id, r.count, r.sum, r.min, r.max
    FROM metric_rollup_1m r JOIN metric_series s ON s.id = r.series_id;
DROP TABLE metric_rollup_1m;
ALTER TABLE metric_rollup_1m_new RENAME TO metric_rollup_1m;

CREATE TABLE metric_rollup_1h_new (
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    bucket BIGINT NOT NULL,
    series_id BIGINT NOT NULL,
    count BIGINT NOT NULL,
    sum REAL NOT NULL,
    min REAL NOT NULL,
    max REAL NOT NULL,
    PRIMARY KEY (agent_id, bucket, series_id)
) WITHOUT ROWID;
INSERT INTO metric_rollup_1h_new (agent_id, bucket, series_id, count, sum, min, max)
    SELECT s.agent_id, r.bucket, r.series_id, r.count, r.sum, r.min, r.max
    FROM metric_rollup_1h r JOIN metric_series s ON s.id = r.series_id;
DROP TABLE metric_rollup_1h;
ALTER TABLE metric_rollup_1h_new RENAME TO metric_rollup_1h;
