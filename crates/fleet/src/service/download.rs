//! The agent build this hub serves to new hosts (CONTRACT 27): where it is, and its checksum.

use sha2::{Digest, Sha256};
use std::path::{Path as FsPath, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;
use tokio::io::AsyncReadExt;
use trusthub_platform::error::ApiError;
use trusthub_platform::settings::Settings;

/// The file name a host downloads: `trusthub-agent-linux-<arch>` for this hub's architecture.
pub fn download_name() -> String {
    format!("trusthub-agent-linux-{}", std::env::consts::ARCH)
}

/// The agent binary this hub serves (a part of the state), and its checksum once computed.
#[derive(Debug)]
pub struct AgentDownload {
    path: Option<PathBuf>,
    /// `(length, modified, sha256 hex)` of the file as last hashed: a replaced binary is
    /// hashed again.
    hashed: Mutex<Option<(u64, Option<SystemTime>, String)>>,
}

impl AgentDownload {
    /// `TRUSTHUB_AGENT_BINARY`; else `trusthub-agent` beside the running executable; else
    /// the running executable itself when it is the `trusthub` binary (which runs as the
    /// agent when installed under the name `trusthub-agent`); else nothing to serve.
    pub fn locate(settings: &Settings) -> AgentDownload {
        let exe = std::env::current_exe().ok();
        let path = crate::settings::of(settings)
            .agent_binary
            .clone()
            .or_else(|| {
                let exe = exe?;
                let sibling = exe.with_file_name("trusthub-agent");
                if sibling.is_file() {
                    Some(sibling)
                } else if exe.file_name().is_some_and(|n| n == "trusthub") {
                    Some(exe)
                } else {
                    None
                }
            });
        AgentDownload {
            path,
            hashed: Mutex::new(None),
        }
    }

    /// The file served, if any.
    pub fn path(&self) -> Option<&FsPath> {
        self.path.as_deref()
    }

    pub(crate) fn file(&self) -> Result<&FsPath, ApiError> {
        self.path.as_deref().ok_or_else(|| {
            ApiError::Unavailable(
                "this hub has no agent binary to serve: set TRUSTHUB_AGENT_BINARY to a \
                 trusthub-agent build (cargo build --release -p trusthub-agent)"
                    .into(),
            )
        })
    }

    /// The SHA-256 of the served file (hashed once per version of the file).
    pub(crate) async fn sha256(&self) -> Result<String, ApiError> {
        let path = self.file()?.to_owned();
        let meta = tokio::fs::metadata(&path)
            .await
            .map_err(unreadable(&path))?;
        let key = (meta.len(), meta.modified().ok());
        if let Ok(held) = self.hashed.lock()
            && let Some((len, modified, sum)) = held.as_ref()
            && (*len, *modified) == key
        {
            return Ok(sum.clone());
        }
        let mut file = tokio::fs::File::open(&path)
            .await
            .map_err(unreadable(&path))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = file.read(&mut buf).await.map_err(unreadable(&path))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        let sum = data_encoding::HEXLOWER.encode(&hasher.finalize());
        if let Ok(mut held) = self.hashed.lock() {
            *held = Some((key.0, key.1, sum.clone()));
        }
        Ok(sum)
    }
}

pub(crate) fn unreadable(path: &FsPath) -> impl Fn(std::io::Error) -> ApiError + '_ {
    move |e| {
        tracing::error!(path = %path.display(), error = %e, "the agent binary cannot be read");
        ApiError::Unavailable("the agent binary this hub serves cannot be read".into())
    }
}
