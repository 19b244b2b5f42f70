//! What an agent reports about its host (CONTRACT 4): one typed inventory, validated once at
//! ingest and read through these types everywhere the hub uses it — vulnerability scans,
//! SBOM exports, the supply-chain job, app discovery and the liveness check.
//!
//! The hub keeps and serves the snapshot as the agent sent it (`GET /agents/:id/inventory`);
//! these types are the hub's reading of it. Every field the hub reads is typed, so a snapshot
//! that gives one the wrong type (`"port": "ssh"`) is refused at ingest naming its path;
//! fields the hub does not read (`users`, `sudo`, `ssh_keys`, `backups`, extra keys of an
//! entry) are kept in the stored snapshot and ignored here. Lists are `Option` where "not
//! reported" and "reported empty" mean different things (an agent that could not read its
//! packages must not mark every finding fixed).

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// A full inventory snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inventory {
    /// When the agent collected it.
    #[serde(with = "time::serde::rfc3339")]
    pub collected_at: OffsetDateTime,
    /// The OS release (os-release and the kernel).
    #[serde(default)]
    pub os: Option<Os>,
    /// systemd units.
    #[serde(default)]
    pub systemd: Option<Vec<SystemdUnit>>,
    /// Docker containers.
    #[serde(default)]
    pub containers: Option<Vec<Container>>,
    /// Processes.
    #[serde(default)]
    pub processes: Option<Vec<Process>>,
    /// OS packages.
    #[serde(default)]
    pub packages: Option<Vec<Package>>,
    /// Application dependencies (lockfiles, installed trees, binaries).
    #[serde(default)]
    pub app_dependencies: Option<Vec<AppDependency>>,
    /// Listening sockets.
    #[serde(default)]
    pub listening: Option<Vec<Listening>>,
    /// Established connections (CONTRACT 24).
    #[serde(default)]
    pub connections: Option<Vec<Connection>>,
    /// Package managers and the reboot-required state (CONTRACT 19).
    #[serde(default)]
    pub patching: Option<Patching>,
    /// The network interfaces (CONTRACT 23: cloud resources are matched by address).
    #[serde(default)]
    pub network: Option<Network>,
    /// The cloud the host runs in, where the agent could read it.
    #[serde(default)]
    pub cloud: Option<CloudIdentity>,
}

/// The host's network.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Network {
    /// Its interfaces.
    #[serde(default)]
    pub interfaces: Vec<Interface>,
}

/// One network interface.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Interface {
    /// `eth0`, …
    #[serde(default)]
    pub name: Option<String>,
    /// Its addresses, without prefix length.
    #[serde(default)]
    pub addrs: Vec<String>,
}

/// The cloud a host runs in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CloudIdentity {
    /// `aws`, `azure`, `hetzner`, …
    #[serde(default)]
    pub provider: Option<String>,
    /// The provider's id of the instance, when the host can tell.
    #[serde(default)]
    pub instance_id: Option<String>,
}

/// What patching finds on the host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Patching {
    /// The package managers present (`apt`, `dnf`, `apk`, `zypper`).
    #[serde(default)]
    pub managers: Vec<String>,
    /// The host waits for a reboot (`/var/run/reboot-required`, `needs-restarting -r`).
    #[serde(default)]
    pub reboot_required: bool,
    /// The packages that asked for it, where the host says.
    #[serde(default)]
    pub reboot_required_packages: Vec<String>,
}

/// The OS release, as os-release names it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Os {
    /// `NAME`.
    #[serde(default)]
    pub name: Option<String>,
    /// `ID` (`debian`): what advisories of the distribution are keyed by.
    #[serde(default)]
    pub id: Option<String>,
    /// `VERSION_ID` (`12`).
    #[serde(default)]
    pub version: Option<String>,
    /// `VERSION_CODENAME`.
    #[serde(default)]
    pub version_codename: Option<String>,
    /// `PRETTY_NAME`.
    #[serde(default)]
    pub pretty_name: Option<String>,
    /// The running kernel.
    #[serde(default)]
    pub kernel: Option<String>,
    /// The host name.
    #[serde(default)]
    pub hostname: Option<String>,
}

/// One systemd unit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemdUnit {
    /// `nginx.service`.
    #[serde(default)]
    pub unit: Option<String>,
    /// `loaded`, `not-found`, …
    #[serde(default)]
    pub load_state: Option<String>,
    /// `active`, `failed`, …
    #[serde(default)]
    pub active_state: Option<String>,
    /// `running`, `exited`, …
    #[serde(default)]
    pub sub_state: Option<String>,
    /// Enabled at boot.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// One Docker container.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Container {
    /// The engine's id.
    #[serde(default)]
    pub id: Option<String>,
    /// Its name (a leading `/` is the engine's and is ignored).
    #[serde(default)]
    pub name: Option<String>,
    /// The image.
    #[serde(default)]
    pub image: Option<String>,
    /// `running`, `exited`, …
    #[serde(default)]
    pub state: Option<String>,
    /// Restarts the engine counted.
    #[serde(default)]
    pub restart_count: Option<i64>,
    /// The Compose project label.
    #[serde(default)]
    pub compose_project: Option<String>,
    /// The Compose service label.
    #[serde(default)]
    pub compose_service: Option<String>,
}

impl Container {
    /// The name without the engine's leading `/`.
    pub fn bare_name(&self) -> Option<&str> {
        self.name.as_deref().map(|n| n.trim_start_matches('/'))
    }
}

/// One process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Process {
    /// Its pid.
    #[serde(default)]
    pub pid: Option<u64>,
    /// Its parent's pid.
    #[serde(default)]
    pub ppid: Option<u64>,
    /// The executable (`/proc/<pid>/exe`; may end in ` (deleted)`).
    #[serde(default)]
    pub exe: Option<String>,
    /// The command line, arguments separated by spaces.
    #[serde(default)]
    pub cmdline: Option<String>,
    /// The user it runs as.
    #[serde(default)]
    pub user: Option<String>,
    /// Other names the agent resolved for it (the symlink it was started through, a script
    /// made absolute).
    #[serde(default)]
    pub paths: Vec<String>,
}

/// One OS package.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Package {
    /// `dpkg`, `rpm` or `apk`.
    #[serde(default)]
    pub manager: Option<String>,
    /// The binary package.
    #[serde(default)]
    pub name: Option<String>,
    /// Its installed version.
    #[serde(default)]
    pub version: Option<String>,
    /// The source package, when it differs from `name`.
    #[serde(default)]
    pub source: Option<String>,
    /// The source version, when it differs from `version`.
    #[serde(default)]
    pub source_version: Option<String>,
}

/// One application dependency, or a source the agent could not read (`error`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AppDependency {
    /// The project's directory.
    #[serde(default)]
    pub project_path: Option<String>,
    /// The lockfile's name.
    #[serde(default)]
    pub lockfile: Option<String>,
    /// Where the package was read (CONTRACT 29): the lockfile path, the installed tree's
    /// root, or the binary.
    #[serde(default)]
    pub source: Option<String>,
    /// `lockfile`, `installed` or `binary`.
    #[serde(default)]
    pub source_kind: Option<String>,
    /// The source's format (`package-lock`, `yarn-v1`, `uv-lock`, …).
    #[serde(default)]
    pub format: Option<String>,
    /// The lockfile's ecosystem (`npm`, `pip`, …).
    #[serde(default)]
    pub ecosystem: Option<String>,
    /// The package.
    #[serde(default)]
    pub name: Option<String>,
    /// Its version.
    #[serde(default)]
    pub version: Option<String>,
    /// Why the source could not be read.
    #[serde(default)]
    pub error: Option<String>,
}

/// One listening socket.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Listening {
    /// `tcp`, `tcp6`, `udp`, …
    #[serde(default)]
    pub proto: Option<String>,
    /// The bound address.
    #[serde(default)]
    pub addr: Option<String>,
    /// The port.
    #[serde(default)]
    pub port: Option<u64>,
    /// The owning process, when the agent could see it.
    #[serde(default)]
    pub pid: Option<u64>,
    /// The owning process's name.
    #[serde(default)]
    pub process: Option<String>,
}

/// Established TCP connections of one kind (CONTRACT 24), aggregated by the agent: outgoing
/// ones by `(remote address, remote port, process)`, incoming ones by `(local port, remote
/// address, process)`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Connection {
    /// `tcp`.
    #[serde(default)]
    pub proto: Option<String>,
    /// `out` (this host connected) or `in` (to a port this host listens on).
    #[serde(default)]
    pub direction: Option<String>,
    /// This host's address.
    #[serde(default)]
    pub local_addr: Option<String>,
    /// The other side's address.
    #[serde(default)]
    pub remote_addr: Option<String>,
    /// The service's port: the remote port of an outgoing connection, the local port of an
    /// incoming one.
    #[serde(default)]
    pub port: Option<u64>,
    /// The owning process, when the agent could see it.
    #[serde(default)]
    pub pid: Option<u64>,
    /// Its name.
    #[serde(default)]
    pub process: Option<String>,
    /// How many connections this entry stands for.
    #[serde(default)]
    pub count: Option<u64>,
}

/// What runs now, sent with every batch for the liveness check (`live` of a batch).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Live {
    /// systemd units.
    #[serde(default)]
    pub systemd: Option<Vec<SystemdUnit>>,
    /// Docker containers.
    #[serde(default)]
    pub containers: Option<Vec<Container>>,
}

impl Inventory {
    /// The hub's reading of a snapshot as an agent sent it.
    pub fn parse(snapshot: &serde_json::Value) -> Result<Inventory, serde_json::Error> {
        Inventory::deserialize(snapshot)
    }
}

/// Each reported list, read as empty when the agent did not report it.
macro_rules! lists {
    ($($(#[$doc:meta])* $name:ident: $item:ty;)+) => {
        impl Inventory {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> &[$item] {
                    self.$name.as_deref().unwrap_or_default()
                }
            )+
        }
    };
}

lists! {
    /// The OS packages (empty when not reported).
    packages: Package;
    /// The application dependencies (empty when not reported).
    app_dependencies: AppDependency;
    /// The processes (empty when not reported).
    processes: Process;
    /// The listening sockets (empty when not reported).
    listening: Listening;
    /// The established connections (empty when not reported).
    connections: Connection;
    /// The systemd units (empty when not reported).
    systemd: SystemdUnit;
    /// The containers (empty when not reported).
    containers: Container;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_what_the_agent_sends_and_ignores_what_the_hub_does_not_read() {
        let inv = Inventory::parse(&json!({
            "collected_at": "2026-11-26T10:00:00Z",
            "os": {"name": "Debian GNU/Linux", "id": "debian", "version": "12", "kernel": "6.1.0"},
            "systemd": [{"unit": "nginx.service", "active_state": "active", "enabled": true}],
            "containers": [{"id": "abc", "name": "/db", "image": null, "state": "running", "restart_count": 3}],
            "processes": [{"pid": 10, "ppid": 1, "exe": "/usr/sbin/nginx", "cmdline": "nginx", "user": "root", "paths": ["/usr/sbin/nginx"]}],
            "packages": [{"manager": "dpkg", "name": "libssl3", "version": "3.0.15-1", "source": "openssl"}],
            "app_dependencies": [{"project_path": "/srv", "lockfile": "package-lock.json", "error": "unreadable"}],
            "listening": [{"proto": "tcp", "addr": "0.0.0.0", "port": 80, "pid": null}],
            "users": [{"name": "root"}],
            "sudo": "whatever the agent says"
        }))
        .expect("inventory");
        assert_eq!(inv.os.as_ref().expect("os").id.as_deref(), Some("debian"));
        assert_eq!(inv.containers()[0].bare_name(), Some("db"));
        assert_eq!(inv.containers()[0].image, None);
        assert_eq!(inv.packages()[0].source.as_deref(), Some("openssl"));
        assert_eq!(inv.listening()[0].port, Some(80));
        assert_eq!(inv.processes()[0].paths, vec!["/usr/sbin/nginx"]);
        assert!(inv.app_dependencies()[0].error.is_some());
    }

    #[test]
    fn absent_lists_differ_from_empty_ones() {
        let inv =
            Inventory::parse(&json!({"collected_at": "2026-11-26T10:00:00Z", "packages": []}))
                .expect("inventory");
        assert_eq!(inv.packages, Some(vec![]));
        assert_eq!(inv.app_dependencies, None);
    }

    #[test]
    fn a_wrong_type_is_refused() {
        for bad in [
            json!({"collected_at": "2026-11-26T10:00:00Z", "listening": [{"port": "ssh"}]}),
            json!({"collected_at": "yesterday"}),
            json!({"packages": []}),
            json!({"collected_at": "2026-11-26T10:00:00Z", "packages": {"name": "x"}}),
            json!("a string"),
        ] {
            assert!(Inventory::parse(&bad).is_err(), "{bad}");
        }
    }
}
