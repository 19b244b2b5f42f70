//! What the load generators share.

/// A memory figure of a process, in MiB, from `/proc/<pid>/status` (`pid` `None`: this
/// process): `field` is `VmRSS` (now) or `VmHWM` (peak).
pub fn proc_mib(pid: Option<u32>, field: &str) -> Option<u64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".into(),
    };
    let status = std::fs::read_to_string(path).ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb / 1024)
}
