-- Each SLO's last evaluated status (CONTRACT 18): the overview's counts and the apps page's
-- list read these instead of computing every SLO's status. Written by the SLO evaluation
-- (every TRUSTHUB_SLO_EVAL_INTERVAL_SECS) and when an SLO or a maintenance window changes.
-- Keep in step with ../postgres/.
ALTER TABLE app_slos ADD COLUMN last_state TEXT;
ALTER TABLE app_slos ADD COLUMN last_budget_remaining REAL;
ALTER TABLE app_slos ADD COLUMN last_budget_total REAL;
ALTER TABLE app_slos ADD COLUMN last_uptime REAL;
ALTER TABLE app_slos ADD COLUMN last_evaluated_at TEXT;
