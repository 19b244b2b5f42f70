//! The Docker Engine API as the agent speaks it (inventory's containers, restarts, the
//! emergency stop), against a local server speaking that API over a Unix socket — and that
//! server held true by Docker's official Python client (docker-py, installed by `.ci/run`)
//! driven against it: what docker-py reads and how it reacts to each status (204, 304, 404)
//! is what the real engine answers, so what the agent gets from this server is too.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One container the server knows.
#[derive(Clone)]
struct Container {
    id: &'static str,
    name: &'static str,
    image: &'static str,
    running: bool,
    restarts: u64,
    labels: Value,
}

/// A local Docker Engine API: `/_ping`, `/version`, `/containers/json`,
/// `/containers/{id}/json`, `/containers/{id}/stop` and `/restart`, with or without the
/// `/v1.NN` prefix, HTTP/1.0 or 1.1 with keep-alive. Stateful: a stop is seen by the next
/// list. Every request line is kept.
struct Engine {
    dir: PathBuf,
    socket: PathBuf,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn engine() -> Engine {
    let dir = std::env::temp_dir().join(format!("th-docker-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let socket = dir.join("docker.sock");
    let listener = UnixListener::bind(&socket).expect("bind");
    let containers = Arc::new(Mutex::new(BTreeMap::from([
        (
            "abc123",
            Container {
                id: "abc123",
                name: "shop-db-1",
                image: "postgres:16",
                running: true,
                restarts: 3,
                labels: json!({"com.docker.compose.project": "shop", "com.docker.compose.service": "db"}),
            },
        ),
        (
            "def456",
            Container {
                id: "def456",
                name: "lonely",
                image: "nginx",
                running: false,
                restarts: 0,
                labels: json!({}),
            },
        ),
        (
            "fed789",
            Container {
                id: "fed789",
                name: "web",
                image: "nginx",
                running: true,
                restarts: 0,
                labels: json!({}),
            },
        ),
    ])));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let log = requests.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let containers = containers.clone();
            let log = log.clone();
            std::thread::spawn(move || serve(stream, &containers, &log));
        }
    });
    Engine {
        dir,
        socket,
        requests,
    }
}

fn serve(
    stream: UnixStream,
    containers: &Mutex<BTreeMap<&'static str, Container>>,
    log: &Mutex<Vec<String>>,
) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end().to_owned();
        let (mut length, mut close) = (0usize, line.ends_with("HTTP/1.0"));
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end().to_ascii_lowercase();
            if h.is_empty() {
                break;
            }
            if let Some(v) = h.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            if h == "connection: close" {
                close = true;
            }
        }
        let mut body = vec![0u8; length];
        let _ = reader.read_exact(&mut body);
        if let Ok(mut l) = log.lock() {
            l.push(line.clone());
        }
        let (status, answer) = route(&line, containers);
        let ping = line.contains("/_ping");
        let text = match answer {
            Some(v) => v.to_string(),
            None if ping => "OK".to_owned(),
            None => String::new(),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nApi-Version: 1.43\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}\r\n",
            if ping {
                "text/plain; charset=utf-8"
            } else {
                "application/json"
            },
            text.len(),
            if close { "Connection: close\r\n" } else { "" }
        );
        if out
            .write_all(head.as_bytes())
            .and_then(|()| out.write_all(text.as_bytes()))
            .is_err()
            || close
        {
            return;
        }
    }
}

fn route(
    line: &str,
    containers: &Mutex<BTreeMap<&'static str, Container>>,
) -> (&'static str, Option<Value>) {
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or_default();
    let target = words.next().unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    // The API version prefix, as clients send it.
    let path = match path.strip_prefix("/v1.") {
        Some(rest) => rest.find('/').map(|i| &rest[i..]).unwrap_or("/"),
        None => path,
    };
    let mut all = containers.lock().expect("containers");
    let find = |all: &BTreeMap<&str, Container>, key: &str| {
        all.values()
            .find(|c| c.id == key || c.name == key)
            .map(|c| c.id)
    };
    let missing = |key: &str| {
        (
            "404 Not Found",
            Some(json!({"message": format!("No such container: {key}")})),
        )
    };
    match (method, path) {
        // Docker answers the ping in plain text.
        ("GET", "/_ping") => ("200 OK", None),
        ("GET", "/version") => (
            "200 OK",
            Some(
                json!({"Version": "24.0.7", "ApiVersion": "1.43", "MinAPIVersion": "1.12", "Os": "linux", "Arch": "amd64"}),
            ),
        ),
        ("GET", "/containers/json") => {
            let every = query.split('&').any(|p| p == "all=1" || p == "all=true");
            let list: Vec<Value> = all
                .values()
                .filter(|c| every || c.running)
                .map(|c| {
                    json!({"Id": c.id, "Names": [format!("/{}", c.name)], "Image": c.image,
                        "State": if c.running { "running" } else { "exited" },
                        "Status": if c.running { "Up 2 hours" } else { "Exited (0) 1 hour ago" },
                        "Labels": c.labels})
                })
                .collect();
            ("200 OK", Some(Value::Array(list)))
        }
        (m, p) if p.starts_with("/containers/") => {
            let rest = &p["/containers/".len()..];
            let (key, action) = rest.split_once('/').unwrap_or((rest, ""));
            let Some(id) = find(&all, key) else {
                return missing(key);
            };
            let c = all.get_mut(id).expect("container");
            match (m, action) {
                ("GET", "json") => (
                    "200 OK",
                    Some(
                        json!({"Id": c.id, "Name": format!("/{}", c.name), "RestartCount": c.restarts,
                        "Image": format!("sha256:{}", c.id), "Config": {"Image": c.image, "Labels": c.labels},
                        "State": {"Status": if c.running { "running" } else { "exited" }, "Running": c.running}}),
                    ),
                ),
                ("POST", "stop") if !c.running => ("304 Not Modified", None),
                ("POST", "stop") => {
                    c.running = false;
                    ("204 No Content", None)
                }
                ("POST", "restart") => {
                    c.running = true;
                    c.restarts += 1;
                    ("204 No Content", None)
                }
                _ => ("404 Not Found", Some(json!({"message": "page not found"}))),
            }
        }
        _ => ("404 Not Found", Some(json!({"message": "page not found"}))),
    }
}

/// docker-py, Docker's official Python client, against the server: what it reads and how it
/// takes each answer.
fn docker_py(socket: &Path, script: &str) -> Value {
    let program = format!(
        "import json, docker\nfrom docker.errors import NotFound\nclient = docker.DockerClient(base_url='unix://{}', version='auto')\nout = {{}}\n{script}\nprint(json.dumps(out))\n",
        socket.display()
    );
    let run = std::process::Command::new("python3")
        .arg("-c")
        .arg(&program)
        .output()
        .expect("python3");
    assert!(
        run.status.success(),
        "docker-py (installed by .ci/run):\n{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout).expect("json")
}

#[test]
fn the_local_engine_answers_docker_py_as_docker_does() {
    let e = engine();
    let out = docker_py(
        &e.socket,
        "out['ping'] = client.ping()\n\
         out['api'] = client.api.api_version\n\
         out['all'] = sorted([(c.name, c.status, c.labels.get('com.docker.compose.project')) for c in client.containers.list(all=True)])\n\
         out['running'] = sorted([c.name for c in client.containers.list()])\n\
         out['restarts'] = client.api.inspect_container('shop-db-1')['RestartCount']\n\
         client.api.stop('web', timeout=10)\n\
         client.api.stop('web', timeout=10)\n\
         try:\n    client.api.stop('ghost', timeout=10)\n    out['ghost'] = 'stopped'\nexcept NotFound as err:\n    out['ghost'] = err.explanation\n\
         out['after_stop'] = client.containers.get('web').status\n\
         client.containers.get('web').restart(timeout=10)\n\
         out['after_restart'] = client.containers.get('web').status",
    );
    assert_eq!(out["ping"], true);
    assert_eq!(out["api"], "1.43");
    assert_eq!(
        out["all"],
        json!([
            ["lonely", "exited", null],
            ["shop-db-1", "running", "shop"],
            ["web", "running", null]
        ])
    );
    assert_eq!(out["running"], json!(["shop-db-1", "web"]));
    assert_eq!(out["restarts"], 3);
    // A second stop is Docker's 304, which docker-py takes as success; an unknown name is a
    // 404 with Docker's message.
    assert_eq!(out["ghost"], "No such container: ghost");
    assert_eq!(out["after_stop"], "exited");
    assert_eq!(out["after_restart"], "running");
    let requests = e.requests.lock().expect("log").clone();
    assert!(
        requests
            .iter()
            .any(|r| r.starts_with("POST /v1.43/containers/web/stop?t=10 ")),
        "{requests:?}"
    );
}

#[tokio::test]
async fn the_agent_reads_containers_restarts_and_stops_them_through_the_engine_api() {
    use trusthub_agent::host::command::CommandOutcome;
    use trusthub_agent::host::docker::{containers_at, restart_at, stop_at};
    let e = engine();
    let v = containers_at(&e.socket).await;
    assert_eq!(
        v[0],
        json!({"id": "abc123", "name": "shop-db-1", "image": "postgres:16", "state": "running", "restart_count": 3, "compose_project": "shop", "compose_service": "db"})
    );
    assert_eq!(v[1]["name"], "lonely");
    assert_eq!(v[1]["state"], "exited");
    assert_eq!(v[1]["compose_project"], Value::Null);
    // The emergency stop: 204 stopped, 304 already stopped, 404 unknown, no socket at all.
    assert_eq!(
        stop_at(&e.socket, "web").await,
        CommandOutcome::ok("stopped web\n")
    );
    assert_eq!(
        stop_at(&e.socket, "web").await,
        CommandOutcome::ok("web was already stopped\n")
    );
    let CommandOutcome {
        code, stderr: err, ..
    } = stop_at(&e.socket, "ghost").await;
    assert_eq!(code, 1);
    assert!(err.contains("Docker answered 404"), "{err}");
    let CommandOutcome {
        code, stderr: err, ..
    } = stop_at(&e.dir.join("absent.sock"), "web").await;
    assert_eq!(code, 1);
    assert!(err.contains("Docker socket"), "{err}");
    // A restart brings it back, and the next read says so.
    assert_eq!(
        restart_at(&e.socket, &["web".to_owned()]).await,
        CommandOutcome::ok("restarted web\n")
    );
    let v = containers_at(&e.socket).await;
    assert_eq!(v[2]["state"], "running");
    assert_eq!(v[2]["restart_count"], 1);
    assert_eq!(containers_at(&e.dir.join("absent.sock")).await, json!([]));
    let requests = e.requests.lock().expect("log").clone();
    assert!(
        requests.contains(&"POST /containers/web/stop?t=10 HTTP/1.0".to_owned()),
        "{requests:?}"
    );
}
