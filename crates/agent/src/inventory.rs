//! The host inventory (CONTRACT 4; SPEC 2.12), read from this host: OS and kernel, systemd
//! services, Docker containers (through the Docker socket; none when it is absent),
//! processes, installed packages (dpkg, rpm, apk), application dependencies from lockfiles
//! under configured project paths, users, sudo rules, SSH authorized keys (fingerprints
//! only), backup jobs, listening sockets and established connections with their processes
//! ([`crate::sockets`]). Every part degrades to an empty list when the
//! host does not have it or the agent may not read it.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use time::OffsetDateTime;

fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Collects a full snapshot.
pub async fn collect(discovery: &crate::deps::discover::Discovery, now: OffsetDateTime) -> Value {
    let users = passwd();
    let names: HashMap<u32, String> = users.iter().map(|u| (u.uid, u.name.clone())).collect();
    let procs = processes(&names);
    let (listening, connections) = crate::sockets::report(&procs);
    // Walks of project trees and reads of binaries: off the async threads.
    let deps = {
        let d = discovery.clone();
        tokio::task::spawn_blocking(move || crate::deps::discover::dependencies(&d))
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
        "systemd": systemd().await,
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
    let on_path = crate::patch::on_path;
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
    let (systemd, containers) = tokio::join!(systemd(), containers());
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

/// Where a program named without a directory is found (the usual `PATH` of services).
const PATH_DIRS: [&str; 6] = [
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// Other absolute names of a process's program, resolved on this host: the path it was
/// started through when that is a symlink to its binary (`redis-server` found in `PATH`,
/// pointing at `redis-check-rdb`), and a script an interpreter runs, made absolute against
/// the process's working directory.
pub fn aliases(exe: &str, cmdline: &str, cwd: Option<&Path>) -> Vec<String> {
    let mut out = Vec::new();
    let mut argv = cmdline.split_whitespace();
    let argv0 = argv.next().unwrap_or_default();
    let target = std::fs::canonicalize(exe).ok();
    if !argv0.is_empty() && !argv0.starts_with('/') {
        let candidates: Vec<PathBuf> = if argv0.contains('/') {
            cwd.map(|c| c.join(argv0)).into_iter().collect()
        } else {
            PATH_DIRS.iter().map(|d| Path::new(d).join(argv0)).collect()
        };
        if let Some(found) = candidates
            .into_iter()
            .find(|c| target.is_some() && std::fs::canonicalize(c).ok() == target)
        {
            out.push(normalize(&found));
        }
    }
    let program = if exe.is_empty() { argv0 } else { exe };
    if trusthub_core::apps::is_interpreter(program)
        && let Some(script) = argv.find(|a| !a.starts_with('-'))
        && !script.starts_with('/')
        && let Some(cwd) = cwd
    {
        let abs = cwd.join(script);
        if abs.is_file() {
            out.push(normalize(&abs));
        }
    }
    out.retain(|p| p != exe);
    out
}

/// A path with `.` and `..` folded (no symlinks resolved: the name the user sees).
fn normalize(p: &Path) -> String {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(n) => parts.push(n),
            _ => {}
        }
    }
    let mut s = String::new();
    for part in parts {
        s.push('/');
        s.push_str(&part.to_string_lossy());
    }
    if s.is_empty() { "/".into() } else { s }
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

async fn systemd() -> Value {
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
    let files = run(
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

/// A GET against the Docker Engine API over its Unix socket.
async fn docker_get(socket: &Path, path: &str) -> Option<Value> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::net::UnixStream::connect(socket),
    )
    .await
    .ok()?
    .ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: docker\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut buf = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.").then_some(())?;
    head.split_whitespace().nth(1).filter(|c| *c == "200")?;
    serde_json::from_str(body).ok()
}

async fn containers() -> Value {
    containers_at(&docker_socket()).await
}

/// Containers from the Docker Engine API at `socket` (none when nothing answers there).
pub async fn containers_at(socket: &Path) -> Value {
    let Some(Value::Array(list)) = docker_get(socket, "/containers/json?all=1").await else {
        return json!([]);
    };
    let mut out = Vec::with_capacity(list.len());
    for c in list {
        let id = c["Id"].as_str().unwrap_or_default().to_owned();
        let restarts = docker_get(socket, &format!("/containers/{id}/json"))
            .await
            .and_then(|d| d["RestartCount"].as_i64())
            .unwrap_or(0);
        let labels = &c["Labels"];
        out.push(json!({
            "id": id,
            "name": c["Names"][0].as_str().unwrap_or_default().trim_start_matches('/'),
            "image": c["Image"],
            "state": c["State"],
            "restart_count": restarts,
            "compose_project": labels["com.docker.compose.project"],
            "compose_service": labels["com.docker.compose.service"],
        }));
    }
    Value::Array(out)
}

/// One process.
#[derive(Debug, Clone)]
pub struct Proc {
    /// Pid.
    pub pid: u32,
    /// Executable path (empty when unreadable).
    pub exe: String,
    /// Command line, at most 512 characters.
    pub cmdline: String,
    /// Owner.
    pub user: String,
    /// Parent pid (1 for a daemon).
    pub ppid: u32,
    /// Other absolute names of its program ([`aliases`]).
    pub paths: Vec<String>,
}

/// The processes of this host.
pub fn processes(names: &HashMap<u32, String>) -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out: Vec<Proc> = dir
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let base = PathBuf::from(format!("/proc/{pid}"));
            let status = std::fs::read_to_string(base.join("status")).ok()?;
            let uid: u32 = status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            let cmdline: String = std::fs::read(base.join("cmdline"))
                .map(|b| {
                    String::from_utf8_lossy(&b)
                        .replace('\0', " ")
                        .trim()
                        .chars()
                        .take(512)
                        .collect()
                })
                .unwrap_or_default();
            let ppid: u32 = status
                .lines()
                .find_map(|l| l.strip_prefix("PPid:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            let exe = std::fs::read_link(base.join("exe"))
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let paths = if exe.is_empty() {
                Vec::new()
            } else {
                aliases(
                    &exe,
                    &cmdline,
                    std::fs::read_link(base.join("cwd")).ok().as_deref(),
                )
            };
            Some(Proc {
                pid,
                exe,
                cmdline,
                user: names.get(&uid).cloned().unwrap_or_else(|| uid.to_string()),
                ppid,
                paths,
            })
        })
        .collect();
    out.sort_by_key(|p| p.pid);
    out
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

/// Dependencies declared by a `composer.lock`, `Gemfile.lock` or `go.sum` (the other
/// formats are read in [`crate::deps`]): `(ecosystem, name, version)`; why not, when the file
/// is not what its name says (a corrupt lockfile is reported, never read as empty).
pub fn parse_lockfile(
    path: &Path,
    text: &str,
) -> Result<Vec<(&'static str, String, String)>, String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let mut out = Vec::new();
    match name {
        "composer.lock" => {
            let v: Value =
                serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
            for key in ["packages", "packages-dev"] {
                for p in v[key].as_array().into_iter().flatten() {
                    if let (Some(n), Some(ver)) = (p["name"].as_str(), p["version"].as_str()) {
                        out.push((
                            "composer",
                            n.to_owned(),
                            ver.trim_start_matches('v').to_owned(),
                        ));
                    }
                }
            }
        }
        "Gemfile.lock" | "gems.locked" => {
            // CONTRACT 30: a line Bundler does not write makes the file unreadable, said
            // with its number, rather than read as fewer gems.
            const SECTIONS: [&str; 9] = [
                "GEM",
                "GIT",
                "PATH",
                "PLUGIN SOURCE",
                "PLATFORMS",
                "DEPENDENCIES",
                "RUBY VERSION",
                "BUNDLED WITH",
                "CHECKSUMS",
            ];
            let mut in_specs = false;
            let mut section = "";
            for (i, l) in text.lines().enumerate() {
                let bad = || {
                    format!(
                        "line {}: `{}` is not a Gemfile.lock line",
                        i + 1,
                        l.chars().take(80).collect::<String>()
                    )
                };
                if l.trim().is_empty() {
                    continue;
                }
                if !l.starts_with(' ') {
                    section = SECTIONS
                        .iter()
                        .find(|s| **s == l.trim_end())
                        .ok_or_else(bad)?;
                    in_specs = false;
                    continue;
                }
                if l.trim() == "specs:" {
                    in_specs = true;
                    continue;
                }
                if matches!(section, "GEM" | "GIT" | "PATH" | "PLUGIN SOURCE")
                    && !l.starts_with("    ")
                {
                    in_specs = false;
                    // `  remote: …`, `  revision: …`: a key and its value.
                    if !l.trim().contains(':') {
                        return Err(bad());
                    }
                    continue;
                }
                // Gems are indented four spaces; their own dependencies six.
                if in_specs && l.starts_with("    ") && !l.starts_with("     ") {
                    let Some((n, rest)) = l.trim().split_once(" (") else {
                        return Err(bad());
                    };
                    if !rest.ends_with(')') || n.is_empty() || n.contains(' ') {
                        return Err(bad());
                    }
                    // `1.15.5-java`, `1.13.1-x86_64-linux`: the platform follows the version
                    // (RubyGems writes no `-` in versions themselves).
                    let version = rest.trim_end_matches(')');
                    out.push((
                        "RubyGems",
                        n.to_owned(),
                        version.split('-').next().unwrap_or(version).to_owned(),
                    ));
                }
            }
        }
        "go.sum" => {
            for d in crate::deps::golang::go_sum(text)? {
                out.push(("Go", d.name, d.version));
            }
        }
        other => return Err(format!("{other} is not read here")),
    }
    out.sort();
    out.dedup();
    Ok(out)
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

fn docker_socket() -> PathBuf {
    std::env::var_os("DOCKER_SOCKET")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/run/docker.sock"))
}

/// `POST` to the Docker Engine API; the HTTP status, or why there was none.
async fn docker_post(socket: &Path, path: &str) -> Result<u16, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::net::UnixStream::connect(socket),
    )
    .await
    .map_err(|_| "the Docker socket does not answer".to_owned())?
    .map_err(|e| format!("cannot reach the Docker socket: {e}"))?;
    s.write_all(
        format!("POST {path} HTTP/1.0\r\nHost: docker\r\nContent-Length: 0\r\n\r\n").as_bytes(),
    )
    .await
    .map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(120), s.read_to_end(&mut buf))
        .await
        .map_err(|_| "Docker did not answer within 120 s".to_owned())?
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&buf);
    text.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| "unreadable answer from Docker".to_owned())
}

/// Restarts containers by name or id: `(exit code, stdout, stderr)` like a command.
pub async fn docker_restart(names: &[String]) -> (i64, String, String) {
    docker_restart_at(&docker_socket(), names).await
}

/// [`docker_restart`] through the Docker Engine API at `socket`.
pub async fn docker_restart_at(socket: &Path, names: &[String]) -> (i64, String, String) {
    let (mut out, mut err) = (String::new(), String::new());
    let mut code = 0;
    for n in names {
        match docker_post(socket, &format!("/containers/{n}/restart?t=10")).await {
            Ok(204) => out.push_str(&format!("restarted {n}\n")),
            Ok(status) => {
                code = 1;
                err.push_str(&format!("{n}: Docker answered {status}\n"));
            }
            Err(e) => {
                code = 1;
                err.push_str(&format!("{n}: {e}\n"));
            }
        }
    }
    (code, out, err)
}

/// Stops a container by name or id (10 s before Docker kills it).
pub async fn docker_stop(name: &str) -> (i64, String, String) {
    docker_stop_at(&docker_socket(), name).await
}

/// [`docker_stop`] through the Docker Engine API at `socket`.
pub async fn docker_stop_at(socket: &Path, name: &str) -> (i64, String, String) {
    match docker_post(socket, &format!("/containers/{name}/stop?t=10")).await {
        Ok(204) => (0, format!("stopped {name}\n"), String::new()),
        Ok(304) => (0, format!("{name} was already stopped\n"), String::new()),
        Ok(status) => (
            1,
            String::new(),
            format!("{name}: Docker answered {status}\n"),
        ),
        Err(e) => (1, String::new(), format!("{name}: {e}\n")),
    }
}

/// Restarts the containers of a compose service.
pub async fn compose_restart(project: &str, service: &str) -> (i64, String, String) {
    let socket = docker_socket();
    let list = containers_at(&socket).await;
    let names: Vec<String> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["compose_project"] == project && c["compose_service"] == service)
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect();
    if names.is_empty() {
        return (
            1,
            String::new(),
            format!("no container of {project}::{service}"),
        );
    }
    docker_restart(&names).await
}

#[cfg(test)]
mod tests;
