//! `trusthub evidence …` against a hub: build and download signed evidence packs.

use super::*;

/// `trusthub evidence create|download` (`verify` works offline, with no hub).
#[derive(Debug, clap::Subcommand)]
pub enum EvidenceRemote {
    /// Make a signed pack of a period's LLM traces (operator).
    Create {
        /// Its first instant (RFC 3339).
        #[arg(long)]
        from: String,
        /// The instant after its last (RFC 3339).
        #[arg(long)]
        to: String,
        /// Include the redacted content blobs.
        #[arg(long)]
        blobs: bool,
    },
    /// Save a pack (`pack-<id>.tar.gz`, or --out).
    Download {
        /// Pack id.
        id: String,
        /// Where to write it.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
}

/// `trusthub evidence create|download`.
pub async fn evidence(cmd: EvidenceRemote, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        EvidenceRemote::Create { from, to, blobs } => {
            let v = c
                .json(
                    Method::POST,
                    "/ai/evidence-packs",
                    &json!({"period_start": from, "period_end": to, "include_blobs": blobs}),
                )
                .await?;
            print(
                &v,
                &[
                    ("pack", "/pack_id"),
                    ("traces", "/trace_count"),
                    ("spans", "/span_count"),
                    ("manifest sha256", "/manifest_sha256"),
                ],
                g.output,
            )
        }
        EvidenceRemote::Download { id: p, out } => {
            let p = id(&p)?;
            let out = out.unwrap_or_else(|| std::path::PathBuf::from(format!("pack-{p}.tar.gz")));
            let n = download(&c, &format!("/ai/evidence-packs/{p}/download"), &out).await?;
            eprintln!(
                "saved {} ({n} bytes); check it with `trusthub evidence verify {}`",
                out.display(),
                out.display()
            );
            Ok(())
        }
    }
}
