-- The hosts owing a compliance run, read whole every few seconds by each hub (issue 63: the
-- answer to an ingest group comes from that, not from a lookup per group): only the open rows.
CREATE INDEX compliance_run_hosts_open ON compliance_run_hosts (agent_id, run_id) WHERE done_at IS NULL;
