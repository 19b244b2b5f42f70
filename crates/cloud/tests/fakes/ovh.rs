//! A local OVHcloud API (1.0) for the tests, written from OVHcloud's API documentation: `GET
//! /auth/time` (its clock, an hour ahead of ours here, so a client that ignores it is
//! refused), `GET /cloud/project/{serviceName}` and `.../instance`, every call but the time
//! checked as OVH checks it — the application key, the consumer key, a timestamp within 30 s
//! of its clock, and `X-Ovh-Signature` = `$1$` + SHA-1 of
//! `secret+consumer+METHOD+URL+BODY+timestamp`. The contract test drives OVHcloud's own
//! Python library (`ovh`) against it, so the signature the fake checks is the one OVH's
//! client computes.

use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sha1::Digest;
use std::sync::Arc;

/// What the fake holds.
pub struct Ovh {
    /// `http://127.0.0.1:<port>/1.0`.
    pub url: String,
    /// Application key.
    pub application_key: String,
    /// Application secret.
    pub application_secret: String,
    /// Consumer key.
    pub consumer_key: String,
    /// The project (serviceName).
    pub project: String,
}

struct Inner {
    url: String,
    ak: String,
    secret: String,
    ck: String,
    project: String,
    instances: Vec<Value>,
}

/// Its clock: an hour ahead.
fn clock() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp() + 3600
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"errorCode": code, "httpCode": format!("{} {}", status.as_u16(), status.canonical_reason().unwrap_or("")), "message": message})),
    )
        .into_response()
}

fn refuse(inner: &Inner, headers: &HeaderMap, uri: &axum::http::Uri) -> Option<Response> {
    let h = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    if h("x-ovh-application") != inner.ak {
        return Some(error(
            StatusCode::FORBIDDEN,
            "INVALID_KEY",
            "This application key is invalid",
        ));
    }
    if h("x-ovh-consumer") != inner.ck {
        return Some(error(
            StatusCode::FORBIDDEN,
            "INVALID_CREDENTIAL",
            "This credential does not exist",
        ));
    }
    let ts: i64 = h("x-ovh-timestamp").parse().unwrap_or(0);
    if (ts - clock()).abs() > 30 {
        return Some(error(
            StatusCode::BAD_REQUEST,
            "QUERY_TIME_OUT",
            "Query out of time",
        ));
    }
    // The URL the client called: this API's base and the path after `/1.0`.
    let path = uri.path_and_query().map_or("", |p| p.as_str());
    let full = format!("{}{}", inner.url.trim_end_matches("/1.0"), path);
    let plain = format!("{}+{}+GET+{full}++{ts}", inner.secret, inner.ck);
    let want = format!(
        "$1${}",
        trusthub_core::secret::hex(&sha1::Sha1::digest(plain.as_bytes()))
    );
    (h("x-ovh-signature") != want).then(|| {
        error(
            StatusCode::BAD_REQUEST,
            "INVALID_SIGNATURE",
            "Invalid signature",
        )
    })
}

async fn auth_time() -> Response {
    axum::Json(json!(clock())).into_response()
}

async fn project_info(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    OriginalUri(uri): OriginalUri,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers, &uri) {
        return r;
    }
    if id != inner.project {
        return error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "This service does not exist",
        );
    }
    axum::Json(json!({"project_id": id, "projectName": "prod", "description": "prod", "planCode": "project.2018",
        "unleash": false, "expiration": null, "creationDate": "2026-01-05T10:00:00Z", "orderId": null,
        "access": "full", "status": "ok", "manualQuota": false, "iam": null}))
    .into_response()
}

async fn instances(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    OriginalUri(uri): OriginalUri,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers, &uri) {
        return r;
    }
    if id != inner.project {
        return error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "This service does not exist",
        );
    }
    axum::Json(Value::Array(inner.instances.clone())).into_response()
}

/// An instance as the API documents it.
pub fn instance(n: u32, region: &str, status: &str) -> Value {
    json!({
        "id": format!("a1b2c3d4-0000-4000-8000-{:012}", n),
        "name": format!("ovh-{n}"),
        "ipAddresses": [
            {"ip": format!("51.75.{}.{}", n / 200, n % 200 + 1), "type": "public", "version": 4, "networkId": "ext-net", "gatewayIp": "51.75.0.1"},
            {"ip": format!("2001:41d0:304:200::{:x}", n), "type": "public", "version": 6, "networkId": "ext-net", "gatewayIp": null},
            {"ip": format!("10.1.{}.{}", n / 200, n % 200 + 1), "type": "private", "version": 4, "networkId": "vrack-1", "gatewayIp": null},
        ],
        "flavorId": "b2-7-gra11", "imageId": "debian-12", "sshKeyId": null, "created": "2026-01-05T10:00:00Z",
        "region": region, "monthlyBilling": null, "status": status, "planCode": "b2-7.consumption",
        "operationIds": [], "currentMonthOutgoingTraffic": null, "rescuePassword": null,
    })
}

impl Ovh {
    /// Starts the fake with 12 instances in GRA11 and SBG5 (one being deleted).
    pub async fn start() -> Ovh {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/1.0", listener.local_addr().expect("addr"));
        let project = uuid::Uuid::new_v4().simple().to_string();
        let mut list: Vec<Value> = (1..=11)
            .map(|n| instance(n, if n % 2 == 0 { "SBG5" } else { "GRA11" }, "ACTIVE"))
            .collect();
        list.push(instance(12, "GRA11", "DELETING"));
        let inner = Arc::new(Inner {
            url: url.clone(),
            ak: "7kbG7Bk7S9Nt7ZSV".into(),
            secret: format!("EXEgWIz07P0HYwtQDs7c{}", &project[..8]),
            ck: "MtSwSrPpNjqfVSmJhLbPyr2i45lSwPU1".into(),
            project: project.clone(),
            instances: list,
        });
        let app = axum::Router::new()
            .route("/1.0/auth/time", axum::routing::get(auth_time))
            .route("/1.0/cloud/project/{id}", axum::routing::get(project_info))
            .route(
                "/1.0/cloud/project/{id}/instance",
                axum::routing::get(instances),
            )
            .with_state(inner.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ovh {
            url,
            application_key: inner.ak.clone(),
            application_secret: inner.secret.clone(),
            consumer_key: inner.ck.clone(),
            project,
        }
    }
}
