//! The on-disk spool: every batch is written here before it is sent and deleted only after
//! the hub answered 202, so nothing is lost while the hub is unreachable or the agent
//! restarts. Files are named `<unix ms>-<batch id>.json` and drain oldest first. The spool
//! is bounded: past the limit the oldest batches are dropped, and the count is logged.
//!
//! A batch the hub refused for good (400, 413, 415, 422) is never deleted (CONTRACT 18): it
//! moves to `<state dir>/rejected/` with a `.why` file holding the hub's answer, so the data
//! and the reason stay on the host; `trusthub-agent status` shows them. The newest
//! [`REJECTED_KEPT`] are kept.

use crate::link::state::{StateError, write_private};
use std::path::{Path, PathBuf};

/// Refused batches kept in `rejected/`.
pub const REJECTED_KEPT: usize = 1000;

/// The spool directory.
#[derive(Debug, Clone)]
pub struct Spool {
    dir: PathBuf,
    max_bytes: u64,
}

impl Spool {
    /// A spool in `dir` holding at most `max_bytes`.
    pub fn new(dir: PathBuf, max_bytes: u64) -> Spool {
        Spool { dir, max_bytes }
    }

    /// Stores a batch durably; returns how many old batches were dropped to stay in bounds.
    pub fn push(&self, unix_ms: i64, batch_id: &str, body: &[u8]) -> Result<usize, StateError> {
        let path = self.dir.join(format!("{unix_ms:015}-{batch_id}.json"));
        write_private(&path, body)?;
        Ok(self.enforce_bound())
    }

    /// Spooled batches, oldest first.
    pub fn pending(&self) -> Vec<PathBuf> {
        json_files(&self.dir)
    }

    /// Where refused batches go: `rejected/` beside the spool.
    pub fn rejected_dir(&self) -> PathBuf {
        self.dir
            .parent()
            .map_or_else(|| self.dir.join("rejected"), |p| p.join("rejected"))
    }

    /// Moves a batch the hub refused for good to `rejected/`, with `why` beside it.
    pub fn reject(&self, path: &Path, why: &str) {
        let dir = self.rejected_dir();
        let moved = std::fs::create_dir_all(&dir)
            .and_then(|()| crate::link::state::set_mode(&dir, 0o700).map_err(std::io::Error::other))
            .and_then(|()| {
                let name = path.file_name().unwrap_or_default();
                let to = dir.join(name);
                std::fs::rename(path, &to)?;
                write_private(&to.with_extension("why"), why.as_bytes())
                    .map_err(std::io::Error::other)
            });
        if let Err(e) = moved {
            tracing::error!(path = %path.display(), error = %e, "cannot move a refused batch to rejected/; it stays in the spool");
            return;
        }
        // Bounded: the oldest refused batches go first.
        let kept = self.rejected();
        for (old, _) in kept.iter().take(kept.len().saturating_sub(REJECTED_KEPT)) {
            let _ = std::fs::remove_file(old);
            let _ = std::fs::remove_file(old.with_extension("why"));
        }
    }

    /// Refused batches, oldest first, each with the hub's reason.
    pub fn rejected(&self) -> Vec<(PathBuf, String)> {
        json_files(&self.rejected_dir())
            .into_iter()
            .map(|p| {
                let why = std::fs::read_to_string(p.with_extension("why")).unwrap_or_default();
                (p, why)
            })
            .collect()
    }

    /// Removes a batch the hub acknowledged.
    pub fn remove(&self, path: &Path) {
        if let Err(e) = std::fs::remove_file(path) {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove a sent batch from the spool");
        }
    }

    fn enforce_bound(&self) -> usize {
        let files = self.pending();
        let sizes: Vec<u64> = files
            .iter()
            .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
            .collect();
        let mut total: u64 = sizes.iter().sum();
        let mut dropped = 0;
        for (path, size) in files.iter().zip(sizes) {
            if total <= self.max_bytes {
                break;
            }
            if std::fs::remove_file(path).is_ok() {
                total -= size;
                dropped += 1;
            }
        }
        if dropped > 0 {
            tracing::warn!(
                dropped,
                max_bytes = self.max_bytes,
                "spool full: dropped the oldest batches"
            );
        }
        dropped
    }
}

/// The `.json` files of `dir`, sorted by name (oldest first, as named).
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spool_drains_oldest_first_and_drops_oldest_past_its_bound() {
        let dir =
            std::env::temp_dir().join(format!("spool-test-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let spool = Spool::new(dir.clone(), 250);
        assert_eq!(spool.push(2, "b", &[b'x'; 100]).expect("push"), 0);
        assert_eq!(spool.push(1, "a", &[b'x'; 100]).expect("push"), 0);
        let names: Vec<String> = spool
            .pending()
            .iter()
            .map(|p| {
                p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(
            names,
            vec!["000000000000001-a.json", "000000000000002-b.json"]
        );
        assert_eq!(
            spool.push(3, "c", &[b'x'; 100]).expect("push"),
            1,
            "oldest dropped"
        );
        assert_eq!(spool.pending().len(), 2);
        assert!(spool.pending()[0].ends_with("000000000000002-b.json"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&spool.pending()[0])
            .expect("meta")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_refused_batch_moves_to_rejected_with_its_reason() {
        let root =
            std::env::temp_dir().join(format!("spool-test-{}", uuid::Uuid::new_v4().simple()));
        let dir = root.join("spool");
        std::fs::create_dir_all(&dir).expect("dir");
        let spool = Spool::new(dir, 1 << 20);
        spool.push(1, "a", b"{\"metircs\": []}").expect("push");
        let path = spool.pending()[0].clone();
        spool.reject(&path, "422: metircs: unknown field");
        assert!(spool.pending().is_empty());
        let rejected = spool.rejected();
        assert_eq!(rejected.len(), 1);
        assert!(rejected[0].0.starts_with(root.join("rejected")));
        assert_eq!(rejected[0].1, "422: metircs: unknown field");
        assert_eq!(
            std::fs::read(&rejected[0].0).expect("kept"),
            b"{\"metircs\": []}"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
