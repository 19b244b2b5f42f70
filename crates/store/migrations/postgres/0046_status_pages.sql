-- Public status pages and their incidents (CONTRACT 32, issue 64). A page's slug is its
-- public address (unique across tenants); its groups name the tenant's apps (a JSON array
-- of {name, app_ids}). An incident belongs to one page; its updates are its history.
CREATE TABLE status_pages (
    id UUID PRIMARY KEY,
    tenant_id UUID NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    slug TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    description TEXT,
    groups JSONB NOT NULL,
    show_uptime_days BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX status_pages_tenant ON status_pages (tenant_id);
CREATE TABLE status_incidents (
    id UUID PRIMARY KEY,
    tenant_id UUID NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    page_id UUID NOT NULL REFERENCES status_pages(id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    impact TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    resolved_at TIMESTAMPTZ
);
CREATE INDEX status_incidents_page ON status_incidents (page_id, created_at);
CREATE TABLE status_incident_updates (
    id UUID PRIMARY KEY,
    incident_id UUID NOT NULL REFERENCES status_incidents(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    message TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX status_incident_updates_incident ON status_incident_updates (incident_id, created_at);
