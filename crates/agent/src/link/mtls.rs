//! The agent's client certificate (SPEC 5.3, CONTRACT 12): an RSA-2048 key and a PKCS#10
//! request made on this host (the key never leaves it), the certificate the hub CA signs for
//! it, kept as `<state-dir>/mtls/{client.crt,client.key,hub-ca.crt}` (mode 600), presented on
//! every HTTPS request and on the WebSocket, and renewed when it is missing, unreadable, does
//! not match its key, or ends within [`RENEW_BEFORE`].

use crate::link::state::{StateError, write_private};
use rcgen::{
    CertificateParams, DistinguishedName, DnType, KeyPair, PKCS_RSA_SHA256, PublicKeyData,
};
use rsa::pkcs8::EncodePrivateKey;
use sha2::Digest;
use std::path::{Path, PathBuf};
use time::OffsetDateTime;

/// A certificate ending within this is renewed.
pub const RENEW_BEFORE: time::Duration = time::Duration::days(30);

/// Bits of the agent's RSA key.
pub const KEY_BITS: usize = 2048;

/// The certificate files of one state directory.
#[derive(Debug, Clone)]
pub struct Mtls {
    dir: PathBuf,
}

/// The certificate the agent holds.
#[derive(Debug, Clone)]
pub struct Held {
    /// PEM of the certificate.
    pub cert_pem: String,
    /// PKCS#8 PEM of its key.
    pub key_pem: String,
    /// Serial, lowercase hex.
    pub serial: String,
    /// SHA-256 of the DER, lowercase hex.
    pub fingerprint_sha256: String,
    /// End of validity.
    pub not_after: OffsetDateTime,
}

impl Held {
    /// The key and the certificate in one PEM buffer (what reqwest's identity reads).
    pub fn identity_pem(&self) -> Vec<u8> {
        format!("{}\n{}", self.key_pem.trim_end(), self.cert_pem).into_bytes()
    }

    /// Whether it should be renewed at `now`.
    pub fn due(&self, now: OffsetDateTime) -> bool {
        self.not_after - now < RENEW_BEFORE
    }
}

/// A key and the request to certify it.
#[derive(Debug)]
pub struct Request {
    /// PEM `CERTIFICATE REQUEST`.
    pub csr_pem: String,
    /// PKCS#8 PEM of the key.
    pub key_pem: String,
}

impl Mtls {
    /// The files under `<state_dir>/mtls`.
    pub fn new(state_dir: &Path) -> Mtls {
        Mtls {
            dir: state_dir.join("mtls"),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The certificate and key when both are there, readable and belong together; `None`
    /// otherwise (the agent then asks for a new one). Never creates anything.
    pub fn current(&self) -> Option<Held> {
        let cert_pem = std::fs::read_to_string(self.dir.join("client.crt")).ok()?;
        let key_pem = std::fs::read_to_string(self.dir.join("client.key")).ok()?;
        let der = rustls_pki_types::CertificateDer::from_pem_slice(cert_pem.as_bytes()).ok()?;
        let (_, cert) = x509_parser::parse_x509_certificate(&der).ok()?;
        let key = KeyPair::from_pem_and_sign_algo(&key_pem, &PKCS_RSA_SHA256).ok()?;
        // A crash between writing the key and the certificate must not leave a pair that
        // cannot complete a handshake.
        if cert.public_key().raw != key.subject_public_key_info().as_slice() {
            return None;
        }
        let not_after =
            OffsetDateTime::from_unix_timestamp(cert.validity().not_after.timestamp()).ok()?;
        Some(Held {
            serial: data_encoding::HEXLOWER.encode(cert.raw_serial()),
            fingerprint_sha256: data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(&der)),
            not_after,
            cert_pem,
            key_pem,
        })
    }

    /// The certificate to present now: [`Mtls::current`] unless it has expired (an expired
    /// one would fail the handshake; the agent then goes without until it has a new one).
    pub fn usable(&self) -> Option<Held> {
        self.current()
            .filter(|h| h.not_after > OffsetDateTime::now_utc())
    }

    /// Stores a certificate with its key and the CA that signed it (each mode 600).
    pub fn save(&self, cert_pem: &str, key_pem: &str, ca_pem: &str) -> Result<(), StateError> {
        std::fs::create_dir_all(&self.dir).map_err(|source| StateError::Io {
            path: self.dir.clone(),
            source,
        })?;
        crate::link::state::set_mode(&self.dir, 0o700)?;
        write_private(&self.dir.join("client.key"), key_pem.as_bytes())?;
        write_private(&self.dir.join("client.crt"), cert_pem.as_bytes())?;
        write_private(&self.dir.join("hub-ca.crt"), ca_pem.as_bytes())
    }
}

use rustls_pki_types::pem::PemObject;

/// A new RSA key and a PKCS#10 request for it (the hub sets the subject; the request names the
/// agent for the operator reading it).
pub fn make_request(agent_id: &str) -> Result<Request, String> {
    let mut rng = rsa::rand_core::OsRng;
    let key = rsa::RsaPrivateKey::new(&mut rng, KEY_BITS).map_err(|e| e.to_string())?;
    let der = key.to_pkcs8_der().map_err(|e| e.to_string())?;
    let pair = KeyPair::from_pkcs8_der_and_sign_algo(&der.as_bytes().into(), &PKCS_RSA_SHA256)
        .map_err(|e| e.to_string())?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, agent_id);
    params.distinguished_name = dn;
    let csr = params.serialize_request(&pair).map_err(|e| e.to_string())?;
    Ok(Request {
        csr_pem: csr.pem().map_err(|e| e.to_string())?,
        key_pem: pair.serialize_pem(),
    })
}

/// The rustls client configuration for the WebSocket: these roots, and the certificate when
/// the agent holds one.
pub fn rustls_config(
    roots: Option<&[u8]>,
    held: Option<&Held>,
) -> Result<rustls::ClientConfig, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let builder = match roots {
        Some(pem) => {
            let mut store = rustls::RootCertStore::empty();
            for cert in rustls_pki_types::CertificateDer::pem_slice_iter(pem) {
                store
                    .add(cert.map_err(|e| format!("--ca-cert: {e}"))?)
                    .map_err(|e| format!("--ca-cert: {e}"))?;
            }
            rustls::ClientConfig::builder().with_root_certificates(store)
        }
        None => {
            use rustls_platform_verifier::BuilderVerifierExt;
            rustls::ClientConfig::builder()
                .with_platform_verifier()
                .map_err(|e| e.to_string())?
        }
    };
    match held {
        None => Ok(builder.with_no_client_auth()),
        Some(h) => {
            let chain = rustls_pki_types::CertificateDer::pem_slice_iter(h.cert_pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("client.crt: {e}"))?;
            let key = rustls_pki_types::PrivateKeyDer::from_pem_slice(h.key_pem.as_bytes())
                .map_err(|e| format!("client.key: {e}"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("client certificate: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::FromDer;

    #[test]
    fn a_request_is_rsa_2048_and_signed_by_its_key() {
        let req = make_request("0194e2b4-0000-7000-8000-000000000001").expect("request");
        let der =
            rustls_pki_types::CertificateSigningRequestDer::from_pem_slice(req.csr_pem.as_bytes())
                .expect("pem");
        let (_, csr) =
            x509_parser::certification_request::X509CertificationRequest::from_der(der.as_ref())
                .expect("der");
        csr.verify_signature().expect("self-signed request");
        assert!(req.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        let key = KeyPair::from_pem_and_sign_algo(&req.key_pem, &PKCS_RSA_SHA256).expect("key");
        assert_eq!(
            csr.certification_request_info.subject_pki.raw,
            key.subject_public_key_info().as_slice()
        );
        let Ok(x509_parser::public_key::PublicKey::RSA(rsa)) =
            csr.certification_request_info.subject_pki.parsed()
        else {
            panic!("an RSA key");
        };
        assert_eq!(rsa.key_size(), 2048);
    }

    #[test]
    fn missing_or_mismatched_files_are_no_certificate() {
        let dir = std::env::temp_dir().join(format!("mtls-{}", uuid::Uuid::new_v4().simple()));
        let m = Mtls::new(&dir);
        assert!(m.current().is_none());
        // A certificate of another key (the state a crash between the two writes leaves).
        let a = make_request("a").expect("a");
        let b = make_request("b").expect("b");
        let key = KeyPair::from_pem_and_sign_algo(&a.key_pem, &PKCS_RSA_SHA256).expect("key");
        let mut params = CertificateParams::default();
        params.not_after = OffsetDateTime::now_utc() + time::Duration::days(10);
        let cert = params.self_signed(&key).expect("cert");
        m.save(&cert.pem(), &b.key_pem, &cert.pem()).expect("save");
        assert!(m.current().is_none(), "mismatched pair refused");
        m.save(&cert.pem(), &a.key_pem, &cert.pem()).expect("save");
        let held = m.current().expect("matching pair");
        assert!(held.due(OffsetDateTime::now_utc()), "10 days left: due");
        assert!(!held.due(OffsetDateTime::now_utc() - time::Duration::days(30)));
        use std::os::unix::fs::PermissionsExt;
        for f in ["client.crt", "client.key", "hub-ca.crt"] {
            let mode = std::fs::metadata(dir.join("mtls").join(f))
                .expect("file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{f}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
