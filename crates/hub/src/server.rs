//! Building and running the hub: data dir, database, keys, first start, router, listener,
//! background housekeeping and graceful shutdown.

use crate::admin::{self, Bootstrapped};
use crate::extract::PeerAddr;
use crate::mail::Mailer;
use crate::metrics::Metrics;
use crate::ratelimit::RateLimiter;
use crate::settings::Settings;
use crate::state::{App, AppState, now};
use axum::Router;
use std::fs::File;
use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use trusthub_core::secret::SealingKey;
use trusthub_store::{Backend, Db, DbOptions};
use utoipa_axum::router::OpenApiRouter;

/// Why the hub could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A setting is wrong or missing.
    #[error("{0}")]
    Config(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] trusthub_store::StoreError),
    /// A file or socket failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A hub ready to serve.
pub struct Server {
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    router: Router,
    state: AppState,
    bootstrapped: Option<Bootstrapped>,
    first_login_pending: Option<PathBuf>,
    _lock: Option<File>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("listener", &self.listener)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Prepares everything from `settings` and binds the listener.
    pub async fn build(settings: Settings) -> Result<Server, StartError> {
        Server::build_with(settings, OpenApiRouter::new()).await
    }

    /// Like [`Server::build`], with extra routes under `/api/v1` (for embedding the hub and
    /// for tests of extractors).
    pub async fn build_with(
        settings: Settings,
        extra: OpenApiRouter<AppState>,
    ) -> Result<Server, StartError> {
        // Each capability's own settings: as read from the command line, else its defaults.
        let mut settings = settings;
        for of in crate::capabilities().iter().flat_map(|c| &c.settings) {
            (of.or_defaults)(&mut settings.sections);
        }
        // Bind before creating anything: a busy port must leave no data dir, no database and
        // no owner whose generated password nobody saw.
        let listener = TcpListener::bind(settings.listen).await.map_err(|e| {
            StartError::Config(format!(
                "cannot listen on {}: {e} (another hub running? choose another --listen)",
                settings.listen
            ))
        })?;
        let data_dir = settings.db.data_dir.clone();
        create_private_dir(&data_dir)?;
        let url = settings.db.url();
        let lock = match sqlite_path(&url) {
            Some(path) => Some(lock_sqlite(&path)?),
            None => None,
        };
        let db = Db::connect(
            &url,
            &DbOptions {
                max_connections: settings.db.db_max_connections,
                background_checkpoint: true,
                ..DbOptions::default()
            },
        )
        .await?;
        db.migrate().await?;
        let key = load_key(&settings, &db)?;
        let eat_key = load_signing_key(&db, &key, "eat_signing_key", "EAT signing key").await?;
        // Its own key: an EAT key rotated after a compromise must not void past packs.
        let evidence_key =
            load_signing_key(&db, &key, "evidence_signing_key", "evidence signing key").await?;
        let ca = crate::ca::HubCa::load_or_create(&db, &key, settings.ca_key_bits)
            .await
            .map_err(StartError::Config)?;
        let trusted_proxies = settings
            .trusted_proxies
            .iter()
            .filter(|p| !p.trim().is_empty())
            .map(|p| crate::tls::Cidr::parse(p))
            .collect::<Result<Vec<_>, _>>()
            .map_err(StartError::Config)?;
        if !(1..=825).contains(&settings.client_cert_days) {
            return Err(StartError::Config(
                "--client-cert-days must be 1 to 825".into(),
            ));
        }
        let tls = match (&settings.tls_cert, &settings.tls_key) {
            (Some(cert), Some(key)) => {
                let client_ca = (settings.tls_client_ca == "auto").then(|| ca.cert_der());
                Some(crate::tls::acceptor(cert, key, client_ca).map_err(StartError::Config)?)
            }
            (None, None) if settings.tls_self => {
                let client_ca = (settings.tls_client_ca == "auto").then(|| ca.cert_der());
                Some(self_tls(&settings, &ca, client_ca)?)
            }
            (None, None) => None,
            _ => {
                return Err(StartError::Config(
                    "--tls-cert and --tls-key go together".into(),
                ));
            }
        };
        let bootstrapped = admin::bootstrap(
            &db,
            &settings.admin_email,
            settings.admin_password.as_deref(),
        )
        .await
        .map_err(|e| StartError::Config(format!("first start: {e}")))?;
        if let Some(b) = &bootstrapped {
            tracing::info!(email = %b.email, "first start: created tenant `default` and its owner");
            if let Some(pw) = &b.generated_password {
                write_private_file(
                    &data_dir.join("initial-admin.txt"),
                    &format!("email: {}\npassword: {pw}\n", b.email),
                )?;
            }
        }
        let initial_admin = data_dir.join("initial-admin.txt");
        let first_login_pending = if initial_admin.exists() {
            let mut c = db.conn().await?;
            if trusthub_store::meta::anyone_logged_in(&mut c).await? {
                // The owner has signed in: the generated password is not left lying around.
                match std::fs::remove_file(&initial_admin) {
                    Ok(()) => tracing::info!(
                        file = %initial_admin.display(),
                        "removed the first start's password file: the owner has signed in"
                    ),
                    Err(e) => tracing::warn!(
                        file = %initial_admin.display(),
                        error = %e,
                        "cannot remove the first start's password file; remove it by hand"
                    ),
                }
                None
            } else {
                Some(initial_admin)
            }
        } else {
            None
        };
        let mailer = match &settings.smtp_url {
            Some(url) => Some(Mailer::new(url, &settings.smtp_from).map_err(StartError::Config)?),
            None => None,
        };
        let bound = listener.local_addr()?;
        // The keys and the CA, then what every capability installs (its parts and its
        // hooks into others' typed events), in the order of `capabilities()`.
        let client_ca = ca.cert_der().to_vec();
        let mut parts = trusthub_platform::state::Parts::default();
        parts
            .insert(trusthub_fleet::actions::EatKey(eat_key))
            .insert(crate::evidence::EvidenceKey(evidence_key))
            .insert(ca)
            .insert(trusthub_platform::scheduler::Nudges::default());
        let capabilities = crate::capabilities();
        for step in capabilities
            .iter()
            .flat_map(|c| &c.installs)
            .chain(capabilities.iter().flat_map(|c| &c.installs_last))
        {
            step(&mut trusthub_platform::capability::Install {
                settings: &settings,
                db: &db,
                parts: &mut parts,
            })
            .map_err(StartError::Config)?;
        }
        parts.insert(trusthub_platform::names::Namers(
            capabilities.into_iter().flat_map(|c| c.names).collect(),
        ));
        let state = AppState(Arc::new(App {
            limiter: RateLimiter::new(&db, settings.rate_limits_enabled()),
            public_url: settings.public_url(bound),
            db,
            key,
            mailer,
            metrics: Metrics::default(),
            settings,
            client_ca,
            trusted_proxies,
            parts,
            instance: format!("{}:{}", std::process::id(), uuid::Uuid::new_v4().simple()),
        }));
        let router = crate::router(state.clone(), extra);
        Ok(Server {
            listener,
            tls,
            router,
            state,
            bootstrapped,
            first_login_pending,
            _lock: lock,
        })
    }

    /// The address the hub listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .unwrap_or(self.state.settings.listen)
    }

    /// The shared state.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// `initial-admin.txt` while nobody has logged in yet (every start says where it is).
    pub fn first_login_pending(&self) -> Option<&Path> {
        self.first_login_pending.as_deref()
    }

    /// The owner created at this start, if this start created one.
    pub fn bootstrapped(&self) -> Option<&Bootstrapped> {
        self.bootstrapped.as_ref()
    }

    /// Serves until `shutdown` completes, then lets in-flight requests finish (up to
    /// `TRUSTHUB_SHUTDOWN_GRACE_SECS`) and closes the database.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let Server {
            listener,
            tls,
            router,
            state,
            _lock,
            ..
        } = self;
        let grace = Duration::from_secs(state.settings.shutdown_grace_secs);
        open_files(state.settings.max_connections);
        match state.db.autovacuum().await {
            Ok(true) => {}
            Ok(false) => tracing::warn!(
                "PostgreSQL's autovacuum is off: the rows the hub updates in place (metric \
                 rollups, agents) leave dead versions that grow the database without bound, \
                 and the planner has no statistics; turn it on, or run VACUUM ANALYZE often"
            ),
            Err(e) => tracing::warn!(error = %e, "cannot read PostgreSQL's autovacuum setting"),
        }
        let housekeeping = tokio::spawn(housekeeping(state.clone()));
        for start in crate::capabilities().iter().flat_map(|c| &c.on_start) {
            start(state.clone()).await;
        }
        let workers = crate::workers::spawn(&state);
        let stopping = Arc::new(tokio::sync::Notify::new());
        let notify = stopping.clone();
        let signal = async move {
            shutdown.await;
            tracing::info!("shutting down: finishing in-flight requests");
            notify.notify_one();
        };
        let app = router.into_make_service_with_connect_info::<PeerAddr>();
        let max_connections = state.settings.max_connections;
        let mut serve = match tls {
            None => tokio::spawn(
                axum::serve(crate::conn::Guarded::new(listener, max_connections), app)
                    .with_graceful_shutdown(signal)
                    .into_future(),
            ),
            Some(acceptor) => {
                let listener = crate::tls::TlsListener::new(listener, acceptor)?;
                tokio::spawn(
                    axum::serve(crate::conn::Guarded::new(listener, max_connections), app)
                        .with_graceful_shutdown(signal)
                        .into_future(),
                )
            }
        };
        let result = tokio::select! {
            r = &mut serve => r.map_err(std::io::Error::other).and_then(|r| r),
            _ = async { stopping.notified().await; tokio::time::sleep(grace).await } => {
                tracing::warn!("grace period over; dropping remaining connections");
                serve.abort();
                Ok(())
            }
        };
        housekeeping.abort();
        for w in workers {
            w.abort();
        }
        for stop in crate::capabilities().iter().flat_map(|c| &c.on_stop) {
            stop(state.clone()).await;
        }
        state.db.close().await;
        result
    }
}

/// Raises the open-file limit (soft to hard) and says what it holds: a fleet of N agents
/// needs about 2 × N + 100 (README, the package's `LimitNOFILE`).
fn open_files(max_connections: usize) {
    match crate::conn::raise_open_files() {
        Ok((before, after)) => {
            if before != after {
                tracing::info!(before, after, "raised the open-file limit");
            }
            let agents = after.saturating_sub(100) / 2;
            if (agents as usize) < max_connections / 2 {
                tracing::warn!(
                    limit = after,
                    "the open-file limit holds about {agents} agents (each holds about two \
                     connections); raise the hard limit (LimitNOFILE= in the unit, ulimit -Hn) \
                     for a larger fleet"
                );
            }
        }
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit"),
    }
}

/// Periodic clean-up of expired rows, every minute: each purge finds its rows through an
/// index, so a run that finds little costs little, and a minute's worth of expired metric rows
/// is deleted at a time (on SQLite the one writer waits while they go). Every statement is
/// an idempotent delete, so running it in each of several hub processes is harmless.
async fn housekeeping(state: AppState) {
    let mut tick = tokio::time::interval(Duration::from_secs(60));
    loop {
        tick.tick().await;
        let now = now();
        let result = async {
            let mut tx = state.db.begin().await?;
            for purge in crate::capabilities().iter().flat_map(|c| &c.purges) {
                purge(&state, &mut tx, now).await?;
            }
            tx.commit().await?;
            Ok::<_, trusthub_store::StoreError>(())
        }
        .await;
        if let Err(e) = result {
            tracing::warn!(error = %e, "housekeeping failed");
        }
        if let Err(e) = state.limiter.purge(now.unix_timestamp()).await {
            tracing::warn!(error = %e, "rate-limit purge failed");
        }
    }
}

/// The file of a `sqlite:` URL.
fn sqlite_path(url: &str) -> Option<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path))
}

/// One hub process per SQLite database: the per-process rate-limit counters and the
/// single-writer design depend on it.
fn lock_sqlite(db_path: &Path) -> Result<File, StartError> {
    if let Some(parent) = db_path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_private_dir(parent)?;
    }
    let lock_path = PathBuf::from(format!("{}.lock", db_path.display()));
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StartError::Config(format!(
            "another `trusthub serve` is using {}; a SQLite database serves one hub process (use PostgreSQL for several)",
            db_path.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => Err(e.into()),
    }
}

/// CONTRACT 11: the key from `CLOUD_ENCRYPTION_KEY`; on SQLite, generated into the data
/// dir when absent; required with PostgreSQL, where every process must share it.
fn load_key(settings: &Settings, db: &Db) -> Result<SealingKey, StartError> {
    if let Some(hex) = &settings.encryption_key {
        return SealingKey::from_hex(hex)
            .map_err(|e| StartError::Config(format!("CLOUD_ENCRYPTION_KEY: {e}")));
    }
    if db.backend() == Backend::Postgres {
        return Err(StartError::Config(
            "CLOUD_ENCRYPTION_KEY (64 hex characters) is required with PostgreSQL: every hub process must use the same key"
                .into(),
        ));
    }
    let path = settings.db.data_dir.join("encryption.key");
    match std::fs::read_to_string(&path) {
        Ok(hex) => SealingKey::from_hex(&hex)
            .map_err(|e| StartError::Config(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = SealingKey::generate().map_err(|e| StartError::Config(e.to_string()))?;
            write_private_file(&path, &format!("{}\n", key.to_hex()))?;
            tracing::info!(path = %path.display(), "generated the hub encryption key; back it up with the database");
            Ok(key)
        }
        Err(e) => Err(e.into()),
    }
}

/// The shortest evidence retention accepted (SPEC 8: at least 12 months on disk).
pub const MIN_EVIDENCE_RETENTION_DAYS: i64 = trusthub_llm::evidence::MIN_RETENTION_DAYS;

/// One of the hub's Ed25519 signing keys, generated once per database and kept sealed with
/// the hub key in `hub_meta` under `meta_key`; of several processes starting at once, the
/// first claim wins and every process reads the winner's key back.
async fn load_signing_key(
    db: &Db,
    key: &SealingKey,
    meta_key: &str,
    what: &str,
) -> Result<ed25519_dalek::SigningKey, StartError> {
    let context = format!("hub_meta.{meta_key}");
    let fresh = trusthub_core::secret::random_bytes::<32>()
        .map_err(|e| StartError::Config(e.to_string()))?;
    let sealed = key
        .seal(&context, &fresh)
        .map_err(|e| StartError::Config(e.to_string()))?;
    let mut tx = db.begin().await?;
    trusthub_store::meta::claim(
        &mut tx,
        meta_key,
        &trusthub_core::secret::hex(&sealed),
        now(),
    )
    .await?;
    let stored = trusthub_store::meta::get(&mut tx, meta_key)
        .await?
        .unwrap_or_default();
    tx.commit().await?;
    let sealed = data_encoding::HEXLOWER
        .decode(stored.as_bytes())
        .map_err(|_| StartError::Config(format!("stored {what} is corrupt")))?;
    let secret = key.open(&context, &sealed).map_err(|_| {
        StartError::Config(format!("the {what} cannot be opened: CLOUD_ENCRYPTION_KEY differs from the one it was sealed with"))
    })?;
    let bytes: [u8; 32] = secret
        .try_into()
        .map_err(|_| StartError::Config(format!("stored {what} has the wrong length")))?;
    Ok(ed25519_dalek::SigningKey::from_bytes(&bytes))
}

/// `--tls-self`: a server certificate from the hub CA for the names this hub is reached by,
/// made at each start (so it never expires while the hub runs for less than 90 days), and the
/// CA written to `<data-dir>/hub-ca.pem` for clients to trust.
fn self_tls(
    settings: &Settings,
    ca: &crate::ca::HubCa,
    client_ca: Option<&[u8]>,
) -> Result<tokio_rustls::TlsAcceptor, StartError> {
    let mut names = vec!["localhost".to_owned()];
    let mut ips: Vec<std::net::IpAddr> = vec![
        std::net::IpAddr::from([127, 0, 0, 1]),
        std::net::IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
    ];
    if !settings.listen.ip().is_unspecified() && !ips.contains(&settings.listen.ip()) {
        ips.push(settings.listen.ip());
    }
    if let Some(host) = settings
        .public_url
        .as_deref()
        .and_then(|u| u.split_once("://"))
        .map(|(_, rest)| rest.split(['/', ':']).next().unwrap_or_default().to_owned())
        .filter(|h| !h.is_empty())
    {
        match host.parse::<std::net::IpAddr>() {
            Ok(ip) if !ips.contains(&ip) => ips.push(ip),
            Ok(_) => {}
            Err(_) if !names.contains(&host) => names.push(host),
            Err(_) => {}
        }
    }
    let (chain, key) = ca
        .issue_server(&names, &ips, 90)
        .map_err(|e| StartError::Config(format!("--tls-self: {e}")))?;
    std::fs::write(settings.db.data_dir.join("hub-ca.pem"), ca.cert_pem())?;
    crate::tls::acceptor_from_pem(chain.as_bytes(), key.as_bytes(), client_ca)
        .map_err(StartError::Config)
}

fn create_private_dir(path: &Path) -> std::io::Result<()> {
    if path.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(path)?;
    set_mode(path, 0o700)
}

/// Writes a file only its owner can read (mode 600), replacing it if present.
/// Writes a secret file created with mode 600 (never created wider and then narrowed;
/// CONTRACT 18). An existing file is replaced through a fresh temporary one.
fn write_private_file(path: &Path, content: &str) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp-private");
    let _ = std::fs::remove_file(&tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(&tmp)?;
    f.write_all(content.as_bytes())?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls_name_their_file() {
        assert_eq!(
            sqlite_path("sqlite://data/t.db"),
            Some(PathBuf::from("data/t.db"))
        );
        assert_eq!(
            sqlite_path("sqlite:/abs/t.db?mode=rwc"),
            Some(PathBuf::from("/abs/t.db"))
        );
        assert_eq!(sqlite_path("sqlite::memory:"), None);
        assert_eq!(sqlite_path("postgres://x"), None);
    }
}
