//! A local Google Compute Engine API (v1) and OAuth 2.0 token endpoint for the tests,
//! written from Google's documentation: `POST /token` takes a JWT bearer assertion signed
//! (RS256) with the service account's key and answers an access token (400 `invalid_grant`
//! for a bad signature); `GET /compute/v1/projects/{p}`, `.../aggregated/instances` (zones as
//! `items` keys, empty zones as `NO_RESULTS_ON_PAGE` warnings, `maxResults` / `pageToken`)
//! and `.../global/firewalls` need that token, or a JWT the service account signed itself as
//! Google's APIs also take (401 `UNAUTHENTICATED` otherwise). The contract
//! test drives Google's own `google-cloud-compute` (and `google-auth`) against it.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// What the fake holds.
pub struct Gcp {
    /// `http://127.0.0.1:<port>` (the API endpoint).
    pub url: String,
    /// The service account key file's JSON, its `token_uri` this fake's.
    pub key_json: String,
    /// The project.
    pub project: String,
}

struct Inner {
    url: String,
    public_key: Vec<u8>,
    client_email: String,
    token: String,
    project: String,
    instances: Vec<(String, Value)>,
    firewalls: Vec<Value>,
}

fn b64url(s: &str) -> Option<Vec<u8>> {
    data_encoding::BASE64URL_NOPAD
        .decode(s.trim_end_matches('=').as_bytes())
        .ok()
}

async fn token(
    State(inner): State<Arc<Inner>>,
    axum::Form(form): axum::Form<HashMap<String, String>>,
) -> Response {
    let bad = |d: &str| {
        (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant", "error_description": d})),
        )
            .into_response()
    };
    if form.get("grant_type").map(String::as_str)
        != Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    {
        return bad("Invalid grant_type");
    }
    let jwt = form.get("assertion").cloned().unwrap_or_default();
    let parts: Vec<&str> = jwt.split('.').collect();
    let [h, c, s] = parts[..] else {
        return bad("Invalid JWT");
    };
    let key = ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        &inner.public_key,
    );
    let Some(sig) = b64url(s) else {
        return bad("Invalid JWT");
    };
    if key.verify(format!("{h}.{c}").as_bytes(), &sig).is_err() {
        return bad("Invalid JWT Signature.");
    }
    let claims: Value = b64url(c)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    if claims["iss"] != inner.client_email.as_str()
        || claims["aud"] != "https://oauth2.googleapis.com/token"
        || claims["exp"].as_i64().is_none_or(|e| e < now)
        || !claims["scope"]
            .as_str()
            .is_some_and(|s| s.contains("compute"))
    {
        return bad("Invalid JWT: claims");
    }
    axum::Json(json!({"access_token": inner.token, "expires_in": 3599, "token_type": "Bearer"}))
        .into_response()
}

/// Whether a bearer is the token the endpoint issued, or a JWT the service account signed
/// itself (Google's APIs take both; Google's client libraries send the latter).
fn bearer_ok(inner: &Inner, bearer: &str) -> bool {
    if bearer == inner.token {
        return true;
    }
    let parts: Vec<&str> = bearer.split('.').collect();
    let [h, c, s] = parts[..] else { return false };
    let key = ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        &inner.public_key,
    );
    let signed =
        b64url(s).is_some_and(|sig| key.verify(format!("{h}.{c}").as_bytes(), &sig).is_ok());
    let claims: Value = b64url(c)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    signed
        && claims["iss"] == inner.client_email.as_str()
        && claims["exp"].as_i64().is_some_and(|e| e >= now)
}

fn refuse(inner: &Inner, headers: &HeaderMap, project: &str) -> Option<Response> {
    let ok = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|b| bearer_ok(inner, b));
    if !ok {
        return Some((StatusCode::UNAUTHORIZED, axum::Json(json!({"error": {"code": 401,
            "message": "Request had invalid authentication credentials. Expected OAuth 2 access token.",
            "status": "UNAUTHENTICATED"}}))).into_response());
    }
    (project != inner.project).then(|| (StatusCode::NOT_FOUND, axum::Json(json!({"error": {"code": 404,
        "message": format!("The resource 'projects/{project}' was not found"), "status": "NOT_FOUND"}}))).into_response())
}

async fn project_info(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Path(p): Path<String>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers, &p) {
        return r;
    }
    axum::Json(json!({"kind": "compute#project", "id": "5188742315617836582", "name": p,
        "creationTimestamp": "2026-01-05T02:00:00.000-08:00", "selfLink": format!("{}/compute/v1/projects/{p}", inner.url),
        "defaultServiceAccount": "123-compute@developer.gserviceaccount.com", "xpnProjectStatus": "UNSPECIFIED_XPN_PROJECT_STATUS"}))
    .into_response()
}

fn page_of(q: &HashMap<String, String>, len: usize) -> (usize, usize) {
    let size: usize = q
        .get("maxResults")
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
        .clamp(1, 500);
    let start: usize = q
        .get("pageToken")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
        .min(len);
    (start, size)
}

async fn aggregated(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Path(p): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers, &p) {
        return r;
    }
    let (start, size) = page_of(&q, inner.instances.len());
    let mut items = serde_json::Map::new();
    for (zone, i) in inner.instances.iter().skip(start).take(size) {
        let e = items
            .entry(format!("zones/{zone}"))
            .or_insert_with(|| json!({"instances": []}));
        if let Some(a) = e["instances"].as_array_mut() {
            a.push(i.clone());
        }
    }
    items.insert(
        "zones/asia-east1-a".into(),
        json!({"warning": {"code": "NO_RESULTS_ON_PAGE",
        "message": "There are no results for scope 'zones/asia-east1-a' on this page.",
        "data": [{"key": "scope", "value": "zones/asia-east1-a"}]}}),
    );
    let mut out = json!({"kind": "compute#instanceAggregatedList", "id": format!("projects/{p}/aggregated/instances"),
        "items": items, "selfLink": format!("{}/compute/v1/projects/{p}/aggregated/instances", inner.url)});
    if start + size < inner.instances.len() {
        out["nextPageToken"] = json!((start + size).to_string());
    }
    axum::Json(out).into_response()
}

async fn list_firewalls(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Path(p): Path<String>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers, &p) {
        return r;
    }
    axum::Json(json!({"kind": "compute#firewallList", "id": format!("projects/{p}/global/firewalls"),
        "items": inner.firewalls, "selfLink": format!("{}/compute/v1/projects/{p}/global/firewalls", inner.url)}))
    .into_response()
}

/// An instance as the API documents it.
pub fn instance(url: &str, project: &str, zone: &str, n: u64, tags: &[&str]) -> Value {
    json!({
        "kind": "compute#instance", "id": (7_000_000_000_000_000_000_u64 + n).to_string(),
        "creationTimestamp": "2026-01-05T02:00:00.000-08:00", "name": format!("gce-{n}"),
        "tags": {"items": tags, "fingerprint": "42WmSpB8rSM="},
        "machineType": format!("{url}/compute/v1/projects/{project}/zones/{zone}/machineTypes/e2-small"),
        "status": if n.is_multiple_of(10) { "TERMINATED" } else { "RUNNING" },
        "zone": format!("{url}/compute/v1/projects/{project}/zones/{zone}"),
        "networkInterfaces": [{"kind": "compute#networkInterface",
            "network": format!("{url}/compute/v1/projects/{project}/global/networks/default"),
            "networkIP": format!("10.132.{}.{}", n / 250, n % 250 + 2), "name": "nic0",
            "accessConfigs": [{"kind": "compute#accessConfig", "type": "ONE_TO_ONE_NAT", "name": "External NAT",
                "natIP": format!("34.76.{}.{}", n / 250, n % 250 + 2), "networkTier": "PREMIUM"}],
            "fingerprint": "o3ZS0AWrqUo=", "stackType": "IPV4_ONLY"}],
        "disks": [{"kind": "compute#attachedDisk", "type": "PERSISTENT", "mode": "READ_WRITE", "deviceName": "boot",
            "index": 0, "boot": true, "autoDelete": true, "interface": "SCSI", "diskSizeGb": "10"}],
        "labels": {"env": "prod"},
        "selfLink": format!("{url}/compute/v1/projects/{project}/zones/{zone}/instances/gce-{n}"),
        "cpuPlatform": "Intel Broadwell", "deletionProtection": false, "fingerprint": "ZkPsljV5mSI=",
    })
}

impl Gcp {
    /// Starts the fake: 620 instances in two zones (two pages of 500), every tenth stopped;
    /// SSH from the world to the `ssh` tag, HTTPS to all.
    pub async fn start() -> Gcp {
        let dir =
            std::env::temp_dir().join(format!("trusthub-gcp-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let pem = dir.join("key.pem");
        let out = std::process::Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
            ])
            .arg(&pem)
            .output()
            .expect("openssl");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let public = std::process::Command::new("openssl")
            .args(["rsa", "-RSAPublicKey_out", "-outform", "DER", "-in"])
            .arg(&pem)
            .output()
            .expect("openssl");
        assert!(public.status.success());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let project = format!(
            "trusthub-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let client_email = format!("discovery@{project}.iam.gserviceaccount.com");
        let key_json = json!({"type": "service_account", "project_id": project,
            "private_key_id": "1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c",
            "private_key": std::fs::read_to_string(&pem).expect("pem"),
            "client_email": client_email, "client_id": "101234567890123456789",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": format!("{url}/token"),
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/discovery", "universe_domain": "googleapis.com"})
        .to_string();
        let _ = std::fs::remove_dir_all(&dir);
        let instances = (1..=620u64)
            .map(|n| {
                let zone = if n <= 400 {
                    "europe-west1-b"
                } else {
                    "us-central1-a"
                };
                let tags: &[&str] = if n % 2 == 0 {
                    &["ssh", "web"]
                } else {
                    &["web"]
                };
                (zone.to_owned(), instance(&url, &project, zone, n, tags))
            })
            .collect();
        let firewalls = vec![
            json!({"kind": "compute#firewall", "id": "1", "name": "allow-ssh-world", "network": format!("{url}/compute/v1/projects/{project}/global/networks/default"),
                "priority": 1000, "sourceRanges": ["0.0.0.0/0"], "targetTags": ["ssh"], "allowed": [{"IPProtocol": "tcp", "ports": ["22"]}],
                "direction": "INGRESS", "logConfig": {"enable": false}, "disabled": false}),
            json!({"kind": "compute#firewall", "id": "2", "name": "allow-https", "network": format!("{url}/compute/v1/projects/{project}/global/networks/default"),
                "priority": 1000, "sourceRanges": ["0.0.0.0/0", "::/0"], "allowed": [{"IPProtocol": "tcp", "ports": ["443"]}],
                "direction": "INGRESS", "logConfig": {"enable": false}, "disabled": false}),
            json!({"kind": "compute#firewall", "id": "3", "name": "allow-rdp-disabled", "network": format!("{url}/compute/v1/projects/{project}/global/networks/default"),
                "priority": 1000, "sourceRanges": ["0.0.0.0/0"], "allowed": [{"IPProtocol": "tcp", "ports": ["3389"]}],
                "direction": "INGRESS", "logConfig": {"enable": false}, "disabled": true}),
        ];
        let inner = Arc::new(Inner {
            url: url.clone(),
            public_key: public.stdout,
            client_email,
            token: format!("ya29.{}", uuid::Uuid::new_v4().simple()),
            project: project.clone(),
            instances,
            firewalls,
        });
        let app = axum::Router::new()
            .route("/token", axum::routing::post(token))
            .route("/compute/v1/projects/{p}", axum::routing::get(project_info))
            .route(
                "/compute/v1/projects/{p}/aggregated/instances",
                axum::routing::get(aggregated),
            )
            .route(
                "/compute/v1/projects/{p}/global/firewalls",
                axum::routing::get(list_firewalls),
            )
            .with_state(inner);
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Gcp {
            url,
            key_json,
            project,
        }
    }
}
