//! The host inventory (CONTRACT 4; SPEC 2.12), read from this host: OS and kernel, systemd
//! services, Docker containers (through the Docker socket; none when it is absent),
//! processes, installed packages (dpkg, rpm, apk), application dependencies from lockfiles
//! under configured project paths, users, sudo rules, SSH authorized keys (fingerprints
//! only), backup jobs, listening sockets and established connections with their processes
//! ([`crate::collect::sockets`]). Every part degrades to an empty list when the
//! host does not have it or the agent may not read it.

use crate::host::docker::containers;
use crate::host::procfs::{Proc, processes};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use time::OffsetDateTime;

fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Collects a full snapshot.
pub async fn collect(
    discovery: &crate::collect::deps::discover::Discovery,
    now: OffsetDateTime,
) -> Value {
    let users = passwd();
    let names: HashMap<u32, String> = users.iter().map(|u| (u.uid, u.name.clone())).collect();
    let procs = processes(&names);
    let (listening, connections) = crate::collect::sockets::report(&procs);
    // Walks of project trees and reads of binaries: off the async threads, niced.
    let deps = {
        let d = discovery.clone();
        crate::host::background::run("dependency scan", move || {
            crate::collect::deps::discover::dependencies(&d)
        })
        .await
        .map(Value::Array)
        // Never "no dependencies": the hub shows the discovery as not covered.
        .unwrap_or_else(|e| {
            json!([{"source": "dependency discovery", "source_kind": "installed",
                    "error": format!("the discovery stopped: {e}")}])
        })
    };
    json!({
        "collected_at": now.format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
        "os": os(),
        "systemd": systemd(Files::Fresh).await,
        "containers": containers().await,
        "processes": processes_json(&procs),
        "packages": packages().await,
        "app_dependencies": deps,
        "users": users.iter().map(|u| json!({"name": u.name, "uid": u.uid, "gid": u.gid, "home": u.home, "shell": u.shell})).collect::<Vec<_>>(),
        "sudo": sudo(),
        "ssh_keys": ssh_keys(&users),
        "backups": backups(),
        "listening": listening,
        "connections": connections,
        "patching": patching().await,
        "network": {"interfaces": interfaces().await},
        "cloud": cloud_identity(),
    })
}

/// The host's network interfaces and their addresses (CONTRACT 23: a cloud resource is
/// matched to this host by a private address): `ip -j addr`, else `/proc/net` (IPv4 from the
/// routing trie's local entries, without interface names; IPv6 from `if_inet6`).
async fn interfaces() -> Value {
    let out = tokio::process::Command::new("ip")
        .args(["-j", "addr", "show"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .await;
    if let Ok(out) = out
        && out.status.success()
        && let Ok(Value::Array(links)) = serde_json::from_slice::<Value>(&out.stdout)
    {
        return links
            .iter()
            .map(|l| {
                let addrs: Vec<&str> = l["addr_info"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|i| i["local"].as_str()).collect())
                    .unwrap_or_default();
                json!({"name": l["ifname"], "addrs": addrs})
            })
            .collect();
    }
    let mut by_name: Vec<(String, Vec<String>)> = Vec::new();
    let v4 = fib_trie_locals(&read("/proc/net/fib_trie"));
    if !v4.is_empty() {
        by_name.push(("ipv4".into(), v4));
    }
    for l in read("/proc/net/if_inet6").lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (Some(hex), Some(name)) = (f.first(), f.last()) else {
            continue;
        };
        let Ok(n) = u128::from_str_radix(hex, 16) else {
            continue;
        };
        let addr = std::net::Ipv6Addr::from(n).to_string();
        match by_name.iter_mut().find(|(n, _)| n == name) {
            Some((_, a)) => a.push(addr),
            None => by_name.push(((*name).to_owned(), vec![addr])),
        }
    }
    by_name
        .into_iter()
        .map(|(name, addrs)| json!({"name": name, "addrs": addrs}))
        .collect()
}

/// The host's own IPv4 addresses in `/proc/net/fib_trie` (`/32 host LOCAL` entries).
fn fib_trie_locals(trie: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut last = "";
    for l in trie.lines() {
        let t = l.trim_start();
        if let Some(ip) = t.strip_prefix("|-- ").or_else(|| t.strip_prefix("+-- ")) {
            last = ip.split('/').next().unwrap_or_default();
        } else if t.contains("/32 host LOCAL") && !out.iter().any(|o| o == last) {
            out.push(last.to_owned());
        }
    }
    out
}

/// Which cloud this host runs in and its instance id, where the firmware tells (no network
/// call): AWS Nitro's board asset tag (`i-…`), Azure's VM id (the SMBIOS UUID of a
/// `Microsoft Corporation` machine with Azure's chassis tag), else the vendor alone.
fn cloud_identity() -> Value {
    let dmi = |f: &str| read(format!("/sys/class/dmi/id/{f}")).trim().to_owned();
    let (vendor, asset, chassis) = (
        dmi("sys_vendor"),
        dmi("board_asset_tag"),
        dmi("chassis_asset_tag"),
    );
    if asset.starts_with("i-") && (vendor.contains("Amazon") || vendor.is_empty()) {
        return json!({"provider": "aws", "instance_id": asset});
    }
    if vendor == "Microsoft Corporation" && chassis == "7783-7084-3265-9085-8269-3286-77" {
        return json!({"provider": "azure", "instance_id": dmi("product_uuid").to_lowercase()});
    }
    let provider = match vendor.as_str() {
        "Hetzner" => "hetzner",
        "DigitalOcean" => "digitalocean",
        "Scaleway" => "scaleway",
        "Google" => "gcp",
        "OpenStack Foundation" | "OVH" => "ovh",
        _ => return Value::Null,
    };
    json!({"provider": provider, "instance_id": null})
}

/// The package managers this host has, and whether it waits for a reboot
/// (`/var/run/reboot-required` on Debian and Ubuntu with the packages that asked for it,
/// `needs-restarting -r` on dnf hosts).
async fn patching() -> Value {
    let on_path = crate::host::command::on_path;
    let managers: Vec<&str> = [
        ("apt", "apt-get"),
        ("dnf", "dnf"),
        ("apk", "apk"),
        ("zypper", "zypper"),
    ]
    .into_iter()
    .filter(|(_, program)| on_path(program))
    .map(|(m, _)| m)
    .collect();
    let mut reboot_required = Path::new("/var/run/reboot-required").exists();
    let packages: Vec<String> = read("/var/run/reboot-required.pkgs")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    if !reboot_required && on_path("needs-restarting") {
        // Exit 1: a reboot is needed; 0: it is not.
        reboot_required = tokio::process::Command::new("needs-restarting")
            .arg("-r")
            .kill_on_drop(true)
            .status()
            .await
            .is_ok_and(|s| s.code() == Some(1));
    }
    json!({"managers": managers, "reboot_required": reboot_required, "reboot_required_packages": packages})
}

/// What runs now, for the hub's liveness check (sent with every batch): the systemd
/// services and containers as `live`, and the process list.
pub async fn live() -> (Value, Value) {
    let users = passwd();
    let names: HashMap<u32, String> = users.iter().map(|u| (u.uid, u.name.clone())).collect();
    let procs = processes(&names);
    let (systemd, containers) = tokio::join!(systemd(Files::Kept), containers());
    (
        json!({"systemd": systemd, "containers": containers}),
        processes_json(&procs),
    )
}

/// The process list as sent to the hub.
fn processes_json(procs: &[Proc]) -> Value {
    procs
        .iter()
        .map(|p| {
            let mut v = json!({"pid": p.pid, "ppid": p.ppid, "exe": p.exe, "cmdline": p.cmdline, "user": p.user});
            if !p.paths.is_empty() {
                v["paths"] = json!(p.paths);
            }
            v
        })
        .collect()
}

fn os() -> Value {
    let release = read("/etc/os-release");
    let field = |k: &str| {
        release
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .map(|v| v.trim_matches('"').to_owned())
            .unwrap_or_default()
    };
    // `id` and `version` as os-release says (`debian`, `12`): what advisories of the
    // distribution are keyed by.
    json!({"name": field("NAME"), "id": field("ID"), "version": field("VERSION_ID"),
           "version_codename": field("VERSION_CODENAME"), "pretty_name": field("PRETTY_NAME"),
           "kernel": read("/proc/sys/kernel/osrelease").trim(), "hostname": read("/proc/sys/kernel/hostname").trim()})
}

async fn run(cmd: &str, args: &[&str]) -> Option<String> {
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        tokio::process::Command::new(cmd)
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .ok()?
    .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether systemd is this host's init (what `sd_booted()` checks): without it, `systemctl`
/// answers nothing, and starting it every push cost more CPU than the rest of the push.
fn systemd_booted() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

/// Whether [`systemd`] reads the unit files' states again or may reuse the last ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Files {
    /// Read them (the inventory).
    Fresh,
    /// The last ones when younger than [`UNIT_FILES_KEPT`] (the push's live state: which
    /// services run changes between pushes; whether one is enabled rarely does).
    Kept,
}

/// How long a push reuses the unit files' states.
const UNIT_FILES_KEPT: std::time::Duration = std::time::Duration::from_secs(600);

/// The unit files' states last read, and when.
static UNIT_FILES: std::sync::Mutex<Option<(std::time::Instant, String)>> =
    std::sync::Mutex::new(None);

/// `systemctl list-unit-files` for services: the last answer while [`Files::Kept`] allows,
/// else asked again (and kept).
async fn unit_files(files: Files) -> String {
    if files == Files::Kept
        && let Ok(k) = UNIT_FILES.lock()
        && let Some((at, text)) = k.as_ref()
        && at.elapsed() < UNIT_FILES_KEPT
    {
        return text.clone();
    }
    let text = run(
        "systemctl",
        &[
            "list-unit-files",
            "--type=service",
            "--no-legend",
            "--no-pager",
        ],
    )
    .await
    .unwrap_or_default();
    if let Ok(mut k) = UNIT_FILES.lock() {
        *k = Some((std::time::Instant::now(), text.clone()));
    }
    text
}

async fn systemd(files: Files) -> Value {
    if !systemd_booted() {
        return json!([]);
    }
    let Some(units) = run(
        "systemctl",
        &[
            "list-units",
            "--type=service",
            "--all",
            "--no-legend",
            "--plain",
            "--no-pager",
        ],
    )
    .await
    else {
        return json!([]);
    };
    let files = unit_files(files).await;
    parse_systemd(&units, &files)
}

/// Services from `systemctl list-units --type=service --all --plain --no-legend` and whether
/// each is enabled, from `systemctl list-unit-files --type=service --no-legend`.
pub fn parse_systemd(units: &str, files: &str) -> Value {
    let enabled: HashMap<&str, &str> = files
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?, f.next()?))
        })
        .collect();
    let list: Vec<Value> = units
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l
                .trim_start_matches(['●', '*', ' '])
                .split_whitespace()
                .collect();
            (f.len() >= 4).then(|| {
                json!({"unit": f[0], "load_state": f[1], "active_state": f[2], "sub_state": f[3],
                       "enabled": enabled.get(f[0]).is_some_and(|s| *s == "enabled")})
            })
        })
        .collect();
    Value::Array(list)
}

async fn packages() -> Value {
    // dpkg's database where dpkg itself looks (`DPKG_ADMINDIR`, as dpkg honours it).
    let admindir = std::env::var("DPKG_ADMINDIR").unwrap_or_else(|_| "/var/lib/dpkg".into());
    let mut out = dpkg_packages(&read(Path::new(&admindir).join("status")));
    out.extend(apk_packages(&read("/lib/apk/db/installed")));
    if Path::new("/var/lib/rpm").exists()
        && let Some(list) = run(
            "rpm",
            &[
                "-qa",
                "--qf",
                "%{NAME}\\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\\t%{SOURCERPM}\\n",
            ],
        )
        .await
    {
        out.extend(rpm_packages(&list));
    }
    Value::Array(out)
}

/// A package entry: `source` and `source_version` only where they differ from the binary
/// package's (vulnerability data for distributions is written against source packages).
fn package(manager: &str, name: &str, version: &str, source: Option<(&str, &str)>) -> Value {
    let mut p = json!({"manager": manager, "name": name, "version": version});
    if let Some((src, src_version)) = source {
        if !src.is_empty() && src != name {
            p["source"] = json!(src);
        }
        if !src_version.is_empty() && src_version != version {
            p["source_version"] = json!(src_version);
        }
    }
    p
}

/// Installed packages of dpkg's status file, with their source package (`Source: name` or
/// `Source: name (version)`).
pub fn dpkg_packages(status: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for para in status.split("\n\n") {
        let get = |k: &str| {
            para.lines()
                .find_map(|l| l.strip_prefix(&format!("{k}: ")))
                .map(str::trim)
        };
        if get("Status").is_some_and(|s| s.ends_with(" installed"))
            && let (Some(name), Some(version)) = (get("Package"), get("Version"))
        {
            let source = get("Source").map(|s| match s.split_once(' ') {
                Some((n, v)) => (n, v.trim().trim_start_matches('(').trim_end_matches(')')),
                None => (s, version),
            });
            out.push(package("dpkg", name, version, source));
        }
    }
    out
}

/// Installed packages of apk's database, with their origin (`o:`).
pub fn apk_packages(db: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for para in db.split("\n\n") {
        let get = |k: &str| para.lines().find_map(|l| l.strip_prefix(k));
        if let (Some(name), Some(version)) = (get("P:"), get("V:")) {
            out.push(package(
                "apk",
                name,
                version,
                get("o:").map(|o| (o, version)),
            ));
        }
    }
    out
}

/// `rpm -qa` lines of `NAME\tEPOCH:VERSION-RELEASE\tSOURCERPM`: the epoch is left out when 0,
/// the source package's name is the source RPM's without `-version-release.src.rpm`.
pub fn rpm_packages(list: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for l in list.lines() {
        let mut f = l.split('\t');
        let (Some(name), Some(evr)) = (f.next(), f.next()) else {
            continue;
        };
        let evr = evr.strip_prefix("0:").unwrap_or(evr);
        let source = f
            .next()
            .and_then(|srpm| srpm.strip_suffix(".src.rpm"))
            .and_then(|s| s.rsplitn(3, '-').nth(2));
        out.push(package("rpm", name, evr, source.map(|s| (s, ""))));
    }
    out
}

/// A local account.
#[derive(Debug, Clone)]
pub struct User {
    name: String,
    uid: u32,
    gid: u32,
    home: String,
    shell: String,
}

fn passwd() -> Vec<User> {
    read("/etc/passwd")
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() >= 7).then(|| User {
                name: f[0].to_owned(),
                uid: f[2].parse().unwrap_or(u32::MAX),
                gid: f[3].parse().unwrap_or(u32::MAX),
                home: f[5].to_owned(),
                shell: f[6].to_owned(),
            })
        })
        .collect()
}

fn sudo() -> Value {
    let mut files = vec![PathBuf::from("/etc/sudoers")];
    if let Ok(d) = std::fs::read_dir("/etc/sudoers.d") {
        let mut extra: Vec<PathBuf> = d.filter_map(Result::ok).map(|e| e.path()).collect();
        extra.sort();
        files.extend(extra);
    }
    let mut out = Vec::new();
    for f in files {
        for l in read(&f).lines().map(str::trim) {
            if l.is_empty()
                || l.starts_with('#')
                || l.starts_with("Defaults")
                || l.starts_with("@include")
            {
                continue;
            }
            out.push(json!({"file": f.display().to_string(), "rule": l}));
        }
    }
    Value::Array(out)
}

/// `SHA256:<base64>` of an OpenSSH public key line's key blob, as `ssh-keygen -lf` prints it.
pub fn ssh_fingerprint(line: &str) -> Option<(String, String, String)> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let i = fields
        .iter()
        .position(|f| f.starts_with("ssh-") || f.starts_with("ecdsa-") || f.starts_with("sk-"))?;
    let blob = data_encoding::BASE64
        .decode(fields.get(i + 1)?.as_bytes())
        .ok()?;
    let fp = format!(
        "SHA256:{}",
        data_encoding::BASE64_NOPAD.encode(&Sha256::digest(&blob))
    );
    Some((
        fields[i].to_owned(),
        fp,
        fields.get(i + 2..).map(|c| c.join(" ")).unwrap_or_default(),
    ))
}

fn ssh_keys(users: &[User]) -> Value {
    let mut out = Vec::new();
    for u in users {
        for file in ["authorized_keys", "authorized_keys2"] {
            for l in read(Path::new(&u.home).join(".ssh").join(file)).lines() {
                if l.trim_start().starts_with('#') {
                    continue;
                }
                if let Some((kind, fp, comment)) = ssh_fingerprint(l) {
                    out.push(json!({"user": u.name, "type": kind, "fingerprint": fp, "comment": comment}));
                }
            }
        }
    }
    Value::Array(out)
}

/// Scheduled jobs that run a known backup tool (cron and systemd timers' services).
fn backups() -> Value {
    const TOOLS: [&str; 8] = [
        "restic",
        "borg",
        "duplicity",
        "rsnapshot",
        "pg_dump",
        "mysqldump",
        "pgbackrest",
        "rclone",
    ];
    let mut sources: Vec<PathBuf> = vec![PathBuf::from("/etc/crontab")];
    for dir in [
        "/etc/cron.d",
        "/var/spool/cron/crontabs",
        "/etc/cron.daily",
        "/etc/cron.weekly",
        "/etc/systemd/system",
    ] {
        if let Ok(d) = std::fs::read_dir(dir) {
            sources.extend(
                d.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.is_file()),
            );
        }
    }
    sources.sort();
    let mut out = Vec::new();
    for s in sources {
        for l in read(&s)
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with('#'))
        {
            if let Some(tool) = TOOLS.iter().find(|t| {
                l.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                    .any(|w| w == **t)
            }) {
                out.push(json!({"source": s.display().to_string(), "tool": tool, "line": l.chars().take(300).collect::<String>()}));
            }
        }
    }
    Value::Array(out)
}

#[cfg(test)]
mod tests;
