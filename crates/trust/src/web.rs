//! The Trust Score page (score, band, each component with its reasons and links to what lost
//! the points, the history chart, the badge and its embed snippet, the owner's switch) and the
//! public badge itself — through the same services as the API.

use crate::service;
use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_identity::auth::{Owner, Viewer};
use trusthub_identity::{UserBar, WebUser};
use trusthub_platform::AppState;
use trusthub_platform::chart::{Line, line_chart};
use trusthub_platform::extract::Meta;
use trusthub_platform::page::{ASSETS, Assets, Flash, outcome};
use trusthub_platform::page::{PageResult, render};
use uuid::Uuid;

/// The pages and the badge (merged at the root by the composition root).
pub fn pages() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/ui/trust", get(show).post(save))
        .route("/ui/networks", get(networks).post(save_networks))
        .route("/badge/{file}", get(badge))
}

/// A component as the page shows it.
struct Row {
    id: String,
    weight: String,
    score: String,
    reasons: Vec<(String, String, String)>,
}

#[derive(Template)]
#[template(path = "trust.html")]
struct Page<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    is_owner: bool,
    version: String,
    score: String,
    band: String,
    caps: Vec<(String, String, String)>,
    computed_at: String,
    inputs_sha256: String,
    rows: Vec<Row>,
    chart: String,
    badge_url: String,
    badge_svg: String,
    badge_public: bool,
    flash: Flash,
}

/// Where a reason's subject is shown in the dashboard.
fn link(subject: &str) -> String {
    match subject.split_once(':') {
        Some(("agent", id)) => format!("/ui/agents/{id}"),
        Some(("slo", id)) => format!("/ui/apps/{id}/slo"),
        Some(("app", id)) => format!("/ui/apps#app-{id}"),
        Some(("anomaly", _)) => "/ui/anomalies".into(),
        Some(("user", _)) => "/ui/users".into(),
        Some(("token", _)) => "/ui/settings".into(),
        Some(("action", id)) => format!("/ui/actions/{id}"),
        _ => String::new(),
    }
}

async fn page(state: &AppState, user: &WebUser, flash: Flash, code: StatusCode) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let now = trusthub_platform::state::now();
    let service::CappedScoreView { score: s, caps } =
        service::compute(state, p.tenant(), now).await?;
    let history = service::history(state, p.tenant(), crate::score::NEWEST, 30, now).await?;
    let public = {
        let mut c = state.db.conn().await?;
        crate::store::badge_public(&mut c, p.tenant().0).await?
    };
    let from = (now - time::Duration::days(30)).unix_timestamp() * 1000;
    let to = now.unix_timestamp() * 1000;
    let line = Line {
        label: "Trust Score".into(),
        points: history
            .iter()
            .map(|h| (h.computed_at.unix_timestamp() * 1000, h.final_score))
            .collect(),
    };
    let message = format!("{:.1}", s.final_score);
    let page = Page {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        is_owner: p.has_role(Role::Owner),
        version: s.version.clone(),
        score: message.clone(),
        band: s.band.clone(),
        caps: caps
            .iter()
            .map(|c| {
                let href = c.subject_ref.as_deref().map(link).unwrap_or_default();
                (c.band.clone(), c.message.clone(), href)
            })
            .collect(),
        computed_at: trusthub_platform::state::rfc3339(s.computed_at),
        inputs_sha256: s.inputs_sha256.clone(),
        rows: s
            .components
            .iter()
            .map(|c| Row {
                id: c.id.clone(),
                weight: format!("{:.1}", c.weight),
                score: c
                    .score
                    .map(|x| format!("{x:.1}"))
                    .unwrap_or_else(|| "no inputs".into()),
                reasons: c
                    .reasons
                    .iter()
                    .map(|r| {
                        (
                            format!("{:.0}", r.points),
                            r.message.clone(),
                            r.subject_ref.as_deref().map(link).unwrap_or_default(),
                        )
                    })
                    .collect(),
            })
            .collect(),
        chart: line_chart("Trust Score, last 30 days", &[line], from, to, Some(100.0)),
        // Absolute, so the snippet works pasted anywhere (CONTRACT 33: the public URL).
        badge_url: format!(
            "{}/badge/{}.svg",
            state.public_url.trim_end_matches('/'),
            p.tenant().0
        ),
        badge_svg: crate::badge::svg(
            "trust",
            &message,
            crate::score::colour(&s.band),
            &format!("trust: {message} (tenant {})", p.tenant().0),
        ),
        badge_public: public,
        flash,
    };
    render(page.render(), code)
}

/// `GET /ui/trust`.
pub async fn show(State(state): State<AppState>, user: WebUser) -> PageResult {
    page(&state, &user, Flash::default(), StatusCode::OK).await
}

/// The badge switch.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BadgeForm {
    #[serde(default)]
    badge_public: Option<String>,
}

/// `POST /ui/trust` (owner, CSRF): the public badge on or off.
pub async fn save(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form: f, .. }: Act<Owner, BadgeForm>,
) -> PageResult {
    let on = f.badge_public.is_some();
    let result = async {
        let owner = Owner::of(&user.principal)?;
        service::set_badge_public(&state, &meta, &owner.0, on).await
    }
    .await;
    let notice = if on {
        "The badge is public."
    } else {
        "The badge is off: its address answers 404."
    };
    let (flash, code) = outcome(result, notice, StatusCode::OK)?;
    page(&state, &user, flash, code).await
}

/// `GET /badge/{tenant_id}.svg` and `.json` (public): the latest score as a shields.io flat
/// badge, or as shields.io's endpoint JSON; 404 for an unknown tenant or a badge turned off.
pub async fn badge(
    State(state): State<AppState>,
    axum::extract::Path(file): axum::extract::Path<String>,
    headers: HeaderMap,
) -> Response {
    let (id, json) = match (file.strip_suffix(".svg"), file.strip_suffix(".json")) {
        (Some(id), _) => (id, false),
        (_, Some(id)) => (id, true),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let Ok(tenant) = Uuid::parse_str(id) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let point = match service::badge_point(&state, tenant, trusthub_platform::state::now()).await {
        Ok(Some(p)) => p,
        Ok(None) => return StatusCode::NOT_FOUND.into_response(),
        Err(e) => return e.into_response(),
    };
    let message = format!("{:.1}", point.final_score);
    let colour = crate::score::colour(&point.band);
    let (body, kind) = if json {
        (
            crate::badge::endpoint(&message, colour).to_string(),
            "application/json",
        )
    } else {
        (
            crate::badge::svg(
                "trust",
                &message,
                colour,
                &format!("trust: {message} (tenant {tenant})"),
            ),
            "image/svg+xml",
        )
    };
    // The ETag names the point and the format: a refresh every 30 minutes at most.
    let etag = format!(
        "\"{}-{}-{}\"",
        &point.inputs_sha256[..16.min(point.inputs_sha256.len())],
        point.computed_at.unix_timestamp(),
        if json { "json" } else { "svg" }
    );
    let mut resp = if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag))
    {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (StatusCode::OK, [(header::CONTENT_TYPE, kind)], body).into_response()
    };
    let h = resp.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=1800"),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    resp
}

#[derive(Template)]
#[template(path = "networks.html")]
struct NetworksPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    is_owner: bool,
    operator: Vec<String>,
    allowed: Option<Vec<String>>,
    /// The "only these ranges" choice is the one shown.
    listed: bool,
    draft: String,
    flash: Flash,
}

async fn networks_page(
    state: &AppState,
    user: &WebUser,
    draft: Option<String>,
    flash: Flash,
    code: StatusCode,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let t = service::tenant_settings(state, p.tenant()).await?;
    let page = NetworksPage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        is_owner: p.has_role(Role::Owner),
        listed: draft.is_some() || t.allowed_networks.is_some(),
        draft: draft.unwrap_or_else(|| t.allowed_networks.clone().unwrap_or_default().join("\n")),
        operator: t.operator_networks,
        allowed: t.allowed_networks,
        flash,
    };
    render(page.render(), code)
}

/// `GET /ui/networks`: what the operator allows and what this tenant reaches.
pub async fn networks(State(state): State<AppState>, user: WebUser) -> PageResult {
    networks_page(&state, &user, None, Flash::default(), StatusCode::OK).await
}

/// The private-networks form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworksForm {
    /// `operator` (everything the operator allows) or `list`.
    mode: String,
    #[serde(default)]
    networks: String,
}

/// `POST /ui/networks` (owner, CSRF): the tenant's private networks.
pub async fn save_networks(
    State(state): State<AppState>,
    meta: Meta,
    Act { by, user, form: f }: Act<Owner, NetworksForm>,
) -> PageResult {
    let allowed = match f.mode.as_str() {
        "operator" => None,
        "list" => Some(
            f.networks
                .split([',', '\n', '\r', ' '])
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(str::to_owned)
                .collect(),
        ),
        _ => {
            let e = trusthub_platform::error::ApiError::invalid("mode", "must be operator or list");
            let (code, m) = trusthub_platform::page::form_error(e)?;
            return networks_page(&state, &user, None, Flash::error(m), code).await;
        }
    };
    let patch = service::TenantPatch {
        badge_public: None,
        allowed_networks: Some(allowed),
    };
    let result = service::set_tenant(&state, &meta, &by.0, patch).await;
    let kept = result.is_ok();
    let (flash, code) = outcome(
        result,
        "Saved: the next checks and deliveries use it.",
        StatusCode::OK,
    )?;
    let draft = (!kept).then_some(f.networks);
    networks_page(&state, &user, draft, flash, code).await
}
