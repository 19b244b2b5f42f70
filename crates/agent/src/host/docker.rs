//! The Docker Engine API over its Unix socket (`DOCKER_SOCKET`, else
//! `/var/run/docker.sock`): the containers of this host, and restarting or stopping one.

use super::command::CommandOutcome;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A GET against the Docker Engine API over its Unix socket.
async fn get(socket: &Path, path: &str) -> Option<Value> {
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

/// Containers of this host's Docker Engine (`DOCKER_SOCKET`, else `/var/run/docker.sock`).
pub async fn containers() -> Value {
    containers_at(&socket()).await
}

/// Containers from the Docker Engine API at `socket` (none when nothing answers there).
pub async fn containers_at(socket: &Path) -> Value {
    let Some(Value::Array(list)) = get(socket, "/containers/json?all=1").await else {
        return json!([]);
    };
    let mut out = Vec::with_capacity(list.len());
    for c in list {
        let id = c["Id"].as_str().unwrap_or_default().to_owned();
        let restarts = get(socket, &format!("/containers/{id}/json"))
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

/// Where the Docker Engine listens: `DOCKER_SOCKET`, else `/var/run/docker.sock`.
pub fn socket() -> PathBuf {
    std::env::var_os("DOCKER_SOCKET")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/run/docker.sock"))
}

/// `POST` to the Docker Engine API; the HTTP status, or why there was none.
async fn post(socket: &Path, path: &str) -> Result<u16, String> {
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

/// Restarts containers by name or id: a [`CommandOutcome`] like a command.
pub async fn restart(names: &[String]) -> CommandOutcome {
    restart_at(&socket(), names).await
}

/// [`restart`] through the Docker Engine API at `socket`.
pub async fn restart_at(socket: &Path, names: &[String]) -> CommandOutcome {
    let (mut out, mut err) = (String::new(), String::new());
    let mut code = 0;
    for n in names {
        match post(socket, &format!("/containers/{n}/restart?t=10")).await {
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
    CommandOutcome {
        code,
        stdout: out,
        stderr: err,
    }
}

/// Stops a container by name or id (10 s before Docker kills it).
pub async fn stop(name: &str) -> CommandOutcome {
    stop_at(&socket(), name).await
}

/// [`stop`] through the Docker Engine API at `socket`.
pub async fn stop_at(socket: &Path, name: &str) -> CommandOutcome {
    match post(socket, &format!("/containers/{name}/stop?t=10")).await {
        Ok(204) => CommandOutcome::ok(format!("stopped {name}\n")),
        Ok(304) => CommandOutcome::ok(format!("{name} was already stopped\n")),
        Ok(status) => CommandOutcome::failed(1, format!("{name}: Docker answered {status}\n")),
        Err(e) => CommandOutcome::failed(1, format!("{name}: {e}\n")),
    }
}

/// Restarts the containers of a compose service.
pub async fn compose_restart(project: &str, service: &str) -> CommandOutcome {
    let socket = socket();
    let list = containers_at(&socket).await;
    let names: Vec<String> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["compose_project"] == project && c["compose_service"] == service)
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect();
    if names.is_empty() {
        return CommandOutcome::failed(1, format!("no container of {project}::{service}"));
    }
    restart(&names).await
}
