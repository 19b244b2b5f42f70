//! Integrity anomalies (CONTRACT 14; SPEC 2.9, 7), the services the API's handlers, the
//! dashboard and the other capabilities (the fleet, on a bad signature) call: recording one
//! with its warning alert, listing and resolving.

use crate::alerting::Notifier;
use crate::auth::{Operator, Viewer};
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::state::{AppState, now};
use crate::store::anomalies::{self, Anomaly};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use time::OffsetDateTime;
use trusthub_alerts as alerts;
use trusthub_core::alerting::Severity;
use trusthub_store::TenantId;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// The agent an anomaly or a certificate check is about (the fleet's agent, as far as
/// certificates need it).
#[derive(Debug, Clone, Copy)]
pub struct AgentRef<'a> {
    /// Id.
    pub id: Uuid,
    /// Its tenant.
    pub tenant_id: Uuid,
    /// Host name, for the alert's title.
    pub hostname: &'a str,
}

/// Records an anomaly of `kind` about `agent` and raises its alert, in one transaction. With
/// `once`, nothing is added while an unresolved anomaly of the same kind is open for the agent
/// (a flood of bad signatures is one anomaly, not thousands).
pub async fn record(
    state: &AppState,
    tenant: Uuid,
    agent: AgentRef<'_>,
    kind: &str,
    detail: &str,
    evidence: Value,
    once: bool,
) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    let agent = AgentRef {
        tenant_id: tenant,
        ..agent
    };
    record_in(&mut tx, agent, kind, detail, evidence, once, now()).await?;
    tx.commit().await?;
    Ok(())
}

/// [`record`] inside the caller's transaction (an ingest hook's); `agent.tenant_id` is the
/// tenant.
pub async fn record_in(
    tx: &mut trusthub_store::Tx,
    agent: AgentRef<'_>,
    kind: &str,
    detail: &str,
    evidence: Value,
    once: bool,
    now: OffsetDateTime,
) -> trusthub_store::StoreResult<()> {
    let t = TenantId(agent.tenant_id);
    if once && anomalies::open_exists(&mut *tx, t, agent.id, kind).await? {
        return Ok(());
    }
    let id = Uuid::now_v7();
    anomalies::insert(
        &mut *tx,
        &Anomaly {
            id,
            tenant_id: agent.tenant_id,
            agent_id: Some(agent.id),
            kind: kind.to_owned(),
            detail: detail.to_owned(),
            evidence: evidence.to_string(),
            created_at: now,
            resolved_at: None,
            resolved_by: None,
        },
    )
    .await?;
    let title = format!("Integrity anomaly on {}: {kind}", agent.hostname);
    Notifier::default()
        .raise(
            &mut *tx,
            t,
            &alerts::NewAlert {
                severity: Severity::Warning.as_str(),
                severity_rank: Severity::Warning.rank(),
                category: "integrity",
                title: &title,
                detail: Some(detail),
                source: trusthub_core::alerting::source::AGENT,
                fingerprint: &format!("anomaly:{id}"),
                agent_id: Some(agent.id),
                app_id: None,
                rule_id: None,
            },
            now,
        )
        .await?;
    Ok(())
}

/// An anomaly as served.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnomalyView {
    /// Id.
    pub id: Uuid,
    /// `cert_cn_mismatch`, `unknown_cert`, `revoked_cert_used`, `expired_cert_used`,
    /// `bad_ingest_signature`, `dna_changed`.
    pub kind: String,
    /// The agent concerned.
    pub agent_id: Option<Uuid>,
    /// What happened, for a human.
    pub detail: String,
    /// What was seen (fingerprint, subject, serial, address...).
    #[schema(value_type = Object)]
    pub evidence: Value,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Resolved at (null while open).
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub resolved_at: Option<OffsetDateTime>,
    /// `user:<id>`.
    pub resolved_by: Option<String>,
}

impl From<Anomaly> for AnomalyView {
    fn from(a: Anomaly) -> Self {
        AnomalyView {
            id: a.id,
            kind: a.kind,
            agent_id: a.agent_id,
            detail: a.detail,
            evidence: serde_json::from_str(&a.evidence).unwrap_or_else(|_| json!({})),
            created_at: a.created_at,
            resolved_at: a.resolved_at,
            resolved_by: a.resolved_by,
        }
    }
}

/// Which anomalies.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AnomalyQuery {
    /// `1`: resolved ones too; `0` (default): open ones only.
    #[param(pattern = "^[01]$")]
    pub include_resolved: Option<String>,
}

/// The service behind `list`, for the API and the dashboard alike.
pub async fn list(state: &AppState, by: &Viewer, q: AnomalyQuery) -> ApiResult<Vec<AnomalyView>> {
    let p = &by.0;
    let include = match q.include_resolved.as_deref() {
        None | Some("0") => false,
        Some("1") => true,
        Some(_) => return Err(ApiError::invalid("include_resolved", "must be 0 or 1")),
    };
    let mut c = state.db.conn().await?;
    Ok(anomalies::list(&mut c, p.tenant(), include, 1000)
        .await?
        .into_iter()
        .map(AnomalyView::from)
        .collect())
}

/// The service behind `resolve`, for the API and the dashboard alike.
pub async fn resolve(
    state: &AppState,
    meta: &Meta,
    by: &Operator,
    id: Uuid,
) -> ApiResult<AnomalyView> {
    let p = &by.0;
    let now = now();
    let by = format!("user:{}", p.user.id);
    let mut tx = state.db.begin().await?;
    anomalies::get(&mut tx, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("integrity anomaly"))?;
    if anomalies::resolve(&mut tx, p.tenant(), id, &by, now).await? {
        if let Some(alert) =
            alerts::open_by_fingerprint(&mut tx, p.tenant(), &format!("anomaly:{id}")).await?
        {
            Notifier::default()
                .resolve(&mut tx, p.tenant(), alert.id, &by, "anomaly resolved", now)
                .await?;
        }
        meta.record(
            &mut tx,
            p,
            trusthub_core::audit::INTEGRITY_ANOMALY_RESOLVED,
            format!("integrity_anomaly:{id}"),
            json!({}),
        )
        .await?;
    }
    let a = anomalies::get(&mut tx, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("integrity anomaly"))?;
    tx.commit().await?;
    Ok(a.into())
}
