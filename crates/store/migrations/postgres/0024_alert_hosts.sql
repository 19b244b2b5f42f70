-- The alerts capability's copy of what it shows and routes by about a host (its name and
-- tags), kept by the fleet through the alerts capability's functions: alerts read their own
-- table, never the fleet's.
CREATE TABLE alert_hosts (
    agent_id UUID PRIMARY KEY,
    tenant_id UUID NOT NULL,
    hostname TEXT NOT NULL,
    tags JSONB NOT NULL
);
INSERT INTO alert_hosts (agent_id, tenant_id, hostname, tags)
    SELECT id, tenant_id, hostname, tags FROM agents;
