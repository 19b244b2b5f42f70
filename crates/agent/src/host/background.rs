//! Work that walks the disk — dependency discovery, configuration hashing, compliance
//! checks — on a thread of its own at nice 10, so that a host busy with its real work hardly
//! notices the agent's scans. Linux derives a thread's best-effort I/O priority from its nice
//! value when none was set (level 6 of 0–7 at nice 10), so the walk yields the disk as well.
//! The thread ends with its work: no other work (and no program run for an action, which
//! would inherit the priority) runs on it.

/// The nice value of scans.
pub const NICE: i32 = 10;

/// Runs `work` on a new thread named `name` at [`NICE`]; its result comes through the
/// receiver (closed if the work panicked or no thread could start).
pub fn run<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> tokio::sync::oneshot::Receiver<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let started = std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            // Who = 0 is the calling thread on Linux (nice values are per thread there); an
            // agent started nicer than this stays so.
            let now = rustix::process::getpriority_process(None).unwrap_or(0);
            if now < NICE
                && let Err(e) = rustix::process::setpriority_process(None, NICE)
            {
                tracing::debug!(error = %e, "cannot lower the scan's priority");
            }
            let _ = tx.send(work());
        });
    if let Err(e) = started {
        tracing::warn!(error = %e, "cannot start a scan thread");
    }
    rx
}

/// [`run`] for work whose result it leaves somewhere itself.
pub fn start(name: &str, work: impl FnOnce() + Send + 'static) {
    drop(run(name, work));
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn scans_run_niced_on_their_own_thread() {
        let here = std::thread::current().id();
        let before = rustix::process::getpriority_process(None).expect("nice");
        let (nice, thread) = super::run("scan", || {
            (
                rustix::process::getpriority_process(None).expect("nice"),
                std::thread::current().id(),
            )
        })
        .await
        .expect("ran");
        assert_eq!(nice, super::NICE.max(before));
        assert_ne!(thread, here);
        // The caller's thread keeps its priority.
        assert_eq!(
            rustix::process::getpriority_process(None).expect("nice"),
            before
        );
    }
}
