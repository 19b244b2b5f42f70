//! Client certificates (SPEC 5, 3.4; CONTRACT 12, 14): the CA certificate and CRL for anyone,
//! issuance to an agent (CSR, or a key made on the hub), the certificate list and revocation.

use super::*;
use trusthub_certs::ca::CaError;
use trusthub_certs::client_certs::{self, ClientCert};

/// Issuance: a PKCS#10 request made on the host, or nothing (the hub makes the key).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueRequest {
    /// PEM `CERTIFICATE REQUEST` (PKCS#10) over an RSA key of 2048 bits or more, signed with
    /// it. Its subject is ignored: the certificate says CN = agent id, OU = tenant id. Absent:
    /// the hub makes an RSA-2048 key pair and answers with its private key, once.
    #[schema(max_length = 16384)]
    pub csr_pem: Option<String>,
}

/// A certificate just issued.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssuedCert {
    /// PEM of the client certificate.
    pub certificate_pem: String,
    /// PEM of the hub CA, to verify the hub's TLS front and keep beside the certificate.
    pub ca_pem: String,
    /// Only when no CSR was sent: the PKCS#8 PEM of the key the hub made. Shown once, never
    /// stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_key_pem: Option<String>,
    /// Serial, lowercase hex.
    pub serial: String,
    /// SHA-256 of the certificate DER, lowercase hex (what `X-Service-Client-Verified` carries).
    pub fingerprint_sha256: String,
    /// End of validity.
    #[serde(with = "time::serde::rfc3339")]
    pub not_after: OffsetDateTime,
}

/// Most attempts when concurrent issuances for one agent collide.
const ISSUE_ATTEMPTS: usize = 5;

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
    let days = state.settings.client_cert_days;
    let (agent_id, tenant) = (agent.id, agent.tenant_id);
    // RSA work off the async threads.
    let signer = state.clone();
    let csr = req.csr_pem.clone();
    let made = tokio::task::spawn_blocking(move || match csr {
        Some(pem) => signer
            .part::<trusthub_certs::ca::HubCa>()
            .issue_for_csr(&pem, agent_id, tenant, days)
            .map(|i| (i, None)),
        None => signer
            .part::<trusthub_certs::ca::HubCa>()
            .issue_with_key(agent_id, tenant, days)
            .map(|(i, k)| (i, Some(k))),
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))?;
    let (issued, private_key_pem) = match made {
        Ok(m) => m,
        Err(CaError::BadCsr(m)) => return Err(ApiError::invalid("csr_pem", &m)),
        Err(CaError::Signing(m)) => return Err(ApiError::Internal(m)),
    };
    let now = now();
    let row = ClientCert {
        serial: issued.serial.clone(),
        tenant_id: tenant,
        agent_id,
        fingerprint_sha256: issued.fingerprint_sha256.clone(),
        certificate_pem: issued.certificate_pem.clone(),
        key_generated_by_hub: private_key_pem.is_some(),
        not_before: issued.not_before,
        not_after: issued.not_after,
        created_at: now,
        revoked_at: None,
        revoke_reason: None,
        last_seen_at: None,
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut tx = state.db.begin().await?;
        match client_certs::rotate(&mut tx, &row).await {
            Ok(()) => {}
            Err(trusthub_store::StoreError::Conflict(_)) if attempt < ISSUE_ATTEMPTS => {
                // Another issuance for this agent committed first: revoke it in turn.
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        audit::append(
            &mut tx,
            trusthub_store::TenantId(tenant),
            &meta.audit(
                ev::CLIENT_CERT_ISSUED,
                format!("agent:{agent_id}"),
                format!("client_cert:{}", issued.serial),
                json!({"fingerprint_sha256": issued.fingerprint_sha256, "not_after": issued.not_after,
                    "key_generated_by_hub": private_key_pem.is_some()}),
            ),
            now,
        )
        .await?;
        tx.commit().await?;
        break;
    }
    Ok((
        StatusCode::CREATED,
        axum::Json(IssuedCert {
            certificate_pem: issued.certificate_pem,
            ca_pem: state
                .part::<trusthub_certs::ca::HubCa>()
                .cert_pem()
                .to_owned(),
            private_key_pem,
            serial: issued.serial,
            fingerprint_sha256: issued.fingerprint_sha256,
            not_after: issued.not_after,
        }),
    ))
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

/// A certificate as listed.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClientCertView {
    /// Serial, lowercase hex.
    pub serial: String,
    /// SHA-256 of the DER, lowercase hex.
    pub fingerprint_sha256: String,
    /// Valid from.
    #[serde(with = "time::serde::rfc3339")]
    pub not_before: OffsetDateTime,
    /// Valid until.
    #[serde(with = "time::serde::rfc3339")]
    pub not_after: OffsetDateTime,
    /// Revoked at (null while active).
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub revoked_at: Option<OffsetDateTime>,
    /// `rotated`, `agent_deleted`, or the admin's reason.
    pub revoke_reason: Option<String>,
    /// Last request that presented it.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_seen_at: Option<OffsetDateTime>,
    /// The hub made its key (no CSR).
    pub key_generated_by_hub: bool,
}

impl From<ClientCert> for ClientCertView {
    fn from(c: ClientCert) -> Self {
        ClientCertView {
            serial: c.serial,
            fingerprint_sha256: c.fingerprint_sha256,
            not_before: c.not_before,
            not_after: c.not_after,
            revoked_at: c.revoked_at,
            revoke_reason: c.revoke_reason,
            last_seen_at: c.last_seen_at,
            key_generated_by_hub: c.key_generated_by_hub,
        }
    }
}

/// The service behind [`client_certs_of`], for the API and the dashboard alike.
pub async fn client_certs_of_by(
    state: &AppState,
    by: &Viewer,
    id: Uuid,
) -> ApiResult<Vec<ClientCertView>> {
    let p = &by.0;
    let mut c = state.db.conn().await?;
    agents::get(&mut c, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("agent"))?;
    Ok(client_certs::list(&mut c, p.tenant(), id)
        .await?
        .into_iter()
        .map(ClientCertView::from)
        .collect())
}

/// An agent's client certificates, newest first (viewer).
#[utoipa::path(get, path = "/agents/{id}/client-certs", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = Vec<ClientCertView>), (status = 404, body = Problem)))]
pub(crate) async fn client_certs_of(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<Vec<ClientCertView>>> {
    client_certs_of_by(&state, &by, id).await.map(axum::Json)
}

/// Why a certificate is revoked.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeRequest {
    /// For the audit log and the certificate list, 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub reason: String,
}

/// The service behind [`revoke_client_cert`], for the API and the dashboard alike.
pub async fn revoke_client_cert_by(
    state: &AppState,
    meta: &Meta,
    by: &Admin,
    id: Uuid,
    serial: String,
    req: RevokeRequest,
) -> ApiResult<ClientCertView> {
    let p = &by.0;
    let reason = req.reason.trim();
    if reason.is_empty() || reason.chars().count() > 200 {
        return Err(ApiError::invalid("reason", "must be 1 to 200 characters"));
    }
    let serial = serial.to_ascii_lowercase();
    let now = now();
    let mut tx = state.db.begin().await?;
    let cert = client_certs::get(&mut tx, p.tenant(), id, &serial)
        .await?
        .ok_or(ApiError::NotFound("client certificate"))?;
    if !client_certs::revoke(&mut tx, p.tenant(), &serial, reason, now).await? {
        return Err(ApiError::Conflict(format!(
            "certificate {serial} was revoked already ({})",
            cert.revoke_reason.unwrap_or_default()
        )));
    }
    meta.record(
        &mut tx,
        p,
        ev::CLIENT_CERT_REVOKED,
        format!("client_cert:{serial}"),
        json!({"agent_id": id, "reason": reason, "fingerprint_sha256": cert.fingerprint_sha256}),
    )
    .await?;
    let cert = client_certs::get(&mut tx, p.tenant(), id, &serial)
        .await?
        .ok_or(ApiError::NotFound("client certificate"))?;
    tx.commit().await?;
    Ok(cert.into())
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
    revoke_client_cert_by(&state, &meta, &by, id, serial, req)
        .await
        .map(axum::Json)
}
