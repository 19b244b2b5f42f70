-- Private networks (CONTRACT 33): the ranges a tenant's owner lets its hub checks, channels and
-- webhooks reach, within the operator's TRUSTHUB_OUTBOUND_ALLOW_CIDRS. No row: all of the
-- operator's ranges. `cidrs` is comma-separated ('' for none).
CREATE TABLE tenant_networks (
    tenant_id UUID PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    cidrs TEXT NOT NULL
);
