-- The advisory data each host's last scan read (`osv::generation`: newest import and package
-- entries), so a scan is due exactly when that changes. Timestamps are whole seconds: an
-- import in the same second as a scan, landing after the scan read the advisories, looked
-- older than the scan and waited for the next full interval.
ALTER TABLE cve_scans ADD COLUMN advisories TEXT NOT NULL DEFAULT '';
