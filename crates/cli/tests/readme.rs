//! README.md's shell examples, run as written against a real hub: `trusthub up` (the hub and
//! an agent watching this host) in a scratch directory, the examples one block after another
//! in one shell, so that a variable a block sets is there for the next, as it would be in a
//! reader's terminal. Every `curl` fails the run on an HTTP error (`--fail-with-body`), so an
//! example that only prints an error is caught. The hub's address replaces
//! `http://127.0.0.1:8080` (the default the README names); the files the examples import or
//! read (`./osv`, `npm-all.zip`, `osv.tar.gz`) are made here first, as a reader would have
//! them. A block that cannot run on the machine of a test (the two commands that build and
//! test this repository, another host, a pip install) says so with a
//! `<!-- readme-test: skip: <reason> -->` line before it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_trusthub");
const SKIP: &str = "<!-- readme-test: skip: ";

/// One fenced `sh` block of the README.
#[derive(Debug)]
struct Block {
    /// 1-based line of its opening fence.
    line: usize,
    text: String,
    /// Why it is not run, when it is not.
    skip: Option<String>,
}

fn blocks(readme: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut current: Option<(usize, usize, Vec<String>)> = None;
    let mut last_comment: Option<String> = None;
    for (i, line) in readme.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut current {
            Some((start, indent, lines)) => {
                if trimmed.starts_with("```") {
                    out.push(Block {
                        line: *start,
                        text: lines.join("\n"),
                        skip: last_comment.take(),
                    });
                    current = None;
                } else {
                    let cut = line.len() - line.trim_start().len();
                    lines.push(line[cut.min(*indent)..].to_owned());
                }
            }
            None if trimmed == "```sh" => {
                current = Some((i + 1, line.len() - trimmed.len(), Vec::new()));
            }
            None if trimmed.starts_with(SKIP) => {
                last_comment = Some(
                    trimmed[SKIP.len()..]
                        .trim_end_matches("-->")
                        .trim()
                        .to_owned(),
                );
            }
            None if trimmed.is_empty() => {}
            None => last_comment = None,
        }
    }
    out
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `trusthub up` in `dir`, on a free port; its address once it listens.
fn start_up(dir: &Path) -> (Child, String) {
    // The restart example must not restart anything on the machine running the test: the
    // local agent accepts no action (it reports the refusal, as a host would).
    let agent = dir.join("data/agent");
    std::fs::create_dir_all(&agent).expect("agent dir");
    for d in [dir.join("data"), agent.clone()] {
        std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .expect("mode");
    }
    std::fs::write(agent.join("actions.toml"), "allow = []\n").expect("actions.toml");
    // A project of this host with a vulnerable dependency, for the vulnerability examples.
    std::fs::create_dir_all(dir.join("shop")).expect("shop");
    std::fs::write(dir.join("shop/package-lock.json"), SHOP_LOCK).expect("lockfile");
    let mut child = Command::new(BIN)
        .current_dir(dir)
        .args([
            "up",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            "data",
            "--agent-interval-secs",
            "5",
            "--project-path",
            "shop",
        ])
        .env_remove("TRUSTHUB_ADMIN_PASSWORD")
        .env_remove("TRUSTHUB_DATABASE_URL")
        .env_remove("CLOUD_ENCRYPTION_KEY")
        .env_remove("TRUSTHUB_PUBLIC_URL")
        .env_remove("TRUSTHUB_OUTBOUND_ALLOW_CIDRS")
        // A smaller CA key than the default: the examples do not depend on its size.
        .env("TRUSTHUB_CA_KEY_BITS", "2048")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn trusthub up");
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    loop {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(120)) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("trusthub up did not start");
        };
        if let Some(addr) = line.strip_prefix("Trusthub hub listening on ") {
            // Drain the rest so the hub never blocks on a full pipe.
            std::thread::spawn(move || while rx.recv().is_ok() {});
            return (child, addr.trim().to_owned());
        }
    }
}

const SHOP_LOCK: &str = r#"{"name": "shop", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
 "packages": {"": {"name": "shop", "version": "1.0.0", "dependencies": {"lodash": "4.17.20"}},
  "node_modules/lodash": {"version": "4.17.20",
   "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.20.tgz"}}}"#;

/// The files the examples import: one OSV advisory for lodash, as a folder, an ecosystem's
/// `all.zip` and a `.tar.gz`.
const FIXTURES: &str = r#"
mkdir -p osv/npm
cat > osv/npm/GHSA-35jh-r3h4-6jhm.json <<'JSON'
{"schema_version":"1.6.0","id":"GHSA-35jh-r3h4-6jhm","modified":"2024-01-02T00:00:00Z",
 "published":"2021-05-06T16:05:51Z","aliases":["CVE-2021-23337"],
 "summary":"Command Injection in lodash",
 "affected":[{"package":{"ecosystem":"npm","name":"lodash","purl":"pkg:npm/lodash"},
   "ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"4.17.21"}]}]}],
 "severity":[{"type":"CVSS_V3","score":"CVSS:3.1/AV:N/AC:L/PR:H/UI:N/S:U/C:H/I:H/A:H"}]}
JSON
(cd osv/npm && zip -q ../../npm-all.zip GHSA-35jh-r3h4-6jhm.json)
tar -czf osv.tar.gz osv
"#;

#[test]
fn every_shell_example_of_the_readme_runs_against_a_hub() {
    let readme_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(&readme_path).expect("README.md");
    let all = blocks(&readme);
    assert!(all.len() >= 20, "the README's sh blocks: {}", all.len());
    let skipped: Vec<&Block> = all.iter().filter(|b| b.skip.is_some()).collect();
    for b in &skipped {
        assert!(
            b.skip.as_deref().is_some_and(|r| r.len() > 10),
            "README line {}: a skipped block says why",
            b.line
        );
    }
    // Only what cannot run here is skipped (the two repository commands, another host, a pip
    // install, the multi-process "Scaling out" setup that processes.rs runs instead, the
    // Debian packages that package.rs installs as root).
    assert!(skipped.len() <= 7, "{skipped:#?}");

    let dir = TempDir(
        std::env::temp_dir().join(format!("trusthub-readme-{}", uuid::Uuid::new_v4().simple())),
    );
    std::fs::create_dir_all(&dir.0).expect("dir");
    let (mut hub, base) = start_up(&dir.0);

    let mut script = String::from(
        r#"set -eo pipefail
trap 'echo "::: failed: $BASH_COMMAND" >&2' ERR
# Every HTTP error fails the run, with the hub's answer on stderr.
curl() {
  local f rc=0
  f=$(mktemp)
  command curl --fail-with-body --show-error "$@" > "$f" || rc=$?
  if [ "$rc" -ne 0 ]; then cat "$f" >&2; echo >&2; rm -f "$f"; return "$rc"; fi
  cat "$f"; rm -f "$f"
}
trusthub() { "$TRUSTHUB_BIN" "$@"; }
"#,
    );
    script.push_str(FIXTURES);
    // The local agent's first metrics and inventory (it pushes every 5 s here).
    script.push_str(
        "for i in $(seq 1 60); do\n\
           [ -s data/agent/registration.json ] && break; sleep 0.5\n\
         done\n\
         sleep 12\n",
    );
    for b in all.iter().filter(|b| b.skip.is_none()) {
        script.push_str(&format!(
            "echo '::: README.md line {}' >&2\n{}\n",
            b.line,
            b.text.replace("http://127.0.0.1:8080", &base)
        ));
    }
    script.push_str("echo '::: all README examples ran' >&2\n");
    // A hung example ends the run instead of the CI job.
    let out = Command::new("timeout")
        .args(["900", "bash", "-c"])
        .arg(&script)
        .current_dir(&dir.0)
        .env("TRUSTHUB_BIN", BIN)
        .env("TRUSTHUB_CA_KEY_BITS", "2048")
        .output()
        .expect("bash");
    let _ = hub.kill();
    let _ = hub.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failed_at = stderr
        .lines()
        .rfind(|l| l.starts_with("::: README.md line "))
        .unwrap_or("before the first block");
    assert!(
        out.status.success() && stderr.contains("::: all README examples ran"),
        "README example failed ({failed_at}), exit {:?}\n--- stderr (tail)\n{}\n--- stdout (tail)\n{}",
        out.status.code(),
        tail(&stderr, 40),
        tail(&stdout, 2000),
    );
}

fn tail(text: &str, n: usize) -> String {
    if n > 100 {
        let start = text.len().saturating_sub(n);
        let start = (start..text.len())
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(text.len());
        return text[start..].to_owned();
    }
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
