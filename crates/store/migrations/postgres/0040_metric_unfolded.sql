-- Rollups folded after the points (see ../sqlite/0040_metric_unfolded.sql). Only SQLite's one
-- ingest writer defers folding; PostgreSQL folds in the ingest transaction, so this table
-- stays empty here. It exists so that both engines have the same schema. Keep in step with
-- ../sqlite/.
CREATE TABLE metric_unfolded (
    id BIGSERIAL PRIMARY KEY,
    keys TEXT NOT NULL
);
