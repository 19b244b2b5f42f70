//! Tracked applications (SPEC 2.1, 3.1): the kinds, how their identifiers look, and how the
//! hub reads an app's observed state from what its agent last reported.
//!
//! The agent reports its systemd units, containers and processes with every batch; the hub
//! reduces them once, at ingest, to an [`ObservedMap`] of `kind:identifier -> running|stopped`
//! so that a liveness tick over many apps is a map lookup per app.

use crate::inventory::{Container, Process, SystemdUnit};
use crate::liveness::Observed;
use std::collections::BTreeMap;

/// The kinds of tracked app (wire values of `app_type`, and `type: http`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AppKind {
    /// A systemd unit, by unit name.
    Systemd,
    /// A Docker container, by container name.
    Docker,
    /// A Docker Compose service, as `<project>::<service>`.
    Compose,
    /// A process, by the absolute path of its binary.
    Process,
    /// An HTTP endpoint, checked by the agent or by the hub.
    Http,
    /// A TCP port (`tcp://host:port`), checked by the agent's host or the hub.
    Tcp,
    /// A TLS endpoint (`tls://host:port`, `https://host[:port]`): handshake and certificate
    /// expiry.
    Tls,
    /// A heartbeat (CONTRACT 32): the app calls its secret push URL within its interval and
    /// grace; nothing is probed.
    Push,
    /// A DNS lookup (`dns://<name>?type=A&server=<ip[:port]>`) whose answer must hold the
    /// expected values.
    Dns,
    /// An ICMP echo (`icmp://<host>`).
    Ping,
}

impl AppKind {
    /// Every kind, in wire order.
    pub const ALL: [AppKind; 10] = [
        AppKind::Systemd,
        AppKind::Docker,
        AppKind::Compose,
        AppKind::Process,
        AppKind::Http,
        AppKind::Tcp,
        AppKind::Tls,
        AppKind::Push,
        AppKind::Dns,
        AppKind::Ping,
    ];

    /// Kinds judged by checks at their own interval (CONTRACT 27) rather than by what an
    /// agent sees running.
    pub fn is_check(self) -> bool {
        matches!(
            self,
            AppKind::Http
                | AppKind::Tcp
                | AppKind::Tls
                | AppKind::Push
                | AppKind::Dns
                | AppKind::Ping
        )
    }

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            AppKind::Systemd => "systemd",
            AppKind::Docker => "docker",
            AppKind::Compose => "compose",
            AppKind::Process => "process",
            AppKind::Http => "http",
            AppKind::Tcp => "tcp",
            AppKind::Tls => "tls",
            AppKind::Push => "push",
            AppKind::Dns => "dns",
            AppKind::Ping => "ping",
        }
    }

    /// Parses a wire value.
    pub fn parse(s: &str) -> Option<AppKind> {
        AppKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Longest identifier accepted.
pub const MAX_IDENTIFIER: usize = 1024;

fn name_chars(s: &str, extra: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
}

/// Checks an absolute path: starts with `/`, no `..` component, no control characters.
pub fn absolute_path(p: &str) -> Result<(), String> {
    if !p.starts_with('/') {
        return Err("must be an absolute path".into());
    }
    if p.len() > MAX_IDENTIFIER {
        return Err(format!("must be at most {MAX_IDENTIFIER} characters"));
    }
    if p.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    if p.split('/').any(|c| c == "..") {
        return Err("must not contain `..`".into());
    }
    Ok(())
}

/// Checks an identifier of `kind` and returns its canonical form: a systemd unit without a
/// suffix gets `.service`; a container name loses Docker's leading `/`.
pub fn identifier(kind: AppKind, raw: &str) -> Result<String, String> {
    let s = raw.trim();
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.len() > MAX_IDENTIFIER {
        return Err(format!("must be at most {MAX_IDENTIFIER} characters"));
    }
    match kind {
        AppKind::Systemd => {
            if s.len() > 256 || !name_chars(s, ":-_.\\@") {
                return Err(
                    "must be a systemd unit name (letters, digits and : - _ . \\ @)".into(),
                );
            }
            Ok(if s.contains('.') {
                s.to_owned()
            } else {
                format!("{s}.service")
            })
        }
        AppKind::Docker => {
            let s = s.strip_prefix('/').unwrap_or(s);
            container_name(s).map(|()| s.to_owned())
        }
        AppKind::Compose => {
            let Some((project, service)) = s.split_once("::") else {
                return Err("must be <project>::<service>".into());
            };
            let project_ok = project
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && project
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_".contains(c));
            if !project_ok {
                return Err(
                    "the project must be lowercase letters, digits, - and _ (Compose's rule)"
                        .into(),
                );
            }
            container_name(service)
                .map_err(|m| format!("the service {m}"))
                .map(|()| s.to_owned())
        }
        AppKind::Process => absolute_path(s).map(|()| s.to_owned()),
        AppKind::Http => http_url(s).map(|()| s.to_owned()),
        AppKind::Tcp | AppKind::Tls => {
            crate::probe::host_port(kind.as_str(), s).map(|_| s.to_owned())
        }
        AppKind::Dns => crate::dns::parse_target(s).map(|t| t.text()),
        AppKind::Ping => icmp_host(s).map(|h| format!("icmp://{h}")),
        AppKind::Push => Err("push monitors have no target: the app calls its push URL".into()),
    }
}

/// The host of an `icmp://<host>` target (a name or an address, IPv6 in brackets or not).
pub fn icmp_host(s: &str) -> Result<String, String> {
    let host = s
        .trim()
        .strip_prefix("icmp://")
        .ok_or("must be icmp://<host>")?
        .trim_end_matches('/');
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<std::net::IpAddr>().is_ok() {
        return Ok(bare.to_owned());
    }
    let ok = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    if ok {
        Ok(host.to_ascii_lowercase())
    } else {
        Err(format!("`{host}` is not a host name or an IP address"))
    }
}

fn container_name(s: &str) -> Result<(), String> {
    let ok = s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.len() <= 255
        && name_chars(s, "_.-");
    if ok {
        Ok(())
    } else {
        Err("must start with a letter or digit and use only letters, digits, _ . -".into())
    }
}

/// [`http_url`] as a JSON Schema pattern (the document states the rule the hub keeps).
pub const HTTP_URL_PATTERN: &str = r"^https?://([^/?#\x00-\x20\x7f-\x9f]*@)?[^/?#@:\x00-\x20\x7f-\x9f][^/?#@\x00-\x20\x7f-\x9f]*([/?#][^\x00-\x20\x7f-\x9f]*)?$";

/// [`http_url`] without userinfo (`user:secret@`), as a JSON Schema pattern: the form of a
/// URL a credential never rides in (CONTRACT 30).
pub const HTTP_URL_NO_USERINFO_PATTERN: &str = r"^https?://[^/?#@:\x00-\x20\x7f-\x9f][^/?#@\x00-\x20\x7f-\x9f]*([/?#][^\x00-\x20\x7f-\x9f]*)?$";

/// Whether an http(s) URL names a user or a password (anything before an `@` in its
/// authority, even empty).
pub fn has_userinfo(s: &str) -> bool {
    let rest = s.split_once("://").map_or(s, |(_, r)| r);
    rest.split(['/', '?', '#'])
        .next()
        .is_some_and(|authority| authority.contains('@'))
}

/// Checks an `http`/`https` URL with a host.
pub fn http_url(s: &str) -> Result<(), String> {
    let rest = s
        .strip_prefix("http://")
        .or_else(|| s.strip_prefix("https://"))
        .ok_or("must be an http:// or https:// URL")?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    if host.is_empty() || host.starts_with(':') {
        return Err("must name a host".into());
    }
    if s.chars().any(|c| c.is_control() || c == ' ') {
        return Err("must not contain spaces or control characters".into());
    }
    if s.len() > 2048 {
        return Err("must be at most 2048 characters".into());
    }
    Ok(())
}

/// Link-local and cloud-metadata addresses (`169.254.0.0/16`, `fe80::/10`, AWS's
/// `fd00:ec2::254`, and IPv4-mapped forms): what an agent's HTTP checks never reach, though
/// they may reach the host's own loopback and private networks (CONTRACT 18).
pub fn metadata_address(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match canonical_ip(ip) {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => {
            (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6 == std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
        }
    }
}

/// An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) as the IPv4 address it is; others as
/// they are. Address rules judge this form.
pub fn canonical_ip(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, std::net::IpAddr::V4),
        v4 => v4,
    }
}

/// The address a URL's host names literally (`127.0.0.1`, `[::1]`), as a URL parser that
/// normalised it (WHATWG: `2130706433` and `0177.0.0.1` are already `127.0.0.1`) gives it.
pub fn literal_host_ip(host: &str) -> Option<std::net::IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// `kind:identifier -> running|stopped`, what an agent's last report shows.
pub type ObservedMap = BTreeMap<String, String>;

fn key(kind: AppKind, id: &str) -> String {
    format!("{}:{id}", kind.as_str())
}

/// Programs that run a script named on their command line.
pub const INTERPRETERS: [&str; 9] = [
    "sh", "bash", "dash", "zsh", "python", "python3", "perl", "ruby", "node",
];

/// Whether `program` (a path or a name) is an interpreter (`python3.11` counts as `python`).
pub fn is_interpreter(program: &str) -> bool {
    let base = program.rsplit('/').next().unwrap_or_default();
    let base = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    INTERPRETERS.contains(&base) || base == "python"
}

/// Reduces a report to an [`ObservedMap`]. `systemd` items carry `unit` and `active_state`;
/// `containers` carry `name`, `state` and the compose labels; `processes` carry `exe` and
/// `cmdline` (and `paths`: other absolute names the agent resolved). A compose service runs
/// when any of its containers runs. A process is listed by its binary (`exe`, without the
/// ` (deleted)` of a binary replaced by an upgrade, else the absolute `argv[0]`), by the
/// names in `paths`, and, for scripts, by the absolute path an interpreter runs.
pub fn observed_map(
    systemd: &[SystemdUnit],
    containers: &[Container],
    processes: &[Process],
) -> ObservedMap {
    let mut m = ObservedMap::new();
    let state = |running: bool| if running { "running" } else { "stopped" }.to_owned();
    for u in systemd {
        if let Some(unit) = &u.unit {
            let running = matches!(u.active_state.as_deref(), Some("active" | "reloading"));
            m.insert(key(AppKind::Systemd, unit), state(running));
        }
    }
    for c in containers {
        let running = c.state.as_deref() == Some("running");
        if let Some(name) = c.bare_name() {
            m.insert(key(AppKind::Docker, name), state(running));
        }
        if let (Some(p), Some(s)) = (&c.compose_project, &c.compose_service) {
            let k = key(AppKind::Compose, &format!("{p}::{s}"));
            if running || !m.contains_key(&k) {
                m.insert(k, state(running));
            }
        }
    }
    for p in processes {
        let exe = p.exe.as_deref().unwrap_or_default();
        let exe = exe.strip_suffix(" (deleted)").unwrap_or(exe);
        let mut argv = p.cmdline.as_deref().unwrap_or_default().split_whitespace();
        let argv0 = argv.next().unwrap_or_default();
        let mut paths = vec![exe, argv0];
        let program = if exe.is_empty() { argv0 } else { exe };
        if is_interpreter(program) {
            // The first argument that is not an option: the script.
            if let Some(script) = argv.find(|a| !a.starts_with('-')) {
                paths.push(script);
            }
        }
        // Other names the agent resolved on the host: a symlink the program was started
        // through (`redis-server` -> `redis-check-rdb`), a relative script made absolute.
        paths.extend(p.paths.iter().map(String::as_str));
        for path in paths.into_iter().filter(|p| p.starts_with('/')) {
            m.insert(key(AppKind::Process, path), state(true));
        }
    }
    m
}

/// The observed state of an app from its agent's map. `fresh` says whether the report is
/// recent enough to trust (the agent is not silent); a stale report observes nothing. A
/// process that is not in a fresh process list is stopped; any other kind missing from the
/// report is unknown (SPEC 3.1: no row for the identifier).
pub fn observe(kind: AppKind, identifier: &str, map: &ObservedMap, fresh: bool) -> Observed {
    if !fresh {
        return Observed::Unknown;
    }
    match map.get(&key(kind, identifier)).map(String::as_str) {
        Some("running") => Observed::Running,
        Some(_) => Observed::Stopped,
        None if kind == AppKind::Process => Observed::Stopped,
        None => Observed::Unknown,
    }
}

/// One HTTP check result an agent reports.
#[derive(Debug, Clone)]
pub struct CheckResult {
    /// App (must be an `http` app of the reporting agent, else ignored).
    pub app_id: uuid::Uuid,
    /// When.
    pub checked_at: time::OffsetDateTime,
    /// 2xx/3xx within the timeout.
    pub ok: bool,
    /// HTTP status, when one came.
    pub status_code: Option<i64>,
    /// Latency.
    pub latency_ms: Option<i64>,
    /// Why it failed.
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identifiers_are_checked_and_canonical_per_kind() {
        assert_eq!(
            identifier(AppKind::Systemd, "nginx").as_deref(),
            Ok("nginx.service")
        );
        assert_eq!(
            identifier(AppKind::Systemd, "getty@tty1.service").as_deref(),
            Ok("getty@tty1.service")
        );
        assert!(identifier(AppKind::Systemd, "rm -rf").is_err());
        assert_eq!(
            identifier(AppKind::Docker, "/web-1").as_deref(),
            Ok("web-1")
        );
        assert!(identifier(AppKind::Docker, "-x").is_err());
        assert_eq!(
            identifier(AppKind::Compose, "shop::db").as_deref(),
            Ok("shop::db")
        );
        assert!(identifier(AppKind::Compose, "shop:db").is_err());
        assert!(identifier(AppKind::Compose, "Shop::db").is_err());
        assert!(identifier(AppKind::Process, "/usr/bin/app").is_ok());
        assert!(identifier(AppKind::Process, "usr/bin/app").is_err());
        assert!(identifier(AppKind::Process, "/usr/../bin/sh").is_err());
        assert!(identifier(AppKind::Http, "https://example.com/health").is_ok());
        assert!(identifier(AppKind::Http, "ftp://example.com").is_err());
        assert!(identifier(AppKind::Http, "http:///x").is_err());
        assert!(identifier(AppKind::Http, "").is_err());
    }

    fn typed<T: serde::de::DeserializeOwned>(list: Vec<serde_json::Value>) -> Vec<T> {
        list.into_iter()
            .map(|v| serde_json::from_value(v).expect("typed"))
            .collect()
    }

    #[test]
    fn a_report_reduces_to_states_per_kind() {
        let m = observed_map(
            &typed(vec![
                json!({"unit": "nginx.service", "active_state": "active"}),
                json!({"unit": "cron.service", "active_state": "failed"}),
            ]),
            &typed(vec![
                json!({"name": "shop-db-1", "state": "running", "compose_project": "shop", "compose_service": "db"}),
                json!({"name": "shop-web-1", "state": "exited", "compose_project": "shop", "compose_service": "web"}),
                json!({"name": "shop-web-2", "state": "running", "compose_project": "shop", "compose_service": "web"}),
                json!({"name": "old", "state": "exited"}),
            ]),
            &typed(vec![
                json!({"exe": "/opt/app/bin/server", "cmdline": "/opt/app/bin/server --port 1"}),
                json!({"exe": "/usr/bin/python3.11", "cmdline": "python3 -u /srv/job.py"}),
                json!({"exe": "", "cmdline": "/usr/sbin/sshd -D"}),
                json!({"exe": "/usr/bin/cat", "cmdline": "cat /etc/passwd"}),
                json!({"exe": "/usr/bin/redis-check-rdb", "cmdline": "redis-server 127.0.0.1:6379",
                    "paths": ["/usr/bin/redis-server"]}),
                json!({"exe": "/usr/sbin/mosquitto (deleted)", "cmdline": "mosquitto -c /etc/m.conf"}),
            ]),
        );
        let o = |k, id: &str| observe(k, id, &m, true);
        assert_eq!(o(AppKind::Systemd, "nginx.service"), Observed::Running);
        assert_eq!(o(AppKind::Systemd, "cron.service"), Observed::Stopped);
        assert_eq!(o(AppKind::Systemd, "absent.service"), Observed::Unknown);
        assert_eq!(o(AppKind::Docker, "shop-db-1"), Observed::Running);
        assert_eq!(o(AppKind::Docker, "old"), Observed::Stopped);
        assert_eq!(o(AppKind::Compose, "shop::web"), Observed::Running);
        assert_eq!(o(AppKind::Compose, "shop::db"), Observed::Running);
        assert_eq!(o(AppKind::Compose, "shop::cache"), Observed::Unknown);
        assert_eq!(
            o(AppKind::Process, "/opt/app/bin/server"),
            Observed::Running
        );
        assert_eq!(o(AppKind::Process, "/srv/job.py"), Observed::Running);
        assert_eq!(o(AppKind::Process, "/usr/sbin/sshd"), Observed::Running);
        assert_eq!(o(AppKind::Process, "/etc/passwd"), Observed::Stopped);
        assert_eq!(
            o(AppKind::Process, "/usr/bin/redis-server"),
            Observed::Running
        );
        assert_eq!(
            o(AppKind::Process, "/usr/bin/redis-check-rdb"),
            Observed::Running
        );
        assert_eq!(
            o(AppKind::Process, "/usr/sbin/mosquitto"),
            Observed::Running
        );
        assert_eq!(o(AppKind::Process, "/opt/other"), Observed::Stopped);
        assert_eq!(
            observe(AppKind::Process, "/opt/app/bin/server", &m, false),
            Observed::Unknown
        );
    }
}
