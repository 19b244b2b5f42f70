-- Per-minute and per-hour rollups of metric points, maintained in the ingest transaction
-- from the points actually inserted, so long ranges stay fast after raw points expire.
-- Keep in step with ../postgres/.

CREATE TABLE metric_rollup_1m (
    series_id BIGINT NOT NULL REFERENCES metric_series(id) ON DELETE CASCADE,
    bucket BIGINT NOT NULL,
    count BIGINT NOT NULL,
    sum REAL NOT NULL,
    min REAL NOT NULL,
    max REAL NOT NULL,
    PRIMARY KEY (series_id, bucket)
) WITHOUT ROWID;

CREATE TABLE metric_rollup_1h (
    series_id BIGINT NOT NULL REFERENCES metric_series(id) ON DELETE CASCADE,
    bucket BIGINT NOT NULL,
    count BIGINT NOT NULL,
    sum REAL NOT NULL,
    min REAL NOT NULL,
    max REAL NOT NULL,
    PRIMARY KEY (series_id, bucket)
) WITHOUT ROWID;
