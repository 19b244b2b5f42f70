-- Metric points stored one row per agent and timestamp instead of one row per sample, and
-- rollups one row per agent and bucket instead of one per series (bench/RESULTS.md,
-- 2026-11-28): an agent's scrape of 100 series was 300 index writes (the point, its minute
-- and its hour), now it is three rows. The samples are JSON, sorted by series:
--   metric_points.points          [[series_id, value], ...]
--   metric_rollup_1m/1h.stats     [[series_id, count, sum, min, max], ...]
-- `json` keeps the text as written (float8's text form is exact). Rows still go with their
-- agent. Keep in step with ../sqlite/.

CREATE TABLE metric_points_new (
    agent_seq BIGINT NOT NULL REFERENCES agents(seq) ON DELETE CASCADE,
    ts BIGINT NOT NULL,
    points JSON NOT NULL,
    PRIMARY KEY (agent_seq, ts)
);
INSERT INTO metric_points_new (agent_seq, ts, points)
    SELECT agent_seq, ts, ('[' || string_agg('[' || series_id || ',' || value::text || ']', ',' ORDER BY series_id) || ']')::json
    FROM metric_points GROUP BY agent_seq, ts;
DROP TABLE metric_points;
ALTER TABLE metric_points_new RENAME TO metric_points;

CREATE TABLE metric_rollup_1m_new (
    agent_seq BIGINT NOT NULL REFERENCES agents(seq) ON DELETE CASCADE,
    bucket BIGINT NOT NULL,
    stats JSON NOT NULL,
    PRIMARY KEY (agent_seq, bucket)
);
INSERT INTO metric_rollup_1m_new (agent_seq, bucket, stats)
    SELECT agent_seq, bucket, ('[' || string_agg('[' || series_id || ',' || count || ',' || sum::text || ','
        || min::text || ',' || max::text || ']', ',' ORDER BY series_id) || ']')::json
    FROM metric_rollup_1m GROUP BY agent_seq, bucket;
DROP TABLE metric_rollup_1m;
ALTER TABLE metric_rollup_1m_new RENAME TO metric_rollup_1m;

CREATE TABLE metric_rollup_1h_new (
    agent_seq BIGINT NOT NULL REFERENCES agents(seq) ON DELETE CASCADE,
    bucket BIGINT NOT NULL,
    stats JSON NOT NULL,
    PRIMARY KEY (agent_seq, bucket)
);
INSERT INTO metric_rollup_1h_new (agent_seq, bucket, stats)
    SELECT agent_seq, bucket, ('[' || string_agg('[' || series_id || ',' || count || ',' || sum::text || ','
        || min::text || ',' || max::text || ']', ',' ORDER BY series_id) || ']')::json
    FROM metric_rollup_1h GROUP BY agent_seq, bucket;
DROP TABLE metric_rollup_1h;
ALTER TABLE metric_rollup_1h_new RENAME TO metric_rollup_1h;
