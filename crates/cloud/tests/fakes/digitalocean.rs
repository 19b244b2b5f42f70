//! A local DigitalOcean API (v2) for the tests, written from DigitalOcean's API reference:
//! `GET /v2/account`, `GET /v2/droplets` and `GET /v2/firewalls` with `page` / `per_page`
//! pagination, `links.pages` and `meta.total`, bearer-token authentication (401
//! `unauthorized` otherwise). Served over HTTPS, as DigitalOcean's official Python library
//! (`pydo`, on azure-core) sends a bearer token over TLS only; the contract test drives pydo
//! against it.

use super::serve::{Served, serve};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// What the fake holds.
pub struct DigitalOcean {
    /// Where it listens (`https://localhost:<port>`, the endpoint without `/v2`).
    pub served: Served,
    /// The token it accepts.
    pub token: String,
}

struct Inner {
    token: String,
    droplets: Vec<Value>,
    firewalls: Vec<Value>,
}

/// A droplet as the API documents it.
pub fn droplet(
    id: u64,
    name: &str,
    public: &str,
    private: &str,
    tags: &[&str],
    status: &str,
) -> Value {
    json!({
        "id": id, "name": name, "memory": 1024, "vcpus": 1, "disk": 25, "locked": false, "status": status,
        "kernel": null, "created_at": "2026-01-05T10:00:00Z", "features": ["monitoring", "private_networking"],
        "backup_ids": [], "next_backup_window": null, "snapshot_ids": [],
        "image": {"id": 7555620, "name": "24.04 (LTS) x64", "distribution": "Ubuntu", "slug": "ubuntu-24-04-x64",
            "public": true, "regions": ["fra1"], "created_at": "2024-04-25T00:00:00Z", "type": "base",
            "min_disk_size": 15, "size_gigabytes": 2.36, "description": "", "tags": [], "status": "available"},
        "volume_ids": [],
        "size": {"slug": "s-1vcpu-1gb", "memory": 1024, "vcpus": 1, "disk": 25, "transfer": 1.0,
            "price_monthly": 6.0, "price_hourly": 0.00893, "regions": ["fra1"], "available": true, "description": "Basic"},
        "size_slug": "s-1vcpu-1gb",
        "networks": {
            "v4": [
                {"ip_address": private, "netmask": "255.255.240.0", "gateway": "10.114.0.1", "type": "private"},
                {"ip_address": public, "netmask": "255.255.240.0", "gateway": "203.0.113.1", "type": "public"},
            ],
            "v6": [{"ip_address": format!("2a03:b0c0:3:d0::{:x}", id), "netmask": 64, "gateway": "2a03:b0c0:3:d0::1", "type": "public"}],
        },
        "region": {"name": "Frankfurt 1", "slug": "fra1", "features": ["backups", "ipv6", "metadata"],
            "available": true, "sizes": ["s-1vcpu-1gb"]},
        "tags": tags,
        "vpc_uuid": "5a4981aa-9653-4bd1-bef5-d6bff52042e4",
    })
}

/// A cloud firewall as the API documents it.
pub fn firewall(id: &str, name: &str, ssh_world: bool, droplets: &[u64], tags: &[&str]) -> Value {
    let ssh_from = if ssh_world {
        json!(["0.0.0.0/0", "::/0"])
    } else {
        json!(["198.51.100.0/24"])
    };
    json!({
        "id": id, "name": name, "status": "succeeded", "created_at": "2026-01-05T10:00:00Z",
        "inbound_rules": [
            {"protocol": "tcp", "ports": "22", "sources": {"addresses": ssh_from}},
            {"protocol": "tcp", "ports": "443", "sources": {"addresses": ["0.0.0.0/0", "::/0"]}},
        ],
        "outbound_rules": [{"protocol": "tcp", "ports": "all", "destinations": {"addresses": ["0.0.0.0/0", "::/0"]}}],
        "droplet_ids": droplets, "tags": tags, "pending_changes": [],
    })
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({"id": "unauthorized", "message": "Unable to authenticate you."})),
    )
        .into_response()
}

fn authorized(inner: &Inner, headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {}", inner.token))
}

fn page(
    items: &[Value],
    key: &str,
    path: &str,
    host: &str,
    q: &HashMap<String, String>,
) -> Response {
    let per_page: usize = q
        .get("per_page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(20)
        .clamp(1, 200);
    let page: usize = q
        .get("page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(1)
        .max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let link = |p: usize| format!("https://{host}/v2/{path}?page={p}&per_page={per_page}");
    let mut pages = serde_json::Map::new();
    if page > 1 {
        pages.insert("first".into(), json!(link(1)));
        pages.insert("prev".into(), json!(link(page - 1)));
    }
    if page < last {
        pages.insert("next".into(), json!(link(page + 1)));
        pages.insert("last".into(), json!(link(last)));
    }
    let slice: Vec<&Value> = items
        .iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    axum::Json(json!({key: slice, "links": {"pages": pages}, "meta": {"total": items.len()}}))
        .into_response()
}

fn host(headers: &HeaderMap) -> String {
    headers
        .get("host")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("api.digitalocean.com")
        .to_owned()
}

async fn account(State(inner): State<Arc<Inner>>, headers: HeaderMap) -> Response {
    if !authorized(&inner, &headers) {
        return unauthorized();
    }
    axum::Json(json!({"account": {"droplet_limit": 25, "floating_ip_limit": 3, "volume_limit": 100,
        "email": "ops@example.com", "uuid": "b6fr89dbf6d9156cace5f3c78dc9851d957381ef", "email_verified": true,
        "status": "active", "status_message": "", "team": {"uuid": "5df3e3004a17e242b7c20ca6b9fc25b701a47ece", "name": "Ops"}}}))
    .into_response()
}

async fn droplets(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if !authorized(&inner, &headers) {
        return unauthorized();
    }
    page(&inner.droplets, "droplets", "droplets", &host(&headers), &q)
}

async fn firewalls(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if !authorized(&inner, &headers) {
        return unauthorized();
    }
    page(
        &inner.firewalls,
        "firewalls",
        "firewalls",
        &host(&headers),
        &q,
    )
}

impl DigitalOcean {
    /// Starts the fake (HTTPS) with 250 droplets: more than one page of the largest size.
    pub async fn start() -> DigitalOcean {
        let token = format!("dop_v1_{}", uuid::Uuid::new_v4().simple());
        let mut list = Vec::new();
        for i in 1..=250u64 {
            let tags: &[&str] = if i % 2 == 0 {
                &["env:prod", "web"]
            } else {
                &["env:staging"]
            };
            list.push(droplet(
                5000 + i,
                &format!("do-{i}"),
                &format!("198.51.{}.{}", i / 200, i % 200 + 1),
                &format!("10.114.{}.{}", i / 200, i % 200 + 1),
                tags,
                "active",
            ));
        }
        // Droplets tagged `web` get an ssh-from-the-office firewall; 5001 an ssh-open one.
        let fws = vec![
            firewall(
                "fb6045f1-cf1d-4ca3-bfac-18832663025b",
                "web",
                false,
                &[],
                &["web"],
            ),
            firewall(
                "aa6045f1-cf1d-4ca3-bfac-18832663025c",
                "open-ssh",
                true,
                &[5001],
                &[],
            ),
        ];
        let inner = Arc::new(Inner {
            token: token.clone(),
            droplets: list,
            firewalls: fws,
        });
        let app = axum::Router::new()
            .route("/v2/account", axum::routing::get(account))
            .route("/v2/droplets", axum::routing::get(droplets))
            .route("/v2/firewalls", axum::routing::get(firewalls))
            .with_state(inner);
        DigitalOcean {
            served: serve(app, true).await,
            token,
        }
    }
}
