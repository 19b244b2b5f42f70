//! The hub's one error type and its RFC 9457 problem+json form (CONTRACT 1).
//!
//! Handlers return [`ApiError`]; [`crate::middleware::problem_details`] then adds the request
//! id to every error body and turns anything that is not problem+json yet (a framework
//! rejection, a panic) into problem+json, so no error leaves the hub as plain text.

use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use trusthub_store::StoreError;
use utoipa::ToSchema;

/// Media type of every error body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// One invalid field of a 422.
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema, PartialEq, Eq)]
pub struct FieldError {
    /// The field, as a dotted path into the body (or the query parameter name).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl FieldError {
    /// `field` is wrong, for the reason `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// `Ok` when no field was found invalid; else the 422 naming every one of them, so a request
/// is refused with all its mistakes at once.
pub fn all_valid(errors: Vec<FieldError>) -> Result<(), ApiError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Validation(errors))
    }
}

/// An RFC 9457 problem document as Trusthub sends it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// A URI naming the problem type: `urn:trusthub:problem:<code>`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Short summary of the problem type.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What happened, for a human.
    pub detail: String,
    /// Machine-readable code (CONTRACT 1).
    pub code: String,
    /// Invalid fields, for `validation_failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldError>>,
    /// The request id (also in the `x-request-id` response header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// Rate-limit figures for the `RateLimit-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateInfo {
    /// Requests allowed per window.
    pub limit: u32,
    /// Requests left in this window.
    pub remaining: u32,
    /// Seconds until the window resets.
    pub reset_secs: u32,
}

impl RateInfo {
    /// Writes `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`.
    pub fn apply(&self, headers: &mut axum::http::HeaderMap) {
        let set = |h: &mut axum::http::HeaderMap, name: &'static str, v: u32| {
            h.insert(HeaderName::from_static(name), HeaderValue::from(v));
        };
        set(headers, "ratelimit-limit", self.limit);
        set(headers, "ratelimit-remaining", self.remaining);
        set(headers, "ratelimit-reset", self.reset_secs);
    }
}

/// Everything a handler can answer besides success.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the body or query cannot be read.
    #[error("{0}")]
    BadRequest(String),
    /// 422: well-formed values that are not allowed.
    #[error("the request has invalid fields")]
    Validation(Vec<FieldError>),
    /// 422 with its own code: a request that is well-formed but that something outside the
    /// hub refused (`credentials_rejected`: a provider refused the credentials).
    #[error("{detail}")]
    Refused {
        /// The CONTRACT code.
        code: &'static str,
        /// For a human: the outside party's own message.
        detail: String,
    },
    /// 401: no or bad credentials.
    #[error("{0}")]
    Unauthenticated(String),
    /// 401 at login or 403 on a sensitive request: a TOTP problem (`totp_required`,
    /// `totp_invalid`, `totp_not_enrolled`).
    #[error("{detail}")]
    Totp {
        /// 401 at login, 403 elsewhere.
        status: StatusCode,
        /// The CONTRACT 1 code.
        code: &'static str,
        /// For a human.
        detail: String,
    },
    /// 403: authenticated but not allowed.
    #[error("{0}")]
    Forbidden(String),
    /// 403 `token_read_only` (CONTRACT 33): a read-scope API token asked to change something.
    #[error("this token can only read: changes need a session or a token of scope `write`")]
    TokenReadOnly,
    /// 404: absent, or another tenant's.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// 409: conflicts with the current state.
    #[error("{0}")]
    Conflict(String),
    /// 413: body over the limit (`TRUSTHUB_BODY_LIMIT_BYTES`, default 8 MiB).
    #[error("the request body is larger than the hub accepts (TRUSTHUB_BODY_LIMIT_BYTES)")]
    PayloadTooLarge,
    /// 413: over a bound other than the body limit (an import's decompressed size).
    #[error("{0}")]
    TooLarge(String),
    /// 415: not JSON.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 429: over a rate limit.
    #[error("rate limit exceeded; retry in {} s", .0.reset_secs)]
    RateLimited(RateInfo),
    /// 429 `totp_locked` (CONTRACT 18): five wrong TOTP codes within 15 minutes lock the
    /// user's TOTP-gated actions; the seconds until the lock ends.
    #[error("too many wrong TOTP codes; TOTP-gated actions are locked for {0} s")]
    TotpLocked(u32),
    /// 503: the hub cannot serve right now (database down).
    #[error("{0}")]
    Unavailable(String),
    /// 500: a bug or an infrastructure failure; details go to the log, not the client.
    #[error("internal error")]
    Internal(String),
}

impl ApiError {
    /// A 422 for one field.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::Validation(vec![FieldError::new(field, message)])
    }

    /// A list's page size: `limit`, or `default` when not given; outside 1 to `max` it is a
    /// 422 naming `limit`.
    pub fn page_limit(limit: Option<i64>, default: i64, max: i64) -> Result<i64, Self> {
        match limit.unwrap_or(default) {
            l if (1..=max).contains(&l) => Ok(l),
            _ => Err(ApiError::invalid("limit", format!("must be 1 to {max}"))),
        }
    }

    /// A 401 with the standard wording.
    pub fn unauthenticated() -> Self {
        ApiError::Unauthenticated("missing or invalid credentials".into())
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Validation(_) | ApiError::Refused { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            ApiError::Totp { status, .. } => *status,
            ApiError::Forbidden(_) | ApiError::TokenReadOnly => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge | ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::RateLimited(_) | ApiError::TotpLocked(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The CONTRACT 1 code.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Totp { code, .. } | ApiError::Refused { code, .. } => code,
            ApiError::TotpLocked(_) => "totp_locked",
            ApiError::TokenReadOnly => "token_read_only",
            other => code_for_status(other.status()),
        }
    }
}

/// The default code for a status (CONTRACT 1).
pub fn code_for_status(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "bad_request",
        401 => "unauthenticated",
        403 => "forbidden",
        404 => "not_found",
        405 => "method_not_allowed",
        409 => "conflict",
        413 => "payload_too_large",
        415 => "unsupported_media_type",
        422 => "validation_failed",
        429 => "rate_limited",
        503 => "unavailable",
        s if s >= 500 => "internal_error",
        _ => "error",
    }
}

/// Builds a problem document.
pub fn problem(
    status: StatusCode,
    code: &str,
    detail: String,
    errors: Option<Vec<FieldError>>,
) -> Problem {
    Problem {
        type_: format!("urn:trusthub:problem:{code}"),
        title: status.canonical_reason().unwrap_or("Error").to_owned(),
        status: status.as_u16(),
        detail,
        code: code.to_owned(),
        errors,
        request_id: None,
    }
}

/// A problem+json response.
pub fn problem_response(p: &Problem) -> Response {
    let status = StatusCode::from_u16(p.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::to_vec(p).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, PROBLEM_JSON)], body).into_response()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let detail = match &self {
            ApiError::Internal(msg) => {
                tracing::error!(error = %msg, "internal error");
                "the hub failed to handle this request; the error is in its log".to_owned()
            }
            ApiError::Validation(_) => "the request has invalid fields".to_owned(),
            other => other.to_string(),
        };
        let errors = match &self {
            ApiError::Validation(e) => Some(e.clone()),
            _ => None,
        };
        let mut resp = problem_response(&problem(status, self.code(), detail, errors));
        if let ApiError::RateLimited(info) = &self {
            info.apply(resp.headers_mut());
            resp.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(info.reset_secs.max(1)),
            );
        }
        if let ApiError::TotpLocked(secs) = &self {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from((*secs).max(1)));
        }
        resp
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict(what) => ApiError::Conflict(format!("already exists ({what})")),
            StoreError::Db(sqlx_err) if is_unavailable(&sqlx_err) => {
                tracing::error!(error = %sqlx_err, "database unavailable");
                ApiError::Unavailable("the database is not reachable; try again shortly".into())
            }
            other => ApiError::Internal(other.to_string()),
        }
    }
}

fn is_unavailable(e: &sqlx::Error) -> bool {
    matches!(
        e,
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_)
    )
}

/// Result of handlers.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A page size is taken from 1 to its maximum, the default when none is given; anything
    /// else is a 422 that names `limit` and the range.
    #[test]
    fn page_limit_takes_one_to_the_maximum() {
        assert_eq!(ApiError::page_limit(None, 100, 500).ok(), Some(100));
        assert_eq!(ApiError::page_limit(Some(1), 100, 500).ok(), Some(1));
        assert_eq!(ApiError::page_limit(Some(500), 100, 500).ok(), Some(500));
        for bad in [0, -1, 501] {
            match ApiError::page_limit(Some(bad), 100, 500) {
                Err(ApiError::Validation(errors)) => {
                    assert_eq!(errors.len(), 1);
                    assert_eq!(errors[0].field, "limit");
                    assert_eq!(errors[0].message, "must be 1 to 500");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }
}
