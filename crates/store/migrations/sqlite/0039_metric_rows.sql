-- Metric points stored one row per agent and timestamp instead of one row per sample, and
-- rollups one row per agent and bucket instead of one per series (bench/RESULTS.md,
-- 2026-11-28): an agent's scrape of 100 series was 300 B-tree writes (the point, its minute
-- and its hour), now it is three rows. The samples are JSON text, sorted by series:
--   metric_points.points          [[series_id, value], ...]
--   metric_rollup_1m/1h.stats     [[series_id, count, sum, min, max], ...]
-- JSON so that this conversion (and anyone reading the database) needs nothing but SQL;
-- `%.17g` prints every double exactly. Rows are a few kilobytes, so the tables keep their row
-- id and the key is a unique index. Rows still go with their agent. Keep in step with
-- ../postgres/.

CREATE TABLE metric_points_new (
    agent_seq INTEGER NOT NULL REFERENCES agents(seq) ON DELETE CASCADE,
    ts BIGINT NOT NULL,
    points TEXT NOT NULL
);
INSERT INTO metric_points_new (agent_seq, ts, points)
    SELECT agent_seq, ts, '[' || group_concat('[' || series_id || ',' || format('%.17g', value) || ']', ',') || ']'
    FROM (SELECT * FROM metric_points ORDER BY agent_seq, ts, series_id) GROUP BY agent_seq, ts;
DROP TABLE metric_points;
ALTER TABLE metric_points_new RENAME TO metric_points;
CREATE UNIQUE INDEX metric_points_key ON metric_points (agent_seq, ts);

CREATE TABLE metric_rollup_1m_new (
    agent_seq INTEGER NOT NULL REFERENCES agents(seq) ON DELETE CASCADE,
    bucket BIGINT NOT NULL,
    stats TEXT NOT NULL
);
INSERT INTO metric_rollup_1m_new (agent_seq, bucket, stats)
    SELECT agent_seq, bucket, '[' || group_concat('[' || series_id || ',' || count || ',' || format('%.17g', sum)
        || ',' || format('%.17g', min) || ',' || format('%.17g', max) || ']', ',') || ']'
    FROM (SELECT * FROM metric_rollup_1m ORDER BY agent_seq, bucket, series_id) GROUP BY agent_seq, bucket;
DROP TABLE metric_rollup_1m;
ALTER TABLE metric_rollup_1m_new RENAME TO metric_rollup_1m;
CREATE UNIQUE INDEX metric_rollup_1m_key ON metric_rollup_1m (agent_seq, bucket);

CREATE TABLE metric_rollup_1h_new (
    agent_seq INTEGER NOT NULL REFERENCES agents(seq) ON DELETE CASCADE,
    bucket BIGINT NOT NULL,
    stats TEXT NOT NULL
);
INSERT INTO metric_rollup_1h_new (agent_seq, bucket, stats)
    SELECT agent_seq, bucket, '[' || group_concat('[' || series_id || ',' || count || ',' || format('%.17g', sum)
        || ',' || format('%.17g', min) || ',' || format('%.17g', max) || ']', ',') || ']'
    FROM (SELECT * FROM metric_rollup_1h ORDER BY agent_seq, bucket, series_id) GROUP BY agent_seq, bucket;
DROP TABLE metric_rollup_1h;
ALTER TABLE metric_rollup_1h_new RENAME TO metric_rollup_1h;
CREATE UNIQUE INDEX metric_rollup_1h_key ON metric_rollup_1h (agent_seq, bucket);
