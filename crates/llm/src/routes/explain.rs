//! `GET /ai/explain` (CONTRACT 25; SPEC 4.10): a log line explained in the reader's
//! language — by the language model the operator configured (`TRUSTHUB_LLM_URL`, an
//! OpenAI-compatible chat-completions API), which receives the line only after redaction,
//! or by the built-in rules.

use crate::auth::Viewer;
use crate::error::{ApiResult, Problem};
use crate::extract::Query;
use crate::openapi::api_routes;
use crate::service::explain::{self as service, *};
use crate::state::AppState;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(api_routes!(explain_line))
}

/// Explain a log line (CONTRACT 25). With `TRUSTHUB_LLM_URL` set, the line goes to that
/// OpenAI-compatible chat-completions API after redaction (e-mail and IP addresses, tokens,
/// keys, card numbers, IBANs, phone numbers and user names replaced by placeholders), with
/// the host's OS and architecture as context and never its name; if the model fails, the
/// built-in rules answer with a `note`. Without it, the built-in rules explain sshd
/// failures, OOM kills, failed units, full disks, segfaults and TLS errors in `en` and `de`.
/// Before any model call, secrets are replaced by `[SECRET]`: values of secret-named keys
/// (`password`, `db_pass`, `api_key`, `token`, `auth`… as `k=v`, `k: v` or JSON),
/// `Authorization` values, URL userinfo, PEM blocks, JWTs, AWS keys, and hex or base64 runs
/// of 32+ characters. Each user or token may ask `TRUSTHUB_EXPLAIN_RATE` (20) times a
/// minute; past that, 429 with `Retry-After`.
///
/// Beyond the schema: without a language model configured (`TRUSTHUB_LLM_URL`), `lang` must be `en` or `de`.
#[utoipa::path(get, path = "/ai/explain", tag = "ai", params(ExplainQuery),
    responses((status = 200, body = Explained), (status = 404, body = Problem), (status = 422, body = Problem),
        (status = 429, description = "Over `TRUSTHUB_EXPLAIN_RATE` calls a minute (`rate_limited`)", body = Problem)))]
pub(crate) async fn explain_line(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<ExplainQuery>,
) -> ApiResult<axum::Json<Explained>> {
    service::explain(&state, &by.0, &q.log, q.agent_id, q.lang.as_deref())
        .await
        .map(axum::Json)
}
