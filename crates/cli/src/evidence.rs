//! `trusthub evidence verify`: checks an evidence pack offline (SPEC Appendix), with no
//! account and no network. One pass over the file: a thread inflates while this one parses
//! and hashes, so verification runs at the speed of the slower of the two.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, sync_channel};
use std::time::{Duration, Instant};
use trusthub_core::evidence::{Report, verify_tar};

const CHUNK: usize = 256 * 1024;

/// The inflated stream, chunk by chunk, from the inflating thread.
struct Chunks {
    rx: Receiver<std::io::Result<Vec<u8>>>,
    current: Vec<u8>,
    at: usize,
}

impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.current.len() {
            match self.rx.recv() {
                Ok(Ok(next)) => {
                    self.current = next;
                    self.at = 0;
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Counts the compressed bytes read, and draws the progress bar.
struct Progress<R> {
    inner: R,
    read: u64,
    total: u64,
    draw: bool,
    last: Instant,
    started: Instant,
}

impl<R: Read> Read for Progress<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.draw && (self.last.elapsed() > Duration::from_millis(100) || n == 0) {
            self.last = Instant::now();
            let frac = self.read as f64 / self.total.max(1) as f64;
            let width = 30;
            let filled = ((frac * width as f64) as usize).min(width);
            let secs = self.started.elapsed().as_secs_f64().max(1e-3);
            let _ = write!(
                std::io::stderr(),
                "\r[{}{}] {:>3.0}%  {:.0} of {:.0} MB  {:.0} MB/s ",
                "#".repeat(filled),
                " ".repeat(width - filled),
                frac * 100.0,
                self.read as f64 / 1e6,
                self.total as f64 / 1e6,
                self.read as f64 / 1e6 / secs
            );
        }
        Ok(n)
    }
}

/// Verifies `path`; prints a line per check unless `quiet`. True when everything matches.
pub fn verify(path: &Path, quiet: bool, expect_key: Option<&str>) -> bool {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            if !quiet {
                println!("FAIL archive: {}: {e}", path.display());
            }
            return false;
        }
    };
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let draw = !quiet && std::io::stderr().is_terminal() && total > 16 * 1024 * 1024;
    let (tx, rx) = sync_channel::<std::io::Result<Vec<u8>>>(16);
    let inflater = std::thread::spawn(move || {
        let progress = Progress {
            inner: std::io::BufReader::with_capacity(CHUNK, file),
            read: 0,
            total,
            draw,
            last: Instant::now(),
            started: Instant::now(),
        };
        let mut gz = flate2::read::GzDecoder::new(progress);
        loop {
            let mut buf = Vec::with_capacity(CHUNK);
            match (&mut gz).take(CHUNK as u64).read_to_end(&mut buf) {
                Ok(0) => return,
                Ok(_) if tx.send(Ok(buf)).is_ok() => {}
                Ok(_) => return,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
    });
    let report = verify_tar(
        Chunks {
            rx,
            current: Vec::new(),
            at: 0,
        },
        expect_key,
    );
    let _ = inflater.join();
    if draw {
        let _ = write!(std::io::stderr(), "\r\x1b[K");
    }
    if !quiet {
        print_report(&report, expect_key.is_some());
    }
    report.ok()
}

fn print_report(report: &Report, pinned: bool) {
    for c in &report.checks {
        println!(
            "{} {}: {}",
            if c.ok { "ok  " } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    match (&report.manifest, report.ok()) {
        (Some(m), true) => {
            println!(
                "pack {} verified: {} traces, {} spans, {} blobs, {} to {}",
                m.pack_id, m.trace_count, m.span_count, m.blob_count, m.period_start, m.period_end,
            );
            if pinned {
                println!("signed by the pinned key {}", m.signing_public_hex);
            } else {
                println!(
                    "signed by {} — key NOT pinned: the pack is intact, but anyone can sign a \
                     pack with a key of their own; compare it with the hub's published key \
                     (GET /api/v1/ai/evidence-key) or pass --expect-key",
                    m.signing_public_hex
                );
            }
        }
        _ => println!("pack verification FAILED"),
    }
}
