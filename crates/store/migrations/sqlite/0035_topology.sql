-- Topology (CONTRACT 24): zones, nodes and edges kept by people (promoted from what agents
-- and cloud discovery detect, or entered), frozen snapshots, and Mermaid diagrams with their
-- public share links (the token hashed for lookup, sealed with the hub key to show again).
CREATE TABLE topology_zones (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    parent_id BLOB REFERENCES topology_zones(id) ON DELETE SET NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX topology_zones_tenant ON topology_zones (tenant_id);

CREATE TABLE topology_nodes (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    agent_id BLOB,
    cloud_resource_id BLOB,
    zone_id BLOB REFERENCES topology_zones(id) ON DELETE SET NULL,
    tags TEXT NOT NULL,
    attributes TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX topology_nodes_tenant ON topology_nodes (tenant_id);
CREATE UNIQUE INDEX topology_nodes_agent ON topology_nodes (tenant_id, agent_id) WHERE agent_id IS NOT NULL;
CREATE UNIQUE INDEX topology_nodes_cloud ON topology_nodes (tenant_id, cloud_resource_id) WHERE cloud_resource_id IS NOT NULL;

CREATE TABLE topology_edges (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    source_id BLOB NOT NULL REFERENCES topology_nodes(id) ON DELETE CASCADE,
    target_id BLOB NOT NULL REFERENCES topology_nodes(id) ON DELETE CASCADE,
    protocol TEXT,
    port INTEGER,
    label TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX topology_edges_tenant ON topology_edges (tenant_id);

CREATE TABLE topology_snapshots (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    graph TEXT NOT NULL,
    node_count BIGINT NOT NULL,
    edge_count BIGINT NOT NULL,
    sha256 TEXT NOT NULL
);
CREATE INDEX topology_snapshots_tenant ON topology_snapshots (tenant_id, created_at);

CREATE TABLE diagrams (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    share_hash TEXT UNIQUE,
    share_sealed BLOB
);
CREATE INDEX diagrams_tenant ON diagrams (tenant_id);

-- A new stamp with every change of a tenant's nodes or edges: a hub process keeps the graph
-- blast radius walks until the stamp changes (several processes share the database).
CREATE TABLE topology_stamps (
    tenant_id BLOB PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    stamp BLOB NOT NULL
);
