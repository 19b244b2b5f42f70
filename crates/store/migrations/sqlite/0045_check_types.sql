-- More check types (CONTRACT 32, issue 64): push monitors keep their secret token hashed
-- (with its first characters, to show it masked) and their grace; a push run's start when
-- the app said `/start`; dns checks their expected values (a JSON array); http checks
-- their JSON assertion (`{path, op, value}`).
ALTER TABLE apps ADD COLUMN grace_seconds INTEGER;
ALTER TABLE apps ADD COLUMN push_token_hash TEXT;
ALTER TABLE apps ADD COLUMN push_token_prefix TEXT;
ALTER TABLE apps ADD COLUMN push_started_at TEXT;
ALTER TABLE apps ADD COLUMN expected_values TEXT;
ALTER TABLE apps ADD COLUMN json_query TEXT;
CREATE UNIQUE INDEX apps_push_token ON apps (push_token_hash) WHERE push_token_hash IS NOT NULL;
-- App badges (CONTRACT 32): a random token the public badge URL carries, null when off. It
-- is published on purpose (a README embeds it), so it is kept as it is, and revoked by
-- turning the badge off.
ALTER TABLE apps ADD COLUMN badge_token TEXT;
CREATE UNIQUE INDEX apps_badge_token ON apps (badge_token) WHERE badge_token IS NOT NULL;
