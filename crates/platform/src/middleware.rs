//! Layers every request passes through: problem+json for every error, request metrics, and
//! the general per-IP rate limit.

use crate::error::{PROBLEM_JSON, code_for_status, problem};
use crate::extract::client_ip;
use crate::ratelimit;
use crate::state::{AppState, now};
use axum::body::{Body, to_bytes};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::time::Instant;

/// Largest error body the normaliser reads back.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Makes every error response RFC 9457 problem+json with the request id: our own errors
/// get the id added; anything else (a framework rejection, 405, a caught panic) is wrapped.
pub async fn problem_details(req: Request, next: Next) -> Response {
    let request_id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let resp = next.run(req).await;
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    // A dashboard page answered with an error status on purpose (the sign-in form again).
    if resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/html"))
    {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let is_problem = parts
        .headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(PROBLEM_JSON.as_bytes()));
    let bytes = to_bytes(body, MAX_ERROR_BODY).await.unwrap_or_default();
    let mut value = if is_problem {
        serde_json::from_slice::<serde_json::Value>(&bytes)
            .unwrap_or_else(|_| serde_json::json!({}))
    } else {
        let text = String::from_utf8_lossy(&bytes).trim().to_owned();
        let detail = if text.is_empty() || status.is_server_error() {
            status.canonical_reason().unwrap_or("error").to_owned()
        } else {
            text
        };
        serde_json::to_value(problem(status, code_for_status(status), detail, None))
            .unwrap_or_default()
    };
    if let (Some(obj), Some(id)) = (value.as_object_mut(), request_id) {
        obj.insert("request_id".into(), serde_json::Value::String(id));
    }
    parts
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(
        parts,
        Body::from(serde_json::to_vec(&value).unwrap_or_default()),
    )
}

/// The route template a request matched, carried out on the response for [`track`].
#[derive(Clone)]
struct RouteLabel(String);

/// Inside the router: remembers which route matched.
pub async fn label_route(req: Request, next: Next) -> Response {
    let label = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned());
    let mut resp = next.run(req).await;
    if let Some(l) = label {
        resp.extensions_mut().insert(RouteLabel(l));
    }
    resp
}

/// Records count and latency per method, route and status.
pub async fn track(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().as_str().to_owned();
    let resp = next.run(req).await;
    let route = resp
        .extensions()
        .get::<RouteLabel>()
        .map(|l| l.0.as_str())
        .unwrap_or("unmatched");
    state.metrics.observe(
        &method,
        route,
        resp.status().as_u16(),
        start.elapsed().as_secs_f64(),
    );
    resp
}

/// SPEC 8 "other user endpoints": 1000 per minute per IP, with `RateLimit-*` headers.
pub async fn general_limit(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let ip = client_ip(&parts).to_string();
    let req = Request::from_parts(parts, body);
    match state
        .limiter
        .hit(ratelimit::GENERAL, &ip, now().unix_timestamp())
        .await
    {
        Ok(Some(info)) => {
            let mut resp = next.run(req).await;
            if !resp.headers().contains_key("ratelimit-limit") {
                info.apply(resp.headers_mut());
            }
            resp
        }
        Ok(None) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}

/// `X-Service-Client-Subject`: the verified client certificate's subject (CONTRACT 14).
pub const CLIENT_SUBJECT: &str = "x-service-client-subject";
/// `X-Service-Client-Verified`: lowercase hex SHA-256 of the verified certificate's DER.
pub const CLIENT_VERIFIED: &str = "x-service-client-verified";

/// `X-Service-Client-Cert`: from a `--trusted-proxy` only, the client certificate it verified,
/// PEM percent-encoded (nginx `$ssl_client_escaped_cert`); the hub derives the two headers
/// above from it (nginx has no SHA-256 fingerprint variable).
pub const CLIENT_CERT: &str = "x-service-client-cert";

/// CONTRACT 14: the client-certificate headers are believed only from the hub's own TLS front
/// or a `--trusted-proxy`. From anyone else they are stripped on every request, TLS or not;
/// then, for a connection that presented a certificate the TLS front verified, they are set
/// from that certificate.
pub async fn client_cert_headers(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<crate::extract::PeerAddr>>()
        .map(|c| c.0.clone());
    let from_proxy = peer
        .as_ref()
        .is_some_and(|p| state.trusted_proxies.iter().any(|c| c.contains(p.0.ip())));
    let forwarded = req.headers_mut().remove(CLIENT_CERT);
    if from_proxy {
        // The client's address: the last X-Forwarded-For hop not itself a trusted proxy (the
        // ones before it could be anything the client wrote).
        let client = req
            .headers()
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|a| a.trim().parse::<std::net::IpAddr>().ok())
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .find(|ip| !state.trusted_proxies.iter().any(|c| c.contains(*ip)));
        if let Some(ip) = client {
            req.extensions_mut()
                .insert(crate::extract::ForwardedFor(ip));
        }
    }
    if !from_proxy {
        req.headers_mut().remove(CLIENT_SUBJECT);
        req.headers_mut().remove(CLIENT_VERIFIED);
    } else if let Some(value) = forwarded.filter(|v| !v.is_empty()) {
        let cert = value
            .to_str()
            .map_err(|_| "not ASCII".to_owned())
            .and_then(|v| crate::tls::proxied_cert(v, &state.client_ca));
        match cert {
            Ok(cert) => {
                let headers = req.headers_mut();
                if let (Ok(subject), Ok(verified)) = (
                    HeaderValue::from_str(&cert.subject),
                    HeaderValue::from_str(&cert.fingerprint),
                ) {
                    headers.insert(CLIENT_SUBJECT, subject);
                    headers.insert(CLIENT_VERIFIED, verified);
                }
            }
            Err(why) => {
                return crate::error::ApiError::BadRequest(format!(
                    "the trusted proxy's X-Service-Client-Cert is refused: {why}"
                ))
                .into_response();
            }
        }
    }
    if let Some(cert) = peer.and_then(|p| p.1) {
        let headers = req.headers_mut();
        if let (Ok(subject), Ok(verified)) = (
            HeaderValue::from_str(&cert.subject),
            HeaderValue::from_str(&cert.fingerprint),
        ) {
            headers.insert(CLIENT_SUBJECT, subject);
            headers.insert(CLIENT_VERIFIED, verified);
        }
    }
    next.run(req).await
}

/// Keeps a client's `X-Request-Id` only when it matches `^[A-Za-z0-9._-]{1,64}$`; otherwise
/// it is dropped and the hub makes its own (CONTRACT 18), so nothing a client writes there
/// reaches the audit log or the logs.
pub async fn sanitize_request_id(mut req: Request, next: Next) -> Response {
    let ok = |v: &axum::http::HeaderValue| {
        let b = v.as_bytes();
        (1..=64).contains(&b.len())
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
    };
    let headers = req.headers_mut();
    let values: Vec<_> = headers.get_all("x-request-id").iter().collect();
    if values.len() > 1 || values.first().is_some_and(|v| !ok(v)) {
        headers.remove("x-request-id");
    }
    next.run(req).await
}
