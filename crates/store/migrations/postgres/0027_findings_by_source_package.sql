-- One finding per source package (CONTRACT 15): an advisory on Debian's `curl` is one finding
-- naming the binary packages built from it (curl, libcurl4, ...), not one per binary. The
-- binaries, with their installed versions, as a JSON array of {"name", "version"}; `[]` for
-- application dependencies. Rows of the former shape are merged at each host's next scan.
ALTER TABLE cve_findings ADD COLUMN binaries TEXT NOT NULL DEFAULT '[]';
