-- TOTP recovery codes: ten single-use codes per user, stored as SHA-256 hashes, usable in
-- place of a TOTP code at login. Keep in step with ../sqlite/.
CREATE TABLE totp_recovery_codes (
    user_id UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    code_hash TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    used_at TIMESTAMPTZ,
    PRIMARY KEY (user_id, code_hash)
);
