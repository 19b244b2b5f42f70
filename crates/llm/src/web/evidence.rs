//! The evidence packs page (SPEC 2.10): packs, the evidence key and how to verify.

use super::{ASSETS, Assets, UserBar, WebUser, html, refusal};
use crate::auth::Operator;
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;

/// One pack.
#[derive(Debug)]
struct PackRow {
    id: String,
    period: String,
    traces: i64,
    spans: i64,
    blobs: bool,
    manifest: String,
    download: String,
}

#[derive(Template)]
#[template(path = "evidence.html")]
struct EvidencePage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    packs: Vec<PackRow>,
    fingerprint: String,
    public_hex: String,
    message: Option<String>,
    error: Option<String>,
    can_create: bool,
    csrf: String,
}

async fn evidence_page(
    state: &AppState,
    user: &WebUser,
    message: Option<String>,
    error: Option<String>,
    status: StatusCode,
) -> Response {
    let listed: ApiResult<Vec<crate::store::evidence::Pack>> = async {
        let mut c = state.db.conn().await?;
        Ok(crate::store::evidence::list(&mut c, user.principal.tenant(), i64::MAX, 100).await?)
    }
    .await;
    let public = state
        .part::<crate::evidence::EvidenceKey>()
        .0
        .verifying_key();
    match listed {
        Ok(packs) => html(
            EvidencePage {
                assets: &ASSETS,
                user: Some(UserBar::from(user)),
                packs: packs
                    .into_iter()
                    .map(|p| {
                        let view = crate::service::evidence::PackView::from(p);
                        PackRow {
                            period: format!("{} – {}", view.period_start, view.period_end),
                            traces: view.trace_count,
                            spans: view.span_count,
                            blobs: view.include_blobs,
                            manifest: view.manifest_sha256.chars().take(16).collect(),
                            download: view.download_url,
                            id: view.pack_id,
                        }
                    })
                    .collect(),
                fingerprint: trusthub_core::evidence::key_fingerprint(&public),
                public_hex: trusthub_core::secret::hex(public.as_bytes()),
                message,
                error,
                can_create: user.principal.has_role(Role::Operator),
                csrf: user.csrf.clone(),
            }
            .render(),
            status,
        ),
        Err(e) => e.into_response(),
    }
}

/// `GET /ui/evidence`: packs, the evidence key and how to verify; operators create.
pub async fn evidence(State(state): State<AppState>, user: WebUser) -> Response {
    evidence_page(&state, &user, None, None, StatusCode::OK).await
}

/// A pack to create, by UTC days.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackForm {
    from: String,
    to: String,
    #[serde(default)]
    include_blobs: Option<String>,
}

/// `POST /ui/evidence` (operator, CSRF token): built as through the API.
pub async fn create_pack(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form, .. }: Act<Operator, PackForm>,
) -> Response {
    let req = crate::service::evidence::CreatePack {
        period_start: format!("{}T00:00:00Z", form.from.trim()),
        period_end: format!("{}T00:00:00Z", form.to.trim()),
        app_id: None,
        include_blobs: form.include_blobs.is_some(),
    };
    match crate::service::evidence::create_pack(&state, &meta, &user.principal, req).await {
        Ok((status, pack)) => {
            let what = if status == StatusCode::CREATED {
                "created"
            } else {
                "already existed for unchanged data"
            };
            evidence_page(
                &state,
                &user,
                Some(format!("Pack {} {what}.", pack.0.pack_id)),
                None,
                status,
            )
            .await
        }
        Err(ApiError::Validation(errors)) => {
            evidence_page(
                &state,
                &user,
                None,
                Some(refusal(&errors)),
                StatusCode::UNPROCESSABLE_ENTITY,
            )
            .await
        }
        Err(e) => e.into_response(),
    }
}
