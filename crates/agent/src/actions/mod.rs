//! Running emergency action tokens (CONTRACT 5) on this host: every check first — signature
//! by the hub key pinned at registration, `sub` is this agent, not expired, `jti` never seen
//! (remembered across restarts in `seen-jti.json`), the action kind on this host's allowlist
//! — then the restart per kind, with bounded output and a time limit.

pub mod allow;
pub mod console;
pub mod emergency;
pub mod patch;

use crate::host::command::CommandOutcome;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use trusthub_core::eat::{self, Claims};
use uuid::Uuid;

/// Longest output kept per stream.
pub const MAX_OUTPUT: usize = 64 * 1024;
/// Longest a restart may take.
pub const RESTART_TIMEOUT: Duration = Duration::from_secs(120);

/// `jti`s already accepted, with their expiry, persisted so a restart of the agent cannot
/// be used to replay a token.
#[derive(Debug)]
pub struct SeenJtis {
    path: PathBuf,
    seen: BTreeMap<String, i64>,
}

impl SeenJtis {
    /// Loads the list from the state dir.
    pub fn load(state_dir: &Path) -> SeenJtis {
        let path = state_dir.join("seen-jti.json");
        let seen = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        SeenJtis { path, seen }
    }

    /// Records `jti` (until `exp`); false when it was seen before.
    pub fn remember(&mut self, jti: &str, exp: i64, now: i64) -> Result<bool, String> {
        self.seen.retain(|_, e| *e + 60 > now);
        if self.seen.contains_key(jti) {
            return Ok(false);
        }
        self.seen.insert(jti.to_owned(), exp);
        let bytes = serde_json::to_vec(&self.seen).map_err(|e| e.to_string())?;
        crate::host::files::write_private(&self.path, &bytes)
            .map_err(|(p, e)| format!("{}: {e}", p.display()))?;
        Ok(true)
    }
}

/// What the agent answers to a token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Answer {
    /// It ran.
    Result {
        /// The token's nonce.
        jti: String,
        /// Exit code (-1 when it could not start or timed out).
        exit_code: i64,
        /// Output, bounded.
        stdout: String,
        /// Errors, bounded.
        stderr: String,
        /// How it ended, in words (`rolled back: <reason>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        /// RFC 3339.
        finished_at: String,
    },
    /// It was refused.
    Refused {
        /// The token's nonce (empty when unreadable).
        jti: String,
        /// Why.
        reason: String,
    },
}

/// Why the agent refuses an action token before anything runs (CONTRACT 5): each is
/// answered as `refused`, in these words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The signature, subject, expiry or shape is wrong.
    Token(String),
    /// The action kind is not on this host's allowlist.
    NotAllowed(String),
    /// The token's `jti` was accepted before.
    Replay,
    /// The `jti` cannot be remembered, so a restart could let the token run twice.
    Unrecorded(String),
    /// An action kind this agent does not run.
    Unknown(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Token(e) => write!(f, "token refused: {e}"),
            Refusal::NotAllowed(kind) => write!(f, "`{kind}` is not on this host's allowlist"),
            Refusal::Replay => f.write_str("token already used (replay)"),
            Refusal::Unrecorded(e) => write!(f, "cannot record the token: {e}"),
            Refusal::Unknown(kind) => write!(f, "`{kind}` is not implemented by this agent"),
        }
    }
}

impl Refusal {
    /// The answer that reports it for the token `jti`.
    pub fn answer(&self, jti: &str) -> Answer {
        Answer::Refused {
            jti: jti.to_owned(),
            reason: self.to_string(),
        }
    }
}

/// Checks a token; the claims, or the refusal to send back.
#[allow(clippy::result_large_err)]
pub fn check(
    token: &str,
    hub_key: &ed25519_dalek::VerifyingKey,
    agent_id: Uuid,
    allowed: &[String],
    seen: &mut SeenJtis,
    now: i64,
) -> Result<Claims, Answer> {
    // The jti of a token that fails verification is still reported, so the hub can close
    // the action; it is read without trusting anything else in it.
    let unverified_jti = token
        .split('.')
        .nth(1)
        .and_then(|p| data_encoding::BASE64URL_NOPAD.decode(p.as_bytes()).ok())
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v["jti"].as_str().map(str::to_owned))
        .unwrap_or_default();
    let claims = eat::verify(token, hub_key, agent_id, now)
        .map_err(|e| Refusal::Token(e.to_string()).answer(&unverified_jti))?;
    let refusal = if !allowed.contains(&claims.act) {
        Refusal::NotAllowed(claims.act.clone())
    } else {
        match seen.remember(&claims.jti, claims.exp, now) {
            Ok(true) => return Ok(claims),
            Ok(false) => Refusal::Replay,
            Err(e) => Refusal::Unrecorded(e),
        }
    };
    Err(refusal.answer(&claims.jti))
}

async fn run(program: &str, args: &[&str]) -> CommandOutcome {
    crate::host::command::run_for(program, args, &[], None, RESTART_TIMEOUT).await
}

/// Restarts what a `restart_app` token names: a systemd unit, a container, a compose
/// service's containers, or a process through its restart command (no shell).
pub async fn restart(args: &Value) -> CommandOutcome {
    let kind = args["app_type"].as_str().unwrap_or_default();
    let id = args["identifier"].as_str().unwrap_or_default();
    match kind {
        "systemd" => run("systemctl", &["restart", "--", id]).await,
        "docker" => crate::host::docker::restart(&[id.to_owned()]).await,
        "compose" => {
            let Some((project, service)) = id.split_once("::") else {
                return CommandOutcome::failed(-1, "bad compose identifier");
            };
            crate::host::docker::compose_restart(project, service).await
        }
        "process" => {
            let Some(cmd) = args["restart_command"].as_str().filter(|c| !c.is_empty()) else {
                return CommandOutcome::failed(-1, "the app has no restart_command");
            };
            let mut parts = cmd.split_whitespace();
            let program = parts.next().unwrap_or_default();
            if !program.starts_with('/') {
                return CommandOutcome::failed(
                    -1,
                    "restart_command must start with an absolute path",
                );
            }
            let rest: Vec<&str> = parts.collect();
            run(program, &rest).await
        }
        other => CommandOutcome::failed(-1, format!("unknown app type `{other}`")),
    }
}

/// Checks a token now: its claims to run, or the refusal to send back at once.
#[allow(clippy::result_large_err)]
pub fn accept(
    token: &str,
    hub_key: &ed25519_dalek::VerifyingKey,
    agent_id: Uuid,
    allowed: &[String],
    seen: &mut SeenJtis,
) -> Result<Claims, Answer> {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    check(token, hub_key, agent_id, allowed, seen, now).inspect_err(|refusal| {
        tracing::warn!(?refusal, "action token refused");
    })
}

/// What running an action may use.
#[derive(Debug, Clone)]
pub struct Context {
    /// The host's allowlist (patch managers and project folders).
    pub allowed: crate::actions::allow::Allowlist,
    /// The agent's state dir (patch snapshots).
    pub state_dir: PathBuf,
    /// What emergency targets are checked against besides the host (CONTRACT 30).
    pub guard: crate::actions::emergency::Guard,
}

/// Runs an accepted action: its answer.
pub async fn execute(claims: Claims, ctx: &Context) -> Answer {
    tracing::info!(jti = %claims.jti, act = %claims.act, "running an action");
    let (args, jti) = (&claims.args, claims.jti.as_str());
    let crate::actions::patch::Outcome {
        exit_code,
        stdout,
        stderr,
        note,
    } = match claims.act.as_str() {
        "restart_app" => restart(args).await.into(),
        "emergency" => crate::actions::emergency::run(args, &ctx.allowed, &ctx.guard)
            .await
            .into(),
        "install_package" => {
            crate::actions::patch::install_package(args, &ctx.allowed, &ctx.state_dir, jti).await
        }
        "update_packages" => {
            crate::actions::patch::update_packages(args, &ctx.allowed, &ctx.state_dir, jti).await
        }
        other => return Refusal::Unknown(other.to_owned()).answer(&claims.jti),
    };
    tracing::info!(jti = %claims.jti, exit_code, ?note, "action finished");
    Answer::Result {
        jti: claims.jti,
        exit_code,
        stdout: bounded_tail(&stdout),
        stderr: bounded_tail(&stderr),
        note,
        finished_at: time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
    }
}

/// The last [`MAX_OUTPUT`] bytes of `s` (a transcript's end says how it ended).
fn bounded_tail(s: &str) -> String {
    if s.len() <= MAX_OUTPUT {
        return s.to_owned();
    }
    let mut start = s.len() - MAX_OUTPUT;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].to_owned()
}

/// Handles one `{type: "eat", token}` frame to the end: the answer to send back.
pub async fn handle(
    token: &str,
    hub_key: &ed25519_dalek::VerifyingKey,
    agent_id: Uuid,
    ctx: &Context,
    seen: &mut SeenJtis,
) -> Answer {
    match accept(token, hub_key, agent_id, &ctx.allowed.kinds, seen) {
        Ok(claims) => execute(claims, ctx).await,
        Err(refusal) => refusal,
    }
}

/// The JSON of an answer.
pub fn frame(a: &Answer) -> String {
    serde_json::to_string(a).unwrap_or_else(|_| {
        json!({"type": "refused", "jti": "", "reason": "unencodable"}).to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::SigningKey;

    fn claims(agent: Uuid, act: &str, jti: &str, iat: i64) -> Claims {
        Claims {
            iss: eat::ISSUER.into(),
            sub: agent,
            tid: Uuid::new_v4(),
            jti: jti.into(),
            iat,
            exp: iat + 300,
            lvl: 2,
            act: act.into(),
            args: json!({}),
        }
    }

    #[test]
    fn contract_5_the_agent_refuses_every_bad_token() {
        let dir = std::env::temp_dir().join(format!("th-jti-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let hub = SigningKey::from_bytes(&[7; 32]);
        let other = SigningKey::from_bytes(&[8; 32]);
        let me = Uuid::new_v4();
        let now = 1_800_000_000;
        let allowed = vec!["restart_app".to_owned()];
        let mut seen = SeenJtis::load(&dir);
        let good = eat::sign(&hub, &claims(me, "restart_app", "a", now)).expect("sign");
        let key = hub.verifying_key();
        // The reason `token` is refused, checked for `agent` at `at`.
        let refusal = |token: &str, agent: Uuid, seen: &mut SeenJtis, at: i64| match check(
            token, &key, agent, &allowed, seen, at,
        ) {
            Err(Answer::Refused { reason, .. }) => reason,
            other => panic!("expected a refusal, got {other:?}"),
        };
        // Wrong key, tampered payload, expired, another agent's, disallowed kind.
        let forged = eat::sign(&other, &claims(me, "restart_app", "b", now)).expect("sign");
        assert!(refusal(&forged, me, &mut seen, now).contains("token refused"));
        let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
        let mut c = claims(me, "restart_app", "a", now);
        c.args = json!({"identifier": "/bin/evil"});
        parts[1] = data_encoding::BASE64URL_NOPAD.encode(&serde_json::to_vec(&c).expect("json"));
        assert!(refusal(&parts.join("."), me, &mut seen, now).contains("token refused"));
        assert!(refusal(&good, me, &mut seen, now + 301).contains("token refused"));
        assert!(refusal(&good, Uuid::new_v4(), &mut seen, now).contains("token refused"));
        let console = eat::sign(&hub, &claims(me, "console_open", "c", now)).expect("sign");
        assert!(refusal(&console, me, &mut seen, now).contains("allowlist"));
        // Accepted once; replayed, refused — also after the agent restarts.
        assert!(check(&good, &key, me, &allowed, &mut seen, now).is_ok());
        assert!(refusal(&good, me, &mut seen, now).contains("replay"));
        let mut reloaded = SeenJtis::load(&dir);
        assert!(refusal(&good, me, &mut reloaded, now + 1).contains("replay"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
