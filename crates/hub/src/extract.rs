//! Request extractors whose every rejection is an [`ApiError`] (CONTRACT 1), in place of
//! axum's plain-text ones.

use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;
use serde::de::DeserializeOwned;
use std::net::{IpAddr, SocketAddr};

/// A JSON body: 415 unless `Content-Type` is JSON, 413 over the body limit, 400 when it is
/// not JSON, 422 (with the field) when it is JSON of the wrong shape.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|m| {
                let m = m.trim().to_ascii_lowercase();
                m == "application/json" || (m.starts_with("application/") && m.ends_with("+json"))
            })
            .unwrap_or(false);
        if !is_json {
            return Err(ApiError::UnsupportedMediaType(
                "expected a body with Content-Type: application/json".into(),
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rej| {
            if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge
            } else {
                ApiError::BadRequest(format!("cannot read the request body: {rej}"))
            }
        })?;
        parse_json(&bytes).map(Json)
    }
}

/// Most bytes a compressed body may expand to.
pub const MAX_DECOMPRESSED_BYTES: u64 = 64 * 1024 * 1024;

/// A JSON body kept as the exact bytes sent (for signature checks) and, when it came with
/// `Content-Encoding: gzip` or `zstd`, decompressed (bounded by [`MAX_DECOMPRESSED_BYTES`]).
#[derive(Debug, Clone)]
pub struct SignedBody {
    /// The bytes as sent; signatures cover these.
    pub raw: Bytes,
    /// The JSON bytes.
    pub json: Vec<u8>,
}

impl<S: Send + Sync> FromRequest<S> for SignedBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let (content_type, encoding) = {
            let lower = |name| {
                req.headers()
                    .get(name)
                    .and_then(|v: &axum::http::HeaderValue| v.to_str().ok())
                    .map(str::to_ascii_lowercase)
            };
            (
                lower(CONTENT_TYPE).unwrap_or_default(),
                lower(axum::http::header::CONTENT_ENCODING).unwrap_or_else(|| "identity".into()),
            )
        };
        if !content_type.starts_with("application/json") {
            return Err(ApiError::UnsupportedMediaType(
                "expected Content-Type: application/json".into(),
            ));
        }
        let raw = Bytes::from_request(req, state).await.map_err(|rej| {
            if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge
            } else {
                ApiError::BadRequest(format!("cannot read the request body: {rej}"))
            }
        })?;
        let json = decode_content(&encoding, &raw)?;
        Ok(SignedBody { raw, json })
    }
}

/// A request body undone from its `Content-Encoding` (`identity`, `gzip` or `zstd`), at most
/// 64 MiB once decompressed (413 beyond, 415 for another encoding, 400 when it does not
/// decompress).
pub fn decode_content(encoding: &str, raw: &[u8]) -> Result<Vec<u8>, ApiError> {
    use std::io::Read;
    let mut out = Vec::new();
    let read = match encoding.trim() {
        "identity" | "" => return Ok(raw.to_vec()),
        "gzip" => flate2::read::GzDecoder::new(raw)
            .take(MAX_DECOMPRESSED_BYTES + 1)
            .read_to_end(&mut out),
        "zstd" => match ruzstd::decoding::StreamingDecoder::new(raw) {
            Ok(d) => d.take(MAX_DECOMPRESSED_BYTES + 1).read_to_end(&mut out),
            Err(e) => Err(std::io::Error::other(e.to_string())),
        },
        other => {
            return Err(ApiError::UnsupportedMediaType(format!(
                "Content-Encoding {other} is not accepted; use gzip, zstd or none"
            )));
        }
    };
    read.map_err(|e| ApiError::BadRequest(format!("cannot decompress the body: {e}")))?;
    if out.len() as u64 > MAX_DECOMPRESSED_BYTES {
        return Err(ApiError::PayloadTooLarge);
    }
    Ok(out)
}

/// Parses JSON bytes with the error mapping of [`Json`].
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::BadRequest(
            "the request body is empty; expected JSON".into(),
        ));
    }
    // The fast path; only a refused body is parsed again, tracking the path for the message.
    if let Ok(v) = serde_json::from_slice(bytes) {
        return Ok(v);
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => {
                let field = if path == "." {
                    missing_field(&inner.to_string())
                } else {
                    path
                };
                ApiError::invalid(field, strip_position(&inner.to_string()))
            }
            _ => ApiError::BadRequest(format!("the request body is not valid JSON: {inner}")),
        }
    })
}

/// serde reports a missing field at the parent's path; name the field itself.
fn missing_field(msg: &str) -> String {
    msg.strip_prefix("missing field `")
        .and_then(|r| r.split('`').next())
        .map(str::to_owned)
        .unwrap_or_else(|| ".".into())
}

fn strip_position(msg: &str) -> String {
    match msg.find(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}

impl<T: serde::Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// Query parameters; 400 when they do not parse.
#[derive(Debug, Clone, Copy, Default)]
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Query(q.0))
            .map_err(|e| ApiError::BadRequest(format!("invalid query: {}", e.body_text())))
    }
}

/// Path parameters; 400 when they do not parse (an id that is not a UUID).
#[derive(Debug, Clone, Copy, Default)]
pub struct Path<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Path(p.0))
            .map_err(|e| ApiError::BadRequest(format!("invalid path parameter: {}", e.body_text())))
    }
}

/// The client's address: the TCP peer. (A TLS front or proxy in front of the hub must be
/// the one to enforce per-IP limits of its own clients.)
#[derive(Debug, Clone, Copy)]
pub struct ClientIp(pub IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientIp(client_ip(parts)))
    }
}

/// The TCP peer of a connection, plain or TLS.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub SocketAddr);

impl Connected<IncomingStream<'_, tokio::net::TcpListener>> for PeerAddr {
    fn connect_info(stream: IncomingStream<'_, tokio::net::TcpListener>) -> Self {
        PeerAddr(*stream.remote_addr())
    }
}

impl Connected<IncomingStream<'_, crate::tls::TlsListener>> for PeerAddr {
    fn connect_info(stream: IncomingStream<'_, crate::tls::TlsListener>) -> Self {
        PeerAddr(*stream.remote_addr())
    }
}

/// The TCP peer address of a request, or the unspecified address when unknown.
pub fn client_ip(parts: &Parts) -> IpAddr {
    parts
        .extensions
        .get::<ConnectInfo<PeerAddr>>()
        .map(|c| c.0.0.ip())
        .unwrap_or(IpAddr::from([0, 0, 0, 0]))
}

/// The request id that the request-id layer set.
pub fn request_id(parts: &Parts) -> Option<String> {
    parts
        .headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Facts about the request for the audit log.
#[derive(Debug, Clone)]
pub struct Meta {
    /// Client address.
    pub ip: IpAddr,
    /// Request id.
    pub request_id: Option<String>,
    /// `User-Agent`, at most 200 characters.
    pub user_agent: Option<String>,
}

impl<S: Send + Sync> FromRequestParts<S> for Meta {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Meta {
            ip: client_ip(parts),
            request_id: request_id(parts),
            user_agent: parts
                .headers
                .get(axum::http::header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.chars().take(200).collect()),
        })
    }
}

impl Meta {
    /// Appends the audit row of an action `p` took in this request, in the action's
    /// transaction.
    pub async fn record(
        &self,
        tx: &mut trusthub_store::Tx,
        p: &crate::auth::Principal,
        event_type: &str,
        subject: String,
        details: serde_json::Value,
    ) -> Result<(), ApiError> {
        let entry = self.audit(event_type, p.actor(), subject, details);
        trusthub_store::audit::append(tx, p.tenant(), &entry, crate::state::now()).await?;
        Ok(())
    }

    /// An audit row for this request.
    pub fn audit<'a>(
        &self,
        event_type: &'a str,
        actor: String,
        subject: String,
        details: serde_json::Value,
    ) -> trusthub_store::audit::NewEntry<'a> {
        trusthub_store::audit::NewEntry {
            event_type,
            actor,
            subject,
            details,
            ip: Some(self.ip.to_string()),
            request_id: self.request_id.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Body {
        email: String,
        inner: Option<Inner>,
    }
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        n: u32,
    }

    #[test]
    fn contract_1_syntax_errors_are_400_and_shape_errors_422_with_field() {
        assert!(matches!(
            parse_json::<Body>(b"{"),
            Err(ApiError::BadRequest(_))
        ));
        assert!(matches!(
            parse_json::<Body>(b""),
            Err(ApiError::BadRequest(_))
        ));
        match parse_json::<Body>(b"{}") {
            Err(ApiError::Validation(e)) => assert_eq!(e[0].field, "email"),
            other => panic!("{other:?}"),
        }
        match parse_json::<Body>(br#"{"email":"a","inner":{"n":-1}}"#) {
            Err(ApiError::Validation(e)) => assert_eq!(e[0].field, "inner.n"),
            other => panic!("{other:?}"),
        }
    }
}
