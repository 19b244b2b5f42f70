//! A local IONOS Cloud API (v6) for the tests, written from the Cloud API v6 reference:
//! `GET /cloudapi/v6/datacenters`, a data center's `lans` and `servers` (with `depth` giving
//! NICs and firewall rules), collections with `offset` / `limit` and `_links`, bearer-token
//! authentication (401 with `messages` otherwise). The contract test drives IONOS's own
//! Python SDK (`ionoscloud`) against it.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// What the fake holds.
pub struct Ionos {
    /// `http://127.0.0.1:<port>/cloudapi/v6`.
    pub url: String,
    /// The token.
    pub token: String,
}

struct Inner {
    url: OnceLock<String>,
    token: String,
    dcs: Vec<(String, String, u32)>,
}

fn meta() -> Value {
    json!({"etag": "45480eb3fbfc31f1d916c1eaa4abdcc3", "createdDate": "2026-01-05T10:00:00Z", "createdBy": "ops@example.com",
        "createdByUserId": "63cef532-26fe-4a64-a4e0-de7c8a506c90", "lastModifiedDate": "2026-01-05T10:00:00Z",
        "lastModifiedBy": "ops@example.com", "lastModifiedByUserId": "63cef532-26fe-4a64-a4e0-de7c8a506c90", "state": "AVAILABLE"})
}

fn collection(
    inner: &Inner,
    path: &str,
    items: Vec<Value>,
    q: &HashMap<String, String>,
) -> Response {
    let offset: usize = q.get("offset").and_then(|v| v.parse().ok()).unwrap_or(0);
    let limit: usize = q
        .get("limit")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
        .clamp(1, 1000);
    let total = items.len();
    let slice: Vec<Value> = items.into_iter().skip(offset).take(limit).collect();
    let base = inner.url.get().cloned().unwrap_or_default();
    let mut links = json!({"self": format!("{base}{path}?offset={offset}&limit={limit}")});
    if offset + limit < total {
        links["next"] = json!(format!(
            "{base}{path}?offset={}&limit={limit}",
            offset + limit
        ));
    }
    if offset > 0 {
        links["prev"] = json!(format!(
            "{base}{path}?offset={}&limit={limit}",
            offset.saturating_sub(limit)
        ));
    }
    axum::Json(json!({"id": path.trim_start_matches('/').replace('/', "-"), "type": "collection",
        "href": format!("{base}{path}"), "items": slice, "offset": offset, "limit": limit, "_links": links}))
    .into_response()
}

fn refuse(inner: &Inner, headers: &HeaderMap) -> Option<Response> {
    let ok = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {}", inner.token));
    (!ok).then(|| {
        (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"httpStatus": 401,
        "messages": [{"errorCode": "315", "message": "Unauthorized"}]})),
        )
            .into_response()
    })
}

async fn datacenters(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers) {
        return r;
    }
    let items = inner
        .dcs
        .iter()
        .map(|(id, location, _)| json!({"id": id, "type": "datacenter", "href": format!("{}/datacenters/{id}", inner.url.get().cloned().unwrap_or_default()),
            "metadata": meta(), "properties": {"name": format!("prod-{location}"), "description": "", "location": location,
            "version": 12, "features": ["SSD", "vnf-nat"], "secAuthProtection": false, "cpuArchitecture": [], "ipv6CidrBlock": null}}))
        .collect();
    collection(&inner, "/datacenters", items, &q)
}

async fn lans(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Path(dc): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers) {
        return r;
    }
    let lan = |id: &str, public: bool| {
        json!({"id": id, "type": "lan", "href": "", "metadata": meta(),
        "properties": {"name": if public { "internet" } else { "backend" }, "public": public, "ipFailover": [], "pcc": null, "ipv6CidrBlock": null}})
    };
    collection(
        &inner,
        &format!("/datacenters/{dc}/lans"),
        vec![lan("1", true), lan("2", false)],
        &q,
    )
}

fn server(n: u32) -> Value {
    let rule = |port: u32| {
        json!({"id": format!("fw-{n}-{port}"), "type": "firewall-rule", "href": "", "metadata": meta(),
        "properties": {"name": format!("allow-{port}"), "protocol": "TCP", "sourceMac": null, "ipVersion": "IPv4", "sourceIp": null,
            "targetIp": null, "icmpCode": null, "icmpType": null, "portRangeStart": port, "portRangeEnd": port, "type": "INGRESS"}})
    };
    let (active, rules) = match n % 3 {
        0 => (false, vec![]),
        1 => (true, vec![rule(22), rule(443)]),
        _ => (true, vec![rule(443)]),
    };
    let nic = |id: &str, lan: u32, ip: String, fw: bool, rules: Vec<Value>| {
        json!({"id": id, "type": "nic", "href": "", "metadata": meta(),
        "properties": {"name": if lan == 1 { "public" } else { "private" }, "mac": "02:01:4d:5f:3c:2a", "ips": [ip], "dhcp": true,
            "ipv6Ips": [], "dhcpv6": null, "lan": lan, "firewallActive": fw, "firewallType": "INGRESS", "deviceNumber": 1,
            "pciSlot": 6, "vnet": "1"},
        "entities": {"firewallrules": {"id": format!("{id}-firewallrules"), "type": "collection", "href": "", "items": rules},
            "flowlogs": {"id": format!("{id}-flowlogs"), "type": "collection", "href": "", "items": []}}})
    };
    json!({"id": format!("5b5c7e3a-0000-4000-8000-{:012}", n), "type": "server", "href": "", "metadata": meta(),
        "properties": {"templateUuid": null, "name": format!("ionos-{n}"), "hostname": null, "cores": 2, "ram": 2048,
            "availabilityZone": "AUTO", "vmState": if n.is_multiple_of(11) { "SHUTOFF" } else { "RUNNING" }, "bootCdrom": null,
            "bootVolume": null, "cpuFamily": "INTEL_SKYLAKE", "type": "ENTERPRISE", "nicMultiQueue": false},
        "entities": {"nics": {"id": "nics", "type": "collection", "href": "", "items": [
            nic(&format!("nic-{n}-a"), 1, format!("85.215.{}.{}", n / 200, n % 200 + 1), active, rules),
            nic(&format!("nic-{n}-b"), 2, format!("10.7.{}.{}", n / 200, n % 200 + 1), false, vec![])]},
            "volumes": {"id": "volumes", "type": "collection", "href": "", "items": []},
            "cdroms": {"id": "cdroms", "type": "collection", "href": "", "items": []}}})
}

async fn servers(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Path(dc): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers) {
        return r;
    }
    let Some((_, _, first)) = inner.dcs.iter().find(|(id, _, _)| *id == dc) else {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"httpStatus": 404,
            "messages": [{"errorCode": "309", "message": "Resource does not exist"}]})),
        )
            .into_response();
    };
    let count = if *first == 1 { 120 } else { 10 };
    let items = (*first..*first + count).map(server).collect();
    collection(&inner, &format!("/datacenters/{dc}/servers"), items, &q)
}

impl Ionos {
    /// Starts the fake: 120 servers in de/fra (two pages of 100), 10 in de/txl; each with a
    /// NIC on the public LAN (firewall off, SSH allowed, or HTTPS only, in turn) and one on
    /// a private LAN.
    pub async fn start() -> Ionos {
        let inner = Arc::new(Inner {
            url: OnceLock::new(),
            token: format!(
                "eyJ0eXAiOiJKV1QiLCJraWQiOi.{}",
                uuid::Uuid::new_v4().simple()
            ),
            dcs: vec![
                (
                    "3b9ed4c4-6f63-4a5a-8d4b-a9b4b5f0a001".into(),
                    "de/fra".into(),
                    1,
                ),
                (
                    "3b9ed4c4-6f63-4a5a-8d4b-a9b4b5f0a002".into(),
                    "de/txl".into(),
                    121,
                ),
            ],
        });
        let app = axum::Router::new()
            .route("/cloudapi/v6/datacenters", axum::routing::get(datacenters))
            .route(
                "/cloudapi/v6/datacenters/{dc}/lans",
                axum::routing::get(lans),
            )
            .route(
                "/cloudapi/v6/datacenters/{dc}/servers",
                axum::routing::get(servers),
            )
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!(
            "http://{}/cloudapi/v6",
            listener.local_addr().expect("addr")
        );
        let _ = inner.url.set(url.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ionos {
            url,
            token: inner.token.clone(),
        }
    }
}
