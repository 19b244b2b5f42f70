-- TOTP recovery codes: ten single-use codes per user, stored as SHA-256 hashes, usable in
-- place of a TOTP code at login. Keep in step with ../postgres/.
CREATE TABLE totp_recovery_codes (
    user_id BLOB NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    code_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    used_at TEXT,
    PRIMARY KEY (user_id, code_hash)
);
