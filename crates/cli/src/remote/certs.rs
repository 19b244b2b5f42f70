//! `trusthub certs …`: agents' client certificates (CONTRACT 14), the hub's CA and CRL, and
//! the integrity anomalies the certificates catch.

use super::{AGENT, Global, client, id, named, print};
use crate::remote::client::Failure;
use reqwest::Method;
use serde_json::json;
use std::io::Write as _;

/// `trusthub certs …`.
#[derive(Debug, clap::Subcommand)]
pub enum CertsCmd {
    /// An agent's client certificates, newest first.
    Ls {
        /// Agent id or hostname.
        agent: String,
    },
    /// Revoke an agent's certificate (admin); it lands in the CRL at once.
    Revoke {
        /// Agent id or hostname.
        agent: String,
        /// The certificate's serial (hex, from `certs ls`).
        serial: String,
        /// Why (kept with the certificate and in the audit log).
        #[arg(long)]
        reason: String,
    },
    /// Print the hub's CA certificate (PEM), or the current CRL with --crl (DER).
    Ca {
        /// The CRL instead of the certificate.
        #[arg(long)]
        crl: bool,
        /// Write to this file instead of stdout.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
    /// Integrity anomalies: certificates used where they should not be, bad signatures.
    Anomalies {
        /// Resolved ones too.
        #[arg(long)]
        all: bool,
    },
    /// Mark an integrity anomaly resolved (operator).
    Resolve {
        /// Anomaly id.
        id: String,
    },
}

const CERTS: &[super::Column] = &[
    ("serial", "/serial"),
    ("sha-256", "/fingerprint_sha256"),
    ("not after", "/not_after"),
    ("revoked", "/revoked_at"),
    ("reason", "/revoke_reason"),
    ("last seen", "/last_seen_at"),
];
const ANOMALIES: &[super::Column] = &[
    ("id", "/id"),
    ("kind", "/kind"),
    ("agent", "/agent_id"),
    ("detail", "/detail"),
    ("created", "/created_at"),
    ("resolved", "/resolved_at"),
];

/// A serial as the API takes it: hex digits only, else it cannot name a certificate.
fn serial(s: &str) -> Result<String, Failure> {
    let s = s.trim().trim_start_matches("0x").replace(':', "");
    if s.is_empty() || s.len() > 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Failure {
            code: 3,
            message: format!("`{s}` is not a certificate serial (hex, from `trusthub certs ls`)"),
        });
    }
    Ok(s.to_ascii_lowercase())
}

/// `trusthub certs …`.
pub async fn certs(cmd: CertsCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        CertsCmd::Ls { agent } => print(
            &c.get(&format!(
                "/agents/{}/client-certs",
                named(&c, &agent, AGENT).await?
            ))
            .await?,
            CERTS,
            g.output,
        ),
        CertsCmd::Revoke {
            agent,
            serial: s,
            reason,
        } => {
            let v = c
                .json(
                    Method::POST,
                    &format!(
                        "/agents/{}/client-certs/{}/revoke",
                        named(&c, &agent, AGENT).await?,
                        serial(&s)?
                    ),
                    &json!({"reason": reason}),
                )
                .await?;
            print(&v, CERTS, g.output)
        }
        CertsCmd::Ca { crl, out } => {
            let path = if crl {
                "/agents/ca.crl"
            } else {
                "/agents/ca-cert"
            };
            let body = c.bytes(path).await?;
            match out {
                Some(file) => {
                    std::fs::write(&file, &body)
                        .map_err(|e| Failure::error(format!("{}: {e}", file.display())))?;
                    eprintln!("wrote {} ({} bytes)", file.display(), body.len());
                    Ok(())
                }
                None if crl && std::io::IsTerminal::is_terminal(&std::io::stdout()) => Err(
                    Failure::error("the CRL is binary (DER): give --out <file> or redirect stdout"),
                ),
                None => std::io::stdout()
                    .lock()
                    .write_all(&body)
                    .map_err(|e| Failure::error(format!("stdout: {e}"))),
            }
        }
        CertsCmd::Anomalies { all } => print(
            &c.get(&format!(
                "/integrity-anomalies?include_resolved={}",
                u8::from(all)
            ))
            .await?,
            ANOMALIES,
            g.output,
        ),
        CertsCmd::Resolve { id: a } => {
            c.send(c.request(
                Method::PATCH,
                &format!("/integrity-anomalies/{}/resolve", id(&a)?),
            ))
            .await?;
            eprintln!("resolved anomaly {a}");
            Ok(())
        }
    }
}
