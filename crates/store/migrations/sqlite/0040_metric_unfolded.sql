-- Rollups folded after the points (bench/RESULTS.md, twelfth session). Under load SQLite's one
-- ingest writer stores a group's points at once but folds them into the minute and hour
-- rollups at most a second later, many groups in one pass; until then each such group leaves
-- one row here, the keys of the points it stored (JSON `[[agent_seq, ts], ...]`). The row
-- goes in the same transaction as the points and is deleted in the one that folds them, so
-- after a crash the hub folds exactly what the rows name (a restart reads them first).
-- PostgreSQL folds in the ingest transaction (several processes fold into the same rows)
-- and leaves its table empty. Keep in step with ../postgres/.
CREATE TABLE metric_unfolded (
    id INTEGER PRIMARY KEY,
    keys TEXT NOT NULL
);
