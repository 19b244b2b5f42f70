//! The Trust Score services, called by the API, the dashboard, the badge and the job alike:
//! the inputs read from every capability (through their `lib.rs`), the score, its history
//! (a point whenever the inputs changed and at least every 30 minutes) and the badge.

use crate::score::{self, Inputs};
use crate::store;
use serde::Serialize;
use time::{Duration, OffsetDateTime};
use trusthub_core::severity::Severity;
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult, all_valid};
use trusthub_store::{StoreResult, TenantId};
use utoipa::ToSchema;
use uuid::Uuid;

/// How often a history point is recorded at the least (and the badge refreshed).
pub const REFRESH: Duration = Duration::minutes(30);

/// The tenant's settings.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantSettings {
    /// The tenant.
    pub tenant_id: uuid::Uuid,
    /// Its name.
    pub name: String,
    /// Whether the Trust Score badge is public.
    pub badge_public: bool,
    /// The private ranges the tenant's hub checks, channels and webhooks may reach (CONTRACT
    /// 33), within `operator_networks`; `null` while the owner has not chosen: every range
    /// the operator allows.
    pub allowed_networks: Option<Vec<String>>,
    /// What the hub's operator allows besides public addresses
    /// (`TRUSTHUB_OUTBOUND_ALLOW_CIDRS`; `trusthub up` allows the private ranges by default).
    pub operator_networks: Vec<String>,
}

/// A change of the tenant's settings (the owner); absent fields stay as they are.
#[derive(Debug, Default, serde::Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantPatch {
    /// Whether `/badge/{tenant_id}.svg` and `.json` answer (default true); off, they answer 404.
    pub badge_public: Option<bool>,
    /// The private ranges (CIDRs, at most 64) the tenant's hub checks, channels and webhooks
    /// may reach, each within what the hub's operator allows; `[]` for none, `null` for every
    /// range the operator allows (the default).
    #[serde(default, deserialize_with = "trusthub_platform::extract::present")]
    #[schema(value_type = Option<Vec<trusthub_platform::openapi::CidrRange>>, max_items = 64)]
    pub allowed_networks: Option<Option<Vec<String>>>,
}

/// The score as the API answers it (CONTRACT 21).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScoreView {
    /// The formula's version (`v12`, `v13`).
    pub version: String,
    /// The tenant.
    pub tenant_id: Uuid,
    /// 0..100, one decimal.
    pub final_score: f64,
    /// `red` (below 50), `orange` (50 up to 70), `green` (70 up to and including 85),
    /// `darkgreen` (above 85).
    pub band: String,
    /// When it was computed.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub computed_at: OffsetDateTime,
    /// SHA-256 (hex) of the canonical JSON (RFC 8785) of the inputs the formula read.
    pub inputs_sha256: String,
    /// `vulnerabilities` 30, `agent_health` 20, `patching` 15, `drift` 10, `slo` 10,
    /// `integrity` 10, `access` 5; a component without inputs is null with weight 0 and its
    /// weight spread over the others.
    pub components: Vec<score::Component>,
}

/// The v13 score as the API answers it (CONTRACT 33): v12's shape and what caps the band.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CappedScoreView {
    /// The score; its `band` is already capped.
    #[serde(flatten)]
    pub score: ScoreView,
    /// What holds the band down: an open CRITICAL finding or an app or check down (at most
    /// `orange`), one down for over 24 hours (at most `red`); empty when nothing does.
    pub caps: Vec<score::Cap>,
}

/// One history point.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HistoryPoint {
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub computed_at: OffsetDateTime,
    /// The score then.
    pub final_score: f64,
}

/// What the formula reads for `tenant` at `now`.
pub async fn inputs(
    state: &AppState,
    tenant: TenantId,
    now: OffsetDateTime,
) -> StoreResult<Inputs> {
    let mut c = state.db.conn().await?;
    let agents = trusthub_fleet::agents(&mut c, tenant).await?;
    let certs = trusthub_certs::client_certs::active_by_agent(&mut c, tenant, now).await?;
    let ids: Vec<Uuid> = agents.iter().map(|a| a.id).collect();
    let mut findings = trusthub_vulns::patching::open_counts_of(&mut c, tenant, &ids, now).await?;
    let patching = trusthub_fleet::patching_states(&mut c, tenant).await?;
    let ranks = [
        Severity::Critical.rank(),
        Severity::High.rank(),
        Severity::Medium.rank(),
        Severity::Low.rank(),
    ];
    let mut hosts = Vec::new();
    for a in &agents {
        let mut counts = [0u32; 4];
        for (rank, n) in findings.remove(&a.id).unwrap_or_default() {
            if let Some(k) = ranks.iter().position(|r| *r == rank) {
                counts[k] += n;
            }
        }
        let reboot_required = patching.get(&a.id).is_some_and(|p| p.reboot_required);
        let silence = Duration::seconds((3 * a.ingest_interval_secs).max(900));
        hosts.push(score::Host {
            id: a.id.to_string(),
            hostname: a.hostname.clone(),
            findings: counts,
            client_certificate: certs.contains_key(&a.id),
            reporting: a.last_seen_at.is_some_and(|t| now - t <= silence),
            reboot_required,
        });
    }
    let rolled_back =
        trusthub_autopatch::rolled_back_since(&mut c, tenant, now - Duration::days(7))
            .await?
            .into_iter()
            .map(|(nonce, agent, packages)| score::RolledBack {
                eat_nonce: nonce,
                agent_id: agent.to_string(),
                packages,
            })
            .collect();
    let drift = trusthub_drift::service::unexplained(&mut c, tenant)
        .await?
        .map(|list| {
            list.into_iter()
                .map(|(agent, path)| score::Drift {
                    agent_id: agent.to_string(),
                    path,
                })
                .collect()
        });
    let names = trusthub_monitors::app_names(&mut c, tenant).await?;
    let slos = trusthub_slo::slo_states(&mut c, tenant)
        .await?
        .into_iter()
        .map(|(app, state)| score::Slo {
            id: app.to_string(),
            name: names.get(&app).cloned().unwrap_or_else(|| app.to_string()),
            state,
        })
        .collect();
    let anomalies = trusthub_certs::anomalies(&mut c, tenant, false, 10_000)
        .await?
        .into_iter()
        .map(|a| score::Anomaly {
            id: a.id.to_string(),
            kind: a.kind,
        })
        .collect();
    let admins = trusthub_identity::raw::users::list(&mut c, tenant)
        .await?
        .into_iter()
        .filter(|u| u.role >= trusthub_core::Role::Admin)
        .map(|u| score::Admin {
            id: u.id.to_string(),
            email: u.email,
            totp: u.totp_enabled,
        })
        .collect();
    let old_tokens = trusthub_identity::raw::tokens::list(&mut c, tenant, None)
        .await?
        .into_iter()
        .filter(|t| t.expires_at.is_none() && now - t.created_at > Duration::days(90))
        .map(|t| score::Token {
            id: t.id.to_string(),
            name: t.name,
            age_days: (now - t.created_at).whole_days(),
        })
        .collect();
    Ok(Inputs {
        hosts,
        rolled_back,
        drift,
        slos,
        anomalies,
        admins,
        old_tokens,
    })
}

/// What v13 reads for `tenant` at `now`: v12's inputs, and each app and check with its SLO,
/// its 30-day availability and since when it is down.
pub async fn inputs_v13(
    state: &AppState,
    tenant: TenantId,
    now: OffsetDateTime,
) -> StoreResult<score::InputsV13> {
    let base = inputs(state, tenant, now).await?;
    let mut c = state.db.conn().await?;
    let with_slo: std::collections::HashSet<Uuid> = trusthub_slo::slo_states(&mut c, tenant)
        .await?
        .into_iter()
        .map(|(app, _)| app)
        .collect();
    let availability = trusthub_slo::availability(&mut c, tenant, 30, now).await?;
    let apps = trusthub_monitors::apps(&mut c, tenant, None)
        .await?
        .into_iter()
        .map(|a| {
            // Down: its liveness alert is open, since its observed state last changed.
            let since = a
                .alerting
                .then(|| a.last_state_change.unwrap_or(a.created_at));
            score::App {
                id: a.id.to_string(),
                has_slo: with_slo.contains(&a.id),
                availability_30d: availability.get(&a.id).map(|p| (p * 100.0).round() / 100.0),
                down_since: since.map(trusthub_platform::state::rfc3339),
                down_over_24h: since.is_some_and(|t| now - t > Duration::hours(24)),
                name: a.name,
            }
        })
        .collect();
    Ok(score::InputsV13 { base, apps })
}

/// The tenant's newest score (v13) at `now`, recorded as [`recorded`] says.
pub async fn compute(
    state: &AppState,
    tenant: TenantId,
    now: OffsetDateTime,
) -> ApiResult<CappedScoreView> {
    let s = score::v13(&inputs_v13(state, tenant, now).await?);
    let caps = s.caps.clone();
    Ok(CappedScoreView {
        score: recorded(state, tenant, now, s).await?,
        caps,
    })
}

/// The tenant's v12 score at `now`, recorded as [`recorded`] says.
pub async fn compute_v12(
    state: &AppState,
    tenant: TenantId,
    now: OffsetDateTime,
) -> ApiResult<ScoreView> {
    let s = score::v12(&inputs(state, tenant, now).await?);
    recorded(state, tenant, now, s).await
}

/// `s` as the API answers it, with a history point of its version recorded when the inputs
/// changed or the last point is at least [`REFRESH`] old.
async fn recorded(
    state: &AppState,
    tenant: TenantId,
    now: OffsetDateTime,
    s: score::Score,
) -> ApiResult<ScoreView> {
    // The writer's connection (SQLite's readers are read-only).
    let mut tx = state.db.begin().await?;
    let last = store::last(&mut tx, tenant, &s.version).await?;
    if last
        .as_ref()
        .is_none_or(|l| l.inputs_sha256 != s.inputs_sha256 || now - l.computed_at >= REFRESH)
    {
        store::record(
            &mut tx,
            tenant,
            &s.version,
            &store::Point {
                computed_at: now,
                final_score: s.final_score,
                band: s.band.clone(),
                inputs_sha256: s.inputs_sha256.clone(),
            },
        )
        .await?;
    }
    tx.commit().await?;
    Ok(ScoreView {
        version: s.version,
        tenant_id: tenant.0,
        final_score: s.final_score,
        band: s.band,
        computed_at: now,
        inputs_sha256: s.inputs_sha256,
        components: s.components,
    })
}

/// The tenant's points of `version` of the last `days` days, oldest first.
pub async fn history(
    state: &AppState,
    tenant: TenantId,
    version: &str,
    days: i64,
    now: OffsetDateTime,
) -> StoreResult<Vec<HistoryPoint>> {
    let mut c = state.db.conn().await?;
    Ok(
        store::since(&mut c, tenant, version, now - Duration::days(days))
            .await?
            .into_iter()
            .map(|p| HistoryPoint {
                computed_at: p.computed_at,
                final_score: p.final_score,
            })
            .collect(),
    )
}

/// What the badge shows for a tenant: its latest point (computed first when it has none or
/// the latest is older than [`REFRESH`]); `None` for an unknown tenant or a badge turned off.
pub async fn badge_point(
    state: &AppState,
    tenant: Uuid,
    now: OffsetDateTime,
) -> ApiResult<Option<store::Point>> {
    {
        let mut c = state.db.conn().await?;
        if trusthub_identity::tenant(&mut c, TenantId(tenant))
            .await?
            .is_none()
            || !store::badge_public(&mut c, tenant).await?
        {
            return Ok(None);
        }
        if let Some(p) = store::last(&mut c, TenantId(tenant), score::NEWEST).await?
            && now - p.computed_at < REFRESH
        {
            return Ok(Some(p));
        }
    }
    compute(state, TenantId(tenant), now).await?;
    let mut c = state.db.conn().await?;
    Ok(store::last(&mut c, TenantId(tenant), score::NEWEST).await?)
}

/// The job: every tenant's score, v12 and v13, every 30 minutes (a history point each time).
pub async fn tick(state: &AppState, now: OffsetDateTime) -> StoreResult<()> {
    let tenants = {
        let mut c = state.db.conn().await?;
        trusthub_identity::raw::tenants::list(&mut c).await?
    };
    for t in tenants {
        let (v12, v13) = (
            compute_v12(state, t.tenant_id(), now).await.err(),
            compute(state, t.tenant_id(), now).await.err(),
        );
        if let Some(e) = v12.or(v13) {
            tracing::warn!(tenant = %t.id, error = %e, "trust score not computed; the next tick tries again");
        }
    }
    Ok(())
}

/// The tenant's settings.
pub async fn tenant_settings(state: &AppState, tenant: TenantId) -> ApiResult<TenantSettings> {
    let mut c = state.db.conn().await?;
    let name = trusthub_identity::tenant(&mut c, tenant)
        .await?
        .map(|t| t.name)
        .unwrap_or_default();
    let policy = trusthub_platform::outbound::Policy::of(&state.settings);
    let allowed = trusthub_store::networks::get(&mut c, tenant).await?;
    Ok(TenantSettings {
        tenant_id: tenant.0,
        name,
        badge_public: store::badge_public(&mut c, tenant.0).await?,
        allowed_networks: allowed.map(|a| {
            trusthub_platform::outbound::parse_cidrs(&a)
                .unwrap_or_default()
                .iter()
                .map(ToString::to_string)
                .collect()
        }),
        operator_networks: policy
            .operator_ranges()
            .iter()
            .map(ToString::to_string)
            .collect(),
    })
}

/// The tenant's ranges checked against the operator's: the text to keep, or what is wrong.
fn checked_networks(
    policy: &trusthub_platform::outbound::Policy,
    networks: &[String],
) -> ApiResult<String> {
    use trusthub_platform::error::FieldError;
    if networks.len() > 64 {
        return Err(ApiError::invalid("allowed_networks", "at most 64 ranges"));
    }
    let operator = policy.operator_ranges();
    let mut errors = Vec::new();
    let mut kept = Vec::new();
    for (i, n) in networks.iter().enumerate() {
        let field = format!("allowed_networks[{i}]");
        match n.parse::<trusthub_platform::outbound::Cidr>() {
            Err(m) => errors.push(FieldError::new(field, m)),
            Ok(c) if !operator.iter().any(|o| o.covers(&c)) => errors.push(FieldError::new(field, format!(
                    "{c} is not within what the hub's operator allows ({}); the operator widens that with TRUSTHUB_OUTBOUND_ALLOW_CIDRS",
                    if operator.is_empty() {
                        "nothing besides public addresses".to_owned()
                    } else {
                        operator
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ))),
            Ok(c) => kept.push(c.to_string()),
        }
    }
    all_valid(errors)?;
    Ok(kept.join(","))
}

/// Changes the tenant's settings (the owner; audited): the public badge, the private
/// networks.
pub async fn set_tenant(
    state: &AppState,
    meta: &trusthub_platform::extract::Meta,
    p: &trusthub_identity::auth::Principal,
    patch: TenantPatch,
) -> ApiResult<TenantSettings> {
    p.may_change()?;
    let networks = match &patch.allowed_networks {
        Some(Some(list)) => Some(Some(checked_networks(
            &trusthub_platform::outbound::Policy::of(&state.settings),
            list,
        )?)),
        Some(None) => Some(None),
        None => None,
    };
    let mut tx = state.db.begin().await?;
    if let Some(on) = patch.badge_public {
        store::set_badge_public(&mut tx, p.tenant(), on).await?;
    }
    if let Some(n) = &networks {
        trusthub_store::networks::set(&mut tx, p.tenant(), n.as_deref()).await?;
    }
    let mut details = serde_json::Map::new();
    if let Some(on) = patch.badge_public {
        details.insert("badge_public".into(), on.into());
    }
    if let Some(n) = &networks {
        details.insert(
            "allowed_networks".into(),
            n.as_ref().map_or(serde_json::Value::Null, |n| {
                n.split(',').filter(|x| !x.is_empty()).collect()
            }),
        );
    }
    // An empty patch changes nothing, so it records nothing either.
    if !details.is_empty() {
        meta.record(
            &mut tx,
            p,
            trusthub_core::audit::TENANT_SETTINGS_CHANGED,
            format!("tenant:{}", p.tenant().0),
            serde_json::Value::Object(details),
        )
        .await?;
    }
    tx.commit().await?;
    tenant_settings(state, p.tenant()).await
}

/// Turns the public badge on or off (the owner; audited).
pub async fn set_badge_public(
    state: &AppState,
    meta: &trusthub_platform::extract::Meta,
    p: &trusthub_identity::auth::Principal,
    on: bool,
) -> ApiResult<TenantSettings> {
    let patch = TenantPatch {
        badge_public: Some(on),
        allowed_networks: None,
    };
    set_tenant(state, meta, p, patch).await
}
