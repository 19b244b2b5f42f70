-- Foundation: tenants, users, sessions, API tokens, TOTP, invitations, password resets,
-- audit log, rate-limit counters and hub metadata. Keep in step with ../postgres/.

CREATE TABLE hub_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE tenants (
    id BLOB PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);

CREATE TABLE users (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    email TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    role TEXT NOT NULL,
    totp_secret_sealed BLOB,
    totp_enabled INTEGER NOT NULL DEFAULT FALSE,
    created_at TEXT NOT NULL,
    password_changed_at TEXT NOT NULL
);
CREATE INDEX users_tenant ON users (tenant_id);

CREATE TABLE sessions (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    user_id BLOB NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    ip TEXT,
    user_agent TEXT
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE api_tokens (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    user_id BLOB NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    scope TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    token_hint TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    last_used_at TEXT
);
CREATE INDEX api_tokens_tenant ON api_tokens (tenant_id);

CREATE TABLE totp_used_steps (
    user_id BLOB NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    step BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (user_id, step)
);

CREATE TABLE totp_challenges (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    user_id BLOB NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    purpose TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at TEXT
);

CREATE TABLE invitations (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    email TEXT NOT NULL,
    role TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    invited_by BLOB REFERENCES users(id) ON DELETE SET NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    accepted_at TEXT
);
CREATE INDEX invitations_tenant ON invitations (tenant_id);

CREATE TABLE password_resets (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    user_id BLOB NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at TEXT
);

CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    event_type TEXT NOT NULL,
    actor TEXT NOT NULL,
    subject TEXT NOT NULL,
    details TEXT NOT NULL,
    ip TEXT,
    request_id TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX audit_log_tenant ON audit_log (tenant_id, id DESC);

-- The audit log is append-only: the database itself refuses changes and deletions.
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;

CREATE TABLE rate_limit_counters (
    key TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (key, window_start)
);
