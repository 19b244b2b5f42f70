//! Files the agent keeps: written whole or not at all, readable by root alone.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes a file atomically (temp file, fsync, rename) with mode 600.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), (PathBuf, std::io::Error)> {
    let io = |p: &Path| {
        let p = p.to_owned();
        move |e| (p, e)
    };
    let tmp = path.with_extension("tmp");
    {
        // Created with mode 600, never wider and then narrowed (a stale temp file of another
        // mode is removed first, since `mode` applies only to a new file).
        let _ = std::fs::remove_file(&tmp);
        let mut f = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)
                .map_err(io(&tmp))?
        };
        f.write_all(bytes).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
    }
    std::fs::rename(&tmp, path).map_err(io(path))
}
