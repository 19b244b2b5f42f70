-- SLOs (SPEC 2.2, CONTRACT 16). `app_timeline` is each app's compact verdict history: spans in
-- which the observed state matched the expected one (down = 0) or differed (down = 1); time
-- without a span had no verdict. The liveness tick extends the app's last span while the
-- verdict holds, so a steady app adds one row per change, not per check. Kept 400 days at
-- least; times are Unix seconds (what the SLO arithmetic reads, without parsing). `app_slos`: one SLO per app. `maintenance_windows`: excluded from the budget, no
-- liveness alert during them. Keep in step with ../postgres/.
CREATE TABLE app_timeline (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id BLOB NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    start_s BIGINT NOT NULL,
    end_s BIGINT NOT NULL,
    down INTEGER NOT NULL
);
CREATE INDEX app_timeline_app ON app_timeline (app_id, end_s);
CREATE TABLE app_slos (
    app_id BLOB PRIMARY KEY REFERENCES apps(id) ON DELETE CASCADE,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    target REAL NOT NULL,
    window_days INTEGER NOT NULL,
    minimum_data REAL NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX app_slos_tenant ON app_slos (tenant_id);
CREATE TABLE maintenance_windows (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    app_id BLOB NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    starts_at TEXT NOT NULL,
    ends_at TEXT NOT NULL,
    reason TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX maintenance_windows_app ON maintenance_windows (app_id, ends_at);
