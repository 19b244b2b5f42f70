//! `trusthub remote-write …` (CONTRACT 26, 28): where the hub forwards metrics, each
//! receiver's lag and counts.

use super::{Global, client, print};
use crate::remote::client::Failure;
use crate::remote::output::Format;

/// `trusthub remote-write …`.
#[derive(Debug, clap::Subcommand)]
pub enum RemoteWriteCmd {
    /// Each receiver of TRUSTHUB_REMOTE_WRITE_URL: lag, samples sent, retried and dropped
    /// (by the hub process that answers), whether that process is the one sending, the
    /// last error.
    Status,
}

const COLUMNS: &[super::Column] = &[
    ("url", "/url"),
    ("lag s", "/lag_seconds"),
    ("sent", "/samples_sent"),
    ("retried", "/samples_retried"),
    ("dropped", "/samples_dropped"),
    ("sending", "/sending"),
    ("last error", "/last_error"),
];

/// `trusthub remote-write …`.
pub async fn remote_write(cmd: RemoteWriteCmd, g: &Global) -> Result<(), Failure> {
    match cmd {
        RemoteWriteCmd::Status => {
            let v = client(g)?.get("/remote-write").await?;
            if matches!(g.output, Format::Json | Format::Yaml) {
                return print(&v, &[], g.output);
            }
            if v["enabled"] != true {
                eprintln!("metrics are kept in the hub only: no TRUSTHUB_REMOTE_WRITE_URL is set");
            }
            print(&v["receivers"], COLUMNS, g.output)
        }
    }
}
