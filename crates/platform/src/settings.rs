//! Settings of `trusthub serve`: every one a flag and an environment variable (CONTRACT 11),
//! with the SPEC section 8 values as defaults.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Where the database is; shared by `serve` and the `admin` commands.
#[derive(Debug, Clone, clap::Args)]
pub struct DbSettings {
    /// Holds the SQLite database, keys and packs.
    #[arg(long, env = "TRUSTHUB_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// `sqlite://...` or `postgres://...`; default the SQLite file in the data dir.
    #[arg(long, env = "TRUSTHUB_DATABASE_URL")]
    pub database_url: Option<String>,
    /// Connections of the database pool.
    #[arg(long, env = "TRUSTHUB_DB_MAX_CONNECTIONS", default_value_t = 10)]
    pub db_max_connections: u32,
}

impl DbSettings {
    /// The database URL to use.
    pub fn url(&self) -> String {
        match &self.database_url {
            Some(u) => u.clone(),
            None => format!("sqlite://{}", self.data_dir.join("trusthub.db").display()),
        }
    }

    /// Whether the URL names PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        self.url().starts_with("postgres")
    }
}

/// Settings of the hub server.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "trusthub serve", about = "Run the Trusthub hub")]
pub struct Settings {
    /// A TOML file of these settings (CONTRACT 31): keys are the variables' names without
    /// `TRUSTHUB_`, lowercased (`listen`, `data_dir`, ...); the environment overrides it and
    /// flags override both.
    #[arg(long, env = "TRUSTHUB_CONFIG")]
    pub config: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, env = "TRUSTHUB_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Database location.
    #[command(flatten)]
    pub db: DbSettings,
    /// PEM certificate chain for the TLS front; with `--tls-key` the hub speaks HTTPS only.
    #[arg(long, env = "TRUSTHUB_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for the TLS front.
    #[arg(long, env = "TRUSTHUB_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve HTTPS with a server certificate the hub CA issues for itself at each start
    /// (localhost, 127.0.0.1, ::1, the listen address and the `--public-url` host; 90 days); the
    /// CA is written to `<data-dir>/hub-ca.pem` for browsers, curl and agents to trust. For a
    /// first try of mTLS without buying a certificate.
    #[arg(long, env = "TRUSTHUB_TLS_SELF", conflicts_with_all = ["tls_cert", "tls_key"],
        value_parser = clap::builder::BoolishValueParser::new(),
        action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true,
        default_value = "false", default_missing_value = "true")]
    pub tls_self: bool,
    /// Client certificates at the TLS front: `auto` requests one signed by the hub CA without
    /// requiring it (agents roll out certificates gradually); `off` requests none.
    #[arg(long, env = "TRUSTHUB_TLS_CLIENT_CA", default_value = "auto", value_parser = ["auto", "off"])]
    pub tls_client_ca: String,
    /// A reverse proxy (CIDR, repeatable or comma-separated) that terminates TLS and may send
    /// `X-Service-Client-Subject` / `X-Service-Client-Verified`; from anyone else they are
    /// stripped.
    #[arg(
        long = "trusted-proxy",
        env = "TRUSTHUB_TRUSTED_PROXY",
        value_delimiter = ','
    )]
    pub trusted_proxies: Vec<String>,
    /// 64 hex characters; seals secrets at rest. Generated into the data dir when absent on
    /// SQLite; required with PostgreSQL (every hub process needs the same key).
    #[arg(
        long = "encryption-key",
        env = "CLOUD_ENCRYPTION_KEY",
        hide_env_values = true
    )]
    pub encryption_key: Option<String>,
    /// Email of the first owner, created on an empty database.
    #[arg(
        long,
        env = "TRUSTHUB_ADMIN_EMAIL",
        default_value = "admin@trusthub.local"
    )]
    pub admin_email: String,
    /// Password of the first owner; generated, printed once and written to
    /// `<data_dir>/initial-admin.txt` when absent.
    #[arg(long, env = "TRUSTHUB_ADMIN_PASSWORD", hide_env_values = true)]
    pub admin_password: Option<String>,
    /// Whether an event runs the job it concerns at once (an advisory import wakes the
    /// vulnerability scan, CONTRACT 33); `off` leaves jobs to their intervals (tests that
    /// drive jobs at chosen instants).
    #[arg(long, env = "TRUSTHUB_JOB_NUDGES", default_value = "on", value_parser = parse_switch, hide = true)]
    pub job_nudges: String,
    /// Rate limits of SPEC section 8; `off` turns them off (load tests only).
    #[arg(long, env = "TRUSTHUB_RATE_LIMITS", default_value = "on", value_parser = parse_switch)]
    pub rate_limits: String,
    /// `smtp://host:port` (add `?tls=required` for STARTTLS) for invitation and reset mail.
    #[arg(long, env = "TRUSTHUB_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<String>,
    /// Sender of mail.
    #[arg(
        long,
        env = "TRUSTHUB_SMTP_FROM",
        default_value = "Trusthub <trusthub@trusthub.local>"
    )]
    pub smtp_from: String,
    /// The URL people reach the hub at, for links in mail; default `http://<listen>`.
    #[arg(long, env = "TRUSTHUB_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Largest request body accepted, in bytes (8 MiB).
    #[arg(long, env = "TRUSTHUB_BODY_LIMIT_BYTES", default_value_t = 8 * 1024 * 1024)]
    pub body_limit_bytes: usize,
    /// Connections open at once; the next ones wait.
    #[arg(long, env = "TRUSTHUB_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub max_connections: usize,
    /// Decompressed bytes one import may read in all (uploads, `TRUSTHUB_OSV_URL`, the CLI);
    /// each JSON record is bounded to 64 MiB besides.
    #[arg(long, env = "TRUSTHUB_IMPORT_MAX_BYTES", default_value_t = crate::archive::DEFAULT_TOTAL_BYTES)]
    pub import_max_bytes: u64,
    /// Seconds in-flight requests get to finish after SIGTERM.
    #[arg(long, env = "TRUSTHUB_SHUTDOWN_GRACE_SECS", default_value_t = 30)]
    pub shutdown_grace_secs: u64,
    /// Address ranges the hub's own outbound calls may reach besides public addresses
    /// (checks, channels, webhooks, alert-rule webhook URLs, TRUSTHUB_OSV_URL, the npm
    /// registry): comma-separated CIDRs, e.g. `127.0.0.0/8` for a receiver on this machine.
    /// `up` allows the private ranges when it is not set; each tenant's owner may narrow it.
    #[arg(long, env = "TRUSTHUB_OUTBOUND_ALLOW_CIDRS", default_value = "", value_parser = parse_allow_cidrs)]
    pub outbound_allow_cidrs: String,
    /// Size of the hub CA's RSA key, made at the first start (4096; 2048 to 8192). Only the
    /// first start reads it: the CA is kept in the database afterwards.
    #[arg(long, env = "TRUSTHUB_CA_KEY_BITS", default_value_t = 4096)]
    pub ca_key_bits: usize,
    /// Days an agent's client certificate is valid (1 to 825). Agents renew within 30 days of
    /// the end.
    #[arg(long, env = "TRUSTHUB_CLIENT_CERT_DAYS", default_value_t = 365)]
    pub client_cert_days: i64,
    /// Each capability's own settings ([`Sections`]).
    #[arg(skip)]
    pub sections: Sections,
}

/// A capability's own settings: a `clap::Args` struct in its crate, whose flags and
/// environment variables are read with the rest of `trusthub serve`'s.
pub trait Section: clap::Args + clap::FromArgMatches + Clone + Send + Sync + 'static {}

impl<T: clap::Args + clap::FromArgMatches + Clone + Send + Sync + 'static> Section for T {}

/// Each capability's settings by type: read from the command line and the environment by
/// the hub (`Capability::settings`), else their defaults.
#[derive(Clone, Default)]
pub struct Sections(
    std::collections::HashMap<std::any::TypeId, std::sync::Arc<dyn std::any::Any + Send + Sync>>,
);

impl std::fmt::Debug for Sections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sections({} capabilities)", self.0.len())
    }
}

impl Sections {
    /// The settings of type `T`: as read, else its defaults.
    pub fn of<T: Section>(&self) -> std::sync::Arc<T> {
        self.0
            .get(&std::any::TypeId::of::<T>())
            .and_then(|v| v.clone().downcast::<T>().ok())
            .unwrap_or_else(|| std::sync::Arc::new(defaults::<T>()))
    }

    /// Sets the settings of type `T`.
    pub fn set<T: Section>(&mut self, value: T) {
        self.0
            .insert(std::any::TypeId::of::<T>(), std::sync::Arc::new(value));
    }

    /// Changes the settings of type `T` (its defaults when none were read).
    pub fn edit<T: Section>(&mut self, change: impl FnOnce(&mut T)) {
        let mut value = (*self.of::<T>()).clone();
        change(&mut value);
        self.set(value);
    }

    /// Sets `T`'s defaults unless it was read.
    pub fn or_defaults<T: Section>(&mut self) {
        if !self.0.contains_key(&std::any::TypeId::of::<T>()) {
            self.set(defaults::<T>());
        }
    }

    /// Reads `T` from the matches of the whole command line.
    pub fn read<T: Section>(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.set(T::from_arg_matches(matches)?);
        Ok(())
    }
}

/// A settings struct as if no flag and no environment variable were given: its declared
/// defaults.
pub fn defaults<T: Section>() -> T {
    let command = T::augment_args(clap::Command::new("defaults")).mut_args(|a| a.env(None));
    command
        .try_get_matches_from(["defaults"])
        .and_then(|m| T::from_arg_matches(&m))
        .unwrap_or_else(|e| panic!("a settings struct without defaults: {e}"))
}

/// A switch as every boolean setting takes it (CONTRACT 30): `1 0 true false yes no on off`
/// (any case), answered as `on` or `off`.
pub fn parse_switch(s: &str) -> Result<String, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok("on".into()),
        "0" | "false" | "no" | "off" => Ok("off".into()),
        other => Err(format!(
            "`{other}` is not a switch: use one of 1 0 true false yes no on off"
        )),
    }
}

/// An OpenAI-compatible API base (`…/v1`).
pub fn parse_llm_url(s: &str) -> Result<String, String> {
    let u = reqwest::Url::parse(s).map_err(|e| format!("`{s}` is not a URL: {e}"))?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return Err(format!("`{s}`: an http(s) URL is needed"));
    }
    if !u.path().trim_end_matches('/').ends_with("/v1") || u.query().is_some() {
        return Err(format!(
            "`{s}`: give the API's base ending in /v1 (e.g. http://127.0.0.1:11434/v1)"
        ));
    }
    Ok(s.trim_end_matches('/').to_owned())
}

/// A webhook retry schedule: the wait before each retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule(pub Vec<std::time::Duration>);

/// A severity name, as the CVE settings take it.
pub fn parse_severity(s: &str) -> Result<String, String> {
    trusthub_core::severity::Severity::parse(s)
        .map(|v| v.as_str().to_owned())
        .ok_or_else(|| format!("`{s}`: use CRITICAL, HIGH, MEDIUM, LOW or UNKNOWN"))
}

/// A webhook retry schedule (`10s,60s,5m`).
pub fn parse_schedule(s: &str) -> Result<Schedule, String> {
    trusthub_core::webhook::parse_schedule(s)
        .map(Schedule)
        .ok_or_else(|| "expected durations like 10s,60s,5m".to_owned())
}

impl Settings {
    /// A capability's own settings ([`Sections::of`]).
    pub fn of<T: Section>(&self) -> std::sync::Arc<T> {
        self.sections.of::<T>()
    }

    /// Whether rate limits apply (off only when set to `off`).
    pub fn rate_limits_enabled(&self) -> bool {
        self.rate_limits != "off"
    }

    /// Whether the hub serves HTTPS.
    pub fn tls_enabled(&self) -> bool {
        (self.tls_cert.is_some() && self.tls_key.is_some()) || self.tls_self
    }

    /// Base URL for links in mail, without a trailing slash.
    pub fn public_url(&self, bound: SocketAddr) -> String {
        match &self.public_url {
            Some(u) => u.trim_end_matches('/').to_owned(),
            None if self.tls_enabled() => format!("https://{bound}"),
            None => format!("http://{bound}"),
        }
    }

    /// Defaults with the given data dir, as if no flag and no environment were given.
    pub fn with_data_dir(data_dir: PathBuf) -> Settings {
        Settings {
            config: None,
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            db: DbSettings {
                data_dir,
                database_url: None,
                db_max_connections: 10,
            },
            tls_cert: None,
            tls_key: None,
            encryption_key: None,
            admin_email: "admin@trusthub.local".into(),
            admin_password: None,
            rate_limits: "on".into(),
            job_nudges: "on".into(),
            smtp_url: None,
            smtp_from: "Trusthub <trusthub@trusthub.local>".into(),
            public_url: None,
            body_limit_bytes: 8 * 1024 * 1024,
            max_connections: 10_000,
            import_max_bytes: crate::archive::DEFAULT_TOTAL_BYTES,
            shutdown_grace_secs: 30,
            outbound_allow_cidrs: String::new(),
            ca_key_bits: 4096,
            tls_client_ca: "auto".into(),
            tls_self: false,
            trusted_proxies: Vec::new(),
            client_cert_days: 365,
            sections: Sections::default(),
        }
    }
}

fn parse_allow_cidrs(s: &str) -> Result<String, String> {
    crate::outbound::parse_cidrs(s).map(|_| s.to_owned())
}

impl crate::outbound::Policy {
    /// The policy of these settings (`TRUSTHUB_OUTBOUND_ALLOW_CIDRS`, checked at start).
    pub fn of(settings: &Settings) -> crate::outbound::Policy {
        crate::outbound::Policy::allowing(
            crate::outbound::parse_cidrs(&settings.outbound_allow_cidrs).unwrap_or_default(),
        )
    }

    /// The policy of `tenant`'s outbound calls (hub checks, channels, webhooks): the
    /// operator's ranges, narrowed to the tenant's own when its owner chose them.
    pub async fn of_tenant(
        settings: &Settings,
        ex: &mut impl trusthub_store::Exec,
        tenant: trusthub_store::TenantId,
    ) -> trusthub_store::StoreResult<crate::outbound::Policy> {
        let chosen = trusthub_store::networks::get(ex, tenant)
            .await?
            .map(|c| crate::outbound::parse_cidrs(&c).unwrap_or_default());
        Ok(crate::outbound::Policy::of(settings).narrowed(chosen))
    }
}

#[cfg(test)]
mod switch_tests {
    use super::*;
    use clap::Parser;

    /// CONTRACT 30: every boolean setting takes `1 0 true false yes no on off`, as a flag's
    /// value and as `TRUSTHUB_RATE_LIMITS`; anything else is refused by name (the console's
    /// switch is tested in its crate).
    #[test]
    fn boolean_settings_take_every_usual_spelling() {
        for (word, on) in [
            ("1", true),
            ("0", false),
            ("true", true),
            ("false", false),
            ("yes", true),
            ("no", false),
            ("on", true),
            ("off", false),
            ("ON", true),
        ] {
            let s = Settings::try_parse_from(["hub".to_owned(), format!("--rate-limits={word}")])
                .unwrap_or_else(|e| panic!("{word}: {e}"));
            assert_eq!(s.rate_limits_enabled(), on, "{word}");
        }
        assert!(Settings::try_parse_from(["hub", "--rate-limits=maybe"]).is_err());
    }
}
