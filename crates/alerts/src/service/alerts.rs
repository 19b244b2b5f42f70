//! The services behind [`crate::routes::alerts`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::alerting::{self, AlertView};
use crate::auth::Viewer;
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::state::{AppState, now};
use crate::store::alerts;
use crate::store::alerts::Filter;
use serde::Deserialize;
use serde_json::json;
use trusthub_core::alerting::Severity;
use trusthub_core::audit as ev;
use utoipa::IntoParams;
use uuid::Uuid;

/// Alert listing filters and paging.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AlertQuery {
    /// `info`, `warning` or `critical`.
    #[param(pattern = r"^(info|warning|critical)$")]
    pub severity: Option<String>,
    /// `true` or `false`.
    pub is_resolved: Option<bool>,
    /// Only alerts whose agent carries this tag.
    pub tag: Option<String>,
    /// Page size, 1 to 500 (default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// The next page: alerts older than this alert id (the last id of the previous page).
    pub before: Option<Uuid>,
}

/// The service behind the `get_alert` handler, for the API and the dashboard alike.
pub async fn get_alert(state: &AppState, by: &Viewer, id: Uuid) -> ApiResult<AlertView> {
    let mut c = state.db.conn().await?;
    let a = alerts::get(&mut c, by.0.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("alert"))?;
    Ok(a.into())
}

/// Resolves alert `id` of `p`'s tenant as `p` (the API and the dashboard): audited, the
/// app's red marker cleared, `alert.resolved` queued for matching webhooks. A resolved
/// alert is answered unchanged.
pub(crate) async fn resolve(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    id: Uuid,
) -> ApiResult<AlertView> {
    let now = now();
    let mut tx = state.db.begin().await?;
    let Some(before) = alerts::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("alert"));
    };
    if before.is_resolved {
        return Ok(before.into());
    }
    let by = format!("user:{}", p.user.id);
    let view = alerting::Notifier::default()
        .resolve(&mut tx, p.tenant(), id, &by, "resolved by a user", now)
        .await?
        .ok_or(ApiError::NotFound("alert"))?;
    for hook in &state.part::<alerting::ResolveHooks>().0 {
        hook(&mut tx, p.tenant(), &view).await?;
    }
    meta.record(
        &mut tx,
        p,
        ev::ALERT_RESOLVED,
        format!("alert:{id}"),
        json!({"title": view.title, "severity": view.severity}),
    )
    .await?;
    tx.commit().await?;
    Ok(view)
}

/// The service behind the `list` handler, for the API and the dashboard alike.
pub async fn list(state: &AppState, by: &Viewer, q: AlertQuery) -> ApiResult<Vec<AlertView>> {
    let p = &by.0;
    if let Some(s) = &q.severity
        && Severity::parse(s).is_none()
    {
        return Err(ApiError::invalid(
            "severity",
            "must be info, warning or critical",
        ));
    }
    let limit = ApiError::page_limit(q.limit, 100, 500)?;
    let mut c = state.db.conn().await?;
    let list = alerts::list(
        &mut c,
        p.tenant(),
        &Filter {
            severity: q.severity.as_deref(),
            is_resolved: q.is_resolved,
            tag: q.tag.as_deref(),
            before: q.before,
            limit,
        },
    )
    .await?;
    Ok(list.into_iter().map(AlertView::from).collect())
}
