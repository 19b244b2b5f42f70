//! Checks that count at their own interval (CONTRACT 27): an http, tcp or tls monitor is
//! down after `retries + 1` consecutive failed checks and up again after `recoveries`
//! consecutive successes, whatever the liveness tick does — as Uptime Kuma counts its
//! retries. Which statuses an http check accepts is a list of codes and ranges.

use crate::liveness::Observed;

/// Default failures tolerated before down (down on the third failure).
pub const DEFAULT_RETRIES: i64 = 2;
/// Default successes needed to be up again.
pub const DEFAULT_RECOVERIES: i64 = 1;
/// Default probe timeout, seconds.
pub const DEFAULT_TIMEOUT_SECS: i64 = 10;
/// Default days before a certificate's expiry that warn.
pub const DEFAULT_TLS_MIN_DAYS: i64 = 14;
/// Shortest interval of a monitor, seconds.
pub const MIN_INTERVAL_SECS: i64 = 10;
/// Longest interval of a monitor, seconds.
pub const MAX_INTERVAL_SECS: i64 = 3600;

/// A monitor's counters and verdict before a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Consecutive failed checks.
    pub failures: i64,
    /// Consecutive successful checks.
    pub successes: i64,
    /// The verdict so far (`Unknown` before the first decision).
    pub observed: Observed,
}

/// A monitor's thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// Failures tolerated before down.
    pub retries: i64,
    /// Successes needed to be up.
    pub recoveries: i64,
}

/// Counts one check. A first success decides `Running` once `recoveries` successes are in;
/// failures decide `Stopped` on the `retries + 1`-th in a row; in between the verdict stays.
pub fn count(prev: Counts, ok: bool, t: Thresholds) -> Counts {
    if ok {
        let successes = prev.successes.saturating_add(1);
        let observed = if successes >= t.recoveries.max(1) {
            Observed::Running
        } else {
            prev.observed
        };
        Counts {
            failures: 0,
            successes,
            observed,
        }
    } else {
        let failures = prev.failures.saturating_add(1);
        let observed = if failures > t.retries.max(0) {
            Observed::Stopped
        } else {
            prev.observed
        };
        Counts {
            failures,
            successes: 0,
            observed,
        }
    }
}

/// Most of a body an http check reads to look for its keyword.
pub const MAX_BODY: usize = 1 << 20;

/// Whether an http check's answer `status` is accepted (`expected` as saved, `200-399` when
/// absent); refused, in the words both the hub and agents report.
pub fn judge_status(status: u16, expected: Option<&str>) -> Result<(), String> {
    let accepted = expected
        .and_then(|s| StatusSet::parse(s).ok())
        .unwrap_or_default();
    if accepted.accepts(status) {
        Ok(())
    } else {
        Err(format!("HTTP {status}, expected {}", accepted.text()))
    }
}

/// Whether the body (its first [`MAX_BODY`] bytes) holds `keyword`.
pub fn judge_body(body: &[u8], keyword: &str) -> Result<(), String> {
    if String::from_utf8_lossy(&body[..body.len().min(MAX_BODY)]).contains(keyword) {
        Ok(())
    } else {
        Err(format!("keyword `{keyword}` not found in the body"))
    }
}

/// The innermost cause of an error (what the OS or TLS said under a client's wrapping).
pub fn innermost(e: &dyn std::error::Error) -> String {
    let mut last = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        last = s.to_string();
        source = s.source();
    }
    last
}

/// A request that got no answer, in the words both the hub and agents report: timed out
/// after the check's timeout, or cannot connect with what the OS or TLS said.
pub fn request_failure(timed_out: bool, reason: &str, timeout_secs: u64) -> String {
    if timed_out {
        format!("timed out after {timeout_secs} s")
    } else {
        format!("cannot connect: {reason}")
    }
}

/// The statuses an http check accepts: `200-399` (the default), `200,204`, `200-299,301`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusSet(Vec<(u16, u16)>);

impl Default for StatusSet {
    fn default() -> Self {
        StatusSet(vec![(200, 399)])
    }
}

impl StatusSet {
    /// Parses a list of codes and ranges, each within 100..=599.
    pub fn parse(s: &str) -> Result<StatusSet, String> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim) {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let code = |x: &str| {
                x.parse::<u16>()
                    .ok()
                    .filter(|c| (100..=599).contains(c))
                    .ok_or_else(|| {
                        format!("`{part}` is not a status code or range (like 200-399 or 204)")
                    })
            };
            let (a, b) = (code(a)?, code(b)?);
            if a > b {
                return Err(format!("`{part}`: the range goes down"));
            }
            out.push((a, b));
        }
        if out.is_empty() || out.len() > 20 {
            return Err("must list 1 to 20 codes or ranges".into());
        }
        Ok(StatusSet(out))
    }

    /// Whether `status` is accepted.
    pub fn accepts(&self, status: u16) -> bool {
        self.0.iter().any(|(a, b)| (*a..=*b).contains(&status))
    }

    /// The canonical text (`200-399`).
    pub fn text(&self) -> String {
        self.0
            .iter()
            .map(|(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A `tcp://host:port` or `tls://host:port` target (`https://host[:port]` for tls): the host
/// and port, or why not.
pub fn host_port(kind: &str, s: &str) -> Result<(String, u16), String> {
    let rest = match kind {
        "tcp" => s.strip_prefix("tcp://").ok_or("must be tcp://host:port")?,
        _ => match s.strip_prefix("tls://") {
            Some(r) => r,
            None => {
                let r = s
                    .strip_prefix("https://")
                    .ok_or("must be tls://host:port or https://host[:port]")?;
                let hostport = r.split(['/', '?', '#']).next().unwrap_or_default();
                return split_host_port(hostport, Some(443));
            }
        },
    };
    if rest.contains(['/', '?', '#', '@']) {
        return Err(format!(
            "must be {kind}://host:port, nothing after the port"
        ));
    }
    split_host_port(rest, None)
}

fn split_host_port(s: &str, default: Option<u16>) -> Result<(String, u16), String> {
    if s.chars().any(|c| c.is_control() || c == ' ') {
        return Err("must not contain spaces or control characters".into());
    }
    let (host, port) = if let Some(r) = s.strip_prefix('[') {
        let (h, after) = r.split_once(']').ok_or("an IPv6 address needs its ]")?;
        (h, after.strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    if host.is_empty() || host.len() > 253 {
        return Err("must name a host".into());
    }
    let port = match (port, default) {
        (Some(p), _) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or("the port must be 1 to 65535")?,
        (None, Some(d)) => d,
        (None, None) => return Err("must name a port (host:port)".into()),
    };
    Ok((host.to_owned(), port))
}

/// Whole days from `now` until `not_after` (negative once expired).
pub fn days_left(not_after: time::OffsetDateTime, now: time::OffsetDateTime) -> i64 {
    (not_after - now).whole_days()
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Thresholds = Thresholds {
        retries: 2,
        recoveries: 1,
    };

    fn start() -> Counts {
        Counts {
            failures: 0,
            successes: 0,
            observed: Observed::Unknown,
        }
    }

    #[test]
    fn down_on_the_third_failure_and_up_on_the_first_success() {
        let mut c = start();
        c = count(c, true, T);
        assert_eq!(c.observed, Observed::Running);
        for (i, want) in [Observed::Running, Observed::Running, Observed::Stopped]
            .into_iter()
            .enumerate()
        {
            c = count(c, false, T);
            assert_eq!(c.observed, want, "failure {}", i + 1);
        }
        c = count(c, true, T);
        assert_eq!(c.observed, Observed::Running);
        assert_eq!((c.failures, c.successes), (0, 1));
    }

    #[test]
    fn recoveries_need_that_many_successes_and_a_failure_resets_them() {
        let t = Thresholds {
            retries: 0,
            recoveries: 3,
        };
        let mut c = count(start(), false, t);
        assert_eq!(c.observed, Observed::Stopped);
        c = count(c, true, t);
        c = count(c, true, t);
        assert_eq!(c.observed, Observed::Stopped);
        c = count(c, false, t);
        c = count(c, true, t);
        c = count(c, true, t);
        assert_eq!(c.observed, Observed::Stopped);
        c = count(c, true, t);
        assert_eq!(c.observed, Observed::Running);
    }

    #[test]
    fn status_sets_parse_and_judge() {
        let d = StatusSet::default();
        assert!(d.accepts(200) && d.accepts(302) && !d.accepts(404) && !d.accepts(500));
        let s = StatusSet::parse("200-299, 301,418").expect("set");
        assert_eq!(s.text(), "200-299,301,418");
        assert!(s.accepts(418) && s.accepts(204) && !s.accepts(302));
        for bad in ["", "abc", "99", "600", "300-200", "200-"] {
            assert!(StatusSet::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn targets_name_a_host_and_a_port() {
        assert_eq!(
            host_port("tcp", "tcp://db.example.com:5432"),
            Ok(("db.example.com".into(), 5432))
        );
        assert_eq!(host_port("tls", "tls://[::1]:993"), Ok(("::1".into(), 993)));
        assert_eq!(
            host_port("tls", "https://example.com/path"),
            Ok(("example.com".into(), 443))
        );
        assert_eq!(
            host_port("tls", "https://example.com:8443"),
            Ok(("example.com".into(), 8443))
        );
        for (k, bad) in [
            ("tcp", "tcp://host"),
            ("tcp", "tcp://host:0"),
            ("tcp", "tcp://:80"),
            ("tcp", "http://host:80"),
            ("tcp", "tcp://host:80/x"),
            ("tls", "tls://host"),
            ("tls", "ftp://host:21"),
        ] {
            assert!(host_port(k, bad).is_err(), "{bad}");
        }
    }
}
