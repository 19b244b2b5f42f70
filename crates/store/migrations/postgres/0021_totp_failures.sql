-- TOTP lockout (CONTRACT 18): wrong codes per user in the current 15-minute window, and the
-- end of a lock after the fifth. Keep in step with ../sqlite/.
CREATE TABLE totp_failures (
    user_id UUID PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    failures INTEGER NOT NULL,
    window_start TIMESTAMPTZ NOT NULL,
    locked_until TIMESTAMPTZ
);
