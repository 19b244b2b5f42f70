//! Tests of [`super`] (inventory).

#[test]
fn the_routing_trie_gives_the_hosts_own_addresses() {
    let trie = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n     +-- 10.0.0.0/24 2 0 2\n        |-- 10.0.0.7\n           /32 host LOCAL\n        |-- 10.0.0.255\n           /32 link BROADCAST\nLocal:\n        |-- 10.0.0.7\n           /32 host LOCAL\n";
    assert_eq!(super::fib_trie_locals(trie), vec!["10.0.0.7".to_owned()]);
}

use super::*;

/// A process started through a symlink by a relative name, and a script run by an
/// interpreter by a relative path, are both known by the names a user would track.
#[test]
fn processes_are_known_by_their_symlink_and_their_script() {
    let dir = std::env::temp_dir().join(format!("th-alias-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).expect("dir");
    let sleep = std::fs::canonicalize("/bin/sleep").expect("sleep");
    std::os::unix::fs::symlink(&sleep, dir.join("bin/my-daemon")).expect("symlink");
    std::fs::write(dir.join("job.sh"), "sleep 30\n").expect("script");
    let mut daemon = std::process::Command::new("./bin/my-daemon")
        .arg("30")
        .current_dir(&dir)
        .spawn()
        .expect("spawn through the symlink");
    let mut job = std::process::Command::new("sh")
        .arg("job.sh")
        .current_dir(&dir)
        .spawn()
        .expect("spawn the script");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let procs = processes(&HashMap::new());
    let by_pid = |pid: u32| procs.iter().find(|p| p.pid == pid).cloned();
    let d = by_pid(daemon.id()).expect("daemon listed");
    let j = by_pid(job.id()).expect("job listed");
    let _ = daemon.kill();
    let _ = job.kill();
    let _ = daemon.wait();
    let _ = job.wait();
    let link = format!("{}/bin/my-daemon", dir.display());
    assert_eq!(d.exe, sleep.display().to_string());
    assert!(d.paths.contains(&link), "{d:?}");
    assert!(
        j.paths.contains(&format!("{}/job.sh", dir.display())),
        "{j:?}"
    );
    assert!(d.ppid > 0);
    // And the hub's matching finds both by those names.
    let list = processes_json(&[d, j]);
    let list: Vec<trusthub_core::inventory::Process> =
        serde_json::from_value(list).expect("typed processes");
    let m = trusthub_core::apps::observed_map(&[], &[], &list);
    use trusthub_core::apps::{AppKind, observe};
    use trusthub_core::liveness::Observed;
    assert_eq!(
        observe(AppKind::Process, &link, &m, true),
        Observed::Running
    );
    let script = format!("{}/job.sh", dir.display());
    assert_eq!(
        observe(AppKind::Process, &script, &m, true),
        Observed::Running
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn packages_carry_their_source_package() {
    let status = "Package: libc6\nStatus: install ok installed\nArchitecture: amd64\n\
            Source: glibc\nVersion: 2.36-9+deb12u7\n\n\
            Package: libssl3\nStatus: install ok installed\nSource: openssl (3.0.15-1~deb12u1)\n\
            Version: 3.0.15-1~deb12u1+b1\n\n\
            Package: curl\nStatus: install ok installed\nVersion: 7.88.1-10+deb12u8\n\n\
            Package: gone\nStatus: deinstall ok config-files\nVersion: 1.0\n";
    assert_eq!(
        dpkg_packages(status),
        vec![
            json!({"manager": "dpkg", "name": "libc6", "version": "2.36-9+deb12u7", "source": "glibc"}),
            json!({"manager": "dpkg", "name": "libssl3", "version": "3.0.15-1~deb12u1+b1",
                    "source": "openssl", "source_version": "3.0.15-1~deb12u1"}),
            json!({"manager": "dpkg", "name": "curl", "version": "7.88.1-10+deb12u8"}),
        ]
    );
    let apk =
        "C:Q1abc=\nP:libcrypto3\nV:3.1.4-r5\no:openssl\n\nP:busybox\nV:1.36.1-r15\no:busybox\n";
    assert_eq!(
        apk_packages(apk),
        vec![
            json!({"manager": "apk", "name": "libcrypto3", "version": "3.1.4-r5", "source": "openssl"}),
            json!({"manager": "apk", "name": "busybox", "version": "1.36.1-r15"}),
        ]
    );
    let rpm = "openssl-libs\t1:3.0.7-27.el9\topenssl-3.0.7-27.el9.src.rpm\n\
            bash\t0:5.1.8-9.el9\tbash-5.1.8-9.el9.src.rpm\ngpg-pubkey\t0:3228467c-613798eb\t(none)\n";
    assert_eq!(
        rpm_packages(rpm),
        vec![
            json!({"manager": "rpm", "name": "openssl-libs", "version": "1:3.0.7-27.el9", "source": "openssl"}),
            json!({"manager": "rpm", "name": "bash", "version": "5.1.8-9.el9"}),
            json!({"manager": "rpm", "name": "gpg-pubkey", "version": "3228467c-613798eb"}),
        ]
    );
    // This host: libc6 is built from glibc on Debian and Ubuntu.
    let here = dpkg_packages(&read("/var/lib/dpkg/status"));
    if let Some(libc) = here.iter().find(|p| p["name"] == "libc6") {
        assert_eq!(libc["source"], "glibc", "{libc}");
    }
}

#[test]
fn lockfiles_of_each_ecosystem_parse() {
    let npm = r#"{"lockfileVersion":3,"packages":{"":{"name":"app"},"node_modules/lodash":{"version":"4.17.21"},"node_modules/a/node_modules/b":{"version":"1.0.0"}}}"#;
    let read = |name: &str, text: &str| {
        crate::collect::deps::parse_lockfile(Path::new(name), text).map(|(_, d)| {
            d.into_iter()
                .map(|d| (d.ecosystem, d.name, d.version))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        read("package-lock.json", npm),
        Ok(vec![
            ("npm", "b".into(), "1.0.0".into()),
            ("npm", "lodash".into(), "4.17.21".into())
        ])
    );
    assert_eq!(
        read(
            "requirements.txt",
            "Django==4.2.1 # web\nrequests[socks]==2.31.0\n-e .\n"
        ),
        Ok(vec![
            ("pip", "Django".into(), "4.2.1".into()),
            ("pip", "requests".into(), "2.31.0".into())
        ])
    );
    assert_eq!(
        read(
            "poetry.lock",
            "[[package]]\nname = \"flask\"\nversion = \"3.0.0\"\n"
        ),
        Ok(vec![("pip", "flask".into(), "3.0.0".into())])
    );
    assert_eq!(
        crate::collect::deps::locks::read(
            Path::new("composer.lock"),
            r#"{"packages":[{"name":"monolog/monolog","version":"v3.5.0"}]}"#
        ),
        Ok(vec![("composer", "monolog/monolog".into(), "3.5.0".into())])
    );
    let gem = "GEM\n  remote: https://rubygems.org/\n  specs:\n    rack (3.0.8)\n    rails (7.1.2)\n      rack (>= 2.2.4)\n\nPLATFORMS\n  ruby\n";
    assert_eq!(
        crate::collect::deps::locks::read(Path::new("Gemfile.lock"), gem),
        Ok(vec![
            ("RubyGems", "rack".into(), "3.0.8".into()),
            ("RubyGems", "rails".into(), "7.1.2".into())
        ])
    );
    let gosum = "golang.org/x/net v0.17.0 h1:abc=\ngolang.org/x/net v0.17.0/go.mod h1:def=\n";
    assert_eq!(
        crate::collect::deps::locks::read(Path::new("go.sum"), gosum),
        Ok(vec![("Go", "golang.org/x/net".into(), "0.17.0".into())])
    );
    // A corrupt lockfile says so; it never reads as zero dependencies.
    for (name, text) in [
        ("package-lock.json", "{\"packages\": "),
        ("composer.lock", "<html>"),
        ("poetry.lock", "[[package]\nname ="),
    ] {
        assert!(
            crate::collect::deps::parse_lockfile(Path::new(name), text).is_err(),
            "{name}"
        );
    }
}

#[test]
fn with_go_mod_and_go_sum_the_selected_versions_are_reported() {
    let dir = std::env::temp_dir().join(format!("gomodsum-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("go.mod"),
        "module example.com/app\n\ngo 1.21\n\nrequire golang.org/x/net v0.17.0\n",
    )
    .expect("go.mod");
    std::fs::write(
            dir.join("go.sum"),
            "golang.org/x/net v0.10.0 h1:a=\ngolang.org/x/net v0.10.0/go.mod h1:b=\ngolang.org/x/net v0.17.0 h1:c=\n",
        )
        .expect("go.sum");
    let deps = Value::Array(crate::collect::deps::discover::dependencies(
        &crate::collect::deps::discover::Discovery::only(
            std::slice::from_ref(&dir),
            &[dir.join("no-binaries")],
        ),
    ));
    let got: Vec<(String, String)> = deps
        .as_array()
        .expect("list")
        .iter()
        .map(|d| {
            (
                d["version"].as_str().unwrap_or_default().to_owned(),
                d["format"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(got, [("0.17.0".to_owned(), "go-mod".to_owned())]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ssh_fingerprints_match_ssh_keygen() {
    // The blob here is base64 of "abc", whose SHA-256 (FIPS 180-2 example) is known.
    let (kind, fp, comment) = ssh_fingerprint("ssh-ed25519 YWJj ops@laptop").expect("parse");
    assert_eq!(
        (kind.as_str(), comment.as_str()),
        ("ssh-ed25519", "ops@laptop")
    );
    assert_eq!(fp, "SHA256:ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0");
    let (_, _, c) =
        ssh_fingerprint("command=\"/bin/true\",no-pty ssh-rsa YWJj").expect("with options");
    assert_eq!(c, "");
    assert!(ssh_fingerprint("not a key").is_none());
}

#[test]
fn systemctl_output_parses() {
    let units = "nginx.service loaded active running A high performance web server\n\
                     ● ssh.service loaded failed failed OpenBSD Secure Shell server\n";
    let files = "nginx.service enabled enabled\nssh.service disabled enabled\n";
    let v = parse_systemd(units, files);
    assert_eq!(
        v[0],
        json!({"unit": "nginx.service", "load_state": "loaded", "active_state": "active", "sub_state": "running", "enabled": true})
    );
    assert_eq!(v[1]["unit"], "ssh.service");
    assert_eq!(
        (v[1]["active_state"].clone(), v[1]["enabled"].clone()),
        (json!("failed"), json!(false))
    );
}

#[tokio::test]
async fn inventory_of_this_host_has_every_part() {
    let dir = std::env::temp_dir().join(format!("inv-test-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(dir.join("app")).expect("dir");
    std::fs::write(dir.join("app/requirements.txt"), "flask==3.0.0\n").expect("write");
    let here = std::slice::from_ref(&dir);
    let inv = collect(
        &crate::collect::deps::discover::Discovery::only(here, here),
        OffsetDateTime::now_utc(),
    )
    .await;
    let flask = &inv["app_dependencies"][0];
    assert_eq!(
        (
            flask["name"].as_str(),
            flask["source_kind"].as_str(),
            flask["format"].as_str()
        ),
        (Some("flask"), Some("lockfile"), Some("requirements"))
    );
    for key in [
        "os",
        "systemd",
        "containers",
        "processes",
        "packages",
        "app_dependencies",
        "users",
        "sudo",
        "ssh_keys",
        "backups",
        "listening",
        "connections",
        "network",
    ] {
        assert!(inv.get(key).is_some(), "{key}");
    }
    // This host's loopback at least.
    assert!(
        inv["network"]["interfaces"]
            .to_string()
            .contains("127.0.0.1"),
        "{}",
        inv["network"]
    );
    assert!(!inv["os"]["kernel"].as_str().unwrap_or_default().is_empty());
    // os-release ID and VERSION_ID, what distribution advisories are keyed by.
    if std::path::Path::new("/etc/os-release").exists() {
        assert!(
            !inv["os"]["id"].as_str().unwrap_or_default().is_empty(),
            "{}",
            inv["os"]
        );
    }
    assert!(
        inv["processes"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["pid"] == std::process::id()))
    );
    assert!(
        inv["users"]
            .as_array()
            .is_some_and(|u| u.iter().any(|u| u["name"] == "root"))
    );
    assert_eq!(inv["app_dependencies"][0]["name"], "flask");
    assert!(
        inv["packages"].as_array().is_some_and(|p| !p.is_empty()),
        "dpkg packages on this Debian host"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
