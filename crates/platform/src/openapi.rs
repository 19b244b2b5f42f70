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
Timestamps are RFC 3339 UTC with whole seconds.\n\nRequest bodies are strict (CONTRACT 13): a body must be a JSON object, an unknown field is 422 naming it (a typo never falls back to a default), and every field error is listed in one answer's `errors[]`: first every unknown, missing or mistyped field together, then, once the body has the right shape, every value a rule refuses together. Unknown query parameters are 400 naming them. A number with a zero fraction (`60.0`) is accepted as the integer.",
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
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(crate::SESSION_COOKIE))),
        );
    }
}

// ------------------------------------------------------------ what extractors document

/// What an operation's extractors say about it: who may call it and how it can fail.
#[derive(Debug, Default)]
pub struct OpDoc {
    /// Security schemes that open it; `None` for a public operation.
    pub schemes: Option<&'static [&'static str]>,
    /// Error statuses it can answer.
    pub statuses: std::collections::BTreeSet<u16>,
}

impl OpDoc {
    /// Adds error statuses the operation can answer.
    pub fn errors(&mut self, statuses: &[u16]) {
        self.statuses.extend(statuses.iter().copied());
    }
}

/// An extractor's part of its operation's document (CONTRACT 13). Every type a handler takes
/// must implement it, or [`api_routes!`] does not compile: a route cannot be
/// under-documented by forgetting a line.
pub trait Documented {
    /// Adds what this extractor implies.
    fn document(_doc: &mut OpDoc) {}
}

/// Session or API token.
pub const EITHER: &[&str] = &["bearer", "session"];

/// Implements [`Documented`] for each type with the given body.
#[macro_export]
macro_rules! documented {
    ($($ty:ty => |$d:ident| $body:expr;)*) => {$(
        impl $crate::openapi::Documented for $ty {
            fn document($d: &mut $crate::openapi::OpDoc) {
                $body
            }
        }
    )*};
}

crate::documented! {
    crate::extract::SignedBody => |d| d.errors(&[400, 413, 415, 422]);
    crate::extract::Meta => |_d| {};
    crate::extract::ClientIp => |_d| {};
    axum::body::Bytes => |d| d.errors(&[400, 413]);
    axum::body::Body => |d| d.errors(&[400, 413]);
    axum::http::HeaderMap => |_d| {};
    axum::extract::State<crate::state::AppState> => |_d| {};
    axum::extract::WebSocketUpgrade => |d| d.errors(&[400]);
    Result<axum::extract::WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection> => |d| d.errors(&[400]);
}

impl<T> Documented for crate::extract::Json<T> {
    fn document(d: &mut OpDoc) {
        d.errors(&[400, 413, 415, 422]);
    }
}
impl<T> Documented for crate::extract::Query<T> {
    fn document(d: &mut OpDoc) {
        d.errors(&[400, 422]);
    }
}
impl<T> Documented for crate::extract::Path<T> {
    fn document(d: &mut OpDoc) {
        d.errors(&[400, 404]);
    }
}

/// A handler's extractor types (axum's `Handler<(M, T1, .., Tn), S>`).
pub trait DocumentedArgs {
    /// Adds what every extractor implies.
    fn document(doc: &mut OpDoc);
}

macro_rules! documented_args {
    ($($t:ident),*) => {
        impl<M, $($t: Documented),*> DocumentedArgs for (M, $($t,)*) {
            #[allow(unused_variables)]
            fn document(doc: &mut OpDoc) {
                $($t::document(doc);)*
            }
        }
    };
}
documented_args!();
documented_args!(T1);
documented_args!(T1, T2);
documented_args!(T1, T2, T3);
documented_args!(T1, T2, T3, T4);
documented_args!(T1, T2, T3, T4, T5);
documented_args!(T1, T2, T3, T4, T5, T6);
documented_args!(T1, T2, T3, T4, T5, T6, T7);
documented_args!(T1, T2, T3, T4, T5, T6, T7, T8);

/// What each error status means, for its documented response.
fn error_description(status: u16) -> &'static str {
    match status {
        400 => "The body, query or a path parameter cannot be read (`bad_request`).",
        401 => "Missing or invalid credentials (`unauthenticated`).",
        403 => "The role, token scope or TOTP code does not allow this (`forbidden`, `totp_*`).",
        404 => "No such record in your tenant (`not_found`); another tenant's id answers 404 too.",
        409 => "Conflicts with the current state (`conflict`).",
        413 => "The body is larger than the hub accepts (`payload_too_large`).",
        415 => "The body is not of an accepted media type (`unsupported_media_type`).",
        422 => {
            "Invalid, missing or unknown fields, every one listed in `errors` (`validation_failed`)."
        }
        429 => "Over a rate limit (`rate_limited`); `Retry-After` says when to try again.",
        503 => "The hub cannot serve right now (`unavailable`).",
        _ => "An error (RFC 9457 problem document).",
    }
}

fn problem_response(description: &str) -> utoipa::openapi::Response {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    ResponseBuilder::new()
        .description(description)
        .content(
            crate::error::PROBLEM_JSON,
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Problem")))
                .build(),
        )
        .build()
}

/// Applies handler `_h`'s extractors to its operations in `paths` (which hold only its own),
/// and names them `<resource>_<verb>` after the handler's module (CONTRACT 13).
pub fn document<H, T>(paths: &mut utoipa::openapi::path::Paths, _h: &H, module: &str)
where
    H: axum::handler::Handler<T, crate::state::AppState>,
    T: DocumentedArgs,
{
    let mut doc = OpDoc::default();
    // Every operation is behind the general rate limit.
    doc.errors(&[429]);
    T::document(&mut doc);
    let resource = module.rsplit("::").next().unwrap_or(module);
    for item in paths.paths.values_mut() {
        for op in operations(item) {
            apply(op, &doc);
            if let Some(handler) = &op.operation_id {
                op.operation_id = Some(operation_id(resource, handler));
            }
        }
    }
}

/// `<resource>_<verb>`: `apps` + `get_app` is `apps_get`, `actions` + `list_actions` is
/// `actions_list`, `me` + `me` is `me_get`.
fn operation_id(resource: &str, handler: &str) -> String {
    let singular = resource.strip_suffix('s').unwrap_or(resource);
    let verb = if handler == resource {
        "get"
    } else {
        handler
            .strip_suffix(&format!("_{resource}"))
            .or_else(|| handler.strip_suffix(&format!("_{singular}")))
            .or_else(|| handler.strip_prefix(&format!("{resource}_")))
            .unwrap_or(handler)
    };
    format!("{resource}_{verb}")
}

fn operations(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.patch,
        &mut item.head,
        &mut item.options,
        &mut item.trace,
    ]
    .into_iter()
    .filter_map(Option::as_mut)
}

fn apply(op: &mut utoipa::openapi::path::Operation, doc: &OpDoc) {
    use utoipa::openapi::security::SecurityRequirement;
    op.security = Some(match doc.schemes {
        // Any one of the schemes opens it.
        Some(schemes) => schemes
            .iter()
            .map(|s| SecurityRequirement::new(*s, Vec::<String>::new()))
            .collect(),
        None => Vec::new(),
    });
    for status in &doc.statuses {
        op.responses
            .responses
            .entry(status.to_string())
            .or_insert_with(|| problem_response(error_description(*status)).into());
    }
}

/// Rules over the whole document (CONTRACT 13): every response has a description and every
/// error is `application/problem+json` with the shared `Problem` schema.
pub fn finish(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::RefOr;
    for item in doc.paths.paths.values_mut() {
        for op in operations(item) {
            for (status, resp) in op.responses.responses.iter_mut() {
                let RefOr::T(resp) = resp else { continue };
                let code: u16 = status.parse().unwrap_or(0);
                if code >= 400 {
                    let description = if resp.description.is_empty() {
                        error_description(code).to_owned()
                    } else {
                        resp.description.clone()
                    };
                    *resp = problem_response(&description);
                } else if resp.description.is_empty() {
                    resp.description = axum::http::StatusCode::from_u16(code)
                        .ok()
                        .and_then(|s| s.canonical_reason())
                        .unwrap_or("Success")
                        .to_owned();
                }
            }
        }
    }
}

/// `utoipa_axum::routes!` with each handler's extractors applied to its operations
/// ([`document`]): security and the shared error responses come from the extractors.
/// Operation ids are `<resource>_<verb>` after the calling module's name, or after the
/// resource given as `api_routes!(resource = "alerts"; ...)` when a module serves a
/// resource named otherwise.
#[macro_export]
macro_rules! api_routes {
    (resource = $res:expr; $($h:path),+ $(,)?) => {{
        let mut schemas = Vec::new();
        let mut paths = utoipa::openapi::path::Paths::new();
        let mut router = axum::routing::MethodRouter::new();
        $(
            let (s, mut p, r) = utoipa_axum::routes!($h);
            $crate::openapi::document(&mut p, &$h, $res);
            schemas.extend(s);
            paths.merge(p);
            router = router.merge(r);
        )+
        (schemas, paths, router)
    }};
    ($($h:path),+ $(,)?) => {
        $crate::api_routes!(resource = module_path!(); $($h),+)
    };
}
pub use crate::api_routes;
pub use crate::documented;

// ------------------------------------------------------------ shared value schemas

/// Request fields' schemas are at least as strict as the hub's checks, so a client (or a
/// fuzzer) that follows the document is not refused; these are the shapes used in lists.
macro_rules! string_schema {
    ($($(#[$doc:meta])* $name:ident = $pattern:expr, $max:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .pattern(Some($pattern))
                    .min_length(Some(1))
                    .max_length(Some($max))
                    .into()
            }
        }
        impl utoipa::ToSchema for $name {}
    )*};
}

string_schema! {
    /// A tag: 1-64 characters of letters, digits and `- _ . : = /`.
    Tag = r"^[A-Za-z0-9_.:=/-]+$", 64;
    /// A label name to group by, or `agent_id`.
    GroupKey = r"^[A-Za-z0-9_.-]+$", 100;
    /// A printable label of up to 100 characters.
    Label = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$", 100;
    /// A printable name of up to 200 characters, not only spaces.
    Name200 = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$", 200;
    /// A webhook event.
    EventName = r"^(alert\.created|alert\.resolved|drift\.ticket)$", 64;
    /// A watched configuration path or glob: absolute, no `.` or `..` segment, nothing under
    /// `/proc`, `/sys`, `/dev` or `/run`, no glob in the first folder (CONTRACT 30).
    ConfigPath = r"^(?!/(proc|sys|dev|run)(/|$))(?!/[^/]*[*?\[])(/(?!\.\.?(/|$))[^/\x00-\x1f\x7f-\x9f]*)+$", 4096;
    /// An event a notification channel renders (alerts only).
    AlertEventName = r"^(alert\.created|alert\.resolved)$", 64;
    /// A cloud region or location (`eu-central-1`, `fsn1`).
    RegionName = r"^[A-Za-z0-9_-]+$", 64;
    /// An IPv4 or IPv6 range in CIDR notation (`10.0.0.0/8`, `fd00::/8`; an address alone is
    /// its own /32 or /128).
    CidrRange = r"^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}(/(3[0-2]|[12]?\d))?|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(/(12[0-8]|1[01]\d|[1-9]?\d))?)$", 49;
    /// An action kind an EAT may carry.
    ActionName = r"^(restart_app|install_package|update_packages|console_open|emergency)$", 64;
}

// ------------------------------------------------------------ bodies shaped by a field

/// One shape of a body whose other fields depend on one field's value ([`one_of`]).
#[derive(Debug)]
pub struct Variant {
    /// Property schemas (JSON Schema) that replace or add to the body's own; a JSON `null`
    /// takes the property out of this shape. A replacement without a description keeps
    /// the body's.
    pub properties: serde_json::Value,
    /// Properties this shape requires besides the body's own required ones.
    pub required: &'static [&'static str],
}

impl Variant {
    /// A shape: `properties` (a JSON object) and what it requires.
    pub fn new(properties: serde_json::Value, required: &'static [&'static str]) -> Variant {
        Variant {
            properties,
            required,
        }
    }
}

/// The schema of `T` as JSON, to place in a [`Variant`] (a channel kind's `config`).
pub fn schema_json<T: utoipa::PartialSchema>() -> serde_json::Value {
    serde_json::to_value(T::schema()).unwrap_or_default()
}

/// `{"type": "string", "enum": values}`: a tag fixed to some values.
pub fn tag(values: &[&str]) -> serde_json::Value {
    serde_json::json!({"type": "string", "enum": values})
}

/// States a rule between fields (CONTRACT 30): the object schema `name` of `doc`'s
/// components becomes a `oneOf` of one copy per shape, each with its own properties and
/// requirements, so a client generated from the document builds only bodies the hub takes
/// (a channel's `config` by its `kind`, an account's `credentials` by its `provider`). The
/// shapes must exclude each other (a tag fixed to different values). Panics at start when
/// `name` is not an object schema of the document: a wiring mistake, found by every test.
pub fn one_of(doc: &mut utoipa::openapi::OpenApi, name: &str, variants: Vec<Variant>) {
    use serde_json::{Map, Value};
    let components = doc.components.get_or_insert_with(Default::default);
    let base = components
        .schemas
        .get(name)
        .map(|s| serde_json::to_value(s).unwrap_or_default())
        .filter(|b| b.get("properties").is_some())
        .unwrap_or_else(|| panic!("one_of: no object schema `{name}`"));
    let shapes: Vec<Value> = variants
        .into_iter()
        .map(|v| {
            let mut shape = base.clone();
            if let Some(o) = shape.as_object_mut() {
                o.remove("description");
            }
            let props = shape["properties"].as_object_mut().expect("properties");
            for (field, schema) in v.properties.as_object().cloned().unwrap_or_default() {
                match schema {
                    Value::Null => {
                        props.remove(&field);
                    }
                    Value::Object(mut s) => {
                        if let Some(d) = props.get(&field).and_then(|p| p.get("description"))
                            && !s.contains_key("description")
                        {
                            s.insert("description".into(), d.clone());
                        }
                        props.insert(field, Value::Object(s));
                    }
                    other => panic!("one_of: `{name}.{field}` is not a schema: {other}"),
                }
            }
            let kept: Vec<String> = props.keys().cloned().collect();
            let mut required: Vec<Value> = shape
                .get("required")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|r| r.as_str().is_some_and(|r| kept.iter().any(|k| k == r)))
                .collect();
            for r in v.required {
                if !required.iter().any(|x| x == r) {
                    required.push(Value::from(*r));
                }
            }
            shape["required"] = Value::Array(required);
            shape
        })
        .collect();
    let mut whole = Map::new();
    if let Some(d) = base.get("description") {
        whole.insert("description".into(), d.clone());
    }
    whole.insert("oneOf".into(), Value::Array(shapes));
    let schema = serde_json::from_value(Value::Object(whole))
        .unwrap_or_else(|e| panic!("one_of: `{name}` is not a schema: {e}"));
    components.schemas.insert(name.to_owned(), schema);
}
