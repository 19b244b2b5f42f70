//! The on-disk spool: every batch is written here before it is sent and deleted only after
//! the hub answered 202, so nothing is lost while the hub is unreachable or the agent
//! restarts. Files are named `<unix ms>-<batch id>.json` and drain oldest first. The spool
//! is bounded: past the limit the oldest batches are dropped, and the count is logged.

use crate::state::{StateError, write_private};
use std::path::{Path, PathBuf};

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
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.dir)
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
}
