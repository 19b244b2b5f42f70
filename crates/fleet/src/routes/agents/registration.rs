//! Agent registration (first contact and re-enrolment) and agent signatures.

use super::*;
use crate::service::agents::registration::{self as service, *};

/// Register a host (CONTRACT 4). `Authorization: Bearer <enrollment token>` and
/// `X-Service-Signature: ed25519=<base64>` over the exact body, made with the key of
/// `signing_pubkey` (proof of possession; 401 otherwise). Idempotent per (tenant,
/// machine_id): 201 the first time, 200 after, each time with a new agent token (the old one
/// stops working). A different key for a machine whose key is pinned is 409: change keys
/// through `rotate-signing-key`.
#[utoipa::path(post, path = "/agents/register", tag = "agents", request_body = RegisterRequest,
    responses((status = 201, body = Registered), (status = 200, body = Registered),
        (status = 401, description = "Bad enrollment token or signature", body = Problem),
        (status = 409, description = "Another key is pinned for this machine", body = Problem)))]
pub(crate) async fn register(
    State(state): State<AppState>,
    meta: Meta,
    headers: HeaderMap,
    body: SignedBody,
) -> ApiResult<(StatusCode, axum::Json<Registered>)> {
    service::register(&state, &meta, &headers, &body)
        .await
        .map(|(status, v)| (status, axum::Json(v)))
}
