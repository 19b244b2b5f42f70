-- The hub process that owns a console session (CONTRACT 11, 22): it writes the recording
-- and keeps the clocks; other processes route the session's frames to it.
ALTER TABLE console_sessions ADD COLUMN instance TEXT NOT NULL DEFAULT '';
