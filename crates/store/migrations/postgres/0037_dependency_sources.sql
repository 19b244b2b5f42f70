-- Dependency sources (CONTRACT 29): a finding names where its package was read (`source`:
-- the lockfile, the installed tree's root or the binary; `source_kind`: lockfile, installed
-- or binary; both '' for OS packages), and there is one finding per (project_path, package,
-- version, source) and vulnerability. See ../sqlite/ for how the scan keys rows. Keep in
-- step with ../sqlite/.
ALTER TABLE cve_findings ADD COLUMN source TEXT NOT NULL DEFAULT '';
ALTER TABLE cve_findings ADD COLUMN source_kind TEXT NOT NULL DEFAULT '';
DO $$
DECLARE c TEXT;
BEGIN
    FOR c IN SELECT conname FROM pg_constraint
        WHERE conrelid = 'cve_findings'::regclass AND contype = 'u'
    LOOP
        EXECUTE format('ALTER TABLE cve_findings DROP CONSTRAINT %I', c);
    END LOOP;
END $$;
ALTER TABLE cve_findings ADD CONSTRAINT cve_findings_key
    UNIQUE (agent_id, ecosystem, package, project_path, source, installed_version, vuln_id);
-- What each source of a host's last scan could check (JSON array of {source, source_kind,
-- format, ecosystem, packages, status, reason?}); every host is scanned again.
ALTER TABLE cve_scans ADD COLUMN sources TEXT NOT NULL DEFAULT '[]';
UPDATE cve_scans SET advisories = '';
