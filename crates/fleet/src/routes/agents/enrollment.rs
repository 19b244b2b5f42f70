//! Enrolment tokens and the EAT public key.

use super::*;
use crate::service::agents::enrollment::*;

/// Create an enrollment token (admin). It enrols any number of hosts until it expires
/// (default 24 h), or one host with `single_use`; stored hashed. A spent single-use token
/// is refused like an expired one (401).
///
/// Beyond the schema: `expires_at` must be in the future.
#[utoipa::path(post, path = "/agents/enrollment-tokens", tag = "agents", request_body = NewEnrollmentToken,
    responses((status = 201, body = CreatedEnrollmentToken), (status = 422, body = Problem)))]
pub(crate) async fn create_enrollment_token(
    State(state): State<AppState>,
    meta: Meta,
    Admin(p): Admin,
    Json(req): Json<NewEnrollmentToken>,
) -> ApiResult<(StatusCode, axum::Json<CreatedEnrollmentToken>)> {
    let created = new_enrollment_token(&state, &meta, &p, req).await?;
    Ok((StatusCode::CREATED, axum::Json(created)))
}

/// The tenant's enrollment tokens that still enrol (admin), newest first.
#[utoipa::path(get, path = "/agents/enrollment-tokens", tag = "agents", responses((status = 200, body = Vec<EnrollmentTokenView>)))]
pub(crate) async fn list_enrollment_tokens(
    State(state): State<AppState>,
    Admin(p): Admin,
) -> ApiResult<axum::Json<Vec<EnrollmentTokenView>>> {
    let mut c = state.db.conn().await?;
    let rows = agents::list_enrollment_tokens(&mut c, p.tenant(), now()).await?;
    Ok(axum::Json(
        rows.into_iter()
            .map(|r| EnrollmentTokenView {
                id: r.id,
                tags: r.tags.0,
                created_by: r.created_by,
                created_at: r.created_at,
                expires_at: r.expires_at,
            })
            .collect(),
    ))
}

/// Revoke an enrollment token (admin): it enrols no more hosts; agents it enrolled keep
/// working.
#[utoipa::path(delete, path = "/agents/enrollment-tokens/{id}", tag = "agents", params(("id" = Uuid, Path, description = "Enrollment token id")),
    responses((status = 204, description = "Revoked"), (status = 404, body = Problem)))]
pub(crate) async fn revoke_enrollment_token(
    State(state): State<AppState>,
    meta: Meta,
    Admin(p): Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    if !agents::delete_enrollment_token(&mut tx, p.tenant(), id).await? {
        return Err(ApiError::NotFound("enrollment token"));
    }
    meta.record(
        &mut tx,
        &p,
        ev::ENROLLMENT_TOKEN_REVOKED,
        format!("enrollment_token:{id}"),
        json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The hub's EAT public key (CONTRACT 5), the same one agents pin at registration. Public: a
/// public key is no secret, and anyone may check a token or a pin against it.
#[utoipa::path(get, path = "/agents/eat-public-key", tag = "agents", responses((status = 200, body = EatPublicKey)))]
pub(crate) async fn eat_public_key(State(state): State<AppState>) -> axum::Json<EatPublicKey> {
    let public = state
        .part::<crate::service::actions::EatKey>()
        .0
        .verifying_key();
    axum::Json(EatPublicKey {
        alg: "EdDSA".into(),
        kid: trusthub_core::eat::kid(&public),
        public_key_hex: hex(public.as_bytes()),
    })
}
