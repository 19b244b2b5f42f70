//! The settings the hub governs for an agent.

use super::*;

/// New governed settings of an agent. The read-only fields of [`GovernanceView`] may be sent
/// back as they were read (a read-modify-write); they are ignored.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GovernanceIn {
    /// Push interval, 10 s to 1 day.
    #[schema(minimum = 10, maximum = 86_400)]
    pub ingest_interval_secs: i64,
    /// Inventory interval, 1 min to 7 days.
    #[schema(minimum = 60, maximum = 604_800)]
    pub inventory_interval_secs: i64,
    /// Tags (apps inherit them), at most 32.
    #[schema(value_type = Vec<crate::openapi::Tag>, max_items = 32)]
    pub tags: Vec<String>,
    /// Action kinds the hub may push: `restart_app`, `install_package`, `update_packages`,
    /// `console_open`, `emergency`.
    #[schema(value_type = Vec<crate::openapi::ActionName>)]
    pub allowed_actions: Vec<String>,
    /// Watched configuration files (CONTRACT 20): absolute paths and globs (`*`, `?`,
    /// `[...]` within a segment, `**` for any depth), at most 256. Absent or null: the
    /// default list of security-relevant files.
    #[serde(default)]
    #[schema(value_type = Option<Vec<crate::openapi::ConfigPath>>, max_items = 256)]
    pub config_paths: Option<Vec<String>>,
    /// Seconds between configuration scans, 10 to 86400 (default 3600); the agent also
    /// scans when inotify sees a change under `/etc`.
    #[serde(default)]
    #[schema(minimum = 10, maximum = 86_400)]
    pub config_scan_interval_secs: Option<i64>,
    /// Seconds between the agent's own runs of the compliance checks (CONTRACT 25), 300 to
    /// 604800 (default 43200).
    #[serde(default)]
    #[schema(minimum = 300, maximum = 604_800)]
    pub compliance_interval_secs: Option<i64>,
    /// Honeypots (CONTRACT 25), at most 32: `file` (an absolute path no one should open,
    /// change or remove), `user` (an account no one should try to log in as, read from the
    /// auth log), `port` (a TCP port the agent listens on that no one should connect to).
    /// A touch raises a critical alert. Absent or null: none.
    #[serde(default)]
    #[schema(schema_with = honeypots_schema)]
    pub honeypots: Option<Vec<trusthub_core::compliance::Honeypot>>,
    /// Read-only (ignored).
    #[serde(default)]
    #[schema(read_only, value_type = Option<Vec<String>>)]
    pub host_allowed_actions: Option<serde_json::Value>,
    /// Read-only (ignored).
    #[serde(default)]
    #[schema(read_only, value_type = Option<Vec<String>>)]
    pub effective_actions: Option<serde_json::Value>,
}

/// A honeypot (CONTRACT 25).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Honeypot)]
#[allow(dead_code)]
pub struct HoneypotSchema {
    /// `file`, `user` or `port`.
    #[schema(pattern = "^(file|user|port)$")]
    kind: String,
    /// An absolute path, a user name or a TCP port (1024 to 65535), by `kind`.
    #[schema(min_length = 1, max_length = 1024)]
    target: String,
}

/// At most 32 honeypots, each once.
pub(crate) fn honeypots_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    serde_json::from_value(serde_json::json!({
        "type": ["array", "null"], "maxItems": trusthub_core::compliance::MAX_HONEYPOTS,
        "uniqueItems": true, "items": {"$ref": "#/components/schemas/Honeypot"}}))
    .expect("a schema")
}

/// The shapes of a honeypot: each `kind` with the form of its `target` (the rule
/// `check_honeypots` keeps), for the document.
pub(crate) fn honeypot_shapes() -> Vec<trusthub_platform::openapi::Variant> {
    use serde_json::json;
    use trusthub_core::compliance as c;
    use trusthub_platform::openapi::{Variant, tag};
    [
        (
            "file",
            c::HONEYPOT_FILE_PATTERN,
            1024,
            "An absolute path without `.` or `..` segments.",
        ),
        (
            "user",
            c::HONEYPOT_USER_PATTERN,
            32,
            "A user name: a-z or `_`, then a-z, 0-9, `_`, `-`, `.`; at most 32.",
        ),
        (
            "port",
            c::HONEYPOT_PORT_PATTERN,
            5,
            "A TCP port 1024 to 65535, in decimal.",
        ),
    ]
    .into_iter()
    .map(|(kind, pattern, max, what)| {
        Variant::new(
            json!({"kind": tag(&[kind]), "target": {"type": "string", "minLength": 1,
                "maxLength": max, "pattern": pattern, "description": what}}),
            &[],
        )
    })
    .collect()
}

/// The settings the hub governs for an agent.
#[derive(Debug, Serialize, ToSchema)]
pub struct GovernanceView {
    /// Push interval, 10 s to 1 day.
    pub ingest_interval_secs: i64,
    /// Inventory interval, 1 min to 7 days.
    pub inventory_interval_secs: i64,
    /// Tags (apps inherit them).
    pub tags: Vec<String>,
    /// Action kinds the hub may push: `restart_app`, `install_package`, `update_packages`,
    /// `console_open`, `emergency`.
    pub allowed_actions: Vec<String>,
    /// Watched configuration paths and globs in force (the default list unless set).
    pub config_paths: Vec<String>,
    /// Seconds between configuration scans.
    pub config_scan_interval_secs: i64,
    /// Seconds between the agent's own compliance runs.
    pub compliance_interval_secs: i64,
    /// Honeypots the agent watches.
    #[schema(value_type = Vec<HoneypotSchema>)]
    pub honeypots: Vec<trusthub_core::compliance::Honeypot>,
    /// What the host's own allowlist accepts, as the agent last reported it (read-only; the
    /// host operator's veto).
    pub host_allowed_actions: Option<Vec<String>>,
    /// Kinds both allow: what the hub can actually push (read-only).
    pub effective_actions: Vec<String>,
}

impl GovernanceView {
    fn of(a: &Agent) -> GovernanceView {
        let host = a.reported_actions.as_ref().map(|r| r.0.clone());
        let effective = a
            .allowed_actions
            .0
            .iter()
            .filter(|k| host.as_ref().is_none_or(|h| h.contains(k)))
            .cloned()
            .collect();
        GovernanceView {
            ingest_interval_secs: a.ingest_interval_secs,
            inventory_interval_secs: a.inventory_interval_secs,
            tags: a.tags.0.clone(),
            allowed_actions: a.allowed_actions.0.clone(),
            config_paths: a.watched_paths(),
            config_scan_interval_secs: a.config_scan_interval_secs,
            compliance_interval_secs: a.compliance_interval_secs,
            honeypots: a.honeypots.0.clone(),
            host_allowed_actions: host,
            effective_actions: effective,
        }
    }
}

/// The service behind the `get_governance` handler, for the API and the dashboard alike.
pub async fn get_governance(state: &AppState, by: &Viewer, id: Uuid) -> ApiResult<GovernanceView> {
    let p = &by.0;
    Ok(GovernanceView::of(&load(state, p.tenant(), id).await?))
}

/// Some of an agent's governed settings (a JSON merge patch, RFC 7396): what is sent
/// replaces, what is absent stays; `null` puts `config_paths`, `config_scan_interval_secs`,
/// `compliance_interval_secs` or `honeypots` back to their default. The same checks as
/// `PUT`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GovernancePatch {
    /// Push interval, 10 s to 1 day.
    #[schema(minimum = 10, maximum = 86_400)]
    pub ingest_interval_secs: Option<i64>,
    /// Inventory interval, 1 min to 7 days.
    #[schema(minimum = 60, maximum = 604_800)]
    pub inventory_interval_secs: Option<i64>,
    /// Tags (apps inherit them), at most 32.
    #[schema(value_type = Option<Vec<crate::openapi::Tag>>, max_items = 32)]
    pub tags: Option<Vec<String>>,
    /// Action kinds the hub may push.
    #[schema(value_type = Option<Vec<crate::openapi::ActionName>>)]
    pub allowed_actions: Option<Vec<String>>,
    /// Watched configuration files; `null`: the default list.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(value_type = Option<Vec<crate::openapi::ConfigPath>>, max_items = 256)]
    pub config_paths: Option<Option<Vec<String>>>,
    /// Seconds between configuration scans; `null`: the default.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(value_type = Option<i64>, minimum = 10, maximum = 86_400)]
    pub config_scan_interval_secs: Option<Option<i64>>,
    /// Seconds between the agent's own compliance runs; `null`: the default.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(value_type = Option<i64>, minimum = 300, maximum = 604_800)]
    pub compliance_interval_secs: Option<Option<i64>>,
    /// Honeypots; `null`: none.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(schema_with = honeypots_schema)]
    pub honeypots: Option<Option<Vec<trusthub_core::compliance::Honeypot>>>,
}

/// The service behind `PATCH /agents/{id}/governance`: the agent's settings as they are,
/// with what the patch sends, through the checks of [`put_governance`].
pub async fn patch_governance(
    state: &AppState,
    meta: &Meta,
    by: &Operator,
    id: Uuid,
    patch: GovernancePatch,
) -> ApiResult<GovernanceView> {
    let a = load(state, by.0.tenant(), id).await?;
    let req = GovernanceIn {
        ingest_interval_secs: patch.ingest_interval_secs.unwrap_or(a.ingest_interval_secs),
        inventory_interval_secs: patch
            .inventory_interval_secs
            .unwrap_or(a.inventory_interval_secs),
        tags: patch.tags.unwrap_or_else(|| a.tags.0.clone()),
        allowed_actions: patch
            .allowed_actions
            .unwrap_or_else(|| a.allowed_actions.0.clone()),
        config_paths: patch
            .config_paths
            .unwrap_or_else(|| a.config_paths.as_ref().map(|p| p.0.clone())),
        config_scan_interval_secs: patch
            .config_scan_interval_secs
            .unwrap_or(Some(a.config_scan_interval_secs)),
        compliance_interval_secs: patch
            .compliance_interval_secs
            .unwrap_or(Some(a.compliance_interval_secs)),
        honeypots: patch
            .honeypots
            .unwrap_or_else(|| Some(a.honeypots.0.clone())),
        host_allowed_actions: None,
        effective_actions: None,
    };
    put_governance(state, meta, by, id, req).await
}

/// The service behind the `put_governance` handler, for the API and the dashboard alike.
pub async fn put_governance(
    state: &AppState,
    meta: &Meta,
    by: &Operator,
    id: Uuid,
    req: GovernanceIn,
) -> ApiResult<GovernanceView> {
    let p = &by.0;
    let mut errors = Vec::new();
    if !(10..=86_400).contains(&req.ingest_interval_secs) {
        errors.push(FieldError::new(
            "ingest_interval_secs",
            "must be between 10 and 86400",
        ));
    }
    if !(60..=7 * 86_400).contains(&req.inventory_interval_secs) {
        errors.push(FieldError::new(
            "inventory_interval_secs",
            "must be between 60 and 604800",
        ));
    }
    let tags = trusthub_core::validate::tags(&req.tags)
        .map_err(|m| errors.push(FieldError::new("tags", m)))
        .unwrap_or_default();
    if let Some(bad) = req
        .allowed_actions
        .iter()
        .find(|k| !ACTION_KINDS.contains(&k.as_str()))
    {
        errors.push(FieldError::new(
            "allowed_actions",
            format!("unknown action kind `{bad}`"),
        ));
    }
    if let Some(paths) = &req.config_paths
        && let Err((field, message)) = trusthub_core::drift::check_config_paths(paths)
    {
        errors.push(FieldError::new(field, message));
    }
    let scan = req
        .config_scan_interval_secs
        .unwrap_or(trusthub_core::drift::DEFAULT_SCAN_INTERVAL_SECS);
    if !(10..=86_400).contains(&scan) {
        errors.push(FieldError::new(
            "config_scan_interval_secs",
            "must be between 10 and 86400",
        ));
    }
    let compliance = req
        .compliance_interval_secs
        .unwrap_or(trusthub_core::compliance::DEFAULT_INTERVAL_SECS);
    if !(300..=604_800).contains(&compliance) {
        errors.push(FieldError::new(
            "compliance_interval_secs",
            "must be between 300 and 604800",
        ));
    }
    let asked_honeypots = req.honeypots.is_some();
    let honeypots = req.honeypots.unwrap_or_default();
    if let Err(m) = trusthub_core::compliance::check_honeypots(&honeypots) {
        errors.push(FieldError::new("honeypots", m));
    }
    all_valid(errors)?;
    let mut allowed: Vec<String> = Vec::new();
    for k in req.allowed_actions {
        if !allowed.contains(&k) {
            allowed.push(k);
        }
    }
    let mut tx = state.db.begin().await?;
    let current = agents::get(&mut tx, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("agent"))?;
    // CONTRACT 30: only admins set honeypots; an operator's PUT without `honeypots` keeps
    // them, and one that changes them is refused.
    let honeypots = if p.has_role(trusthub_core::Role::Admin) {
        honeypots
    } else if !asked_honeypots {
        current.honeypots.0.clone()
    } else if honeypots != current.honeypots.0 {
        return Err(ApiError::Forbidden("only admins set honeypots".into()));
    } else {
        honeypots
    };
    let g = Governance {
        ingest_interval_secs: req.ingest_interval_secs,
        inventory_interval_secs: req.inventory_interval_secs,
        tags,
        allowed_actions: allowed,
        config_paths: req.config_paths.map(|mut p| {
            p.dedup();
            p
        }),
        config_scan_interval_secs: scan,
        compliance_interval_secs: compliance,
        honeypots,
    };
    if !agents::set_governance(&mut tx, p.tenant(), id, &g).await? {
        return Err(ApiError::NotFound("agent"));
    }
    meta.record(&mut tx, p, ev::AGENT_GOVERNANCE_CHANGED, format!("agent:{id}"), json!({"ingest_interval_secs": g.ingest_interval_secs, "inventory_interval_secs": g.inventory_interval_secs, "tags": g.tags, "allowed_actions": g.allowed_actions, "config_paths": g.config_paths, "config_scan_interval_secs": g.config_scan_interval_secs, "compliance_interval_secs": g.compliance_interval_secs, "honeypots": g.honeypots})).await?;
    let agent = agents::get(&mut tx, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("agent"))?;
    tx.commit().await?;
    Ok(GovernanceView::of(&agent))
}
