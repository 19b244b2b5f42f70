//! A local npm registry for tests (CONTRACT 19): verdaccio, installed by `.ci/run`, on a free
//! port with anonymous publishing; packages go in with the real `npm publish`.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Where `.ci/run` installs verdaccio.
const VERDACCIO: &str =
    "/usr/local/share/trusthub-validators/verdaccio/node_modules/.bin/verdaccio";

/// Runs `cmd`, failing the test unless it succeeds: its output.
pub fn sh(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A running verdaccio, stopped when dropped.
pub struct Verdaccio {
    child: Child,
    /// `http://127.0.0.1:<port>/`.
    pub url: String,
}

impl Drop for Verdaccio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts verdaccio with its storage and configuration in `dir`.
pub fn verdaccio(dir: &Path) -> Verdaccio {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    std::fs::write(
        dir.join("config.yaml"),
        "storage: ./storage\nauth:\n  htpasswd:\n    file: ./htpasswd\n    max_users: -1\nuplinks: {}\npackages:\n  '**':\n    access: $all\n    publish: $anonymous\nlog: { type: stdout, format: pretty, level: warn }\n",
    )
    .expect("config");
    let mut child = Command::new(VERDACCIO)
        .args(["--config", "config.yaml", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("verdaccio (installed by .ci/run)");
    let url = format!("http://127.0.0.1:{port}/");
    for _ in 0..300 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Verdaccio { child, url };
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("verdaccio did not listen on {port}");
}

/// Publishes `name@version` with `extra` fields to the registry with `npm publish`.
pub fn publish(reg: &Verdaccio, work: &Path, name: &str, version: &str, extra: &str) {
    let dir = work.join(format!("{name}-{version}"));
    std::fs::create_dir_all(&dir).expect("package");
    std::fs::write(
        dir.join("package.json"),
        format!(r#"{{"name":"{name}","version":"{version}","license":"MIT"{extra}}}"#),
    )
    .expect("package.json");
    std::fs::write(
        dir.join("index.js"),
        format!("module.exports = '{version}';\n"),
    )
    .expect("index");
    let host = reg.url.trim_start_matches("http:");
    sh(Command::new("npm")
        .args(["publish", "--registry", &reg.url])
        .arg(format!("--{host}:_authToken=anonymous"))
        .current_dir(&dir));
}
