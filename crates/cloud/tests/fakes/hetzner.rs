//! A local Hetzner Cloud API (v1) for the tests, written from Hetzner's API documentation:
//! `GET /servers` and `GET /firewalls` with `page` / `per_page` pagination and their `meta`,
//! bearer-token authentication (401 `unauthorized` otherwise), and an optional 429
//! `rate_limit_exceeded` on the first request of the second page. The contract test drives
//! Hetzner's official Python library (`hcloud`) against it, so it cannot drift from what the
//! real API answers; the hub's client is then tested against the same server.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What the fake holds.
pub struct Hetzner {
    /// `http://127.0.0.1:<port>/v1`.
    pub url: String,
    /// The token it accepts.
    pub token: String,
    inner: Arc<Inner>,
}

struct Inner {
    token: String,
    servers: std::sync::Mutex<Vec<Value>>,
    firewalls: Vec<Value>,
    throttle: AtomicBool,
    throttled: AtomicUsize,
}

/// A server as the API documents it.
pub fn server(
    id: u64,
    name: &str,
    ipv4: &str,
    private: Option<&str>,
    firewalls: &[u64],
    status: &str,
) -> Value {
    let location = json!({"id": 1, "name": "fsn1", "description": "Falkenstein DC Park 1", "country": "DE",
        "city": "Falkenstein", "latitude": 50.47612, "longitude": 12.370071, "network_zone": "eu-central"});
    json!({
        "id": id,
        "name": name,
        "status": status,
        "created": "2026-01-05T10:00:00+00:00",
        "public_net": {
            "ipv4": {"id": id * 10, "ip": ipv4, "blocked": false, "dns_ptr": format!("static.{ipv4}.clients.your-server.de")},
            "ipv6": {"id": id * 10 + 1, "ip": format!("2a01:4f8:c0c:{:x}::/64", id), "blocked": false, "dns_ptr": []},
            "floating_ips": [],
            "firewalls": firewalls.iter().map(|f| json!({"id": f, "status": "applied"})).collect::<Vec<_>>(),
        },
        "private_net": private.map(|ip| vec![json!({"network": 4711, "ip": ip, "alias_ips": [], "mac_address": "86:00:00:2a:7d:e0"})]).unwrap_or_default(),
        "server_type": {"id": 104, "name": "cx22", "description": "CX22", "cores": 2, "memory": 4.0, "disk": 40,
            "deprecated": false, "prices": [], "storage_type": "local", "cpu_type": "shared", "architecture": "x86",
            "include_traffic": 21990232555520_u64},
        "location": location,
        "datacenter": {"id": 1, "name": "fsn1-dc14", "description": "Falkenstein 1 virtual DC 14", "location": location,
            "server_types": {"supported": [104], "available": [104], "available_for_migration": [104]}},
        "image": {"id": 161547269, "type": "system", "status": "available", "name": "ubuntu-24.04",
            "description": "Ubuntu 24.04", "image_size": null, "disk_size": 5, "created": "2024-04-25T13:45:04+00:00",
            "created_from": null, "bound_to": null, "os_flavor": "ubuntu", "os_version": "24.04", "rapid_deploy": true,
            "protection": {"delete": false}, "deprecated": null, "deleted": null, "labels": {}, "architecture": "x86"},
        "iso": null,
        "rescue_enabled": false,
        "locked": false,
        "backup_window": null,
        "outgoing_traffic": 123456,
        "ingoing_traffic": 654321,
        "included_traffic": 21990232555520_u64,
        "protection": {"delete": false, "rebuild": false},
        "labels": {"env": "prod", "team": "ops"},
        "volumes": [],
        "load_balancers": [],
        "primary_disk_size": 40,
        "placement_group": null,
    })
}

/// A firewall as the API documents it.
pub fn firewall(id: u64, name: &str, rules: Value, servers: &[u64]) -> Value {
    json!({
        "id": id,
        "name": name,
        "labels": {},
        "created": "2026-01-05T10:00:00+00:00",
        "rules": rules,
        "applied_to": servers.iter().map(|s| json!({"type": "server", "server": {"id": s}})).collect::<Vec<_>>(),
    })
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({"error": {"code": "unauthorized", "message": "unable to authenticate", "details": null}})),
    )
        .into_response()
}

fn page(items: &[Value], key: &str, q: &HashMap<String, String>) -> Response {
    let per_page: usize = q
        .get("per_page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(25)
        .clamp(1, 50);
    let page: usize = q
        .get("page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(1)
        .max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let slice: Vec<&Value> = items
        .iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    axum::Json(json!({
        key: slice,
        "meta": {"pagination": {
            "page": page, "per_page": per_page,
            "previous_page": if page > 1 { json!(page - 1) } else { Value::Null },
            "next_page": if page < last { json!(page + 1) } else { Value::Null },
            "last_page": last, "total_entries": items.len(),
        }},
    }))
    .into_response()
}

fn authorized(inner: &Inner, headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {}", inner.token))
}

async fn list_servers(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if !authorized(&inner, &headers) {
        return unauthorized();
    }
    if q.get("page").map(String::as_str) == Some("2")
        && inner.throttle.swap(false, Ordering::SeqCst)
    {
        inner.throttled.fetch_add(1, Ordering::SeqCst);
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("ratelimit-limit", "3600"), ("ratelimit-remaining", "0"), ("ratelimit-reset", "1")],
            axum::Json(json!({"error": {"code": "rate_limit_exceeded", "message": "limit of 3600 requests per hour reached", "details": {}}})),
        )
            .into_response();
    }
    let servers = inner.servers.lock().expect("lock");
    page(&servers, "servers", &q)
}

async fn list_firewalls(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if !authorized(&inner, &headers) {
        return unauthorized();
    }
    page(&inner.firewalls, "firewalls", &q)
}

impl Hetzner {
    /// Starts the fake with these servers and firewalls.
    pub async fn start(servers: Vec<Value>, firewalls: Vec<Value>) -> Hetzner {
        let token = format!("hz{}", uuid::Uuid::new_v4().simple());
        let inner = Arc::new(Inner {
            token: token.clone(),
            servers: std::sync::Mutex::new(servers),
            firewalls,
            throttle: AtomicBool::new(false),
            throttled: AtomicUsize::new(0),
        });
        let app = axum::Router::new()
            .route("/v1/servers", axum::routing::get(list_servers))
            .route("/v1/firewalls", axum::routing::get(list_firewalls))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Hetzner { url, token, inner }
    }

    /// The next request of the second page of servers answers 429 once.
    pub fn throttle_once(&self) {
        self.inner.throttle.store(true, Ordering::SeqCst);
    }

    /// How many 429s it answered.
    pub fn throttled(&self) -> usize {
        self.inner.throttled.load(Ordering::SeqCst)
    }

    /// Replaces the servers (a later discovery sees the change).
    pub fn set_servers(&self, servers: Vec<Value>) {
        *self.inner.servers.lock().expect("lock") = servers;
    }
}

/// The fleet the tests use: 60 servers (two pages of 50), one with an agent-matching
/// address, firewalls that open SSH to the world on some.
pub fn fleet() -> (Vec<Value>, Vec<Value>) {
    let mut servers = Vec::new();
    for i in 1..=60u64 {
        let fw: &[u64] = match i % 3 {
            0 => &[],
            1 => &[1],
            _ => &[2],
        };
        servers.push(server(
            1000 + i,
            &format!("hz-{i}"),
            &format!("203.0.113.{i}"),
            Some(&format!("10.0.0.{i}")),
            fw,
            "running",
        ));
    }
    let ssh = json!([
        {"description": "ssh", "direction": "in", "port": "22", "protocol": "tcp", "source_ips": ["0.0.0.0/0", "::/0"], "destination_ips": []},
        {"description": "web", "direction": "in", "port": "443", "protocol": "tcp", "source_ips": ["0.0.0.0/0", "::/0"], "destination_ips": []},
    ]);
    let web = json!([
        {"description": "web", "direction": "in", "port": "443", "protocol": "tcp", "source_ips": ["0.0.0.0/0"], "destination_ips": []},
        {"description": "ssh from the office", "direction": "in", "port": "22", "protocol": "tcp", "source_ips": ["198.51.100.0/24"], "destination_ips": []},
    ]);
    let on = |r: u64| -> Vec<u64> {
        (1..=60u64)
            .filter(|i| i % 3 == r)
            .map(|i| 1000 + i)
            .collect()
    };
    let firewalls = vec![
        firewall(1, "ssh-open", ssh, &on(1)),
        firewall(2, "web-only", web, &on(2)),
    ];
    (servers, firewalls)
}
