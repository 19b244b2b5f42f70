//! The dashboard's page shell (CONTRACT 17): the embedded assets under content-hashed names,
//! the layout's user bar, the security headers every HTML answer carries, CSRF tokens, the
//! error page, flash messages and form helpers. Capabilities render their pages with these;
//! the composition root mounts them.

use crate::error::ApiError;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::sync::LazyLock;
use time::OffsetDateTime;

const CSS: &str = include_str!("../assets/app.css");
const HTMX: &[u8] = include_bytes!("../assets/htmx-2.0.11.min.js");
const ICON: &str = include_str!("../assets/icon.svg");
const JS: &str = include_str!("../assets/app.js");
const UPLOT: &str = include_str!("../assets/uPlot-1.6.32.iife.min.js");
const UPLOT_CSS: &str = include_str!("../assets/uPlot-1.6.32.min.css");
const XTERM: &str = include_str!("../assets/xterm-5.5.0.js");
const XTERM_CSS: &str = include_str!("../assets/xterm-5.5.0.css");
const CONSOLE_JS: &str = include_str!("../assets/console.js");
const PLAYER: &str = include_str!("../assets/asciinema-player-3.10.0.min.js");
const PLAYER_CSS: &str = include_str!("../assets/asciinema-player-3.10.0.css");
const PLAYER_JS: &str = include_str!("../assets/player.js");
/// Mermaid 12.3.0's browser bundle (MIT, `assets/mermaid-LICENSE.txt`), stored gzipped
/// (5.5 MB as text, 1.6 MB so) and sent as it is to browsers that accept gzip.
const MERMAID_GZ: &[u8] = include_bytes!("../assets/mermaid-12.3.0.min.js.gz");
const DIAGRAM_JS: &str = include_str!("../assets/diagram.js");

/// The embedded assets' URLs, each with a content hash in its name.
#[derive(Debug)]
pub struct Assets {
    /// The stylesheet.
    pub css: String,
    /// htmx 2.0.11 (0BSD).
    pub htmx: String,
    /// The icon.
    pub icon: String,
    /// The dashboard's own script (copy buttons), no inline code.
    pub js: String,
    /// uPlot 1.6.32 (MIT, `assets/uPlot-LICENSE.txt`), for the pages with charts.
    pub uplot: String,
    /// uPlot's stylesheet.
    pub uplot_css: String,
    /// xterm.js 5.5.0 (MIT, `assets/xterm-LICENSE.txt`), for the console.
    pub xterm: String,
    /// Its stylesheet.
    pub xterm_css: String,
    /// The console page's own script.
    pub console_js: String,
    /// asciinema-player 3.10.0 (Apache-2.0, `assets/asciinema-player-LICENSE.txt`).
    pub player: String,
    /// Its stylesheet.
    pub player_css: String,
    /// The recording page's own script.
    pub player_js: String,
    /// Mermaid 12.3.0 (MIT), for the topology and diagram pages.
    pub mermaid: String,
    /// The diagram pages' own script (renders `pre.mermaid`).
    pub diagram_js: String,
}

fn short_hash(bytes: &[u8]) -> String {
    trusthub_core::secret::hex(&Sha256::digest(bytes)[..6])
}

/// The asset URLs, computed once.
pub static ASSETS: LazyLock<Assets> = LazyLock::new(|| Assets {
    css: format!("/assets/app-{}.css", short_hash(CSS.as_bytes())),
    htmx: format!("/assets/htmx-{}.js", short_hash(HTMX)),
    icon: format!("/assets/icon-{}.svg", short_hash(ICON.as_bytes())),
    js: format!("/assets/app-{}.js", short_hash(JS.as_bytes())),
    uplot: format!("/assets/uplot-{}.js", short_hash(UPLOT.as_bytes())),
    uplot_css: format!("/assets/uplot-{}.css", short_hash(UPLOT_CSS.as_bytes())),
    xterm: format!("/assets/xterm-{}.js", short_hash(XTERM.as_bytes())),
    xterm_css: format!("/assets/xterm-{}.css", short_hash(XTERM_CSS.as_bytes())),
    console_js: format!("/assets/console-{}.js", short_hash(CONSOLE_JS.as_bytes())),
    player: format!("/assets/player-{}.js", short_hash(PLAYER.as_bytes())),
    player_css: format!("/assets/player-{}.css", short_hash(PLAYER_CSS.as_bytes())),
    player_js: format!("/assets/play-{}.js", short_hash(PLAYER_JS.as_bytes())),
    mermaid: format!("/assets/mermaid-{}.js", short_hash(MERMAID_GZ)),
    diagram_js: format!("/assets/diagram-{}.js", short_hash(DIAGRAM_JS.as_bytes())),
});

/// What the layout shows of the signed-in user.
#[derive(Debug)]
pub struct UserBar {
    /// Email.
    pub email: String,
    /// Role.
    pub role: String,
    /// The session's CSRF token.
    pub csrf: String,
    /// Admin or more.
    pub admin: bool,
    /// Owner.
    pub owner: bool,
}

/// A 422's fields in words, for a form shown again.
pub fn refusal(errors: &[crate::error::FieldError]) -> String {
    errors
        .iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Serves an embedded asset by its hashed name.
pub async fn asset(
    headers: axum::http::HeaderMap,
    axum::extract::Path(name): axum::extract::Path<String>,
) -> Response {
    let path = format!("/assets/{name}");
    if path == ASSETS.mermaid {
        return mermaid(&headers);
    }
    let (body, kind): (&'static [u8], &str) = if path == ASSETS.css {
        (CSS.as_bytes(), "text/css; charset=utf-8")
    } else if path == ASSETS.htmx {
        (HTMX, "text/javascript; charset=utf-8")
    } else if path == ASSETS.js {
        (JS.as_bytes(), "text/javascript; charset=utf-8")
    } else if path == ASSETS.icon {
        (ICON.as_bytes(), "image/svg+xml")
    } else if path == ASSETS.uplot {
        (UPLOT.as_bytes(), "text/javascript; charset=utf-8")
    } else if path == ASSETS.uplot_css {
        (UPLOT_CSS.as_bytes(), "text/css; charset=utf-8")
    } else if path == ASSETS.xterm {
        (XTERM.as_bytes(), "text/javascript; charset=utf-8")
    } else if path == ASSETS.xterm_css {
        (XTERM_CSS.as_bytes(), "text/css; charset=utf-8")
    } else if path == ASSETS.console_js {
        (CONSOLE_JS.as_bytes(), "text/javascript; charset=utf-8")
    } else if path == ASSETS.player {
        (PLAYER.as_bytes(), "text/javascript; charset=utf-8")
    } else if path == ASSETS.player_css {
        (PLAYER_CSS.as_bytes(), "text/css; charset=utf-8")
    } else if path == ASSETS.player_js {
        (PLAYER_JS.as_bytes(), "text/javascript; charset=utf-8")
    } else if path == ASSETS.diagram_js {
        (DIAGRAM_JS.as_bytes(), "text/javascript; charset=utf-8")
    } else {
        return ApiError::NotFound("asset").into_response();
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            // The name changes with the content.
            (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
        ],
        body,
    )
        .into_response()
}

#[derive(askama::Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    status: u16,
    title: String,
    detail: String,
}

/// A page that ends in an error answers with an HTML page saying what went wrong (same status,
/// the problem's title and detail), not the API's problem+json.
pub async fn html_errors(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    let kind = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let is_problem = kind.starts_with("application/problem+json");
    // axum's own rejections (a path segment that is not an id) come as plain text.
    let is_plain = kind.starts_with("text/plain");
    if !(status.is_client_error() || status.is_server_error()) || !(is_problem || is_plain) {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, 64 * 1024)
        .await
        .unwrap_or_default();
    let (title, detail) = if is_problem {
        let problem: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let text = |k: &str| problem[k].as_str().unwrap_or_default().to_owned();
        // A refused form says which of its fields, as the API's problem does.
        let fields: Vec<crate::error::FieldError> =
            serde_json::from_value(problem["errors"].clone()).unwrap_or_default();
        match fields.is_empty() {
            true => (text("title"), text("detail")),
            false => (
                text("title"),
                format!("{}: {}", text("detail"), refusal(&fields)),
            ),
        }
    } else {
        (String::new(), String::from_utf8_lossy(&bytes).into_owned())
    };
    let page = ErrorPage {
        assets: &ASSETS,
        user: None,
        status: status.as_u16(),
        title: match title {
            t if t.is_empty() => status.canonical_reason().unwrap_or("Error").to_owned(),
            t => t,
        },
        detail: readable(&detail),
    };
    let mut out = html(askama::Template::render(&page), status);
    for name in [header::RETRY_AFTER, header::WWW_AUTHENTICATE] {
        if let Some(v) = parts.headers.get(&name) {
            out.headers_mut().insert(name, v.clone());
        }
    }
    out
}

/// What a person reads for a parser's words: an id in the address that is not one.
fn readable(detail: &str) -> String {
    if detail.contains("UUID parsing failed") || detail.contains("to a `uuid::Uuid`") {
        "This address holds an id that is not one: ids are UUIDs such as \
         0190f1e2-7c3a-7b4e-9d2f-5a6b7c8d9e0f. Follow a link from the list instead."
            .to_owned()
    } else {
        detail.to_owned()
    }
}

/// The HTML page for an address nothing answers (a browser's request outside `/api`), with
/// the page headers.
pub fn not_found_page() -> Response {
    let page = ErrorPage {
        assets: &ASSETS,
        user: None,
        status: 404,
        title: "Page not found".into(),
        detail: "Nothing is at this address. The menu above leads to every page.".into(),
    };
    let mut resp = html(askama::Template::render(&page), StatusCode::NOT_FOUND);
    page_headers(resp.headers_mut());
    resp
}

/// Mermaid, gzipped as stored to a browser that accepts gzip, else unpacked.
fn mermaid(headers: &axum::http::HeaderMap) -> Response {
    let gzip = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|e| {
            let mut parts = e.split(';');
            let name = parts.next().unwrap_or_default().trim();
            let q0 = parts.any(|p| p.trim().replace(' ', "") == "q=0");
            (name == "gzip" || name == "*") && !q0
        });
    let common = [
        (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
        (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
        (header::VARY, "Accept-Encoding"),
    ];
    if gzip {
        return (common, [(header::CONTENT_ENCODING, "gzip")], MERMAID_GZ).into_response();
    }
    let mut text = Vec::with_capacity(6 << 20);
    match std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(MERMAID_GZ), &mut text) {
        Ok(_) => (common, text).into_response(),
        Err(e) => {
            ApiError::Internal(format!("the embedded Mermaid does not unpack: {e}")).into_response()
        }
    }
}

/// The diagram pages' policy: Mermaid writes its SVG's `<style>` and inline styles, so those
/// pages (only) allow inline styles, as the console's; scripts stay the hub's own.
pub const DIAGRAM_CSP: &str = CONSOLE_CSP;

/// The console terminal's policy: xterm.js's renderer writes its own `<style>` elements, so
/// that page (only) allows inline styles; scripts stay the hub's own.
pub const CONSOLE_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
    img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
    frame-ancestors 'none'";

/// The recording player's policy: asciinema-player runs WebAssembly and writes inline
/// styles; that page (only) allows both, scripts stay the hub's own.
pub const PLAYER_CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
    style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
    base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

fn page_headers(h: &mut axum::http::HeaderMap) {
    // A page that set a narrower exception of its own keeps it (the console's terminal, the
    // recording player).
    let own = h
        .get(header::CONTENT_SECURITY_POLICY)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == CONSOLE_CSP || v == PLAYER_CSP);
    if !own {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                 object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
            ),
        );
    }
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
}

/// CONTRACT 17: no script, style or frame from anywhere but the hub, no framing, no sniffing.
pub async fn security_headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    page_headers(resp.headers_mut());
    resp
}

/// The CSRF token of a session: derived from the session cookie, which pages cannot read
/// (HttpOnly) and another site cannot know.
pub fn csrf_token(session_cookie: &str) -> String {
    trusthub_core::secret::hex(&Sha256::digest(
        format!("trusthub-csrf:{session_cookie}").as_bytes(),
    ))
}

/// What a page says about the form just sent: a notice, an error, or a secret shown this
/// once (with a copy button).
#[derive(Debug, Default)]
pub struct Flash {
    /// It worked.
    pub notice: Option<String>,
    /// It did not, and why.
    pub error: Option<String>,
    /// What the secret is.
    pub secret_label: String,
    /// The once-shown secret.
    pub secret: Option<String>,
}

impl Flash {
    /// A notice.
    pub fn notice(m: impl Into<String>) -> Self {
        Flash {
            notice: Some(m.into()),
            ..Flash::default()
        }
    }

    /// An error.
    pub fn error(m: impl Into<String>) -> Self {
        Flash {
            error: Some(m.into()),
            ..Flash::default()
        }
    }

    /// A secret shown once.
    pub fn secret(label: impl Into<String>, secret: String) -> Self {
        Flash {
            secret_label: label.into(),
            secret: Some(secret),
            ..Flash::default()
        }
    }
}

/// An error a form shows in the page it came from, with the status to answer with
/// (refused values, TOTP, conflicts, rate limits, rules of the hub); anything else is answered
/// as the problem it is.
pub fn form_error(e: ApiError) -> Result<(StatusCode, String), ApiError> {
    match e {
        ApiError::Validation(errors) => Ok((StatusCode::UNPROCESSABLE_ENTITY, refusal(&errors))),
        ApiError::Refused { detail, .. } => Ok((StatusCode::UNPROCESSABLE_ENTITY, detail)),
        ApiError::Totp { status, detail, .. } => Ok((status, detail)),
        ApiError::Conflict(m) => Ok((StatusCode::CONFLICT, m)),
        ApiError::Forbidden(m) => Ok((StatusCode::FORBIDDEN, m)),
        e @ ApiError::RateLimited(_) => Ok((StatusCode::TOO_MANY_REQUESTS, e.to_string())),
        e => Err(e),
    }
}

/// What the page after a form shows: `notice` with `status` when the API's handler took the
/// change, its refusal in words (with the refusal's status) when it did not; any other
/// error is answered as the problem it is.
pub fn outcome<T>(
    result: Result<T, ApiError>,
    notice: &str,
    status: StatusCode,
) -> Result<(Flash, StatusCode), ApiError> {
    match result {
        Ok(_) => Ok((Flash::notice(notice), status)),
        Err(e) => form_error(e).map(|(status, m)| (Flash::error(m), status)),
    }
}

/// What a page handler answers: the page, or the error the error page shows (the pages'
/// error layer renders a problem as HTML), so handlers use `?` as API handlers do.
pub type PageResult = Result<Response, ApiError>;

/// A page rendered from its template, or the problem it could not be rendered for.
pub fn render(result: Result<String, askama::Error>, status: StatusCode) -> PageResult {
    result
        .map(|body| {
            (
                status,
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                body,
            )
                .into_response()
        })
        .map_err(|e| ApiError::Internal(format!("template: {e}")))
}

/// Reads a form body (`application/x-www-form-urlencoded`) as `T`, as strictly as the API
/// reads JSON: a body that is not a form is 400, and a field `T` does not take (with
/// `#[serde(deny_unknown_fields)]`), a missing one or a value of the wrong kind is 422 naming
/// the field — never read as empty.
pub fn parse_form<T: serde::de::DeserializeOwned>(raw: &[u8]) -> Result<T, ApiError> {
    serde_urlencoded::from_bytes(raw).map_err(|e| {
        match serde_urlencoded::from_bytes::<Vec<(String, String)>>(raw) {
            Err(_) => ApiError::BadRequest("the form cannot be read".into()),
            Ok(_) => field_error(e),
        }
    })
}

/// [`parse_form`] of pairs already read (a form without its `csrf` field).
pub fn form_of<T: serde::de::DeserializeOwned>(pairs: &[(String, String)]) -> Result<T, ApiError> {
    let encoded = serde_urlencoded::to_string(pairs)
        .map_err(|_| ApiError::BadRequest("the form cannot be read".into()))?;
    serde_urlencoded::from_str(&encoded).map_err(field_error)
}

/// A form field `T` refused, as a 422 naming it.
fn field_error(e: serde_urlencoded::de::Error) -> ApiError {
    let m = e.to_string();
    // serde names the field between backticks: "unknown field `x`", "missing field `y`".
    let field = m
        .split('`')
        .nth(1)
        .filter(|_| m.contains("field"))
        .unwrap_or("form")
        .to_owned();
    ApiError::invalid(field, m)
}

/// A form read as name/value pairs, for forms that repeat a name (a group of checkboxes),
/// which a struct cannot collect.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct FormPairs(Vec<(String, String)>);

impl FormPairs {
    /// Reads an `application/x-www-form-urlencoded` body.
    pub fn parse(raw: &[u8]) -> Result<FormPairs, ApiError> {
        parse_form(raw)
    }

    /// The first value of `name`, trimmed (empty when absent).
    pub fn get(&self, name: &str) -> String {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default()
    }

    /// Every value of `name`, in order.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The form, if every name in it is one of `fields` (the names the form takes); else a
    /// 422 naming the first other one, as a struct with `#[serde(deny_unknown_fields)]`
    /// refuses it. A field the form needs and lacks reads as empty, which the service
    /// behind the form refuses naming it.
    pub fn only(self, fields: &[&str]) -> Result<FormPairs, ApiError> {
        match self.0.iter().find(|(k, _)| !fields.contains(&k.as_str())) {
            Some((k, _)) => {
                let expected = fields
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                Err(ApiError::invalid(
                    k.clone(),
                    format!("unknown field `{k}`, expected one of {expected}"),
                ))
            }
            None => Ok(self),
        }
    }
}

/// An HTML page, or the problem it could not be rendered for.
pub fn html(result: Result<String, askama::Error>, status: StatusCode) -> Response {
    render(result, status).unwrap_or_else(IntoResponse::into_response)
}

/// A form with no fields besides its CSRF token (delete, revoke, acknowledge), read by
/// `identity::Act`: anything else in it is refused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoFields {}

/// How long ago `t` was, in words (`never` without one).
pub fn ago(t: Option<OffsetDateTime>, now: OffsetDateTime) -> String {
    let Some(t) = t else {
        return "never".into();
    };
    let s = (now - t).whole_seconds().max(0);
    match s {
        0..60 => format!("{s} s ago"),
        60..3600 => format!("{} min ago", s / 60),
        3600..86_400 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Invite {
        email: String,
        #[serde(default)]
        days: Option<u32>,
    }

    fn field_of(e: ApiError) -> String {
        match e {
            ApiError::Validation(errors) => errors[0].field.clone(),
            other => panic!("not a 422: {other:?}"),
        }
    }

    #[test]
    fn a_form_is_read_strictly_each_refusal_naming_its_field() {
        assert_eq!(
            parse_form::<Invite>(b"email=a%40example.com&days=3").expect("form"),
            Invite {
                email: "a@example.com".into(),
                days: Some(3)
            }
        );
        let e = parse_form::<Invite>(b"emial=a%40example.com").expect_err("misspelt");
        assert_eq!(field_of(e), "emial");
        let e = parse_form::<Invite>(b"days=3").expect_err("missing");
        assert_eq!(field_of(e), "email");
        let e = parse_form::<Invite>(b"email=x&days=many").expect_err("not a number");
        assert!(matches!(e, ApiError::Validation(_)), "{e:?}");
        assert!(parse_form::<NoFields>(b"").is_ok());
        assert_eq!(
            field_of(parse_form::<NoFields>(b"x=1").expect_err("extra")),
            "x"
        );
        let pairs =
            parse_form::<FormPairs>(b"path=%2Fetc%2Fa&path=/etc/b&reason=r").expect("pairs");
        assert_eq!(pairs.all("path"), ["/etc/a", "/etc/b"]);
        assert_eq!(pairs.get("reason"), "r");
        let pairs = pairs
            .only(&["path", "reason"])
            .expect("the form's own names");
        assert_eq!(
            field_of(pairs.only(&["paths", "reason"]).expect_err("misspelt")),
            "path"
        );
    }
}
