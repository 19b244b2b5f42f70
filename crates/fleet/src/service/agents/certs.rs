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
pub(crate) const ISSUE_ATTEMPTS: usize = 5;

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

/// The service behind the `client_certs_of` handler, for the API and the dashboard alike.
pub async fn client_certs_of(
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

/// Why a certificate is revoked.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeRequest {
    /// For the audit log and the certificate list, 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub reason: String,
}

/// The service behind the `revoke_client_cert` handler, for the API and the dashboard alike.
pub async fn revoke_client_cert(
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

/// The service behind the `issue_client_cert` handler, for the API and the dashboard alike.
pub async fn issue_client_cert(
    state: &AppState,
    meta: &Meta,
    AgentAuth(agent): &AgentAuth,
    req: IssueRequest,
) -> ApiResult<(StatusCode, IssuedCert)> {
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
        (IssuedCert {
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
