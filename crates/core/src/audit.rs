//! Audit-log event types (SPEC 6.4 and the foundation's own security events).
//!
//! Every security-sensitive action writes one row; these are the names it is written under.

/// A user logged in.
pub const LOGIN_SUCCEEDED: &str = "login_succeeded";
/// A login was refused (wrong password or TOTP).
pub const LOGIN_FAILED: &str = "login_failed";
/// A session was ended by its user.
pub const LOGOUT: &str = "logout";
/// An API token was created.
pub const API_TOKEN_CREATED: &str = "api_token_created";
/// An API token was deleted.
pub const API_TOKEN_DELETED: &str = "api_token_deleted";
/// TOTP was turned on.
pub const TOTP_ENABLED: &str = "totp_enabled";
/// TOTP was turned off.
pub const TOTP_DISABLED: &str = "totp_disabled";
/// New TOTP recovery codes were made (the old ones no longer work).
pub const TOTP_RECOVERY_CODES_CREATED: &str = "totp_recovery_codes_created";
/// A TOTP recovery code was used at login.
pub const TOTP_RECOVERY_CODE_USED: &str = "totp_recovery_code_used";
/// A TOTP challenge token was issued for a purpose.
pub const TOTP_CHALLENGE_ISSUED: &str = "totp_challenge_issued";
/// An invitation was created.
pub const INVITATION_CREATED: &str = "invitation_created";
/// An invitation was revoked before use.
pub const INVITATION_REVOKED: &str = "invitation_revoked";
/// An invitation was accepted and its user created.
pub const INVITATION_ACCEPTED: &str = "invitation_accepted";
/// A password-reset mail was requested for an existing user.
pub const PASSWORD_RESET_REQUESTED: &str = "password_reset_requested";
/// A password was reset (by token or by the admin command).
pub const PASSWORD_RESET: &str = "password_reset";
/// A password was changed by its user.
pub const PASSWORD_CHANGED: &str = "password_changed";
/// A user's role was changed.
pub const USER_ROLE_CHANGED: &str = "user_role_changed";
/// A user was removed from the tenant.
pub const USER_REMOVED: &str = "user_removed";
/// A tenant was created (first start or `trusthub admin create-tenant`).
pub const TENANT_CREATED: &str = "tenant_created";
/// An agent registered (or re-registered).
pub const AGENT_REGISTERED: &str = "agent_registered";
/// An enrollment token was created.
pub const ENROLLMENT_TOKEN_CREATED: &str = "enrollment_token_created";
/// An agent was removed.
pub const AGENT_DELETED: &str = "agent_deleted";
/// SPEC 6.4: an agent's token was rotated.
pub const AGENT_TOKEN_ROTATED: &str = "agent_token_rotated";
/// SPEC 6.4: an agent's pinned signing key was cleared.
pub const AGENT_SIGNING_KEY_CLEARED: &str = "agent_signing_key_cleared";
/// An agent's governance settings changed.
pub const AGENT_GOVERNANCE_CHANGED: &str = "agent_governance_changed";
/// SPEC 5: the hub CA issued a client certificate to an agent (rotation included).
pub const CLIENT_CERT_ISSUED: &str = "client_cert_issued";
/// SPEC 6.4: an agent registered with a version the hub had not seen for it (integrity
/// check checkpoint).
pub const AGENT_VERSION_SEEN: &str = "agent_version_seen";
/// CONTRACT 14: an operator resolved an integrity anomaly.
pub const INTEGRITY_ANOMALY_RESOLVED: &str = "integrity_anomaly_resolved";
/// A wrong TOTP code or challenge token (CONTRACT 18).
pub const TOTP_FAILED: &str = "totp_failed";
/// The fifth wrong TOTP code within 15 minutes locked the user's TOTP-gated actions.
pub const TOTP_LOCKED: &str = "totp_locked";
/// An OSV import stored everything it read (CONTRACT 18), with its counts.
pub const CVE_IMPORT: &str = "cve_import";
/// An OSV import stored nothing (CONTRACT 18), with why.
pub const CVE_IMPORT_FAILED: &str = "cve_import_failed";
/// An operator acknowledged a vulnerability finding (CONTRACT 15).
pub const CVE_FINDING_ACKNOWLEDGED: &str = "cve_finding_acknowledged";
/// An operator took an acknowledgement back.
pub const CVE_FINDING_UNACKNOWLEDGED: &str = "cve_finding_unacknowledged";
/// An operator suppressed a package's vulnerabilities in a range until a date (SPEC 2.5).
pub const CVE_SUPPRESSION_CREATED: &str = "cve_suppression_created";
/// An operator deleted a suppression.
pub const CVE_SUPPRESSION_DELETED: &str = "cve_suppression_deleted";
/// An operator set (or replaced) an app's SLO (CONTRACT 16).
pub const SLO_SET: &str = "slo_set";
/// An operator removed an app's SLO.
pub const SLO_DELETED: &str = "slo_deleted";
/// An operator planned a maintenance window.
pub const MAINTENANCE_WINDOW_CREATED: &str = "maintenance_window_created";
/// An operator deleted a maintenance window.
pub const MAINTENANCE_WINDOW_DELETED: &str = "maintenance_window_deleted";
/// SPEC 5: a client certificate was revoked by an admin.
pub const CLIENT_CERT_REVOKED: &str = "client_cert_revoked";
/// An enrollment token was revoked.
pub const ENROLLMENT_TOKEN_REVOKED: &str = "enrollment_token_revoked";
/// An app was tracked.
pub const APP_CREATED: &str = "app_created";
/// An app's expected state changed.
pub const APP_EXPECTED_STATE_CHANGED: &str = "app_expected_state_changed";
/// An app was untracked.
pub const APP_DELETED: &str = "app_deleted";
/// A status page was made (CONTRACT 32).
pub const STATUS_PAGE_CREATED: &str = "status_page_created";
/// A status page was changed.
pub const STATUS_PAGE_UPDATED: &str = "status_page_updated";
/// A status page was deleted.
pub const STATUS_PAGE_DELETED: &str = "status_page_deleted";
/// An incident was opened on a status page.
pub const INCIDENT_CREATED: &str = "incident_created";
/// An incident got an update.
pub const INCIDENT_UPDATED: &str = "incident_updated";
/// An app's public badge was turned on or off.
pub const APP_BADGE_CHANGED: &str = "app_badge_changed";
/// A push monitor got a new push URL (the old one stopped answering).
pub const APP_PUSH_URL_ROTATED: &str = "app_push_url_rotated";
/// An alert was resolved by a user.
pub const ALERT_RESOLVED: &str = "alert_resolved";
/// An alert rule was created.
pub const ALERT_RULE_CREATED: &str = "alert_rule_created";
/// An alert rule was removed.
pub const ALERT_RULE_DELETED: &str = "alert_rule_deleted";
/// An alert rule was changed.
pub const ALERT_RULE_UPDATED: &str = "alert_rule_updated";
/// A webhook endpoint was created.
pub const WEBHOOK_CREATED: &str = "webhook_created";
/// A notification channel was created (CONTRACT 27).
pub const CHANNEL_CREATED: &str = "notification_channel_created";
/// A notification channel was changed.
pub const CHANNEL_UPDATED: &str = "notification_channel_updated";
/// A notification channel was deleted.
pub const CHANNEL_DELETED: &str = "notification_channel_deleted";
/// A webhook endpoint was removed.
pub const WEBHOOK_DELETED: &str = "webhook_deleted";
/// A webhook endpoint's settings were changed.
pub const WEBHOOK_UPDATED: &str = "webhook_updated";
/// A delivery was queued again by a user.
pub const WEBHOOK_REDELIVERY_REQUESTED: &str = "webhook_redelivery_requested";
/// SPEC 6.2 / 6.4: an alert-rule webhook delivery (each outcome).
pub const WEBHOOK_DELIVERY: &str = "webhook_delivery";
/// SPEC 6.4: a webhook delivery failed for good.
pub const WEBHOOK_DELIVERY_FAILED: &str = "webhook_delivery_failed";
/// An emergency action (e.g. a restart) was requested and its token dispatched.
pub const ACTION_REQUESTED: &str = "action_requested";
/// An agent reported the result of an action (or refused it).
pub const ACTION_RESULT: &str = "action_result";
/// LLM price overrides changed.
pub const AI_PRICES_CHANGED: &str = "ai_prices_changed";
/// An evidence pack was built.
pub const EVIDENCE_PACK_CREATED: &str = "evidence_pack_created";
/// A host's auto-patch settings changed (CONTRACT 19).
pub const AUTO_PATCH_SETTINGS_CHANGED: &str = "auto_patch_settings_changed";
/// An auto-patch run was started by hand (CONTRACT 19).
pub const AUTO_PATCH_RUN_REQUESTED: &str = "auto_patch_run_requested";
/// The owner changed tenant settings (the public Trust Score badge; CONTRACT 21).
pub const TENANT_SETTINGS_CHANGED: &str = "tenant_settings_changed";
/// An admin asked for every application dependency to be updated (CONTRACT 19).
pub const AUTO_UPDATE_ALL_REQUESTED: &str = "auto_update_all_requested";
/// An operator adopted the current state of watched files as their new baseline (CONTRACT 20).
pub const CONFIG_REBASED: &str = "config_rebased";
/// An admin opened an emergency console on a host (CONTRACT 22).
pub const CONSOLE_SESSION_STARTED: &str = "console_session_started";
/// A console session ended (exit, idle, maximum duration, recording failure).
pub const CONSOLE_SESSION_ENDED: &str = "console_session_ended";
/// An admin terminated a console session.
pub const CONSOLE_SESSION_TERMINATED_BY_ADMIN: &str = "console_session_terminated_by_admin";
/// An admin downloaded a console session's recording (CONTRACT 30).
pub const CONSOLE_RECORDING_DOWNLOADED: &str = "console_recording_downloaded";
/// An admin added a cloud account (CONTRACT 23; never its credentials).
pub const CLOUD_ACCOUNT_ADDED: &str = "cloud_account_added";
/// An admin deleted a cloud account and what was discovered through it.
pub const CLOUD_ACCOUNT_DELETED: &str = "cloud_account_deleted";
/// A cloud discovery run finished (its counts).
pub const CLOUD_DISCOVERY_FINISHED: &str = "cloud_discovery_finished";
/// An operator promoted a detected node or edge into the topology (CONTRACT 24).
pub const TOPOLOGY_PROMOTED: &str = "topology_promoted";
/// An operator shared a diagram by a public link.
pub const DIAGRAM_SHARED: &str = "diagram_shared";
/// An admin asked hosts to run the compliance checks now (CONTRACT 25).
pub const COMPLIANCE_RUN_REQUESTED: &str = "compliance_run_requested";
/// An operator ended a diagram's public link.
pub const DIAGRAM_UNSHARED: &str = "diagram_unshared";
