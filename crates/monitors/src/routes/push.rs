//! Push monitors (CONTRACT 32): the public URL a job calls, and a new URL for its owner.

use crate::auth::Operator;
use crate::error::{ApiResult, Problem};
use crate::extract::{Meta, Path, Query};
use crate::openapi::api_routes;
use crate::service::apps::AppView;
use crate::service::push::{PushAnswer, PushQuery};
use crate::state::{AppState, now};
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(ping_get, ping_post))
        .routes(api_routes!(start_get, start_post))
        .routes(api_routes!(new_push_url))
}

macro_rules! ping_route {
    ($name:ident, $method:ident, $path:literal, $start:expr, $doc:literal) => {
        #[doc = $doc]
        #[utoipa::path($method, path = $path, tag = "apps",
            params(("token" = String, Path, description = "The push monitor's secret token"), PushQuery),
            responses((status = 200, body = PushAnswer), (status = 404, body = Problem), (status = 422, body = Problem),
                (status = 429, body = Problem, description = "Pings changing the state faster than one a second for a minute.")))]
        pub(crate) async fn $name(
            State(state): State<AppState>,
            Path(token): Path<String>,
            Query(q): Query<PushQuery>,
        ) -> ApiResult<axum::Json<PushAnswer>> {
            crate::service::push::ping(&state, &token, q, $start, now())
                .await
                .map(axum::Json)
        }
    };
}

ping_route!(
    ping_get,
    get,
    "/push/{token}",
    false,
    "A push monitor's ping (public: the token is the credential). `status=down&msg=...` counts a failure with the message; otherwise the monitor is up until `interval_seconds + grace_seconds` from now. Pings are counted in batches: the answer comes once the ping is stored, within about 200 ms. An unknown token answers 404."
);
ping_route!(
    ping_post,
    post,
    "/push/{token}",
    false,
    "The same ping by POST (the body is ignored), for jobs that cannot send a GET."
);
ping_route!(
    start_get,
    get,
    "/push/{token}/start",
    true,
    "A push monitor's run started (public): the next ping's `latency_ms` is the run's duration. Counts nothing by itself."
);
ping_route!(
    start_post,
    post,
    "/push/{token}/start",
    true,
    "The same start by POST."
);

/// A new push URL for a push monitor (operator): the old one stops answering at once. The
/// answer holds the whole new URL, shown this once.
#[utoipa::path(post, path = "/apps/{id}/push-url", tag = "apps", params(("id" = Uuid, Path, description = "App id")),
    responses((status = 200, body = AppView), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub(crate) async fn new_push_url(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<AppView>> {
    crate::service::push::rotate(&state, &meta, &p, id)
        .await
        .map(axum::Json)
}
