-- Each agent's newest `cpu.percent` (unlabelled) as ingest stored it: the overview ranks the
-- fleet by it without reading every agent's metric rows (issue 63).
ALTER TABLE agents ADD COLUMN cpu_percent DOUBLE PRECISION;
