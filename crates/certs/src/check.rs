//! SPEC 5.6, 5.7: the cross-check of a verified client certificate against the agent whose
//! token came with it.

use crate::error::ApiError;
use crate::state::{AppState, now};

/// The value of `attr` (`CN`, `OU`) in an RFC 4514 subject as the TLS front writes it.
fn dn_value(subject: &str, attr: &str) -> Option<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut escaped = false;
    for c in subject.chars() {
        match (escaped, c) {
            (true, c) => {
                current.push(c);
                escaped = false;
            }
            (false, '\\') => escaped = true,
            (false, ',') => parts.push(std::mem::take(&mut current)),
            (false, c) => current.push(c),
        }
    }
    parts.push(current);
    parts.into_iter().find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case(attr)
            .then(|| v.trim().to_owned())
    })
}

/// SPEC 5.6, 5.7: a request that carries a verified client certificate must be from the
/// agent the certificate names (CN = the agent of the token, OU = its tenant), with a
/// certificate this hub issued that is neither revoked nor expired — else 401 and an
/// integrity anomaly of that kind (with its alert). On success `last_seen_at` is written at
/// most once a minute per certificate.
pub async fn cross_check(
    state: &AppState,
    meta: &crate::extract::Meta,
    agent: crate::AgentRef<'_>,
    fingerprint: &str,
    subject: &str,
) -> Result<(), ApiError> {
    let now = now();
    let row = {
        let mut c = state.db.conn().await?;
        crate::store::client_certs::by_fingerprint(&mut c, fingerprint).await?
    };
    let same_agent = dn_value(subject, "CN").as_deref() == Some(agent.id.to_string().as_str())
        && dn_value(subject, "OU").as_deref() == Some(agent.tenant_id.to_string().as_str());
    let refusal = match &row {
        _ if !same_agent => Some((
            "cert_cn_mismatch",
            "the client certificate belongs to another agent",
        )),
        None => Some((
            "unknown_cert",
            "the client certificate was not issued by this hub",
        )),
        Some(r) if r.agent_id != agent.id || r.tenant_id != agent.tenant_id => Some((
            "cert_cn_mismatch",
            "the client certificate belongs to another agent",
        )),
        Some(r) if r.revoked_at.is_some() => {
            Some(("revoked_cert_used", "the client certificate is revoked"))
        }
        Some(r) if r.not_after <= now => {
            Some(("expired_cert_used", "the client certificate has expired"))
        }
        Some(_) => None,
    };
    if let Some((kind, why)) = refusal {
        crate::service::anomalies::record(
            state,
            agent.tenant_id,
            agent,
            kind,
            why,
            serde_json::json!({"fingerprint_sha256": fingerprint, "subject": subject,
                "serial": row.as_ref().map(|r| r.serial.clone()), "ip": meta.ip.to_string()}),
            false,
        )
        .await?;
        return Err(ApiError::Unauthenticated(format!("{why} ({kind})")));
    }
    if let Some(r) = row {
        let due = {
            let mut seen = state
                .part::<CertSeen>()
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let due = seen
                .get(&r.serial)
                .is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(60));
            if due {
                seen.insert(r.serial.clone(), std::time::Instant::now());
            }
            due
        };
        if due {
            let mut tx = state.db.begin().await?;
            crate::store::client_certs::touch(&mut tx, &r.serial, now).await?;
            tx.commit().await?;
        }
    }
    Ok(())
}

/// When each client certificate's `last_seen_at` was last written (at most once a minute per
/// certificate, not once per request; a part of the state).
#[derive(Debug, Default)]
pub struct CertSeen(pub std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>);
