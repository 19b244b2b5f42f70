-- TOTP lockout (CONTRACT 18): wrong codes per user in the current 15-minute window, and the
-- end of a lock after the fifth. Keep in step with ../postgres/.
CREATE TABLE totp_failures (
    user_id BLOB PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    failures INTEGER NOT NULL,
    window_start TEXT NOT NULL,
    locked_until TEXT
);
