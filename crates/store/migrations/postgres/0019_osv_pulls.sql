-- The daily pull of TRUSTHUB_OSV_URL (CONTRACT 15), per ecosystem: `high_water` is the newest
-- `modified` of the bucket's modified_id.csv already imported (the next pull fetches only the
-- records changed after it); the first pull imports the ecosystem's all.zip. Keep in step
-- with ../sqlite/.
CREATE TABLE osv_pulls (
    ecosystem TEXT PRIMARY KEY,
    high_water TEXT,
    pulled_at TIMESTAMPTZ NOT NULL,
    records BIGINT NOT NULL,
    last_error TEXT
);
