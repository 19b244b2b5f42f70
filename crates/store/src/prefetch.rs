//! Keeps the part of the SQLite WAL file that the writer is about to overwrite in the OS page
//! cache.
//!
//! A WAL frame is a 24-byte header plus one page, so frames never line up with the OS pages
//! of the file: every frame the writer appends ends in an OS page that the next frame starts
//! in. When that page is no longer cached, the kernel must read it from disk before the write
//! can return, and that read happens inside the ingest writer's commit. Once the log starts
//! over, the writer overwrites pages it last wrote one pass ago (seconds under load), and
//! proactive reclaim of clean page cache (DAMON on this project's VMs, balloon drivers,
//! cgroup reclaim) evicts exactly such pages: measured, the writer read 3–6 MB per minute from
//! disk and stalled for 150–970 ms when the disk was busy, with reclaim switched off it read
//! nothing (bench/RESULTS.md). A thread therefore reads the next few MiB ahead of the writer's
//! position, off the commit path, after each background checkpoint pass.
//!
//! The same thread reserves the disk blocks of a full-size WAL once the log has grown past an
//! eighth of it, i.e. under sustained writes only (`fallocate` without changing the file's
//! size, so SQLite sees nothing; a lightly used hub keeps a small WAL). While the file
//! still grew, each background checkpoint's sync allocated its new blocks with the last page
//! locked, and a cold block bitmap read from a busy disk held the writer's next append for up
//! to 550 ms.

use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

/// Bytes kept read ahead of the writer: about 0.4 s of the heaviest sustained ingest measured
/// (40 MB/s of WAL), twice the 200 ms between two checkpoint passes. 64 MiB let the writer
/// read more from disk, not less (pages read too early were evicted again).
const AHEAD: u64 = 16 << 20;

/// Size of the WAL file header, before the first frame.
const WAL_HEADER: u64 = 32;

/// Size of a frame's header, before its page.
const FRAME_HEADER: u64 = 24;

/// Where the writer appends next, sent after each checkpoint pass.
#[derive(Debug)]
pub(crate) struct WalPrefetch {
    position: SyncSender<u64>,
    frame: u64,
}

impl WalPrefetch {
    /// Starts the reading thread for `<database>-wal`; `None` if no thread could be started
    /// (then nothing is read ahead, which only costs latency).
    /// `frames` is the size of the log at which the writer starts it over.
    pub(crate) fn start(database: PathBuf, page_size: u64, frames: u64) -> Option<WalPrefetch> {
        let mut wal = database.into_os_string();
        wal.push("-wal");
        let (position, next) = sync_channel(4);
        let frame = FRAME_HEADER + page_size;
        // A pass over the log overshoots the restart size by what the writer appends while
        // the checkpoint chases its end: an eighth more.
        let full = WAL_HEADER + frames * frame / 8 * 9;
        std::thread::Builder::new()
            .name("wal-prefetch".into())
            .spawn(move || read_ahead(PathBuf::from(wal), full, next))
            .map_err(|e| tracing::warn!(error = %e, "cannot start the WAL prefetch thread"))
            .ok()?;
        Some(WalPrefetch { position, frame })
    }

    /// The log holds `frames` frames: the writer appends after them.
    pub(crate) fn frames(&self, frames: i64) {
        let at = WAL_HEADER + frames.max(0) as u64 * self.frame;
        // A full queue means the thread is still reading; it catches up with the next pass.
        if let Err(TrySendError::Disconnected(_)) = self.position.try_send(at) {
            tracing::debug!("WAL prefetch thread gone");
        }
    }
}

/// What has been read in the current pass over the log.
#[derive(Debug, Default)]
struct Ahead {
    /// Read up to here.
    done: u64,
}

impl Ahead {
    /// The writer appends at `at`: the range still to read, and whether the log started over
    /// since the last position (the file may then be a new one: open it again).
    fn next(&mut self, at: u64) -> (std::ops::Range<u64>, bool) {
        let restarted = at < self.done.saturating_sub(AHEAD);
        if restarted {
            self.done = 0;
        }
        let range = self.done.max(at)..at + AHEAD;
        self.done = self.done.max(range.end);
        (range, restarted)
    }
}

/// Reserves `len` bytes of blocks for the WAL. A failure (a file system without `fallocate`,
/// a full disk) only leaves the growth as it was.
fn reserve(wal: &File, len: u64) {
    if let Err(e) = rustix::fs::fallocate(wal, rustix::fs::FallocateFlags::KEEP_SIZE, 0, len) {
        tracing::debug!(error = %e, "cannot reserve the WAL's blocks");
    }
}

fn read_ahead(wal: PathBuf, full: u64, next: Receiver<u64>) {
    let mut buf = vec![0u8; 256 << 10];
    let mut file: Option<File> = None;
    let mut ahead = Ahead::default();
    while let Ok(mut at) = next.recv() {
        while let Ok(later) = next.try_recv() {
            at = later;
        }
        let (range, restarted) = ahead.next(at);
        if restarted {
            file = None;
        }
        let f = match &file {
            Some(f) => f,
            None => match std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&wal)
            {
                Ok(f) => file.insert(f),
                // No WAL file yet: nothing to keep cached.
                Err(_) => continue,
            },
        };
        // Reserved once per file: a pass over the log finds the blocks already there.
        if at >= full / 8 && f.metadata().is_ok_and(|m| m.blocks() * 512 < full) {
            reserve(f, full);
        }
        let mut from = range.start;
        while from < range.end {
            let len = buf.len().min((range.end - from) as usize);
            match f.read_at(&mut buf[..len], from) {
                // The end of the file: the writer will extend it.
                Ok(0) | Err(_) => break,
                Ok(n) => from += n as u64,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_part_once_per_pass_and_the_start_again_after_a_restart() {
        let mut a = Ahead::default();
        assert_eq!(a.next(32), (32..32 + AHEAD, false));
        // The writer moved 8 MiB: only what is new ahead of it is read.
        let at = 32 + (8 << 20);
        assert_eq!(a.next(at), (32 + AHEAD..at + AHEAD, false));
        // No progress: nothing to read.
        let (r, _) = a.next(at);
        assert!(r.is_empty());
        // Far ahead (a pass was missed): from the new position.
        let far = 200 << 20;
        assert_eq!(a.next(far), (far..far + AHEAD, false));
        // The log started over.
        assert_eq!(a.next(32), (32..32 + AHEAD, true));
    }

    #[test]
    fn positions_are_frame_sized() {
        let (position, next) = sync_channel(4);
        let p = WalPrefetch {
            position,
            frame: FRAME_HEADER + 4096,
        };
        p.frames(0);
        p.frames(3);
        assert_eq!(next.try_recv(), Ok(32));
        assert_eq!(next.try_recv(), Ok(32 + 3 * 4120));
    }
}
