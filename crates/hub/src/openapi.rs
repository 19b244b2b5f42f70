//! The OpenAPI 3.1 document, generated from the handlers (CONTRACT 10).

use crate::error::{FieldError, Problem};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The document's fixed parts; paths come from the routers.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Trusthub API",
        description = "Self-hosted host monitoring and trust hub.\n\n\
Authentication: a login session (`trusthub_session` cookie from `POST /api/v1/auth/login`) or an \
API token (`Authorization: Bearer tht_...`). Roles, each including the one before: viewer, operator, \
admin, owner. A `read` token acts as a viewer at most; an `ai_ingest` token opens only AI-trace intake.\n\n\
Errors: every non-2xx answer is `application/problem+json` (RFC 9457) with `type`, `title`, \
`status`, `detail`, a machine-readable `code`, `errors[]` for 422, and the `request_id` (also in \
the `x-request-id` header). Malformed bodies and queries are 400 `bad_request`; JSON of the wrong \
shape or values not allowed are 422 `validation_failed`; another tenant's record is 404, never 403.\n\n\
Rate limits (SPEC section 8): login 10/min/IP, forgot-password 5/h/IP, TOTP challenge 10/min/IP, \
invitations 20/h/tenant, everything else 1000/min/IP. Answers carry `RateLimit-Limit`, \
`RateLimit-Remaining` and `RateLimit-Reset`; a refusal is 429 with `Retry-After`.\n\n\
Timestamps are RFC 3339 UTC with whole seconds. Unknown JSON fields are ignored.",
    ),
    tags(
        (name = "auth", description = "Login, logout, password reset, invitations"),
        (name = "totp", description = "Second factor (RFC 6238)"),
        (name = "api-tokens", description = "Bearer tokens for scripts and CI"),
        (name = "users", description = "Users of the tenant"),
        (name = "audit", description = "Append-only audit log"),
        (name = "meta", description = "Health"),
    ),
    components(schemas(Problem, FieldError)),
    modifiers(&Security)
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("tht_...")
                    .build(),
            ),
        );
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(
                crate::auth::SESSION_COOKIE,
            ))),
        );
    }
}
