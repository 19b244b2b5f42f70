//! The agent's state directory: its Ed25519 signing key, its registration (agent id, token,
//! the hub's pinned EAT key) and its spool. The directory is mode 700, every file 600.

use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What registration gave the agent.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Registration {
    /// Hub base URL (without `/api/v1`).
    pub hub: String,
    /// Agent id.
    pub agent_id: String,
    /// Bearer token (`tha_...`).
    pub agent_token: String,
    /// The hub's Ed25519 public key for action tokens, pinned at registration (hex).
    pub hub_eat_public_key: String,
    /// Push interval the hub asked for.
    pub ingest_interval_secs: i64,
    /// Inventory interval the hub asked for.
    pub inventory_interval_secs: i64,
}

/// Errors of the state directory.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file is there but unreadable.
    #[error("{0}: corrupt")]
    Corrupt(PathBuf),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StateError + '_ {
    move |source| StateError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The state directory.
#[derive(Debug, Clone)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// Opens (creating with mode 700) the directory.
    pub fn open(root: &Path) -> Result<StateDir, StateError> {
        std::fs::create_dir_all(root).map_err(io(root))?;
        set_mode(root, 0o700)?;
        let spool = root.join("spool");
        std::fs::create_dir_all(&spool).map_err(io(&spool))?;
        set_mode(&spool, 0o700)?;
        Ok(StateDir {
            root: root.to_owned(),
        })
    }

    /// The directory if it exists, without creating or changing anything (for `status`).
    pub fn existing(root: &Path) -> Result<Option<StateDir>, StateError> {
        match std::fs::metadata(root) {
            Ok(m) if m.is_dir() => Ok(Some(StateDir {
                root: root.to_owned(),
            })),
            Ok(_) => Err(io(root)(std::io::Error::other("not a directory"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(root)(e)),
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The spool directory.
    pub fn spool(&self) -> PathBuf {
        self.root.join("spool")
    }

    /// The signing key if one was made; never creates it.
    pub fn existing_signing_key(&self) -> Result<Option<SigningKey>, StateError> {
        let path = self.root.join("signing.key");
        match std::fs::read_to_string(&path) {
            Ok(hex) => {
                let bytes = data_encoding::HEXLOWER_PERMISSIVE
                    .decode(hex.trim().as_bytes())
                    .map_err(|_| StateError::Corrupt(path.clone()))?;
                let arr: [u8; 32] = bytes
                    .try_into()
                    .map_err(|_| StateError::Corrupt(path.clone()))?;
                Ok(Some(SigningKey::from_bytes(&arr)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&path)(e)),
        }
    }

    /// The signing key, generated on first use.
    pub fn signing_key(&self) -> Result<SigningKey, StateError> {
        let path = self.root.join("signing.key");
        match self.existing_signing_key()? {
            Some(key) => Ok(key),
            None => {
                let secret =
                    trusthub_core::secret::random_bytes::<32>().map_err(|e| StateError::Io {
                        path: path.clone(),
                        source: std::io::Error::other(e.to_string()),
                    })?;
                write_private(&path, data_encoding::HEXLOWER.encode(&secret).as_bytes())?;
                Ok(SigningKey::from_bytes(&secret))
            }
        }
    }

    /// The registration, if the agent registered.
    pub fn registration(&self) -> Result<Option<Registration>, StateError> {
        let path = self.root.join("registration.json");
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|_| StateError::Corrupt(path)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&path)(e)),
        }
    }

    /// Saves the registration.
    pub fn save_registration(&self, r: &Registration) -> Result<(), StateError> {
        let path = self.root.join("registration.json");
        let bytes = serde_json::to_vec_pretty(r).map_err(|_| StateError::Corrupt(path.clone()))?;
        write_private(&path, &bytes)
    }
}

/// Writes a file atomically with mode 600 ([`crate::host::files::write_private`]).
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), StateError> {
    crate::host::files::write_private(path, bytes)
        .map_err(|(p, source)| StateError::Io { path: p, source })
}

pub(crate) fn set_mode(path: &Path, mode: u32) -> Result<(), StateError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io(path))
}
