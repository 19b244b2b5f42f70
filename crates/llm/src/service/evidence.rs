//! The services behind [`crate::routes::evidence`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::Viewer;
use crate::error::{ApiError, ApiResult};
use crate::evidence::{self, Built};
use crate::extract::Meta;
use crate::state::AppState;
use crate::store::evidence as store;
use crate::store::evidence::{Pack, Scope};
use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use trusthub_platform::state::rfc3339;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// The longest period one pack covers.
pub(crate) const MAX_PERIOD_DAYS: i64 = 3660;

/// What to put in a pack.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePack {
    /// Inclusive start, RFC 3339 in whole seconds (any offset; stored as UTC).
    #[schema(format = DateTime)]
    pub period_start: String,
    /// Exclusive end, RFC 3339 in whole seconds, after the start, at most 3660 days later.
    #[schema(format = DateTime)]
    pub period_end: String,
    /// One app of your tenant (the traces sent with that `app_id`); all when omitted.
    /// Apps have UUID ids here, so the manifest's `app_id` is a UUID string or null.
    pub app_id: Option<Uuid>,
    /// Bundle the redacted content of the spans (`blobs/<sha256>.txt`); default false.
    #[serde(default)]
    pub include_blobs: bool,
}

/// A pack (SPEC 2.10's create response, plus its record).
#[derive(Debug, Serialize, ToSchema)]
pub struct PackView {
    /// Numeric id, as a string.
    pub pack_id: String,
    /// Lines of traces.jsonl.
    pub trace_count: i64,
    /// Lines of spans.jsonl.
    pub span_count: i64,
    /// Unique content blobs bundled.
    pub blob_count: i64,
    /// Cost of the priced spans, micro-EUR.
    pub total_cost_micro_eur: i64,
    /// Spans of models without a price (not in the total; never costed 0).
    pub unpriced_span_count: i64,
    /// SHA-256 (hex) of manifest.json: the pack's identity.
    pub manifest_sha256: String,
    /// The evidence key (hex Ed25519) that signed it.
    pub signing_public_hex: String,
    /// Where to fetch the bundle.
    pub download_url: String,
    /// How to check it offline.
    pub verify_with: String,
    /// App, or null for all.
    pub app_id: Option<Uuid>,
    /// Window start.
    pub period_start: String,
    /// Window end (exclusive).
    pub period_end: String,
    /// Content bundled.
    pub include_blobs: bool,
    /// Generation time (also the mtime of every file in the bundle).
    pub created_at: String,
    /// Kept on disk at least until then (`TRUSTHUB_EVIDENCE_RETENTION_DAYS`, at least 365).
    pub expires_at: String,
    /// Bundle size in bytes.
    pub size_bytes: i64,
    /// Sequence of its `evidence_pack_created` entry in the transparency log.
    pub transparency_seq: Option<i64>,
}

impl From<Pack> for PackView {
    fn from(p: Pack) -> Self {
        let key = p.signing_public_hex.unwrap_or_default();
        PackView {
            pack_id: p.id.to_string(),
            download_url: format!("/api/v1/ai/evidence-packs/{}/download", p.id),
            verify_with: format!(
                "trusthub evidence verify pack-{}.tar.gz --expect-key {key}",
                p.id
            ),
            trace_count: p.trace_count,
            span_count: p.span_count,
            blob_count: p.blob_count,
            total_cost_micro_eur: p.total_cost_micro_eur,
            unpriced_span_count: p.unpriced_span_count,
            manifest_sha256: p.manifest_sha256.unwrap_or_default(),
            signing_public_hex: key,
            app_id: p.app_id,
            period_start: rfc3339(p.period_start),
            period_end: rfc3339(p.period_end),
            include_blobs: p.include_blobs,
            created_at: rfc3339(p.created_at),
            expires_at: rfc3339(p.expires_at),
            size_bytes: p.size_bytes,
            transparency_seq: p.transparency_seq,
        }
    }
}

pub(crate) fn parse_time(field: &str, v: &str) -> Result<OffsetDateTime, crate::error::FieldError> {
    let bad = |m: &str| crate::error::FieldError::new(field, m);
    let t = OffsetDateTime::parse(v, &time::format_description::well_known::Rfc3339)
        .map_err(|_| bad("must be an RFC 3339 time"))?;
    if t.nanosecond() != 0 {
        return Err(bad("must be whole seconds"));
    }
    Ok(t.to_offset(time::UtcOffset::UTC))
}

/// Builds (or finds) the pack of a period for `p`'s tenant (the API and the dashboard): 201
/// with a new pack, 200 with the existing one for unchanged data.
pub(crate) async fn create_pack(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    req: CreatePack,
) -> ApiResult<(StatusCode, axum::Json<PackView>)> {
    let mut errors = Vec::new();
    let from = parse_time("period_start", &req.period_start).map_err(|e| errors.push(e));
    let to = parse_time("period_end", &req.period_end).map_err(|e| errors.push(e));
    if let (Ok(f), Ok(t)) = (from, to) {
        if f >= t {
            errors.push(crate::error::FieldError::new(
                "period_end",
                "must be after period_start",
            ));
        } else if t - f > time::Duration::days(MAX_PERIOD_DAYS) {
            errors.push(crate::error::FieldError::new(
                "period_end",
                format!("a pack covers at most {MAX_PERIOD_DAYS} days"),
            ));
        }
    }
    if let Some(app) = req.app_id {
        let mut c = state.db.conn().await?;
        if trusthub_monitors::app(&mut c, p.tenant(), app)
            .await?
            .is_none()
        {
            errors.push(crate::error::FieldError::new(
                "app_id",
                "is not an app of your tenant",
            ));
        }
    }
    let (Ok(from), Ok(to), true) = (from, to, errors.is_empty()) else {
        return Err(ApiError::Validation(errors));
    };
    let prices = crate::service::ai::price_table(state, p.tenant()).await?;
    let request = evidence::Request {
        scope: Scope {
            tenant: p.tenant(),
            app_id: req.app_id,
            from,
            to,
        },
        include_blobs: req.include_blobs,
        actor: p.actor(),
    };
    Ok(
        match evidence::build(state, &request, &prices, meta).await? {
            Built::New(pack) => (StatusCode::CREATED, axum::Json(pack.into())),
            Built::Existing(pack) => (StatusCode::OK, axum::Json(pack.into())),
        },
    )
}

/// Paging of the pack list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// At most this many (1-500, default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// Only packs with a smaller id (the last `pack_id` of the previous page).
    pub before: Option<i64>,
}

/// The evidence key.
#[derive(Debug, Serialize, ToSchema)]
pub struct EvidenceKey {
    /// `Ed25519`.
    pub algorithm: String,
    /// The public key, hex (32 bytes): every pack's `signing_public_hex`.
    pub public_key_hex: String,
    /// SHA-256 (hex) of the 32 key bytes: compare it with the one published to you out of
    /// band, then pin the key (`--expect-key`).
    pub fingerprint_sha256: String,
}

/// The service behind the `download` handler, for the API and the dashboard alike.
pub async fn download(state: &AppState, by: &Viewer, id: i64) -> ApiResult<Response> {
    let p = &by.0;
    let pack = {
        let mut c = state.db.conn().await?;
        store::get(&mut c, p.tenant(), id)
            .await?
            .ok_or(ApiError::NotFound("evidence pack"))?
    };
    let path = evidence::pack_path(state, p.tenant(), pack.id);
    let file = tokio::fs::File::open(&path).await.map_err(|e| {
        tracing::error!(path = %path.display(), error = %e, "evidence pack file missing");
        ApiError::NotFound("evidence pack file")
    })?;
    let stream = futures_util::stream::unfold(file, |mut f| async move {
        use tokio::io::AsyncReadExt;
        let mut buf = vec![0u8; 256 * 1024];
        match f.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok::<_, std::io::Error>(buf), f))
            }
            Err(e) => Some((Err(e), f)),
        }
    });
    Ok((
        [
            (header::CONTENT_TYPE, "application/gzip".to_owned()),
            (header::CONTENT_LENGTH, pack.size_bytes.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"pack-{}.tar.gz\"", pack.id),
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}
