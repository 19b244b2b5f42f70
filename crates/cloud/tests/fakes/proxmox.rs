//! A local Proxmox VE API (`/api2/json`) for the tests, written from the Proxmox VE API
//! viewer: `GET /version`, `GET /cluster/resources?type=vm`, a VM's guest-agent
//! `network-get-interfaces` (500 when its agent is not running), a container's
//! `interfaces`; API-token authentication (`Authorization: PVEAPIToken=<id>=<secret>`, 401
//! otherwise). Served over HTTPS as a cluster is (proxmoxer speaks HTTPS only); the
//! contract test drives `proxmoxer` against it.

use super::serve::{Served, serve};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// What the fake holds.
pub struct Proxmox {
    /// `https://localhost:<port>`.
    pub served: Served,
    /// `root@pam!trusthub`.
    pub token_id: String,
    /// The token's secret.
    pub secret: String,
}

struct Inner {
    auth: String,
    guests: Vec<Value>,
}

fn data(v: Value) -> Response {
    axum::Json(json!({ "data": v })).into_response()
}

fn refuse(inner: &Inner, headers: &HeaderMap) -> Option<Response> {
    let ok = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == inner.auth);
    (!ok).then(|| (StatusCode::UNAUTHORIZED, axum::Json(json!({"data": null}))).into_response())
}

async fn version(State(inner): State<Arc<Inner>>, headers: HeaderMap) -> Response {
    if let Some(r) = refuse(&inner, &headers) {
        return r;
    }
    data(json!({"version": "8.2.4", "release": "8.2", "repoid": "faa83925c9641325"}))
}

async fn resources(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers) {
        return r;
    }
    let _ = q.get("type");
    data(Value::Array(inner.guests.clone()))
}

async fn agent(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Path((node, vmid)): Path<(String, u64)>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers) {
        return r;
    }
    if vmid % 2 == 1 {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            axum::Json(json!({"data": null, "message": "QEMU guest agent is not running"})),
        )
            .into_response();
    }
    let n = vmid - 100;
    data(json!({"result": [
        {"name": "lo", "hardware-address": "00:00:00:00:00:00", "ip-addresses": [
            {"ip-address": "127.0.0.1", "ip-address-type": "ipv4", "prefix": 8},
            {"ip-address": "::1", "ip-address-type": "ipv6", "prefix": 128}]},
        {"name": "eth0", "hardware-address": "bc:24:11:00:00:01", "ip-addresses": [
            {"ip-address": format!("192.168.{}.{}", if node == "pve1" { 1 } else { 2 }, 10 + n), "ip-address-type": "ipv4", "prefix": 24},
            {"ip-address": "fe80::be24:11ff:fe00:1", "ip-address-type": "ipv6", "prefix": 64}]},
        {"name": "eth1", "hardware-address": "bc:24:11:00:00:02", "ip-addresses": [
            {"ip-address": format!("203.0.113.{}", 10 + n), "ip-address-type": "ipv4", "prefix": 24}]},
    ]}))
}

async fn interfaces(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Path((_node, vmid)): Path<(String, u64)>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers) {
        return r;
    }
    data(json!([
        {"name": "lo", "hwaddr": "00:00:00:00:00:00", "inet": "127.0.0.1/8", "inet6": "::1/128"},
        {"name": "eth0", "hwaddr": "bc:24:11:00:01:01", "inet": format!("10.10.0.{}/24", vmid - 200 + 21), "inet6": "fd00:10::15/64"},
    ]))
}

/// A guest as `/cluster/resources` lists it.
pub fn guest(kind: &str, vmid: u64, name: &str, node: &str, status: &str, template: u64) -> Value {
    json!({"id": format!("{kind}/{vmid}"), "type": kind, "vmid": vmid, "name": name, "node": node, "status": status,
        "template": template, "maxcpu": 2, "maxmem": 4_294_967_296_u64, "maxdisk": 34_359_738_368_u64, "cpu": 0.012,
        "mem": 1_073_741_824_u64, "disk": 0, "uptime": if status == "running" { 3600 } else { 0 }, "netin": 1024,
        "netout": 2048, "diskread": 0, "diskwrite": 0, "tags": "prod;web"})
}

impl Proxmox {
    /// Starts the fake: VMs 100–119 on two nodes (agents running on even ids), a stopped VM
    /// 120, containers 200–209, a template 9000.
    pub async fn start() -> Proxmox {
        let token_id = "root@pam!trusthub".to_owned();
        let secret = uuid::Uuid::new_v4().to_string();
        let mut guests = Vec::new();
        for vmid in 100..120u64 {
            let node = if vmid < 110 { "pve1" } else { "pve2" };
            guests.push(guest(
                "qemu",
                vmid,
                &format!("vm-{vmid}"),
                node,
                "running",
                0,
            ));
        }
        guests.push(guest("qemu", 120, "vm-120", "pve1", "stopped", 0));
        for vmid in 200..210u64 {
            guests.push(guest(
                "lxc",
                vmid,
                &format!("ct-{vmid}"),
                "pve2",
                "running",
                0,
            ));
        }
        guests.push(guest(
            "qemu",
            9000,
            "debian-12-template",
            "pve1",
            "stopped",
            1,
        ));
        let inner = Arc::new(Inner {
            auth: format!("PVEAPIToken={token_id}={secret}"),
            guests,
        });
        let app = axum::Router::new()
            .route("/api2/json/version", axum::routing::get(version))
            .route(
                "/api2/json/cluster/resources",
                axum::routing::get(resources),
            )
            .route(
                "/api2/json/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces",
                axum::routing::get(agent),
            )
            .route(
                "/api2/json/nodes/{node}/lxc/{vmid}/interfaces",
                axum::routing::get(interfaces),
            )
            .with_state(inner);
        Proxmox {
            served: serve(app, true).await,
            token_id,
            secret,
        }
    }
}
