//! The compliance checks on this real host, cross-checked with Lynis (Debian's `lynis`, which
//! CI installs) where both look at the same setting: the kernel's ICMP-redirect and ASLR
//! sysctls (Lynis KRNL-6000 lists every value that differs from its profile), password ageing
//! in /etc/login.defs (AUTH-9286), /tmp as its own mount (FILE-6310) and auditd (ACCT-9628).

use std::path::Path;
use trusthub_agent::collect::compliance::{Status, run};

fn lynis() -> Option<String> {
    let found = std::process::Command::new("lynis")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    match found {
        true => Some("lynis".into()),
        false if std::env::var_os("CI").is_some() => panic!("lynis is required in CI"),
        false => {
            eprintln!("NOTICE: lynis is not installed; skipping");
            None
        }
    }
}

#[test]
fn the_checks_agree_with_lynis_on_this_host() {
    let Some(bin) = lynis() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("lynis-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let report = dir.join("report.dat");
    let out = std::process::Command::new(bin)
        .args(["audit", "system", "--quick", "--no-colors", "--quiet"])
        .args(["--tests", "KRNL-6000 FILE-6310 ACCT-9628 AUTH-9286"])
        .arg("--report-file")
        .arg(&report)
        .arg("--logfile")
        .arg(dir.join("lynis.log"))
        .output()
        .expect("lynis runs");
    let text = std::fs::read_to_string(&report)
        .unwrap_or_else(|_| panic!("no report: {}", String::from_utf8_lossy(&out.stderr)));
    let ours = run(Path::new("/"));
    let check = |id: &str| {
        ours.iter()
            .find(|o| o.check_id == id)
            .expect("check")
            .clone()
    };

    // KRNL-6000: `field:<key>;prefval:<p>;value:<v>;` for each value unlike the profile.
    let differs = |key: &str| {
        text.lines()
            .filter(|l| l.starts_with("details[]=KRNL-6000|sysctl|"))
            .find_map(|l| {
                let f = l.split(&format!("field:{key};")).nth(1)?;
                f.split("value:")
                    .nth(1)?
                    .split(';')
                    .next()
                    .map(str::to_owned)
            })
    };
    let net = check("sysctl_network");
    let mut any = false;
    for key in [
        "net.ipv4.conf.all.accept_redirects",
        "net.ipv4.conf.all.send_redirects",
    ] {
        let real = std::fs::read_to_string(format!("/proc/sys/{}", key.replace('.', "/")))
            .expect("sysctl")
            .trim()
            .to_owned();
        match differs(key) {
            Some(v) => {
                assert_eq!(v, real, "{key}");
                assert!(
                    net.evidence.contains(&format!("{key} = {v}")),
                    "{key}: {}",
                    net.evidence
                );
                any = true;
            }
            None => assert!(
                net.evidence.contains(&format!("{key} = 0")),
                "{key}: {}",
                net.evidence
            ),
        }
    }
    if any {
        assert_eq!(
            net.status,
            Status::Fail,
            "Lynis flags a redirect sysctl: {}",
            net.evidence
        );
    }
    let aslr = check("sysctl_aslr");
    match differs("kernel.randomize_va_space") {
        Some(v) => {
            assert_eq!(aslr.status, Status::Fail);
            assert_eq!(aslr.evidence, format!("kernel.randomize_va_space = {v}"));
        }
        None => assert_eq!(aslr.status, Status::Pass, "{}", aslr.evidence),
    }

    // AUTH-9286: a suggestion to configure an age means ours fails it.
    let suggests = |id: &str, words: &str| {
        text.lines()
            .any(|l| l.starts_with(&format!("suggestion[]={id}|")) && l.contains(words))
    };
    if suggests("AUTH-9286", "minimum password age") {
        assert_eq!(check("pass_min_days").status, Status::Fail);
    } else {
        assert_eq!(
            check("pass_min_days").status,
            Status::Pass,
            "{}",
            check("pass_min_days").evidence
        );
    }
    if suggests("AUTH-9286", "maximum password age") {
        assert_eq!(check("pass_max_days").status, Status::Fail);
    }

    // FILE-6310: /tmp not on a partition of its own, both ways.
    let tmp = check("tmp_mount");
    assert_eq!(
        suggests("FILE-6310", "place /tmp on a separate partition"),
        tmp.evidence == "/tmp is not a separate mount",
        "{}",
        tmp.evidence
    );

    // ACCT-9628: auditd not installed means Lynis found it not running.
    if check("auditd").status == Status::Fail {
        assert!(
            text.lines().any(|l| l == "linux_auditd_running=0"),
            "Lynis sees auditd running"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
