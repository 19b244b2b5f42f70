//! The hub CA (SPEC 5; CONTRACT 12, 14): an RSA key (4096 bits by default) and a 10-year
//! self-signed CA certificate made at the first start, kept in `hub_meta` with the key sealed
//! by `CLOUD_ENCRYPTION_KEY` (AES-256-GCM). Every hub process on one database shares it (the
//! first to store it wins; the others read it back). It signs agents' client certificates
//! (CN = agent id, OU = tenant id, whatever a CSR asked for) and the CRL.

use rcgen::{
    BasicConstraints, CertificateParams, CertificateRevocationListParams,
    CertificateSigningRequestParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyIdMethod, KeyPair, KeyUsagePurpose, PKCS_RSA_SHA256, RevocationReason,
    RevokedCertParams, SerialNumber,
};
use rsa::pkcs8::EncodePrivateKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, CertificateSigningRequestDer};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use trusthub_core::secret::{SealingKey, hex};
use trusthub_store::Db;
use uuid::Uuid;

/// `hub_meta` key of the CA.
const META_KEY: &str = "client_ca";
/// Sealing context of the CA key.
const SEAL_CONTEXT: &str = "hub_meta.client_ca";
/// Smallest RSA key accepted in a CSR (and made for agents without one).
pub const MIN_CLIENT_KEY_BITS: usize = 2048;

/// What `hub_meta` keeps.
#[derive(Serialize, Deserialize)]
struct Stored {
    cert_pem: String,
    /// Hex of the sealed PKCS#8 DER.
    key_sealed: String,
}

/// Why a certificate cannot be issued; the words are for the caller.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    /// The CSR is not a PKCS#10 request, or its signature does not verify.
    #[error("{0}")]
    BadCsr(String),
    /// Signing failed (a bug or a broken key).
    #[error("signing failed: {0}")]
    Signing(String),
}

/// A certificate just issued.
#[derive(Debug, Clone)]
pub struct Issued {
    /// PEM.
    pub certificate_pem: String,
    /// Serial, lowercase hex.
    pub serial: String,
    /// SHA-256 of the DER, lowercase hex.
    pub fingerprint_sha256: String,
    /// Valid from.
    pub not_before: OffsetDateTime,
    /// Valid until.
    pub not_after: OffsetDateTime,
}

/// The CA, ready to sign.
pub struct HubCa {
    cert_pem: String,
    cert_der: Vec<u8>,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for HubCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubCa").finish_non_exhaustive()
    }
}

/// A new RSA key of `bits`, as rcgen signs with it.
fn rsa_key(bits: usize) -> Result<(KeyPair, Vec<u8>), String> {
    let mut rng = rsa::rand_core::OsRng;
    let key = rsa::RsaPrivateKey::new(&mut rng, bits).map_err(|e| e.to_string())?;
    let der = key.to_pkcs8_der().map_err(|e| e.to_string())?;
    let bytes = der.as_bytes().to_vec();
    let pair = KeyPair::from_pkcs8_der_and_sign_algo(&bytes.as_slice().into(), &PKCS_RSA_SHA256)
        .map_err(|e| e.to_string())?;
    Ok((pair, bytes))
}

/// A 16-byte serial (RFC 5280: positive, at most 20 octets): `0x40`, 7 bytes of the time in
/// microseconds, 8 random bytes — unique and unguessable, and ordered by issuance (the list's
/// "newest first" holds within one second). The fixed first byte keeps the full length, so
/// the hex here is the hex openssl prints.
fn serial() -> Result<(SerialNumber, String), String> {
    let random = trusthub_core::secret::random_bytes::<8>().map_err(|e| e.to_string())?;
    let micros =
        u64::try_from(OffsetDateTime::now_utc().unix_timestamp_nanos() / 1000).unwrap_or(0);
    let mut b = [0u8; 16];
    b[0] = 0x40;
    b[1..8].copy_from_slice(&micros.to_be_bytes()[1..8]);
    b[8..].copy_from_slice(&random);
    Ok((SerialNumber::from_slice(&b), hex(&b)))
}

fn whole_seconds(t: OffsetDateTime) -> OffsetDateTime {
    t.replace_nanosecond(0).unwrap_or(t)
}

impl HubCa {
    /// The CA of this database: read, or made (`bits` RSA, 10 years) and stored when there is
    /// none. A CA sealed under another `CLOUD_ENCRYPTION_KEY` is an error naming that key,
    /// never a silent new CA.
    pub async fn load_or_create(db: &Db, key: &SealingKey, bits: usize) -> Result<HubCa, String> {
        let read = |db: Db| async move {
            let mut c = db.conn().await.map_err(|e| e.to_string())?;
            trusthub_store::meta::get(&mut c, META_KEY)
                .await
                .map_err(|e| e.to_string())
        };
        let stored = match read(db.clone()).await? {
            Some(s) => s,
            None => {
                if !(2048..=8192).contains(&bits) {
                    return Err(format!(
                        "--ca-key-bits {bits}: use 2048 to 8192 (4096 is the default)"
                    ));
                }
                // An RSA-4096 key takes seconds on a small machine: say so before the wait.
                tracing::info!(
                    bits,
                    "first start: making the hub's CA for agents' client certificates (a few seconds, once)"
                );
                let made = tokio::task::spawn_blocking(move || Self::make(bits))
                    .await
                    .map_err(|e| e.to_string())??;
                let sealed = key.seal(SEAL_CONTEXT, &made.1).map_err(|e| e.to_string())?;
                let value = serde_json::to_string(&Stored {
                    cert_pem: made.0,
                    key_sealed: hex(&sealed),
                })
                .map_err(|e| e.to_string())?;
                let mut tx = db.begin().await.map_err(|e| e.to_string())?;
                trusthub_store::meta::claim(&mut tx, META_KEY, &value, crate::state::now())
                    .await
                    .map_err(|e| e.to_string())?;
                tx.commit().await.map_err(|e| e.to_string())?;
                // Another process may have stored its CA first: that one is the CA.
                read(db.clone()).await?.ok_or("the CA was not stored")?
            }
        };
        let stored: Stored =
            serde_json::from_str(&stored).map_err(|_| "the stored hub CA is corrupt".to_owned())?;
        let sealed = data_encoding::HEXLOWER
            .decode(stored.key_sealed.as_bytes())
            .map_err(|_| "the stored hub CA key is corrupt".to_owned())?;
        let der = key.open(SEAL_CONTEXT, &sealed).map_err(|_| {
            "the hub CA key cannot be opened: CLOUD_ENCRYPTION_KEY differs from the one it was \
             sealed with (start with the original CLOUD_ENCRYPTION_KEY)"
                .to_owned()
        })?;
        let pair = KeyPair::from_pkcs8_der_and_sign_algo(&der.as_slice().into(), &PKCS_RSA_SHA256)
            .map_err(|e| format!("the hub CA key: {e}"))?;
        let issuer = Issuer::from_ca_cert_pem(&stored.cert_pem, pair)
            .map_err(|e| format!("the hub CA certificate: {e}"))?;
        let cert_der = CertificateDer::from_pem_slice(stored.cert_pem.as_bytes())
            .map_err(|_| "the stored hub CA certificate is corrupt".to_owned())?
            .to_vec();
        Ok(HubCa {
            cert_pem: stored.cert_pem,
            cert_der,
            issuer,
        })
    }

    /// A new CA: its certificate PEM and its key's PKCS#8 DER.
    fn make(bits: usize) -> Result<(String, Vec<u8>), String> {
        let (pair, der) = rsa_key(bits)?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "Trusthub hub CA");
        dn.push(DnType::OrganizationName, "Trusthub");
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.key_identifier_method = KeyIdMethod::Sha256;
        let now = whole_seconds(OffsetDateTime::now_utc());
        params.not_before = now - time::Duration::minutes(5);
        params.not_after = now + time::Duration::days(3653);
        params.serial_number = Some(serial()?.0);
        let cert = params.self_signed(&pair).map_err(|e| e.to_string())?;
        Ok((cert.pem(), der))
    }

    /// The CA certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA certificate, DER (the TLS front's root for client certificates).
    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }

    fn client_params(
        agent: Uuid,
        tenant: Uuid,
        days: i64,
    ) -> Result<(CertificateParams, String, OffsetDateTime, OffsetDateTime), CaError> {
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, agent.to_string());
        dn.push(DnType::OrganizationalUnitName, tenant.to_string());
        params.distinguished_name = dn;
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        let (serial, serial_hex) = serial().map_err(CaError::Signing)?;
        params.serial_number = Some(serial);
        let now = whole_seconds(OffsetDateTime::now_utc());
        // A little slack for hosts whose clock is behind.
        params.not_before = now - time::Duration::minutes(5);
        params.not_after = now + time::Duration::days(days);
        let (from, until) = (params.not_before, params.not_after);
        Ok((params, serial_hex, from, until))
    }

    fn issued(
        cert: rcgen::Certificate,
        serial: String,
        not_before: OffsetDateTime,
        not_after: OffsetDateTime,
    ) -> Issued {
        Issued {
            fingerprint_sha256: hex(&Sha256::digest(cert.der())),
            certificate_pem: cert.pem(),
            serial,
            not_before,
            not_after,
        }
    }

    /// Signs a PKCS#10 request (its signature verified, an RSA key of at least 2048 bits) for
    /// `agent` of `tenant`: the subject is CN = agent id, OU = tenant id, whatever the request
    /// said; client authentication only; `days` of validity.
    pub fn issue_for_csr(
        &self,
        csr_pem: &str,
        agent: Uuid,
        tenant: Uuid,
        days: i64,
    ) -> Result<Issued, CaError> {
        let der = CertificateSigningRequestDer::from_pem_slice(csr_pem.as_bytes())
            .map_err(|_| CaError::BadCsr("is not a PEM \"CERTIFICATE REQUEST\"".into()))?;
        let bits = rsa_bits_of_csr(&der)?;
        if bits < MIN_CLIENT_KEY_BITS {
            return Err(CaError::BadCsr(format!(
                "has an RSA key of {bits} bits; at least {MIN_CLIENT_KEY_BITS} are needed"
            )));
        }
        let csr = CertificateSigningRequestParams::from_der(&der).map_err(|e| match e {
            rcgen::Error::InvalidCertificationRequestSignature => {
                CaError::BadCsr("has a signature that does not verify".into())
            }
            rcgen::Error::UnsupportedExtension => CaError::BadCsr(
                "asks for an extension the hub does not sign (send a plain request)".into(),
            ),
            other => CaError::BadCsr(format!("cannot be read: {other}")),
        })?;
        let (params, serial, from, until) = Self::client_params(agent, tenant, days)?;
        let signed = CertificateSigningRequestParams {
            params,
            public_key: csr.public_key,
        }
        .signed_by(&self.issuer)
        .map_err(|e| CaError::Signing(e.to_string()))?;
        Ok(Self::issued(signed, serial, from, until))
    }

    /// Makes an RSA-2048 key pair on the hub and certifies it, for agents that cannot make a
    /// CSR: the certificate and the key's PKCS#8 PEM (handed out once, never stored).
    pub fn issue_with_key(
        &self,
        agent: Uuid,
        tenant: Uuid,
        days: i64,
    ) -> Result<(Issued, String), CaError> {
        let (pair, _) = rsa_key(MIN_CLIENT_KEY_BITS).map_err(CaError::Signing)?;
        let (params, serial, from, until) = Self::client_params(agent, tenant, days)?;
        let cert = params
            .signed_by(&pair, &self.issuer)
            .map_err(|e| CaError::Signing(e.to_string()))?;
        Ok((
            Self::issued(cert, serial, from, until),
            pair.serialize_pem(),
        ))
    }

    /// A server certificate for the hub itself (an ECDSA P-256 key, `days` of validity) with
    /// these DNS names and addresses: the chain PEM (certificate, then the CA) and the key's
    /// PKCS#8 PEM. For `--tls-self`.
    pub fn issue_server(
        &self,
        names: &[String],
        ips: &[std::net::IpAddr],
        days: i64,
    ) -> Result<(String, String), CaError> {
        let pair = KeyPair::generate().map_err(|e| CaError::Signing(e.to_string()))?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(
            DnType::CommonName,
            names.first().cloned().unwrap_or_else(|| "localhost".into()),
        );
        params.distinguished_name = dn;
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        for n in names {
            params.subject_alt_names.push(rcgen::SanType::DnsName(
                n.clone()
                    .try_into()
                    .map_err(|e: rcgen::Error| CaError::Signing(e.to_string()))?,
            ));
        }
        for ip in ips {
            params
                .subject_alt_names
                .push(rcgen::SanType::IpAddress(*ip));
        }
        params.serial_number = Some(serial().map_err(CaError::Signing)?.0);
        let now = whole_seconds(OffsetDateTime::now_utc());
        params.not_before = now - time::Duration::minutes(5);
        params.not_after = now + time::Duration::days(days);
        let cert = params
            .signed_by(&pair, &self.issuer)
            .map_err(|e| CaError::Signing(e.to_string()))?;
        Ok((
            format!("{}{}", cert.pem(), self.cert_pem),
            pair.serialize_pem(),
        ))
    }

    /// The CRL (DER) listing `revoked` (`serial hex, revoked at, reason`), valid for a day;
    /// its number is the time it was made, so a newer CRL always has a larger one.
    pub fn crl(
        &self,
        revoked: &[(String, OffsetDateTime, Option<String>)],
        now: OffsetDateTime,
    ) -> Result<Vec<u8>, CaError> {
        let now = whole_seconds(now);
        let revoked_certs = revoked
            .iter()
            .filter_map(|(serial, at, reason)| {
                let bytes = data_encoding::HEXLOWER.decode(serial.as_bytes()).ok()?;
                Some(RevokedCertParams {
                    serial_number: SerialNumber::from_slice(&bytes),
                    revocation_time: whole_seconds(*at),
                    reason_code: Some(match reason.as_deref() {
                        Some("rotated") => RevocationReason::Superseded,
                        Some("agent_deleted") => RevocationReason::CessationOfOperation,
                        _ => RevocationReason::Unspecified,
                    }),
                    invalidity_date: None,
                })
            })
            .collect();
        let params = CertificateRevocationListParams {
            this_update: now,
            next_update: now + time::Duration::days(1),
            crl_number: SerialNumber::from(u64::try_from(now.unix_timestamp()).unwrap_or(0)),
            issuing_distribution_point: None,
            revoked_certs,
            key_identifier_method: KeyIdMethod::Sha256,
        };
        let crl = params
            .signed_by(&self.issuer)
            .map_err(|e| CaError::Signing(e.to_string()))?;
        Ok(crl.der().to_vec())
    }
}

/// The RSA key size of a CSR's public key; other key types are refused.
fn rsa_bits_of_csr(der: &[u8]) -> Result<usize, CaError> {
    use x509_parser::prelude::FromDer;
    let (_, csr) = x509_parser::certification_request::X509CertificationRequest::from_der(der)
        .map_err(|_| CaError::BadCsr("is not a PKCS#10 certificate request".into()))?;
    match csr.certification_request_info.subject_pki.parsed() {
        Ok(x509_parser::public_key::PublicKey::RSA(rsa)) => Ok(rsa.key_size()),
        Ok(_) => Err(CaError::BadCsr(
            "has a key that is not RSA (the hub certifies RSA keys of 2048 bits or more)".into(),
        )),
        Err(_) => Err(CaError::BadCsr(
            "has a public key that cannot be read".into(),
        )),
    }
}
