//! Client certificates (SPEC 5, 3.4; CONTRACT 12, 14): the CA certificate and CRL for anyone,
//! issuance to an agent (CSR, or a key made on the hub), the certificate list and revocation.

use super::*;
use crate::service::agents::certs::{self as service, *};
use trusthub_certs::client_certs::{self};

/// Issue the calling agent a client certificate (agent token). The agent's previous active
/// certificate is revoked (`rotated`) in the same transaction: an agent never has two
/// active certificates, also when two requests race. Audit `client_cert_issued`.
#[utoipa::path(post, path = "/agents/issue-client-cert", tag = "agents", request_body = IssueRequest,
    responses((status = 201, body = IssuedCert), (status = 401, body = Problem), (status = 422, description = "The CSR is unreadable, badly signed, or not RSA-2048+", body = Problem)))]
pub(crate) async fn issue_client_cert(
    State(state): State<AppState>,
    meta: Meta,
    AgentAuth(agent): AgentAuth,
    Json(req): Json<IssueRequest>,
) -> ApiResult<(StatusCode, axum::Json<IssuedCert>)> {
    service::issue_client_cert(&state, &meta, &AgentAuth(agent), req)
        .await
        .map(|(status, v)| (status, axum::Json(v)))
}

/// The hub CA certificate (PEM, no authentication): what agents and a TLS-terminating proxy
/// trust for client certificates.
#[utoipa::path(get, path = "/agents/ca-cert", tag = "agents",
    responses((status = 200, content_type = "application/x-pem-file", body = String)))]
pub(crate) async fn ca_cert(State(state): State<AppState>) -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/x-pem-file")],
        state
            .part::<trusthub_certs::ca::HubCa>()
            .cert_pem()
            .to_owned(),
    )
}

/// The current certificate revocation list (DER X.509 CRL signed by the hub CA, no
/// authentication; valid for a day, made afresh on each request) with every revoked
/// certificate that has not expired yet — for an nginx `ssl_crl` or any TLS front.
#[utoipa::path(get, path = "/agents/ca.crl", tag = "agents",
    responses((status = 200, content_type = "application/pkix-crl", body = Vec<u8>)))]
pub(crate) async fn ca_crl(
    State(state): State<AppState>,
) -> ApiResult<impl axum::response::IntoResponse> {
    let now = now();
    let revoked = {
        let mut c = state.db.conn().await?;
        client_certs::revoked(&mut c, now).await?
    };
    let signer = state.clone();
    let der = tokio::task::spawn_blocking(move || {
        signer
            .part::<trusthub_certs::ca::HubCa>()
            .crl(&revoked, now)
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))?
    .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/pkix-crl")],
        der,
    ))
}

/// An agent's client certificates, newest first (viewer).
#[utoipa::path(get, path = "/agents/{id}/client-certs", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = Vec<ClientCertView>), (status = 404, body = Problem)))]
pub(crate) async fn client_certs_of(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<Vec<ClientCertView>>> {
    service::client_certs_of(&state, &by, id)
        .await
        .map(axum::Json)
}

/// Revoke a certificate (admin): it is in the CRL from now on and refused even where TLS still
/// accepts it. Revoking a revoked certificate is 409. Audit `client_cert_revoked`.
#[utoipa::path(post, path = "/agents/{id}/client-certs/{serial}/revoke", tag = "agents",
    params(("id" = Uuid, Path, description = "Agent id"), ("serial" = String, Path, description = "Serial, hex")),
    request_body = RevokeRequest,
    responses((status = 200, body = ClientCertView), (status = 404, body = Problem), (status = 409, description = "Already revoked", body = Problem)))]
pub(crate) async fn revoke_client_cert(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    Path((id, serial)): Path<(Uuid, String)>,
    Json(req): Json<RevokeRequest>,
) -> ApiResult<axum::Json<ClientCertView>> {
    service::revoke_client_cert(&state, &meta, &by, id, serial, req)
        .await
        .map(axum::Json)
}
