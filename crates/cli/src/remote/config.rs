//! Saved logins (CONTRACT 28): `$XDG_CONFIG_HOME/trusthub/config.toml` (else
//! `~/.config/trusthub/config.toml`), mode 600, one context per hub — its URL and either an
//! API token or a session — and the current one. `TRUSTHUB_URL` with `TRUSTHUB_TOKEN`
//! overrides the file (CI jobs).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The file.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The context used when `--context` is not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// Contexts by name.
    #[serde(default)]
    pub contexts: BTreeMap<String, Context>,
}

/// One hub and how to reach it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Context {
    /// The hub's address (`https://hub.example.com`).
    pub url: String,
    /// An API token (`tht_…`), when logged in with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// A session (the cookie's value), when logged in with a password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Who logged in (for `context ls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// Where the file is.
pub fn path() -> Result<PathBuf, String> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(
            std::env::var_os("HOME").ok_or("neither XDG_CONFIG_HOME nor HOME is set")?,
        )
        .join(".config"),
    };
    Ok(base.join("trusthub").join("config.toml"))
}

impl Config {
    /// The file's contents (empty when there is none yet).
    pub fn load() -> Result<Config, String> {
        let p = path()?;
        match std::fs::read_to_string(&p) {
            Ok(text) => toml::from_str(&text).map_err(|e| format!("{}: {e}", p.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(e) => Err(format!("{}: {e}", p.display())),
        }
    }

    /// Writes the file (mode 600, its folder 700), replacing it whole.
    pub fn save(&self) -> Result<(), String> {
        use std::io::Write as _;
        use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
        let p = path()?;
        let dir = p.parent().ok_or("config path has no folder")?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let text = toml::to_string(self).map_err(|e| e.to_string())?;
        let tmp = p.with_extension("toml.new");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        f.write_all(text.as_bytes())
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &p).map_err(|e| format!("{}: {e}", p.display()))
    }
}

/// The hub to talk to: `TRUSTHUB_URL` + `TRUSTHUB_TOKEN`, else the named or current context.
pub fn resolve(name: Option<&str>) -> Result<(String, Context), String> {
    if name.is_none()
        && let (Ok(url), Ok(token)) = (
            std::env::var("TRUSTHUB_URL"),
            std::env::var("TRUSTHUB_TOKEN"),
        )
    {
        return Ok((
            "env".into(),
            Context {
                url,
                token: Some(token),
                session: None,
                user: None,
            },
        ));
    }
    let cfg = Config::load()?;
    let name = match name.map(str::to_owned).or(cfg.current.clone()) {
        Some(n) => n,
        None => {
            return Err(
                "not logged in: run `trusthub login <url>` (or set TRUSTHUB_URL and TRUSTHUB_TOKEN)"
                    .into(),
            );
        }
    };
    match cfg.contexts.get(&name) {
        Some(c) => Ok((name, c.clone())),
        None => Err(format!(
            "no context `{name}` (see `trusthub context ls`, or `trusthub login <url> --context {name}`)"
        )),
    }
}
