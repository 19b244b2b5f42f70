-- Advisory data in the OSV schema (CONTRACT 15). `scope` is '' for hub-wide data (the CLI
-- import, the OSV URL) or a tenant id for what a tenant's admin uploaded; a tenant's scans use
-- both. `record` is the OSV JSON as imported. Keep in step with ../sqlite/.
CREATE TABLE osv_advisories (
    scope TEXT NOT NULL,
    id TEXT NOT NULL,
    modified TIMESTAMPTZ NOT NULL,
    withdrawn BOOLEAN NOT NULL,
    aliases TEXT NOT NULL,
    summary TEXT NOT NULL,
    severity TEXT NOT NULL,
    cvss_score DOUBLE PRECISION,
    record TEXT NOT NULL,
    imported_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (scope, id)
);
-- Which packages each advisory names: the scan's index.
CREATE TABLE osv_packages (
    scope TEXT NOT NULL,
    ecosystem TEXT NOT NULL,
    name TEXT NOT NULL,
    advisory_id TEXT NOT NULL,
    PRIMARY KEY (scope, ecosystem, name, advisory_id)
);
CREATE INDEX osv_packages_advisory ON osv_packages (scope, advisory_id);
-- The scan looks packages up by name (then ecosystem, which may carry a suffix such as
-- `Ubuntu:22.04:LTS`).
CREATE INDEX osv_packages_name ON osv_packages (name);
