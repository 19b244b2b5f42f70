//! Configuration scans on real files (hashes checked against `sha256sum`, modes and owners
//! against `stat`), on a real dpkg database (a throwaway package installed, upgraded and
//! changed by hand), and inotify waking a scan (CONTRACT 20).

mod dpkg_rig;

use dpkg_rig::DpkgRig;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use trusthub_agent::collect::drift::{DEFAULT_MAX_FILE_BYTES, PackageDb, Watcher, scan};
use trusthub_core::drift::{self, ConfigHash, Kind};

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let p =
            std::env::temp_dir().join(format!("trusthub-drift-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&p).expect("dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tool(cmd: &str, args: &[&str], path: &Path) -> String {
    let out = Command::new(cmd).args(args).arg(path).output().expect(cmd);
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn find<'a>(files: &'a [ConfigHash], path: &Path) -> &'a ConfigHash {
    files
        .iter()
        .find(|f| Path::new(&f.path) == path)
        .unwrap_or_else(|| panic!("{} in {files:?}", path.display()))
}

#[test]
fn a_scan_reports_real_files_as_sha256sum_and_stat_see_them() {
    let t = TempDir::new();
    let etc = t.0.join("etc");
    std::fs::create_dir_all(etc.join("cron.d")).expect("dirs");
    std::fs::create_dir_all(etc.join("systemd/system/multi-user.target.wants")).expect("dirs");
    std::fs::write(etc.join("sshd_config"), "PermitRootLogin no\n").expect("w");
    std::fs::write(
        etc.join("cron.d/backup"),
        "0 3 * * * root /usr/local/bin/backup\n",
    )
    .expect("w");
    std::fs::write(
        etc.join("systemd/system/app.service"),
        "[Service]\nExecStart=/bin/true\n",
    )
    .expect("w");
    std::os::unix::fs::symlink(
        "../app.service",
        etc.join("systemd/system/multi-user.target.wants/app.service"),
    )
    .expect("symlink");
    Command::new("chmod")
        .arg("0640")
        .arg(etc.join("sshd_config"))
        .status()
        .expect("chmod");
    let e = etc.display();
    let patterns = vec![
        format!("{e}/sshd_config"),
        format!("{e}/absent.conf"),
        format!("{e}/cron.d/*"),
        format!("{e}/systemd/system/**"),
    ];
    let files = scan(&patterns, &PackageDb::default(), DEFAULT_MAX_FILE_BYTES);
    assert_eq!(files.len(), 5, "{files:?}");
    for f in &files {
        assert!(f.check().is_ok(), "{f:?}");
    }
    for p in [
        etc.join("sshd_config"),
        etc.join("cron.d/backup"),
        etc.join("systemd/system/app.service"),
    ] {
        let f = find(&files, &p);
        assert_eq!(f.kind, Kind::File);
        let oracle = tool("sha256sum", &[], &p);
        assert_eq!(
            f.sha256.as_deref(),
            oracle.split_whitespace().next(),
            "{}",
            p.display()
        );
        assert_eq!(
            f.size.map(|s| s.to_string()),
            Some(tool("stat", &["-c", "%s"], &p))
        );
        assert_eq!(
            f.mode.clone(),
            Some(format!("{:0>4}", tool("stat", &["-c", "%a"], &p)))
        );
        assert_eq!(
            f.uid.map(|u| u.to_string()),
            Some(tool("stat", &["-c", "%u"], &p))
        );
        assert_eq!(
            f.gid.map(|g| g.to_string()),
            Some(tool("stat", &["-c", "%g"], &p))
        );
    }
    assert_eq!(
        find(&files, &etc.join("sshd_config")).mode.as_deref(),
        Some("0640")
    );
    let link = find(
        &files,
        &etc.join("systemd/system/multi-user.target.wants/app.service"),
    );
    assert_eq!(link.kind, Kind::Symlink);
    assert_eq!(link.link_target.as_deref(), Some("../app.service"));
    let missing = find(&files, &etc.join("absent.conf"));
    assert_eq!(missing.kind, Kind::Missing);
    assert_eq!(missing.sha256, None);
    // Outside a package database, no package facts.
    assert!(files.iter().all(|f| f.package.is_none()));
    // What the hub compares: a chmod is drift, a touch is not.
    let before = find(&files, &etc.join("cron.d/backup")).clone();
    Command::new("touch")
        .args(["-d", "2001-01-01"])
        .arg(etc.join("cron.d/backup"))
        .status()
        .expect("touch");
    Command::new("chmod")
        .arg("0600")
        .arg(etc.join("sshd_config"))
        .status()
        .expect("chmod");
    let again = scan(&patterns, &PackageDb::default(), DEFAULT_MAX_FILE_BYTES);
    assert_eq!(
        drift::status(
            Some(&before),
            Some(find(&again, &etc.join("cron.d/backup")))
        ),
        drift::Status::Ok
    );
    let ssh = find(&files, &etc.join("sshd_config"));
    assert_eq!(
        drift::status(Some(ssh), Some(find(&again, &etc.join("sshd_config")))),
        drift::Status::Drifted
    );
}

#[test]
fn the_dpkg_database_owns_verifies_and_explains_an_upgrade() {
    let t = TempDir::new();
    let rig = DpkgRig::new(&t.0);
    let conf = t.0.join("etc/thdrift/app.conf");
    let data = t.0.join("etc/thdrift/defaults");
    let v1 = rig.build(
        "thdrift",
        "1.0-1",
        &[(&conf, "listen = 80\n"), (&data, "a\n")],
        true,
    );
    let v2 = rig.build(
        "thdrift",
        "1.1-1",
        &[(&conf, "listen = 8080\n"), (&data, "b\n")],
        true,
    );
    rig.install(&v1);
    let db = PackageDb {
        dpkg_admindir: Some(rig.admindir.clone()),
        rpm_dbpath: None,
    };
    let patterns = vec![format!("{}/etc/thdrift/*", t.0.display())];
    let base = scan(&patterns, &db, DEFAULT_MAX_FILE_BYTES);
    let b = find(&base, &conf).clone();
    assert_eq!(b.package.as_deref(), Some("thdrift"));
    assert_eq!(b.package_version.as_deref(), Some("1.0-1"));
    assert_eq!(b.package_verified, Some(true));
    assert_eq!(find(&base, &data).package_verified, Some(true));

    // The upgrade changes the file; dpkg vouches for the new content: explained.
    rig.install(&v2);
    let up = scan(&patterns, &db, DEFAULT_MAX_FILE_BYTES);
    let u = find(&up, &conf);
    assert_eq!(u.package_version.as_deref(), Some("1.1-1"));
    assert_eq!(u.package_verified, Some(true));
    assert_ne!(u.sha256, b.sha256);
    assert_eq!(drift::status(Some(&b), Some(u)), drift::Status::Drifted);
    let why = drift::explain(&b, u).expect("explained by the upgrade");
    assert_eq!(
        (
            why.package.as_str(),
            why.from_version.as_str(),
            why.to_version.as_str()
        ),
        ("thdrift", "1.0-1", "1.1-1")
    );

    // Changed by hand afterwards: dpkg --verify no longer vouches for it; not explained.
    std::fs::write(&conf, "listen = 8080\nallow = 0.0.0.0/0\n").expect("edit");
    let hand = scan(&patterns, &db, DEFAULT_MAX_FILE_BYTES);
    let h = find(&hand, &conf);
    assert_eq!(h.package_verified, Some(false));
    assert_eq!(drift::explain(&b, h), None);
    assert_eq!(
        find(&hand, &data).package_verified,
        Some(true),
        "the other file still verifies"
    );
}

/// An rpm package built with `rpmbuild` whose file lives in the test directory.
fn rpm_package(t: &Path, version: &str, conf: &Path) -> PathBuf {
    let top = t.join("rpmbuild");
    std::fs::create_dir_all(top.join("SPECS")).expect("dirs");
    let spec = top.join(format!("SPECS/thrpm-{version}.spec"));
    std::fs::write(
        &spec,
        format!(
            "Name: thrpm\nVersion: {version}\nRelease: 1\nSummary: drift test\nLicense: MIT\nBuildArch: noarch\n\
             %description\ndrift test\n%install\nmkdir -p %{{buildroot}}{dir}\necho \"port = {version}\" > %{{buildroot}}{conf}\n\
             %files\n%config {conf}\n",
            dir = conf.parent().expect("dir").display(),
            conf = conf.display()
        ),
    )
    .expect("spec");
    let out = Command::new("rpmbuild")
        .args(["-bb", "--quiet", "--define"])
        .arg(format!("_topdir {}", top.display()))
        .arg(&spec)
        .output()
        .expect("rpmbuild");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    top.join(format!("RPMS/noarch/thrpm-{version}-1.noarch.rpm"))
}

fn rpm(dbpath: &Path, args: &[&str], file: &Path) {
    let out = Command::new("rpm")
        .arg("--dbpath")
        .arg(dbpath)
        .args(args)
        .arg(file)
        .output()
        .expect("rpm");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_rpm_database_owns_verifies_and_explains_an_upgrade() {
    let t = TempDir::new();
    let dbpath = t.0.join("rpmdb");
    std::fs::create_dir_all(&dbpath).expect("db");
    let out = Command::new("rpm")
        .arg("--dbpath")
        .arg(&dbpath)
        .arg("--initdb")
        .output()
        .expect("rpm");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let conf = t.0.join("etc/thrpm/app.conf");
    let v1 = rpm_package(&t.0, "1.0", &conf);
    let v2 = rpm_package(&t.0, "1.1", &conf);
    rpm(&dbpath, &["-i", "--nodeps", "--noscripts"], &v1);
    let db = PackageDb {
        dpkg_admindir: None,
        rpm_dbpath: Some(dbpath.clone()),
    };
    // A file no package owns is asked about too (rpm answers on stdout for it).
    std::fs::write(t.0.join("etc/thrpm/local.conf"), "x\n").expect("w");
    let patterns = vec![format!("{}/etc/thrpm/*", t.0.display())];
    let base = scan(&patterns, &db, DEFAULT_MAX_FILE_BYTES);
    let b = find(&base, &conf).clone();
    assert_eq!(b.package.as_deref(), Some("thrpm"));
    assert_eq!(b.package_version.as_deref(), Some("1.0-1"));
    assert_eq!(b.package_verified, Some(true));
    assert_eq!(find(&base, &t.0.join("etc/thrpm/local.conf")).package, None);
    rpm(&dbpath, &["-U", "--nodeps", "--noscripts"], &v2);
    let up = scan(&patterns, &db, DEFAULT_MAX_FILE_BYTES);
    let u = find(&up, &conf);
    assert_eq!(u.package_version.as_deref(), Some("1.1-1"));
    assert_eq!(u.package_verified, Some(true));
    assert!(drift::explain(&b, u).is_some_and(|e| e.to_version == "1.1-1"));
    std::fs::write(&conf, "port = 1.1\nbind = 0.0.0.0\n").expect("edit");
    let hand = scan(&patterns, &db, DEFAULT_MAX_FILE_BYTES);
    assert_eq!(
        find(&hand, &conf).package_verified,
        Some(false),
        "rpm -V flags it"
    );
    assert_eq!(drift::explain(&b, find(&hand, &conf)), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inotify_wakes_a_scan_when_a_watched_directory_changes() {
    let t = TempDir::new();
    std::fs::write(t.0.join("hosts"), "127.0.0.1 localhost\n").expect("w");
    let wake = Arc::new(tokio::sync::Notify::new());
    let watcher = Watcher::start(wake.clone());
    watcher.set([t.0.clone()].into_iter().collect());
    // Let the watcher pick the directory up, then change a file in it.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    std::fs::write(t.0.join("hosts"), "127.0.0.1 localhost evil\n").expect("w");
    tokio::time::timeout(Duration::from_secs(10), wake.notified())
        .await
        .expect("inotify woke a scan");
}

/// CONTRACT 30: a scan hashes regular files only and only up to its cap. A 40 GiB sparse
/// file is `too_large` with its size (never read), a FIFO named literally or matched by a
/// glob is `special` (never opened, so the scan cannot block on it), and patterns under
/// /proc are skipped even if governance ever held one.
#[test]
fn a_scan_never_reads_what_could_stall_it() {
    let t = TempDir::new();
    let etc = t.0.join("etc");
    std::fs::create_dir_all(&etc).expect("dir");
    let sparse = etc.join("huge.img");
    let f = std::fs::File::create(&sparse).expect("create");
    f.set_len(40 * 1024 * 1024 * 1024).expect("sparse 40 GiB");
    drop(f);
    let fifo = etc.join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    std::fs::write(etc.join("small.conf"), "a=1\n").expect("w");
    std::fs::write(etc.join("big.conf"), "x".repeat(100)).expect("w");
    let e = etc.display();
    let patterns = vec![
        format!("{e}/pipe"),
        format!("{e}/*"),
        "/proc/kmsg".to_owned(),
    ];
    let (tx, rx) = std::sync::mpsc::channel();
    let scanning = patterns.clone();
    std::thread::spawn(move || {
        let _ = tx.send(scan(&scanning, &PackageDb::default(), 64));
    });
    let files = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the scan ends: nothing it met blocked it");
    assert_eq!(files.len(), 4, "{files:?}");
    assert!(files.iter().all(|f| !f.path.starts_with("/proc")));
    for f in &files {
        assert!(f.check().is_ok(), "{f:?}");
    }
    let huge = find(&files, &sparse);
    assert_eq!(huge.kind, Kind::TooLarge);
    assert_eq!(huge.size, Some(40 * 1024 * 1024 * 1024));
    assert!(huge.sha256.is_none() && huge.mtime.is_some(), "{huge:?}");
    let pipe = find(&files, &fifo);
    assert_eq!(pipe.kind, Kind::Special);
    assert!(pipe.sha256.is_none() && pipe.mode.is_some(), "{pipe:?}");
    assert_eq!(find(&files, &etc.join("big.conf")).kind, Kind::TooLarge);
    let small = find(&files, &etc.join("small.conf"));
    assert_eq!(small.kind, Kind::File);
    assert_eq!(
        small.sha256.as_deref(),
        tool("sha256sum", &[], &etc.join("small.conf"))
            .split_whitespace()
            .next()
    );
    // A file too large to hash drifts when its size or modification time moves.
    let before = huge.clone();
    Command::new("touch")
        .args(["-d", "2001-01-01"])
        .arg(&sparse)
        .status()
        .expect("touch");
    let again = scan(&patterns, &PackageDb::default(), 64);
    assert!(!find(&again, &sparse).same_as(&before));
    assert!(find(&again, &fifo).same_as(pipe));
}
