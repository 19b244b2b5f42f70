//! The host's "DNA" (CONTRACT 25): what makes this machine this machine — its machine id, its
//! kernel and OS, its SSH host keys and the agent binary — hashed into one fingerprint, so
//! the hub sees when another machine answers with this agent's identity. The boot id is
//! reported beside it and changes with every boot, so it is not part of the hash.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;
use trusthub_core::compliance::{Dna, DnaParts};

/// The parts and the fingerprint, read under `root` (`/` on a host), the agent binary at
/// `exe`: `{fingerprint_sha256, parts: {machine_id, boot_id, kernel, os, ssh_host_keys[],
/// agent_sha256}}`.
pub fn collect(root: &Path, exe: &Path) -> Value {
    let read = |rel: &str| {
        crate::collect::honeypot::read_own(root.join(rel))
            .map(|s| s.trim().to_owned())
            .unwrap_or_default()
    };
    let os = read("etc/os-release")
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_owned())
        .unwrap_or_default();
    let mut keys: Vec<String> = crate::collect::honeypot::read_dir_own(root.join("etc/ssh"))
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("ssh_host_") && n.ends_with("_key.pub"))
                })
                .filter_map(|p| crate::collect::honeypot::read_own(p).ok())
                .filter_map(|l| crate::collect::inventory::ssh_fingerprint(&l).map(|(_, fp, _)| fp))
                .collect()
        })
        .unwrap_or_default();
    keys.sort();
    let agent_sha256 = crate::collect::honeypot::read_own_bytes(exe)
        .map(|b| trusthub_core::secret::hex(&Sha256::digest(&b)))
        .unwrap_or_default();
    let parts = DnaParts {
        machine_id: read("etc/machine-id"),
        boot_id: read("proc/sys/kernel/random/boot_id"),
        kernel: read("proc/sys/kernel/osrelease"),
        os,
        ssh_host_keys: keys,
        agent_sha256,
    };
    let dna = Dna {
        fingerprint_sha256: parts.fingerprint(),
        parts,
    };
    serde_json::to_value(dna).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tree() -> std::path::PathBuf {
        let t = std::env::temp_dir().join(format!("dna-{}", uuid::Uuid::new_v4().simple()));
        for (rel, text) in [
            ("etc/machine-id", "0123456789abcdef0123456789abcdef\n"),
            (
                "etc/os-release",
                "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n",
            ),
            ("proc/sys/kernel/osrelease", "6.1.0-28-amd64\n"),
            (
                "proc/sys/kernel/random/boot_id",
                "b0b0b0b0-0000-4000-8000-000000000001\n",
            ),
            (
                "etc/ssh/ssh_host_ed25519_key.pub",
                "ssh-ed25519 YWJj root@web-1\n",
            ),
            ("etc/ssh/ssh_host_ed25519_key", "PRIVATE - never read\n"),
            ("bin/agent", "agent binary"),
        ] {
            let p = t.join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
            std::fs::write(p, text).expect("write");
        }
        t
    }

    #[test]
    fn the_fingerprint_is_the_hash_of_the_stable_parts_and_ignores_the_boot() {
        let t = tree();
        let v = collect(&t, &t.join("bin/agent"));
        let p = &v["parts"];
        assert_eq!(p["machine_id"], "0123456789abcdef0123456789abcdef");
        assert_eq!(p["kernel"], "6.1.0-28-amd64");
        assert_eq!(p["os"], "Debian GNU/Linux 12 (bookworm)");
        // SHA-256 of "abc" (the key blob), as ssh-keygen -lf prints it.
        assert_eq!(
            p["ssh_host_keys"],
            json!(["SHA256:ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0"])
        );
        assert_eq!(
            p["agent_sha256"],
            trusthub_core::secret::hex(&Sha256::digest(b"agent binary"))
        );
        assert_eq!(p["boot_id"], "b0b0b0b0-0000-4000-8000-000000000001");
        let stable = json!({"machine_id": p["machine_id"], "kernel": p["kernel"], "os": p["os"],
            "ssh_host_keys": p["ssh_host_keys"], "agent_sha256": p["agent_sha256"]});
        let want = trusthub_core::secret::hex(&Sha256::digest(
            trusthub_core::canonical::canonical_json(&stable).as_bytes(),
        ));
        assert_eq!(v["fingerprint_sha256"], want);
        // A reboot changes nothing; another machine id (a clone booted elsewhere) does.
        std::fs::write(t.join("proc/sys/kernel/random/boot_id"), "another\n").expect("write");
        assert_eq!(
            collect(&t, &t.join("bin/agent"))["fingerprint_sha256"],
            want
        );
        std::fs::write(
            t.join("etc/machine-id"),
            "ffffffffffffffffffffffffffffffff\n",
        )
        .expect("write");
        assert_ne!(
            collect(&t, &t.join("bin/agent"))["fingerprint_sha256"],
            want
        );
        let _ = std::fs::remove_dir_all(&t);
    }

    #[test]
    fn this_host_has_a_fingerprint() {
        let v = collect(Path::new("/"), &std::env::current_exe().expect("exe"));
        assert_eq!(v["fingerprint_sha256"].as_str().map(str::len), Some(64));
        assert!(!v["parts"]["kernel"].as_str().unwrap_or_default().is_empty());
        assert_eq!(v["parts"]["agent_sha256"].as_str().map(str::len), Some(64));
    }
}
