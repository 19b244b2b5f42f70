//! The hub's public API as the CLI calls it: the same `/api/v1` and OpenAPI every client
//! sees, never the database. A refusal becomes the CONTRACT 28 exit code with the hub's
//! own words (its problem `detail` and each field's message).

use super::config::Context;
use serde_json::Value;

/// A failed command: what to print, and the exit code.
#[derive(Debug)]
pub struct Failure {
    /// 1 error, 3 not found, 4 refused (401, 403, TOTP).
    pub code: u8,
    /// For the terminal.
    pub message: String,
}

impl Failure {
    /// Exit code 1.
    pub fn error(message: impl Into<String>) -> Failure {
        Failure {
            code: 1,
            message: message.into(),
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::error(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Failure {
        Failure::error(message)
    }
}

/// A hub and a credential.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    ctx: Context,
}

/// The hub's base URL without a trailing `/` or `/api/v1`.
pub fn hub_base(url: &str) -> String {
    url.trim_end_matches('/')
        .trim_end_matches("/api/v1")
        .trim_end_matches('/')
        .to_owned()
}

/// A client that trusts the system roots and `SSL_CERT_FILE`.
pub fn http() -> Result<reqwest::Client, Failure> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .user_agent(concat!("trusthub-cli/", env!("CARGO_PKG_VERSION")))
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .map_err(|e| Failure::error(e.to_string()))
}

impl Client {
    /// For `ctx`.
    pub fn new(ctx: Context) -> Result<Client, Failure> {
        Ok(Client {
            http: http()?,
            base: hub_base(&ctx.url),
            ctx,
        })
    }

    /// A request to `/api/v1{path}` with the context's credential.
    /// The hub's base URL (no `/api/v1`).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The credential header this context sends: `(name, value)`.
    pub fn auth_header(&self) -> Option<(&'static str, String)> {
        if let Some(t) = &self.ctx.token {
            Some(("authorization", format!("Bearer {t}")))
        } else {
            self.ctx
                .session
                .as_ref()
                .map(|s| ("cookie", format!("trusthub_session={s}")))
        }
    }

    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .request(method, format!("{}/api/v1{path}", self.base));
        if let Some(t) = &self.ctx.token {
            req = req.bearer_auth(t);
        } else if let Some(s) = &self.ctx.session {
            req = req.header("cookie", format!("trusthub_session={s}"));
        }
        req
    }

    /// Sends `req`; the JSON answer (`null` for an empty one) or the refusal as a failure.
    pub async fn send(&self, req: reqwest::RequestBuilder) -> Result<Value, Failure> {
        let resp = req
            .send()
            .await
            .map_err(|e| Failure::error(format!("cannot reach the hub at {}: {e}", self.base)))?;
        answer(resp).await
    }

    /// `GET path`.
    pub async fn get(&self, path: &str) -> Result<Value, Failure> {
        self.send(self.request(reqwest::Method::GET, path)).await
    }

    /// `method path` with a JSON body.
    pub async fn json(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &Value,
    ) -> Result<Value, Failure> {
        self.send(self.request(method, path).json(body)).await
    }
}

impl Client {
    /// `GET path` answered 2xx, its body not read yet (a CSV, a pack), or the refusal as a
    /// failure.
    pub async fn fetch(&self, path: &str) -> Result<reqwest::Response, Failure> {
        let resp = self
            .request(reqwest::Method::GET, path)
            .send()
            .await
            .map_err(|e| Failure::error(format!("cannot reach the hub at {}: {e}", self.base)))?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        Err(answer(resp)
            .await
            .err()
            .unwrap_or_else(|| Failure::error("refused")))
    }

    /// `GET path`'s body as bytes.
    pub async fn bytes(&self, path: &str) -> Result<Vec<u8>, Failure> {
        self.fetch(path)
            .await?
            .bytes()
            .await
            .map(|b| b.to_vec())
            .map_err(|e| Failure::error(e.to_string()))
    }
}

/// The JSON of a 2xx answer, or the problem as a failure with its exit code.
pub async fn answer(resp: reqwest::Response) -> Result<Value, Failure> {
    let status = resp.status();
    let bytes = resp
        .bytes()
        .await
        .map_err(|e| Failure::error(e.to_string()))?;
    if status.is_success() {
        if bytes.is_empty() {
            return Ok(Value::Null);
        }
        return serde_json::from_slice(&bytes)
            .or_else(|_| Ok(Value::String(String::from_utf8_lossy(&bytes).into_owned())));
    }
    let problem: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let mut message = problem["detail"]
        .as_str()
        .or(problem["title"].as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("the hub answered {status}"));
    if let Some(errors) = problem["errors"].as_array() {
        for e in errors {
            message.push_str(&format!(
                "\n  {}: {}",
                e["field"].as_str().unwrap_or("?"),
                e["message"].as_str().unwrap_or_default()
            ));
        }
    }
    let code = match status.as_u16() {
        401 | 403 => 4,
        404 => 3,
        _ => 1,
    };
    Err(Failure { code, message })
}
