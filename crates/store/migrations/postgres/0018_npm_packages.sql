-- npm maintainer tracking (SPEC 2.7, CONTRACT 15): the registry's view of every npm package an
-- agent depends on, shared by all tenants (the registry is public data; which tenant depends
-- on what is read from the inventories). `maintainers` is the current set (JSON, sorted):
-- the packument's `maintainers` and the latest version's `_npmUser`; `previous_maintainers`
-- the set before the last change, `changed_at` when the hub saw that change and
-- `registry_modified_at` the packument's `time.modified` then. Keep in step with ../sqlite/.
CREATE TABLE npm_packages (
    name TEXT PRIMARY KEY,
    etag TEXT,
    maintainers TEXT NOT NULL,
    previous_maintainers TEXT NOT NULL,
    deprecated TEXT,
    latest_version TEXT,
    changed_at TIMESTAMPTZ,
    registry_modified_at TIMESTAMPTZ,
    fetched_at TIMESTAMPTZ,
    retry_at TIMESTAMPTZ,
    failures BIGINT NOT NULL,
    last_error TEXT
);
CREATE INDEX npm_packages_changed ON npm_packages (changed_at);
