//! The services behind [`crate::routes::rules`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::{Operator, Viewer};
use crate::error::{ApiError, ApiResult, FieldError, all_valid};
use crate::extract::Meta;
use crate::state::{AppState, now};
use crate::store::rules::{self, Rule, RuleSpec};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;
use trusthub_core::alerting::{self as core_alerting, Op, Severity};
use trusthub_core::{agent as wire, audit as ev, validate};
use utoipa::ToSchema;
use uuid::Uuid;

/// An alert rule (CONTRACT 10).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRule {
    /// Label, 1 to 100 characters.
    #[schema(
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$",
        min_length = 1,
        max_length = 100
    )]
    pub name: String,
    /// Metric name as agents send it, e.g. `cpu.percent` or `container_restart_count`.
    #[schema(pattern = r"^[A-Za-z0-9._:-]+$", min_length = 1, max_length = 200)]
    pub metric: String,
    /// `>`, `>=`, `<`, `<=`, `==` or `!=`.
    #[schema(pattern = r"^(>|>=|<|<=|==|!=)$")]
    pub operator: String,
    /// Compared with the average over the window.
    pub threshold: f64,
    /// `1m` to `30d`, e.g. `5m`, `1h`, `1d`.
    #[schema(pattern = r"^([1-9]|[1-5][0-9])m$|^([1-9]|1[0-9]|2[0-4])h$|^([1-9]|[12][0-9]|30)d$")]
    pub window: String,
    /// `info`, `warning` (default) or `critical`.
    #[schema(pattern = r"^(info|warning|critical)$")]
    pub severity: Option<String>,
    /// `agent_id` and/or label names (e.g. `container_name`); empty: one group for all.
    #[serde(default)]
    #[schema(value_type = Vec<crate::openapi::GroupKey>, max_items = 8)]
    pub group_by: Vec<String>,
    /// Also POST the minimal body `{title, severity, agent, link}` here when it fires. An
    /// `http`/`https` URL under the outbound policy of webhooks (no loopback, private or
    /// other special-use address unless `TRUSTHUB_OUTBOUND_ALLOW_CIDRS` allows it). An empty
    /// string is the same as none.
    #[schema(pattern = r"^$|^https?://[^\s/?#@]+", max_length = 2048)]
    pub webhook_url: Option<String>,
}

/// Changes to a rule (JSON merge patch): absent fields stay as they are; `webhook_url: null`
/// removes the minimal-body webhook.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RulePatch {
    /// Label, 1 to 100 characters.
    #[schema(
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$",
        min_length = 1,
        max_length = 100
    )]
    pub name: Option<String>,
    /// Metric name.
    #[schema(pattern = r"^[A-Za-z0-9._:-]+$", min_length = 1, max_length = 200)]
    pub metric: Option<String>,
    /// `>`, `>=`, `<`, `<=`, `==` or `!=`.
    #[schema(pattern = r"^(>|>=|<|<=|==|!=)$")]
    pub operator: Option<String>,
    /// Threshold.
    pub threshold: Option<f64>,
    /// `1m` to `30d`.
    #[schema(pattern = r"^([1-9]|[1-5][0-9])m$|^([1-9]|1[0-9]|2[0-4])h$|^([1-9]|[12][0-9]|30)d$")]
    pub window: Option<String>,
    /// `info`, `warning` or `critical`.
    #[schema(pattern = r"^(info|warning|critical)$")]
    pub severity: Option<String>,
    /// `agent_id` and/or label names.
    #[schema(value_type = Option<Vec<crate::openapi::GroupKey>>, max_items = 8)]
    pub group_by: Option<Vec<String>>,
    /// Minimal-body webhook, or null (or an empty string) to remove it; checked as at
    /// creation.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(value_type = Option<String>, pattern = r"^$|^https?://[^\s/?#@]+", max_length = 2048)]
    pub webhook_url: Option<Option<String>>,
}

/// A rule with its last evaluation.
#[derive(Debug, Serialize, ToSchema)]
pub struct RuleView {
    /// Id.
    pub id: Uuid,
    /// Label.
    pub name: String,
    /// Metric.
    pub metric: String,
    /// Operator.
    pub operator: String,
    /// Threshold.
    pub threshold: f64,
    /// Window as given.
    pub window: String,
    /// Severity of its alerts.
    pub severity: String,
    /// Grouping.
    pub group_by: Vec<String>,
    /// Minimal-body webhook.
    pub webhook_url: Option<String>,
    /// False when no agent of the tenant has ever sent `metric`: the rule cannot fire
    /// until one does.
    pub metric_seen: bool,
    /// Last evaluation.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_evaluated_at: Option<OffsetDateTime>,
    /// Groups with data at the last evaluation.
    pub last_groups: Option<i64>,
    /// Groups firing at the last evaluation.
    pub last_firing: Option<i64>,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl RuleView {
    pub(crate) fn new(r: Rule, metric_seen: bool) -> RuleView {
        RuleView {
            id: r.id,
            name: r.name,
            metric: r.metric,
            operator: r.operator,
            threshold: r.threshold,
            window: r.window_spec,
            severity: r.severity,
            group_by: r.group_by.0,
            webhook_url: r.webhook_url,
            metric_seen,
            last_evaluated_at: r.last_evaluated_at,
            last_groups: r.last_groups,
            last_firing: r.last_firing,
            created_at: r.created_at,
        }
    }
}

/// A rule's settings, checked.
pub(crate) struct CheckedRule {
    name: String,
    metric: String,
    window_secs: i64,
    severity: String,
    group_by: Vec<String>,
    webhook_url: Option<String>,
}

/// Checks a rule; every bad field in one 422.
pub(crate) async fn check_rule(
    state: &AppState,
    tenant: trusthub_store::TenantId,
    req: &NewRule,
) -> ApiResult<CheckedRule> {
    let mut errors = Vec::new();
    let mut err = |field: &str, m: String| errors.push(FieldError::new(field, m));
    let name = validate::name(&req.name)
        .map_err(|m| err("name", m.into()))
        .unwrap_or_default();
    let metric = req.metric.trim().to_owned();
    if metric.is_empty()
        || metric.len() > wire::MAX_METRIC_NAME
        || !metric
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:-".contains(c))
    {
        err(
            "metric",
            "must be a metric name (letters, digits and . _ : -)".into(),
        );
    }
    if Op::parse(&req.operator).is_none() {
        err("operator", "must be one of > >= < <= == !=".into());
    }
    if !req.threshold.is_finite() {
        err("threshold", "must be a finite number".into());
    }
    let window_secs = core_alerting::parse_window(&req.window)
        .map_err(|m| err("window", m))
        .unwrap_or(0);
    let severity = req.severity.as_deref().unwrap_or("warning");
    if Severity::parse(severity).is_none() {
        err("severity", "must be info, warning or critical".into());
    }
    if req.group_by.len() > 8 {
        err("group_by", "at most 8 keys".into());
    }
    let mut group_by: Vec<String> = Vec::new();
    for (i, k) in req.group_by.iter().enumerate() {
        let k = k.trim();
        if k.is_empty()
            || k.len() > 100
            || !k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            err(
                &format!("group_by[{i}]"),
                "must be agent_id or a label name".into(),
            );
        } else if !group_by.iter().any(|g| g == k) {
            group_by.push(k.to_owned());
        }
    }
    let webhook_url = req
        .webhook_url
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty());
    if let Some(u) = webhook_url
        && let Err(m) =
            crate::outbound::Policy::of_tenant(&state.settings, &mut state.db.conn().await?, tenant)
                .await?
                .check_url(u)
                .await
    {
        err("webhook_url", m);
    }
    all_valid(errors)?;
    Ok(CheckedRule {
        name,
        metric,
        window_secs,
        severity: severity.to_owned(),
        group_by,
        webhook_url: webhook_url.map(str::to_owned),
    })
}

/// A rule's webhook URL as kept: shown form and, when it holds userinfo, sealed.
pub(crate) fn kept_url(
    state: &AppState,
    url: Option<&str>,
) -> ApiResult<(Option<String>, Option<Vec<u8>>)> {
    match url {
        None => Ok((None, None)),
        Some(u) => {
            let (shown, sealed) = crate::outbound::keep(&state.key, u)?;
            Ok((Some(shown), sealed))
        }
    }
}

/// Creates a rule for `p`'s tenant (the API and the dashboard), checked and audited.
pub(crate) async fn create_rule(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    req: &NewRule,
) -> ApiResult<RuleView> {
    let c = check_rule(state, p.tenant(), req).await?;
    let hook = kept_url(state, c.webhook_url.as_deref())?;
    let now = now();
    let mut tx = state.db.begin().await?;
    let rule = rules::insert(
        &mut tx,
        p.tenant(),
        &RuleSpec {
            name: &c.name,
            metric: &c.metric,
            operator: req.operator.trim(),
            threshold: req.threshold,
            window_spec: req.window.trim(),
            window_secs: c.window_secs,
            severity: &c.severity,
            group_by: &c.group_by,
            webhook_url: hook.0.as_deref(),
            webhook_url_sealed: hook.1.as_deref(),
        },
        now,
    )
    .await?;
    let seen = trusthub_fleet::metric_known(&mut tx, p.tenant(), &c.metric).await?;
    meta.record(
        &mut tx,
        p,
        ev::ALERT_RULE_CREATED,
        format!("alert_rule:{}", rule.id),
        json!({"name": c.name, "metric": c.metric, "operator": req.operator, "threshold": req.threshold,
            "window": req.window.trim(), "webhook": c.webhook_url.is_some()}),
    )
    .await?;
    tx.commit().await?;
    Ok(RuleView::new(rule, seen))
}

/// The service behind `get_rule`, for the API and the dashboard alike.
pub async fn get_rule(state: &AppState, by: &Viewer, id: Uuid) -> ApiResult<RuleView> {
    let p = &by.0;
    let mut c = state.db.conn().await?;
    let r = rules::get(&mut c, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("alert rule"))?;
    let seen = trusthub_fleet::metric_known(&mut c, p.tenant(), &r.metric).await?;
    Ok(RuleView::new(r, seen))
}

/// The service behind `update_rule`, for the API and the dashboard alike.
pub async fn update_rule(
    state: &AppState,
    meta: &Meta,
    by: &Operator,
    id: Uuid,
    patch: RulePatch,
) -> ApiResult<RuleView> {
    let p = &by.0;
    let r = {
        let mut c = state.db.conn().await?;
        rules::get(&mut c, p.tenant(), id)
            .await?
            .ok_or(ApiError::NotFound("alert rule"))?
    };
    let merged = NewRule {
        name: patch.name.unwrap_or(r.name),
        metric: patch.metric.unwrap_or(r.metric),
        operator: patch.operator.unwrap_or(r.operator),
        threshold: patch.threshold.unwrap_or(r.threshold),
        window: patch.window.unwrap_or(r.window_spec),
        severity: Some(patch.severity.unwrap_or(r.severity)),
        group_by: patch.group_by.unwrap_or(r.group_by.0),
        webhook_url: match patch.webhook_url {
            Some(u) => u,
            // Unchanged: the whole URL, not the shown one.
            None => r
                .webhook_url
                .as_deref()
                .map(|u| {
                    crate::outbound::to_call(&state.key, u, r.webhook_url_sealed.as_deref())
                        .map_err(ApiError::Internal)
                })
                .transpose()?,
        },
    };
    let c = check_rule(state, p.tenant(), &merged).await?;
    let hook = kept_url(state, c.webhook_url.as_deref())?;
    let mut tx = state.db.begin().await?;
    let rule = rules::update(
        &mut tx,
        p.tenant(),
        id,
        &RuleSpec {
            name: &c.name,
            metric: &c.metric,
            operator: merged.operator.trim(),
            threshold: merged.threshold,
            window_spec: merged.window.trim(),
            window_secs: c.window_secs,
            severity: &c.severity,
            group_by: &c.group_by,
            webhook_url: hook.0.as_deref(),
            webhook_url_sealed: hook.1.as_deref(),
        },
    )
    .await?
    .ok_or(ApiError::NotFound("alert rule"))?;
    let seen = trusthub_fleet::metric_known(&mut tx, p.tenant(), &c.metric).await?;
    meta.record(
        &mut tx,
        p,
        ev::ALERT_RULE_UPDATED,
        format!("alert_rule:{id}"),
        json!({"name": c.name, "metric": c.metric, "operator": merged.operator, "threshold": merged.threshold,
            "window": merged.window.trim(), "webhook": c.webhook_url.is_some()}),
    )
    .await?;
    tx.commit().await?;
    Ok(RuleView::new(rule, seen))
}

/// Deletes a rule of `p`'s tenant (the API and the dashboard), audited.
pub(crate) async fn delete_rule(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    id: Uuid,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    let Some(rule) = rules::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("alert rule"));
    };
    rules::delete(&mut tx, p.tenant(), id).await?;
    meta.record(
        &mut tx,
        p,
        ev::ALERT_RULE_DELETED,
        format!("alert_rule:{id}"),
        json!({"name": rule.name}),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
