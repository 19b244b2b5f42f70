//! Who is calling, and what they may do: authorization lives in handler signatures.
//!
//! A handler that takes [`Viewer`], [`Operator`], [`Admin`] or [`Owner`] cannot run for a
//! caller below that role; one that takes [`TotpProof<P>`] cannot run without a fresh TOTP
//! proof for purpose `P` from a logged-in user (CONTRACT 2 and 3). API tokens never satisfy
//! a TOTP requirement.

use crate::error::ApiError;
use crate::extract::Meta;
use crate::state::{AppState, now};
use crate::store::sessions;
use crate::store::tokens;
use crate::store::users::User;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{Method, StatusCode, header};
use std::marker::PhantomData;
use trusthub_core::secret::{API_TOKEN_PREFIX, SESSION_PREFIX, token_hash};
use trusthub_core::{Role, TokenScope, TotpPurpose, totp};
use trusthub_store::TenantId;
use uuid::Uuid;

/// Name of the session cookie.
pub use trusthub_platform::SESSION_COOKIE;
/// Sealing context of TOTP secrets.
pub const TOTP_SEAL_CONTEXT: &str = "users.totp_secret";

/// How the caller authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// A login session (cookie).
    Session {
        /// The session's id.
        session_id: Uuid,
    },
    /// An API token (`Authorization: Bearer tht_...`).
    Token {
        /// The token's id.
        token_id: Uuid,
        /// Its scope.
        scope: TokenScope,
        /// `infrastructure` for a service account's token (CONTRACT 20).
        service: Option<String>,
    },
}

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Principal {
    /// The user, as stored.
    pub user: User,
    /// How they authenticated.
    pub credential: Credential,
    /// The role this request acts with (a `read` token caps it at viewer); `None` for a
    /// token whose scope opens no user endpoint (`ai_ingest`).
    pub role: Option<Role>,
}

impl Principal {
    /// 403 for a `read` token: it reads, and never changes anything, its own or other tokens
    /// included (CONTRACT 18).
    pub fn may_change(&self) -> Result<(), ApiError> {
        match self.credential {
            Credential::Token {
                scope: TokenScope::Read,
                ..
            } => Err(ApiError::TokenReadOnly),
            _ => Ok(()),
        }
    }

    /// The caller's tenant.
    pub fn tenant(&self) -> TenantId {
        self.user.tenant_id
    }

    /// The audit-log actor: the user, and the token when one was used.
    pub fn actor(&self) -> String {
        match &self.credential {
            Credential::Session { .. } => format!("user:{}", self.user.id),
            Credential::Token { token_id, .. } => format!("user:{} token:{token_id}", self.user.id),
        }
    }

    /// Whether the caller holds at least `role`.
    pub fn has_role(&self, role: Role) -> bool {
        self.role.is_some_and(|r| r >= role)
    }
}

pub(crate) fn cookie_value<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts
        .headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

/// A browser sends `Origin` with cross-site requests; a cookie-authenticated change from
/// another origin is refused (defence in depth on top of SameSite=Lax and JSON bodies).
fn same_origin(parts: &Parts) -> bool {
    let Some(origin) = parts
        .headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
    else {
        return true;
    };
    let Some(host) = parts
        .headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let origin_host = origin.split_once("://").map(|(_, h)| h).unwrap_or(origin);
    origin_host.trim_end_matches('/').eq_ignore_ascii_case(host)
}

/// Whether a form post comes from this site: its `Origin`, else its `Referer`, names this
/// host. A post with neither is refused (CONTRACT 18: the sign-in form).
pub fn posted_from_here(headers: &axum::http::HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let authority = |url: &str| -> Option<String> {
        let rest = url.split_once("://")?.1;
        Some(rest.split(['/', '?', '#']).next()?.to_owned())
    };
    let from = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .filter(|o| *o != "null")
        .or_else(|| headers.get(header::REFERER).and_then(|v| v.to_str().ok()))
        .and_then(authority);
    from.is_some_and(|a| a.eq_ignore_ascii_case(host))
}

/// Resolves (once per request) the caller from a bearer token or the session cookie.
pub async fn resolve(parts: &mut Parts, state: &AppState) -> Result<Principal, ApiError> {
    if let Some(p) = parts.extensions.get::<Principal>() {
        return Ok(p.clone());
    }
    let now = now();
    let principal = if parts.headers.contains_key(header::AUTHORIZATION) {
        let token = bearer(&parts.headers)?;
        if !token.starts_with(API_TOKEN_PREFIX) {
            return Err(ApiError::unauthenticated());
        }
        let hash = token_hash(token);
        let mut c = state.db.conn().await?;
        let (tok, user) = tokens::find(&mut c, &hash, now).await?.ok_or_else(|| {
            ApiError::Unauthenticated("unknown, expired or deleted API token".into())
        })?;
        drop(c);
        let stale = now - time::Duration::minutes(1);
        if tok.last_used_at.is_none_or(|t| t < stale) {
            let mut tx = state.db.begin().await?;
            tokens::touch(&mut tx, tok.id, now, stale).await?;
            tx.commit().await?;
        }
        Principal {
            role: tok.scope.effective_role(user.role),
            credential: Credential::Token {
                token_id: tok.id,
                scope: tok.scope,
                service: tok.service.clone(),
            },
            user,
        }
    } else if let Some(cookie) = cookie_value(parts, SESSION_COOKIE) {
        if !cookie.starts_with(SESSION_PREFIX) {
            return Err(ApiError::unauthenticated());
        }
        let mut c = state.db.conn().await?;
        let s = sessions::find(&mut c, &token_hash(cookie), now)
            .await?
            .ok_or_else(|| {
                ApiError::Unauthenticated("session expired or ended; log in again".into())
            })?;
        let safe = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
        if !safe && !same_origin(parts) {
            return Err(ApiError::Forbidden("cross-origin request refused".into()));
        }
        Principal {
            role: Some(s.user.role),
            credential: Credential::Session {
                session_id: s.session_id,
            },
            user: s.user,
        }
    } else {
        return Err(ApiError::unauthenticated());
    };
    parts.extensions.insert(principal.clone());
    Ok(principal)
}

/// Any authenticated caller with a role: a session, or a `read` or `write` token. An
/// `ai_ingest` token reaches only the trace intake ([`TraceSender`]; CONTRACT 18).
#[derive(Debug, Clone)]
pub struct Authenticated(pub Principal);

impl FromRequestParts<AppState> for Authenticated {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let p = resolve(parts, state).await?;
        if p.role.is_none() {
            return Err(ApiError::Forbidden(
                "this API token's scope (ai_ingest) opens only the trace intake".into(),
            ));
        }
        Ok(Authenticated(p))
    }
}

/// A caller of the trace intake (`/ai/traces`, `/otlp/v1/traces`): any authenticated caller,
/// `ai_ingest` tokens included; the handler checks what it may send.
#[derive(Debug, Clone)]
pub struct TraceSender(pub Principal);

impl FromRequestParts<AppState> for TraceSender {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        resolve(parts, state).await.map(TraceSender)
    }
}

async fn require(parts: &mut Parts, state: &AppState, role: Role) -> Result<Principal, ApiError> {
    let p = resolve(parts, state).await?;
    // A read token asked to change something is refused as what it is (CONTRACT 33), not
    // as a role its user may well have.
    let changes = !matches!(
        parts.method,
        axum::http::Method::GET | axum::http::Method::HEAD
    );
    if changes && role > Role::Viewer {
        p.may_change()?;
    }
    check_role(&p, role)?;
    Ok(p)
}

/// Whether `p` may act with `role`: the one decision behind the role extractors and every
/// page (a token's scope may cap the role).
pub fn check_role(p: &Principal, role: Role) -> Result<(), ApiError> {
    match p.role {
        Some(r) if r >= role => Ok(()),
        Some(_) => Err(ApiError::Forbidden(format!("this needs the {role} role"))),
        None => Err(ApiError::Forbidden(
            "this API token's scope does not open this endpoint".into(),
        )),
    }
}

/// A role a caller acts in ([`Viewer`] … [`Owner`]): what a page's form extractor
/// (`identity::Act`) names, as an API handler names its role extractor.
pub trait Acting: Sized {
    /// `p` in this role, or 403 when its role is lower.
    fn of(p: &Principal) -> Result<Self, ApiError>;
}

macro_rules! role_extractor {
    ($(#[$doc:meta])* $name:ident, $role:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name(pub Principal);

        impl FromRequestParts<AppState> for $name {
            type Rejection = ApiError;
            async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
                require(parts, state, $role).await.map($name)
            }
        }

        impl $name {
            /// `p` as this role, when [`check_role`] allows it (the dashboard's way to the
            /// services the API's extractor opens).
            pub fn of(p: &Principal) -> Result<$name, ApiError> {
                check_role(p, $role)?;
                Ok($name(p.clone()))
            }
        }

        impl Acting for $name {
            fn of(p: &Principal) -> Result<$name, ApiError> {
                $name::of(p)
            }
        }
    };
}

role_extractor!(
    /// A caller with at least the viewer role (reads).
    Viewer, Role::Viewer);
role_extractor!(
    /// A caller with at least the operator role (configuration changes).
    Operator, Role::Operator);
role_extractor!(
    /// A caller with at least the admin role (sensitive operations).
    Admin, Role::Admin);
role_extractor!(
    /// The tenant's owner role (users, invitations, tenant settings).
    Owner, Role::Owner);

/// A logged-in user (session cookie); API tokens are refused. For managing one's own
/// credentials: tokens, TOTP, password.
#[derive(Debug, Clone)]
pub struct SessionUser(pub Principal);

impl FromRequestParts<AppState> for SessionUser {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let p = resolve(parts, state).await?;
        match p.credential {
            Credential::Session { .. } => Ok(SessionUser(p)),
            Credential::Token { .. } => Err(ApiError::Forbidden(
                "this needs a login session; API tokens cannot manage credentials".into(),
            )),
        }
    }
}

/// Wrong TOTP codes within [`TOTP_WINDOW`] that lock a user (CONTRACT 18).
pub const TOTP_MAX_FAILURES: i32 = 5;
/// The window wrong codes are counted in.
pub const TOTP_WINDOW: time::Duration = time::Duration::minutes(15);
/// How long the lock lasts.
pub const TOTP_LOCK: time::Duration = time::Duration::minutes(15);

/// 429 `totp_locked` while `user`'s TOTP-gated actions are locked. Not a rate limit:
/// `TRUSTHUB_RATE_LIMITS=off` keeps it.
pub async fn refuse_if_locked(state: &AppState, user: &User) -> Result<(), ApiError> {
    let now = now();
    let until = {
        let mut c = state.db.conn().await?;
        crate::store::totp::locked_until(&mut c, user.id, now).await?
    };
    match until {
        Some(until) => Err(ApiError::TotpLocked(
            (until - now).whole_seconds().clamp(1, u32::MAX as i64) as u32,
        )),
        None => Ok(()),
    }
}

/// Counts a wrong code (or challenge token) of `user`, with an audit row `totp_failed`; the
/// fifth within the window locks the user (audit `totp_locked`).
pub async fn totp_failed(
    state: &AppState,
    user: &User,
    meta: &Meta,
    how: &str,
) -> Result<(), ApiError> {
    let now = now();
    let actor = format!("user:{}", user.id);
    let mut tx = state.db.begin().await?;
    let locked = crate::store::totp::record_failure(
        &mut tx,
        user.id,
        now,
        TOTP_WINDOW,
        TOTP_MAX_FAILURES,
        TOTP_LOCK,
    )
    .await?;
    let entry = meta.audit(
        trusthub_core::audit::TOTP_FAILED,
        actor.clone(),
        actor.clone(),
        serde_json::json!({"with": how}),
    );
    trusthub_store::audit::append(&mut tx, user.tenant_id, &entry, now).await?;
    if let Some(until) = locked {
        let until = until
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let entry = meta.audit(
            trusthub_core::audit::TOTP_LOCKED,
            actor.clone(),
            actor,
            serde_json::json!({"until": until, "failures": TOTP_MAX_FAILURES}),
        );
        trusthub_store::audit::append(&mut tx, user.tenant_id, &entry, now).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Checks a TOTP code of `user` and spends its time step, so the same code is refused the
/// second time (CONTRACT 3). `status` is 401 at login and 403 elsewhere. The one TOTP gate
/// (CONTRACT 18): a locked user gets 429 `totp_locked`; a wrong code is counted and audited.
pub async fn check_code(
    state: &AppState,
    meta: &Meta,
    user: &User,
    code: &str,
    status: StatusCode,
) -> Result<(), ApiError> {
    let invalid = || ApiError::Totp {
        status,
        code: "totp_invalid",
        detail: "the TOTP code is wrong, expired or already used".into(),
    };
    let sealed = user
        .totp_secret_sealed
        .as_deref()
        .ok_or_else(|| ApiError::Totp {
            status,
            code: "totp_not_enrolled",
            detail: "TOTP is not set up for this user".into(),
        })?;
    refuse_if_locked(state, user).await?;
    let secret = state.key.open(TOTP_SEAL_CONTEXT, sealed).map_err(|_| {
        ApiError::Internal("TOTP secret cannot be unsealed with the hub key".into())
    })?;
    let now = now();
    let (fresh, replayed) = match totp::verify(&secret, code, now.unix_timestamp()) {
        Some(step) => {
            let mut tx = state.db.begin().await?;
            let fresh = crate::store::totp::spend_step(&mut tx, user.id, step, now).await?;
            tx.commit().await?;
            (fresh, !fresh)
        }
        None => (false, false),
    };
    if fresh {
        Ok(())
    } else {
        totp_failed(state, user, meta, "code").await?;
        if replayed {
            // Right after enabling TOTP (or signing in) the app still shows the code just
            // used: say so, and when the next one comes, instead of "wrong".
            let wait = 30 - now.unix_timestamp().rem_euclid(30);
            return Err(ApiError::Totp {
                status,
                code: "totp_invalid",
                detail: format!(
                    "this code was used already (each code works once); your app shows the next one in {wait} s"
                ),
            });
        }
        Err(invalid())
    }
}

/// A TOTP purpose as a type, for [`TotpProof`].
pub trait Purpose: Send + Sync + 'static {
    /// The purpose.
    const PURPOSE: TotpPurpose;
}

/// Marker types of the CONTRACT 3 purposes.
pub mod purpose {
    use super::{Purpose, TotpPurpose};
    macro_rules! purposes {
        ($($(#[$doc:meta])* $name:ident => $p:expr),* $(,)?) => {$(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy)]
            pub struct $name;
            impl Purpose for $name {
                const PURPOSE: TotpPurpose = $p;
            }
        )*};
    }
    purposes!(
        /// `app_restart`.
        AppRestart => TotpPurpose::AppRestart,
        /// `console_start`.
        ConsoleStart => TotpPurpose::ConsoleStart,
        /// `agent_auto_patch`.
        AgentAutoPatch => TotpPurpose::AgentAutoPatch,
        /// `auto_update_all`.
        AutoUpdateAll => TotpPurpose::AutoUpdateAll,
        /// `agent_emergency`.
        AgentEmergency => TotpPurpose::AgentEmergency,
    );
}

/// Whether `p` can prove TOTP at all: signed in with a session (`tokens` says what of API
/// tokens) and enrolled (`setup` says where to set it up).
fn can_prove(p: &Principal, tokens: &str, setup: &str) -> Result<(), ApiError> {
    let refusal = |code, detail| ApiError::Totp {
        status: StatusCode::FORBIDDEN,
        code,
        detail,
    };
    if !matches!(p.credential, Credential::Session { .. }) {
        return Err(refusal(
            "totp_required",
            format!("this operation needs TOTP, which only a login session can give{tokens}"),
        ));
    }
    if !p.user.totp_enabled {
        return Err(refusal(
            "totp_not_enrolled",
            format!("this operation needs TOTP; set it up {setup} first"),
        ));
    }
    Ok(())
}

/// Proof, for purpose `P`, that a logged-in user with TOTP enrolled just gave a code:
/// `X-TOTP-Code: <6 digits>` or `X-TOTP-Token: <token from /auth/totp/challenge>`.
/// Refusals are 403 `totp_required`, `totp_invalid` or `totp_not_enrolled`.
#[derive(Debug)]
pub struct TotpProof<P> {
    /// Who proved it.
    pub principal: Principal,
    _purpose: PhantomData<P>,
}

impl<P: Purpose> TotpProof<P> {
    /// The proof a dashboard form gives: `p` signed in with a session, TOTP enrolled, and
    /// `code` is its current code (used once, like `X-TOTP-Code`).
    pub async fn from_code(
        state: &AppState,
        meta: &Meta,
        p: Principal,
        code: &str,
    ) -> Result<Self, ApiError> {
        let forbidden = StatusCode::FORBIDDEN;
        can_prove(&p, "", "in Settings")?;
        check_code(state, meta, &p.user, code.trim(), forbidden).await?;
        Ok(TotpProof {
            principal: p,
            _purpose: PhantomData,
        })
    }
}

impl<P: Purpose> FromRequestParts<AppState> for TotpProof<P> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let p = resolve(parts, state).await?;
        let meta = Meta::from_request_parts(parts, state).await?;
        let offer = TotpOffer::of(&parts.headers);
        TotpProof::from_offer(state, &meta, p, &offer).await
    }
}

/// The TOTP a request offers (`X-TOTP-Code` or `X-TOTP-Token`), not checked yet: for
/// operations that need TOTP only sometimes (turning auto-patch on, not off), checked with
/// [`TotpProof::from_offer`] when they do.
#[derive(Debug, Clone, Default)]
pub struct TotpOffer {
    code: Option<String>,
    token: Option<String>,
}

impl TotpOffer {
    fn of(headers: &axum::http::HeaderMap) -> TotpOffer {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        TotpOffer {
            code: header("x-totp-code"),
            token: header("x-totp-token"),
        }
    }

    /// A code typed in a dashboard form.
    pub fn code(code: &str) -> TotpOffer {
        TotpOffer {
            code: Some(code.trim().to_owned()).filter(|c| !c.is_empty()),
            token: None,
        }
    }
}

impl FromRequestParts<AppState> for TotpOffer {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        Ok(TotpOffer::of(&parts.headers))
    }
}

impl trusthub_platform::openapi::Documented for TotpOffer {
    fn document(d: &mut trusthub_platform::openapi::OpDoc) {
        d.errors(&[403]);
    }
}

impl<P: Purpose> TotpProof<P> {
    /// Checks what `offer` carries for `p`: a login session with TOTP enrolled, and a fresh
    /// code or a challenge token of purpose `P`.
    pub async fn from_offer(
        state: &AppState,
        meta: &Meta,
        p: Principal,
        offer: &TotpOffer,
    ) -> Result<Self, ApiError> {
        let forbidden = StatusCode::FORBIDDEN;
        can_prove(&p, "; API tokens never can", "with /auth/totp/setup")?;
        if let Some(code) = &offer.code {
            check_code(state, meta, &p.user, code, forbidden).await?;
        } else if let Some(token) = &offer.token {
            refuse_if_locked(state, &p.user).await?;
            let mut tx = state.db.begin().await?;
            let ok = crate::store::totp::consume_challenge(
                &mut tx,
                p.tenant(),
                p.user.id,
                &token_hash(token),
                P::PURPOSE,
                now(),
            )
            .await?;
            tx.commit().await?;
            if !ok {
                totp_failed(state, &p.user, meta, "challenge_token").await?;
                return Err(ApiError::Totp {
                    status: forbidden,
                    code: "totp_invalid",
                    detail: format!(
                        "the TOTP token is unknown, expired, used, or not for purpose {}",
                        P::PURPOSE.as_str()
                    ),
                });
            }
        } else {
            return Err(ApiError::Totp {
                status: forbidden,
                code: "totp_required",
                detail: format!(
                    "send X-TOTP-Code, or X-TOTP-Token from /auth/totp/challenge with purpose {}",
                    P::PURPOSE.as_str()
                ),
            });
        }
        Ok(TotpProof {
            principal: p,
            _purpose: PhantomData,
        })
    }
}

/// The token of `Authorization: Bearer <token>`.
pub fn bearer(headers: &axum::http::HeaderMap) -> Result<&str, ApiError> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|raw| raw.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .ok_or_else(|| ApiError::Unauthenticated("expected Authorization: Bearer <token>".into()))
}

impl crate::extract::Actor for Principal {
    fn tenant(&self) -> TenantId {
        Principal::tenant(self)
    }
    fn actor(&self) -> String {
        Principal::actor(self)
    }
}

use trusthub_platform::openapi::EITHER;

trusthub_platform::documented! {
    Authenticated => |d| { d.schemes = Some(EITHER); d.errors(&[401, 403]) };
    TraceSender => |d| { d.schemes = Some(EITHER); d.errors(&[401, 403]) };
    Viewer => |d| { d.schemes = Some(EITHER); d.errors(&[401, 403]) };
    Operator => |d| { d.schemes = Some(EITHER); d.errors(&[401, 403]) };
    Admin => |d| { d.schemes = Some(EITHER); d.errors(&[401, 403]) };
    Owner => |d| { d.schemes = Some(EITHER); d.errors(&[401, 403]) };
    SessionUser => |d| { d.schemes = Some(&["session"]); d.errors(&[401, 403]) };
}

impl<P> trusthub_platform::openapi::Documented for TotpProof<P> {
    fn document(d: &mut trusthub_platform::openapi::OpDoc) {
        d.schemes = Some(&["session"]);
        d.errors(&[401, 403]);
    }
}
