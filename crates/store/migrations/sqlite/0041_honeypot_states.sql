-- Whether each governed honeypot is armed on its host (CONTRACT 30): an agent that cannot
-- listen on a port (in use), watch a file or read the auth log says so, with why; the
-- security view shows it. One row per honeypot an agent last reported. Keep in step with
-- ../postgres/.
CREATE TABLE honeypot_states (
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    armed INTEGER NOT NULL,
    why TEXT,
    reported_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, kind, target)
);
CREATE INDEX honeypot_states_tenant ON honeypot_states (tenant_id);
