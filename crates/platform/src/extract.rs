//! Request extractors whose every rejection is an [`ApiError`] (CONTRACT 1), in place of
//! axum's plain-text ones.

use crate::error::{ApiError, FieldError};
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

/// For a nullable field of a patch: present (`Some`, perhaps `Some(None)` for `null`) vs
/// absent (`None`, with `#[serde(default)]`).
pub fn present<'de, T, D>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    T: serde::Deserialize<'de>,
    D: serde::Deserializer<'de>,
{
    serde::Deserialize::deserialize(d).map(Some)
}

/// A query flag: `true`, `false`, `1` or `0` (anything else is refused).
pub fn flag<'de, D>(d: D) -> Result<Option<bool>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let s: String = serde::Deserialize::deserialize(d)?;
    match s.as_str() {
        "true" | "1" => Ok(Some(true)),
        "false" | "0" => Ok(Some(false)),
        other => Err(serde::de::Error::custom(format!(
            "`{other}` is not a flag: use true, false, 1 or 0"
        ))),
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
    /// The JSON bytes (the same buffer as `raw` when the body is not compressed).
    pub json: Bytes,
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
        let json = match encoding.trim() {
            "identity" | "" => raw.clone(),
            other => Bytes::from(decode_content(other, &raw)?),
        };
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

/// Parses JSON bytes with the error mapping of [`Json`]: a body that is not a JSON object is
/// 422, and every field error is reported in one answer (CONTRACT 13).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let first = bytes.iter().copied().find(|b| !b.is_ascii_whitespace());
    let Some(first) = first else {
        return Err(ApiError::BadRequest(
            "the request body is empty; expected JSON".into(),
        ));
    };
    // Depth, and a key given twice (parsers disagree on which wins; CONTRACT 18), before
    // anything is built from the text.
    trusthub_core::json_guard::check(bytes, u64::MAX)
        .map_err(|e| ApiError::BadRequest(format!("the request body is refused: {e}")))?;
    // The fast path; only a refused body is parsed again to find every bad field.
    if first == b'{'
        && let Ok(v) = serde_json::from_slice(bytes)
    {
        return Ok(v);
    }
    let mut value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::BadRequest(format!("the request body is not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::invalid(
            ".",
            format!("the body must be a JSON object, not {}", kind(&value)),
        ));
    }
    // JSON has one number type: `475.0` is the integer 475 (as JSON Schema says too).
    if whole_floats_to_integers(&mut value)
        && let Ok(v) = serde_json::from_value::<T>(value.clone())
    {
        return Ok(v);
    }
    match field_errors::<T>(value) {
        Ok(v) => Ok(v),
        Err(errors) => Err(ApiError::Validation(errors)),
    }
}

/// Turns every number with a zero fraction (`475.0`) into an integer; true when one was.
fn whole_floats_to_integers(v: &mut serde_json::Value) -> bool {
    match v {
        serde_json::Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            let whole = f.fract() == 0.0 && f.abs() < 9.0e15;
            if whole {
                // Exact below 2^53.
                *v = serde_json::Value::from(f as i64);
            }
            whole
        }
        serde_json::Value::Array(a) => a
            .iter_mut()
            .fold(false, |any, x| whole_floats_to_integers(x) | any),
        serde_json::Value::Object(m) => m
            .values_mut()
            .fold(false, |any, x| whole_floats_to_integers(x) | any),
        _ => false,
    }
}

/// Reads a part of an already parsed body (`inventory` of a batch) as `T`, every field error
/// named by its full path (`inventory.listening[2].port`).
pub fn parse_part<T: DeserializeOwned>(
    value: &serde_json::Value,
    at: &str,
) -> Result<T, Vec<FieldError>> {
    // The fast path reads the value in place; only a refused one is copied to find every
    // bad field.
    if let Ok(v) = T::deserialize(value) {
        return Ok(v);
    }
    field_errors(value.clone()).map_err(|errors| {
        errors
            .into_iter()
            .map(|mut e| {
                e.field = match e.field.as_str() {
                    "." | "" => at.to_owned(),
                    f if f.starts_with('[') => format!("{at}{f}"),
                    f => format!("{at}.{f}"),
                };
                e
            })
            .collect()
    })
}

/// Most field errors one answer lists.
const MAX_FIELD_ERRORS: usize = 50;

/// Deserializes `value`, and on failure keeps going past each bad field to report them all:
/// an unknown field is dropped, a missing or bad one is given a stand-in value, and the
/// deserialization is tried again. The stand-ins are never used: any error means 422.
fn field_errors<T: DeserializeOwned>(mut value: serde_json::Value) -> Result<T, Vec<FieldError>> {
    let mut errors: Vec<FieldError> = Vec::new();
    let mut tried: Vec<(String, usize)> = Vec::new();
    for _ in 0..500 {
        let e = match serde_path_to_error::deserialize::<_, T>(&value) {
            Ok(v) if errors.is_empty() => return Ok(v),
            Ok(_) => return Err(errors),
            Err(e) => e,
        };
        let segments: Vec<Seg> = e
            .path()
            .iter()
            .filter_map(|s| match s {
                serde_path_to_error::Segment::Map { key } => Some(Seg::Key(key.clone())),
                serde_path_to_error::Segment::Seq { index } => Some(Seg::Index(*index)),
                _ => None,
            })
            .collect();
        let message = strip_position(&e.inner().to_string());
        let path = e.path().to_string();
        // Where to act, and what to report.
        let (target, field, unknown) = if let Some(name) = backticked(&message, "missing field `") {
            let mut t = segments.clone();
            t.push(Seg::Key(name.clone()));
            let field = join(&path, &name);
            (t, field, false)
        } else if let Some(name) = backticked(&message, "unknown field `") {
            // serde reports it at the field's own path.
            let mut t = segments.clone();
            if !matches!(t.last(), Some(Seg::Key(k)) if *k == name) {
                t.push(Seg::Key(name.clone()));
            }
            (t, if path == "." { name } else { path.clone() }, true)
        } else {
            (segments.clone(), path.clone(), false)
        };
        let field = if field.is_empty() { ".".into() } else { field };
        if !errors.iter().any(|f| f.field == field) {
            errors.push(FieldError::new(field.clone(), for_people(&message)));
        }
        if errors.len() >= MAX_FIELD_ERRORS || target.is_empty() {
            return Err(errors);
        }
        let Some((parent, last)) = locate(&mut value, &target) else {
            return Err(errors);
        };
        if unknown {
            if let (serde_json::Value::Object(m), Seg::Key(k)) = (parent, &last) {
                m.remove(k);
                continue;
            }
            return Err(errors);
        }
        // The next stand-in for this place; give up once every one was tried.
        let attempt = match tried.iter_mut().find(|(f, _)| *f == field) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                tried.push((field.clone(), 0));
                0
            }
        };
        let mut candidates: Vec<serde_json::Value> = variants(&message)
            .into_iter()
            .map(serde_json::Value::String)
            .collect();
        candidates.extend(stand_ins());
        let Some(stand_in) = candidates.into_iter().nth(attempt) else {
            return Err(errors);
        };
        match (parent, last) {
            (serde_json::Value::Object(m), Seg::Key(k)) => {
                m.insert(k, stand_in);
            }
            (serde_json::Value::Array(a), Seg::Index(i)) if i < a.len() => a[i] = stand_in,
            _ => return Err(errors),
        }
    }
    Err(errors)
}

#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    Index(usize),
}

/// The value holding the last segment of `path`, and that segment.
fn locate<'v>(
    value: &'v mut serde_json::Value,
    path: &[Seg],
) -> Option<(&'v mut serde_json::Value, Seg)> {
    let (last, init) = path.split_last()?;
    let mut v = value;
    for s in init {
        v = match s {
            Seg::Key(k) => v.get_mut(k.as_str())?,
            Seg::Index(i) => v.get_mut(*i)?,
        };
    }
    Some((v, last.clone()))
}

/// Values of each JSON kind, one of which most fields accept.
fn stand_ins() -> Vec<serde_json::Value> {
    use serde_json::json;
    vec![
        json!(null),
        json!(""),
        json!(0),
        json!(false),
        json!([]),
        json!({}),
        json!("1970-01-01T00:00:00Z"),
        json!("00000000-0000-0000-0000-000000000000"),
        json!(1),
        json!("a"),
    ]
}

/// The names serde lists as allowed (`expected one of `a`, `b``, `expected `a` or `b``).
fn variants(message: &str) -> Vec<String> {
    let Some(i) = message.find("expected ") else {
        return Vec::new();
    };
    message[i..]
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn backticked(message: &str, prefix: &str) -> Option<String> {
    message
        .strip_prefix(prefix)
        .and_then(|r| r.split('`').next())
        .map(str::to_owned)
}

fn join(parent: &str, name: &str) -> String {
    if parent == "." || parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}.{name}")
    }
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// serde's and time's words for a refused value, in the words of the API's readers: `expected
/// f64` is "expected a number", a timestamp that does not parse says what form it takes.
fn for_people(msg: &str) -> String {
    let time_words = [
        "component could not be parsed",
        "component value is out of range",
        "character literal was not valid",
        "unexpected trailing characters",
        "insufficient information",
    ];
    if time_words.iter().any(|w| msg.contains(w)) {
        return "not a valid date and time: write it in RFC 3339 form, e.g. 2026-12-01T22:00:00Z"
            .into();
    }
    let mut out = msg.to_owned();
    for (rust, words) in [
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected u64", "expected a whole number, 0 or more"),
        ("expected u32", "expected a whole number, 0 or more"),
        ("expected u16", "expected a whole number, 0 or more"),
        ("expected u8", "expected a whole number, 0 or more"),
        ("expected usize", "expected a whole number, 0 or more"),
        ("expected i64", "expected a whole number"),
        ("expected i32", "expected a whole number"),
        ("expected i16", "expected a whole number"),
        ("expected a sequence", "expected a list"),
        ("expected a map", "expected an object"),
    ] {
        if let Some(rest) = out.strip_suffix(rust) {
            out = format!("{rest}{words}");
            break;
        }
    }
    out
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

/// The TCP peer of a connection, plain or TLS, and the client certificate it presented at
/// the TLS front (verified against the hub CA).
#[derive(Debug, Clone)]
pub struct PeerAddr(
    pub SocketAddr,
    pub Option<std::sync::Arc<crate::tls::PeerCert>>,
);

impl Connected<IncomingStream<'_, crate::conn::Guarded<tokio::net::TcpListener>>> for PeerAddr {
    fn connect_info(
        stream: IncomingStream<'_, crate::conn::Guarded<tokio::net::TcpListener>>,
    ) -> Self {
        PeerAddr(*stream.remote_addr(), None)
    }
}

impl Connected<IncomingStream<'_, crate::conn::Guarded<crate::tls::TlsListener>>> for PeerAddr {
    fn connect_info(
        stream: IncomingStream<'_, crate::conn::Guarded<crate::tls::TlsListener>>,
    ) -> Self {
        PeerAddr(
            *stream.remote_addr(),
            crate::tls::peer_cert(stream.io().inner()).map(std::sync::Arc::new),
        )
    }
}

/// The client address a `--trusted-proxy` named in `X-Forwarded-For`.
#[derive(Debug, Clone, Copy)]
pub struct ForwardedFor(pub IpAddr);

/// The client's address: what a trusted proxy forwarded, else the TCP peer, else the
/// unspecified address. Rate limits and the audit log use it.
pub fn client_ip(parts: &Parts) -> IpAddr {
    if let Some(f) = parts.extensions.get::<ForwardedFor>() {
        return f.0;
    }
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

/// Who did something, as the audit log names them: a signed-in user or a token.
pub trait Actor {
    /// Their tenant.
    fn tenant(&self) -> trusthub_store::TenantId;
    /// `user:<id>` or `token:<id>`.
    fn actor(&self) -> String;
}

impl Meta {
    /// Appends the audit row of an action `p` took in this request, in the action's
    /// transaction.
    pub async fn record(
        &self,
        tx: &mut trusthub_store::Tx,
        p: &impl Actor,
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
    #[test]
    fn refusals_read_as_people_write() {
        assert_eq!(
            super::for_people("invalid type: string \"x\", expected f64"),
            "invalid type: string \"x\", expected a number"
        );
        assert_eq!(
            super::for_people("invalid value: integer `-1`, expected u32"),
            "invalid value: integer `-1`, expected a whole number, 0 or more"
        );
        assert!(super::for_people("the 'year' component could not be parsed").contains("RFC 3339"));
        assert_eq!(
            super::for_people("missing field `name`"),
            "missing field `name`"
        );
    }

    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    #[serde(deny_unknown_fields)]
    struct Body {
        email: String,
        inner: Option<Inner>,
    }
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        n: u32,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    #[serde(deny_unknown_fields, rename_all = "snake_case")]
    enum Severity {
        Info,
        Warning,
        Critical,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    #[serde(deny_unknown_fields)]
    struct Rule {
        name: String,
        metric: String,
        threshold: f64,
        #[serde(default = "warning")]
        severity: Severity,
        items: Vec<Inner>,
        #[serde(default)]
        tags: Vec<String>,
    }
    fn warning() -> Severity {
        Severity::Warning
    }

    fn fields(r: Result<Rule, ApiError>) -> Vec<String> {
        match r {
            Err(ApiError::Validation(e)) => e.into_iter().map(|f| f.field).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn contract_13_every_bad_field_in_one_answer() {
        // A typo never falls back to the default.
        let r = parse_json::<Rule>(
            br#"{"name":"a","metric":"m","threshold":1,"items":[],"severty":"critical"}"#,
        );
        assert_eq!(fields(r), ["severty"]);
        // Every missing field, unknown field and bad value, nested ones too.
        let r = parse_json::<Rule>(
            br#"{"severity":"loud","x":1,"items":[{"n":1},{"n":"two","m":2}],"tags":"a"}"#,
        );
        let mut got = fields(r);
        got.sort();
        let mut want = vec![
            "severity",
            "x",
            "items[1].n",
            "items[1].m",
            "tags",
            "name",
            "metric",
            "threshold",
        ];
        want.sort();
        assert_eq!(got, want);
        // Not an object.
        for body in [&b"[]"[..], b"3", b"\"x\"", b"null"] {
            match parse_json::<Body>(body) {
                Err(ApiError::Validation(e)) => assert_eq!(e[0].field, "."),
                other => panic!("{other:?}"),
            }
        }
        // A good body still parses.
        assert!(
            parse_json::<Rule>(br#"{"name":"a","metric":"m","threshold":1,"items":[{"n":2}]}"#)
                .is_ok()
        );
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
