-- The blast radius's read of a tenant's whole graph (issue 63: the first request after a
-- change): the edges in creation order and the nodes' walkable columns straight from
-- covering indexes, with no lookup of each row and no sort.
CREATE INDEX topology_edges_walk ON topology_edges (tenant_id, created_at, id, source_id, target_id);
CREATE INDEX topology_nodes_walk ON topology_nodes (tenant_id, id, name, kind, agent_id);
