//! Host metrics read straight from `/proc` and `statvfs` (CONTRACT 4 sample names): CPU in
//! total and per core, load, memory and swap, disk usage per mount and I/O per device,
//! network per interface, process count and uptime. Disk I/O is reported per whole disk and
//! per mounted partition (labelled with its mount point). Rates and CPU percentages come from the
//! difference to the previous collection, so the first collection has none of them.

use std::collections::{BTreeMap, HashMap};
use time::OffsetDateTime;
use trusthub_core::agent::MetricSample;

/// Filesystem types worth reporting (real storage, not kernel pseudo filesystems).
const REAL_FS: [&str; 12] = [
    "ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "vfat", "exfat", "ntfs", "f2fs", "overlay",
    "fuseblk",
];

#[derive(Debug, Clone, Copy, Default)]
struct CpuTimes {
    busy: u64,
    total: u64,
}

/// Stateful collector (keeps the previous counters for rates).
#[derive(Debug, Default)]
pub struct Collector {
    cpu: HashMap<String, CpuTimes>,
    disk: HashMap<String, (u64, u64)>,
    net: HashMap<String, (u64, u64)>,
    last: Option<std::time::Instant>,
}

fn sample(
    out: &mut Vec<MetricSample>,
    name: &str,
    ts: OffsetDateTime,
    value: f64,
    labels: &[(&str, &str)],
) {
    if value.is_finite() {
        out.push(MetricSample {
            name: name.to_owned(),
            ts,
            value,
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
        });
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

impl Collector {
    /// One collection at `ts`.
    pub fn collect(&mut self, ts: OffsetDateTime) -> Vec<MetricSample> {
        let mut out = Vec::with_capacity(64);
        let now = std::time::Instant::now();
        let elapsed = self
            .last
            .map(|l| now.duration_since(l).as_secs_f64())
            .filter(|e| *e > 0.0);
        self.last = Some(now);
        self.cpu(&mut out, ts);
        self.load_mem_uptime(&mut out, ts);
        self.disks(&mut out, ts, elapsed);
        self.network(&mut out, ts, elapsed);
        let procs = std::fs::read_dir("/proc")
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .bytes()
                            .all(|b| b.is_ascii_digit())
                    })
                    .count()
            })
            .unwrap_or(0);
        sample(&mut out, "processes.count", ts, procs as f64, &[]);
        out
    }

    fn cpu(&mut self, out: &mut Vec<MetricSample>, ts: OffsetDateTime) {
        for line in read("/proc/stat").lines().filter(|l| l.starts_with("cpu")) {
            let mut parts = line.split_whitespace();
            let Some(name) = parts.next() else { continue };
            let v: Vec<u64> = parts.filter_map(|x| x.parse().ok()).collect();
            if v.len() < 4 {
                continue;
            }
            // user nice system idle iowait irq softirq steal
            let idle = v[3] + v.get(4).copied().unwrap_or(0);
            let total: u64 = v.iter().take(8).sum();
            let now = CpuTimes {
                busy: total - idle,
                total,
            };
            if let Some(prev) = self.cpu.insert(name.to_owned(), now) {
                let dt = now.total.saturating_sub(prev.total);
                if dt > 0 {
                    let pct = 100.0 * now.busy.saturating_sub(prev.busy) as f64 / dt as f64;
                    match name.strip_prefix("cpu").filter(|c| !c.is_empty()) {
                        None => sample(out, "cpu.percent", ts, pct, &[]),
                        Some(core) => sample(out, "cpu.percent", ts, pct, &[("core", core)]),
                    }
                }
            }
        }
    }

    fn load_mem_uptime(&self, out: &mut Vec<MetricSample>, ts: OffsetDateTime) {
        let load: Vec<f64> = read("/proc/loadavg")
            .split_whitespace()
            .take(3)
            .filter_map(|x| x.parse().ok())
            .collect();
        for (name, v) in ["load.1", "load.5", "load.15"].iter().zip(load) {
            sample(out, name, ts, v, &[]);
        }
        let meminfo = read("/proc/meminfo");
        let kib = |key: &str| {
            meminfo
                .lines()
                .find(|l| l.starts_with(key) && l[key.len()..].starts_with(':'))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
                .map(|v| v * 1024.0)
        };
        if let (Some(total), Some(avail)) = (kib("MemTotal"), kib("MemAvailable")) {
            sample(out, "mem.total_bytes", ts, total, &[]);
            sample(out, "mem.available_bytes", ts, avail, &[]);
            sample(out, "mem.used_bytes", ts, total - avail, &[]);
            sample(
                out,
                "mem.used_percent",
                ts,
                100.0 * (total - avail) / total.max(1.0),
                &[],
            );
        }
        if let (Some(total), Some(free)) = (kib("SwapTotal"), kib("SwapFree")) {
            sample(out, "swap.total_bytes", ts, total, &[]);
            sample(out, "swap.used_bytes", ts, total - free, &[]);
        }
        if let Some(up) = read("/proc/uptime")
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        {
            sample(out, "uptime.seconds", ts, up, &[]);
        }
    }

    fn disks(&mut self, out: &mut Vec<MetricSample>, ts: OffsetDateTime, elapsed: Option<f64>) {
        let mut seen = std::collections::HashSet::new();
        for line in read("/proc/mounts").lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 3 || !REAL_FS.contains(&f[2]) || !seen.insert(f[1].to_owned()) {
                continue;
            }
            let mount = f[1].replace("\\040", " ");
            if let Ok(st) = rustix::fs::statvfs(mount.as_str()) {
                let frsize = st.f_frsize as f64;
                let total = st.f_blocks as f64 * frsize;
                let avail = st.f_bavail as f64 * frsize;
                let used = (st.f_blocks.saturating_sub(st.f_bfree)) as f64 * frsize;
                sample(out, "disk.total_bytes", ts, total, &[("mount", &mount)]);
                sample(out, "disk.used_bytes", ts, used, &[("mount", &mount)]);
                sample(out, "disk.free_bytes", ts, avail, &[("mount", &mount)]);
                if total > 0.0 {
                    sample(
                        out,
                        "disk.used_percent",
                        ts,
                        100.0 * used / (used + avail).max(1.0),
                        &[("mount", &mount)],
                    );
                }
            }
        }
        // Block device -> mount point, for I/O per mount.
        let mounted: HashMap<String, String> = read("/proc/mounts")
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let dev = f.next()?.strip_prefix("/dev/")?;
                Some((dev.to_owned(), f.next()?.replace("\\040", " ")))
            })
            .collect();
        for line in read("/proc/diskstats").lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 10 {
                continue;
            }
            let dev = f[2];
            // Whole disks, and partitions that are mounted; no loop or ram devices.
            let partition =
                std::path::Path::new(&format!("/sys/class/block/{dev}/partition")).exists();
            let mount = mounted.get(dev);
            if (partition && mount.is_none()) || dev.starts_with("loop") || dev.starts_with("ram") {
                continue;
            }
            let (rd, wr) = (
                f[5].parse::<u64>().unwrap_or(0) * 512,
                f[9].parse::<u64>().unwrap_or(0) * 512,
            );
            if let (Some(prev), Some(dt)) = (self.disk.insert(dev.to_owned(), (rd, wr)), elapsed) {
                let mut labels = vec![("device", dev)];
                if let Some(m) = mount {
                    labels.push(("mount", m.as_str()));
                }
                sample(
                    out,
                    "disk.read_bytes_per_sec",
                    ts,
                    rd.saturating_sub(prev.0) as f64 / dt,
                    &labels,
                );
                sample(
                    out,
                    "disk.write_bytes_per_sec",
                    ts,
                    wr.saturating_sub(prev.1) as f64 / dt,
                    &labels,
                );
            }
        }
    }

    fn network(&mut self, out: &mut Vec<MetricSample>, ts: OffsetDateTime, elapsed: Option<f64>) {
        for line in read("/proc/net/dev").lines().skip(2) {
            let Some((iface, rest)) = line.split_once(':') else {
                continue;
            };
            let iface = iface.trim();
            let f: Vec<u64> = rest
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            if f.len() < 9 || iface == "lo" {
                continue;
            }
            let (rx, tx) = (f[0], f[8]);
            if let (Some(prev), Some(dt)) = (self.net.insert(iface.to_owned(), (rx, tx)), elapsed) {
                sample(
                    out,
                    "net.rx_bytes_per_sec",
                    ts,
                    rx.saturating_sub(prev.0) as f64 / dt,
                    &[("interface", iface)],
                );
                sample(
                    out,
                    "net.tx_bytes_per_sec",
                    ts,
                    tx.saturating_sub(prev.1) as f64 / dt,
                    &[("interface", iface)],
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(samples: &[MetricSample], name: &str) -> Option<f64> {
        samples
            .iter()
            .find(|s| s.name == name && s.labels.is_empty())
            .map(|s| s.value)
    }

    #[test]
    fn collectors_on_this_host_return_plausible_values() {
        let mut c = Collector::default();
        let first = c.collect(OffsetDateTime::now_utc());
        assert!(
            value(&first, "cpu.percent").is_none(),
            "no rate on the first collection"
        );
        let total = value(&first, "mem.total_bytes").expect("memory");
        let used = value(&first, "mem.used_bytes").expect("memory");
        assert!(total > 64.0 * 1024.0 * 1024.0 && used > 0.0 && used < total);
        assert!(value(&first, "uptime.seconds").expect("uptime") > 0.0);
        assert!(value(&first, "processes.count").expect("procs") >= 1.0);
        assert!(value(&first, "load.1").expect("load") >= 0.0);
        assert!(
            first.iter().any(|s| s.name == "disk.total_bytes"
                && s.labels.contains_key("mount")
                && s.value > 0.0),
            "a mounted disk"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
        let second = c.collect(OffsetDateTime::now_utc());
        let cpu = value(&second, "cpu.percent").expect("cpu after two collections");
        assert!((0.0..=100.0).contains(&cpu));
        let cores = second
            .iter()
            .filter(|s| s.name == "cpu.percent" && s.labels.contains_key("core"))
            .count();
        assert!(cores >= 1, "per-core figures");
        for s in &second {
            trusthub_core::agent::check_sample(s).expect("every sample passes the hub's checks");
        }
    }
}
