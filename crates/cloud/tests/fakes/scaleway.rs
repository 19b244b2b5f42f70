//! A local Scaleway Instance API (v1) for the tests, written from Scaleway's API reference:
//! per zone, `GET /instance/v1/zones/{zone}/servers` and `.../security_groups` with `page` /
//! `per_page` and `total_count` (and the `X-Total-Count` header), a group's `rules`;
//! `X-Auth-Token` authentication (401 `denied_authentication` otherwise). The contract test
//! drives Scaleway's own Python SDK (`scaleway`) against it.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// What the fake holds.
pub struct Scaleway {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// The API key's secret.
    pub secret: String,
    /// The project.
    pub project: String,
}

struct Inner {
    secret: String,
    project: String,
    servers: Vec<Value>,
}

/// A server as the API documents it.
pub fn server(n: u32, zone: &str, project: &str, group: &str) -> Value {
    json!({
        "id": format!("11111111-2222-4333-8444-{:012}", n), "name": format!("scw-{n}"),
        "organization": project, "project": project, "allowed_actions": ["poweroff", "terminate", "reboot"],
        "tags": ["env=prod", "web"], "commercial_type": "DEV1-S", "creation_date": "2026-01-05T10:00:00.000000+00:00",
        "dynamic_ip_required": false, "routed_ip_enabled": true, "enable_ipv6": false, "hostname": format!("scw-{n}"),
        "image": null, "protected": false, "private_ip": null,
        "public_ip": {"id": format!("ip-{n}"), "address": format!("51.15.{}.{}", n / 200, n % 200 + 1), "dynamic": false,
            "gateway": "62.210.0.1", "netmask": "32", "family": "inet", "provisioning_mode": "dhcp", "tags": [],
            "state": "attached", "ipam_id": format!("ipam-{n}")},
        "public_ips": [{"id": format!("ip-{n}"), "address": format!("51.15.{}.{}", n / 200, n % 200 + 1), "dynamic": false,
            "gateway": "62.210.0.1", "netmask": "32", "family": "inet", "provisioning_mode": "dhcp", "tags": [],
            "state": "attached", "ipam_id": format!("ipam-{n}")}],
        "mac_address": "de:00:00:5c:76:01", "modification_date": "2026-01-05T10:00:00.000000+00:00",
        "state": if n.is_multiple_of(7) { "stopped" } else { "running" }, "location": null, "ipv6": null, "boot_type": "local",
        "volumes": {}, "security_group": {"id": group, "name": group}, "maintenances": [], "state_detail": "booted",
        "arch": "x86_64", "placement_group": null, "private_nics": [], "zone": zone, "filesystems": [],
        "end_of_service": false, "admin_password_encryption_ssh_key_id": null, "admin_password_encrypted_value": null,
    })
}

fn group(id: &str, project: &str, zone: &str, policy: &str) -> Value {
    json!({"id": id, "name": id, "description": "", "enable_default_security": true, "inbound_default_policy": policy,
        "outbound_default_policy": "accept", "organization": project, "project": project, "tags": [],
        "organization_default": false, "project_default": false, "creation_date": "2026-01-05T10:00:00.000000+00:00",
        "modification_date": "2026-01-05T10:00:00.000000+00:00", "servers": [], "stateful": true, "state": "available", "zone": zone})
}

fn rules(id: &str) -> Vec<Value> {
    let rule = |n: u32, action: &str, from: u32, range: &str| {
        json!({"id": format!("{id}-r{n}"), "protocol": "TCP", "direction": "inbound", "action": action, "ip_range": range,
            "dest_port_from": from, "dest_port_to": null, "position": n, "editable": true, "zone": "fr-par-1"})
    };
    match id {
        // Default accept, but SSH from the world dropped first.
        "sg-locked" => vec![
            rule(1, "drop", 22, "0.0.0.0/0"),
            rule(2, "drop", 3389, "0.0.0.0/0"),
        ],
        // Default drop, SSH from the world accepted.
        "sg-ssh" => vec![
            rule(1, "accept", 22, "0.0.0.0/0"),
            rule(2, "accept", 443, "0.0.0.0/0"),
        ],
        // Default accept: everything reaches the server.
        _ => vec![],
    }
}

fn refuse(inner: &Inner, headers: &HeaderMap) -> Option<Response> {
    let ok = headers
        .get("x-auth-token")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == inner.secret);
    (!ok).then(|| {
        (
            StatusCode::UNAUTHORIZED,
            axum::Json(
                json!({"message": "authentication is denied", "method": "api_key",
        "reason": "invalid_argument", "type": "denied_authentication"}),
            ),
        )
            .into_response()
    })
}

fn page(items: Vec<Value>, key: &str, q: &HashMap<String, String>) -> Response {
    let per_page: usize = q
        .get("per_page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(50)
        .clamp(1, 100);
    let page: usize = q
        .get("page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let total = items.len();
    let slice: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    (
        [("x-total-count", total.to_string())],
        axum::Json(json!({key: slice, "total_count": total})),
    )
        .into_response()
}

async fn servers(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Path(zone): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers) {
        return r;
    }
    let project = q.get("project").cloned().unwrap_or_default();
    let items = inner
        .servers
        .iter()
        .filter(|s| {
            s["zone"] == zone.as_str() && (project.is_empty() || s["project"] == project.as_str())
        })
        .cloned()
        .collect();
    page(items, "servers", &q)
}

async fn list_groups(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Path(zone): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers) {
        return r;
    }
    let items = vec![
        group("sg-open", &inner.project, &zone, "accept"),
        group("sg-locked", &inner.project, &zone, "accept"),
        group("sg-ssh", &inner.project, &zone, "drop"),
    ];
    page(items, "security_groups", &q)
}

async fn group_rules(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Path((_zone, id)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers) {
        return r;
    }
    page(rules(&id), "rules", &q)
}

impl Scaleway {
    /// Starts the fake: 150 servers in fr-par-1 (two pages of 100) and 30 in nl-ams-1, each
    /// behind one of three security groups in turn.
    pub async fn start() -> Scaleway {
        let project = uuid::Uuid::new_v4().to_string();
        let groups = ["sg-open", "sg-locked", "sg-ssh"];
        let list = (1..=180u32)
            .map(|n| {
                let zone = if n <= 150 { "fr-par-1" } else { "nl-ams-1" };
                server(n, zone, &project, groups[n as usize % 3])
            })
            .collect();
        let inner = Arc::new(Inner {
            secret: uuid::Uuid::new_v4().to_string(),
            project: project.clone(),
            servers: list,
        });
        let app = axum::Router::new()
            .route(
                "/instance/v1/zones/{zone}/servers",
                axum::routing::get(servers),
            )
            .route(
                "/instance/v1/zones/{zone}/security_groups",
                axum::routing::get(list_groups),
            )
            .route(
                "/instance/v1/zones/{zone}/security_groups/{id}/rules",
                axum::routing::get(group_rules),
            )
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Scaleway {
            url,
            secret: inner.secret.clone(),
            project,
        }
    }
}
