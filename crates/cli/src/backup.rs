//! `trusthub backup`, `trusthub backup verify` and `trusthub restore` (CONTRACT 31): logical,
//! portable backups of a running hub's database (`trusthub_store::backup`), restorable into
//! an empty database of either engine.

use std::path::{Path, PathBuf};
use trusthub_hub::DbSettings;
use trusthub_store::backup::{self, KeyInfo, Manifest};
use trusthub_store::{Db, DbOptions};

/// `trusthub backup …`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BackupArgs {
    #[command(subcommand)]
    cmd: Option<BackupCmd>,
    /// The archive to write (`.tar.gz`, mode 600): one JSON Lines file per table and a
    /// manifest, read in one consistent snapshot while the hub runs.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Put the hub key in the archive too (keep such an archive as safe as the key).
    #[arg(long)]
    include_key: bool,
    #[command(flatten)]
    db: DbSettings,
    /// The hub key, with PostgreSQL (on SQLite it is the data dir's `encryption.key`).
    #[arg(
        long = "encryption-key",
        env = "CLOUD_ENCRYPTION_KEY",
        hide_env_values = true
    )]
    encryption_key: Option<String>,
}

/// `trusthub backup verify`.
#[derive(Debug, clap::Subcommand)]
enum BackupCmd {
    /// Check every member of an archive against its manifest (rows and SHA-256): exits 1 on
    /// the first damaged or missing one.
    Verify {
        /// The archive.
        file: PathBuf,
    },
}

/// `trusthub restore …`.
#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// The archive (`trusthub backup --out`).
    #[arg(long)]
    from: PathBuf,
    /// Where to restore: `--data-dir` (a new SQLite database there; the archive's hub key,
    /// if it holds one, becomes its `encryption.key`) or `--database-url` (an empty
    /// PostgreSQL or SQLite database).
    #[command(flatten)]
    db: DbSettings,
}

fn rows(m: &Manifest) -> u64 {
    m.tables.values().map(|t| t.rows).sum()
}

fn summary(m: &Manifest) -> String {
    format!(
        "{} tables, {} rows, from {} at schema {}, taken {}",
        m.tables.len(),
        rows(m),
        m.engine,
        m.migration,
        m.created_at
    )
}

/// The hub key of `db` as the hub itself finds it: the flag or variable, else (SQLite) the
/// data dir's `encryption.key`.
fn key_hex(db: &DbSettings, given: Option<&str>) -> Option<String> {
    given.map(str::to_owned).or_else(|| {
        std::fs::read_to_string(db.data_dir.join("encryption.key"))
            .ok()
            .filter(|_| !db.is_postgres())
            .map(|k| k.trim().to_owned())
    })
}

/// `trusthub backup …`.
pub async fn backup(args: BackupArgs) -> Result<(), String> {
    if let Some(BackupCmd::Verify { file }) = args.cmd {
        let m = backup::verify(&file).map_err(|e| e.to_string())?;
        println!("{}: intact — {}", file.display(), summary(&m));
        println!(
            "hub key: {}{}",
            m.key_fingerprint.as_deref().unwrap_or("unknown"),
            if m.includes_key {
                " (included in the archive)"
            } else {
                ""
            }
        );
        return Ok(());
    }
    let out = args
        .out
        .ok_or("give --out <file> (or `trusthub backup verify <file>`)")?;
    if !args.db.is_postgres() && !args.db.data_dir.join("trusthub.db").exists() {
        return Err(format!(
            "no hub database in {} — pass the hub's --data-dir or --database-url",
            args.db.data_dir.display()
        ));
    }
    // Never migrated here: a running hub's schema is the hub's business.
    let db = Db::connect(&args.db.url(), &DbOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    let key = key_hex(&args.db, args.encryption_key.as_deref());
    if args.include_key && key.is_none() {
        return Err(
            "--include-key: no hub key found (CLOUD_ENCRYPTION_KEY, or encryption.key in the data dir)"
                .into(),
        );
    }
    let info = KeyInfo {
        fingerprint: key.as_deref().and_then(backup::key_fingerprint),
        include: key.filter(|_| args.include_key),
    };
    let started = std::time::Instant::now();
    let m = backup::backup(&db, &out, &info)
        .await
        .map_err(|e| e.to_string())?;
    db.close().await;
    println!(
        "backed up {} into {} in {:.1} s{}",
        summary(&m),
        out.display(),
        started.elapsed().as_secs_f64(),
        if m.includes_key {
            " (the hub key included)"
        } else {
            ""
        }
    );
    Ok(())
}

/// `trusthub restore …`.
pub async fn restore(args: RestoreArgs) -> Result<(), String> {
    let sqlite_dir = (args.db.database_url.is_none()).then(|| args.db.data_dir.clone());
    if let Some(dir) = &sqlite_dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        use std::os::unix::fs::PermissionsExt as _;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    let db = Db::connect(&args.db.url(), &DbOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let m = backup::restore(&db, &args.from)
        .await
        .map_err(|e| e.to_string())?;
    db.close().await;
    println!(
        "restored {} in {:.1} s",
        summary(&m),
        started.elapsed().as_secs_f64()
    );
    let fingerprint = m.key_fingerprint.as_deref().unwrap_or("unknown");
    match (
        backup::key_of(&args.from).map_err(|e| e.to_string())?,
        &sqlite_dir,
    ) {
        (Some(key), Some(dir)) => write_key(dir, &key)?,
        (Some(_), None) => println!(
            "the archive holds the hub key (fingerprint {fingerprint}): start the hub with CLOUD_ENCRYPTION_KEY set to it \
             (tar -xzOf {} key.txt)",
            args.from.display()
        ),
        (None, _) => println!(
            "sealed secrets need the hub key with fingerprint {fingerprint}: copy the old data dir's encryption.key, \
             or set CLOUD_ENCRYPTION_KEY to it"
        ),
    }
    Ok(())
}

/// The archive's key as `dir/encryption.key` (600), unless one is there already.
fn write_key(dir: &Path, key: &str) -> Result<(), String> {
    let path = dir.join("encryption.key");
    if path.exists() {
        println!(
            "{} exists and is kept; the archive's key is in its key.txt",
            path.display()
        );
        return Ok(());
    }
    std::fs::write(&path, format!("{}\n", key.trim()))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    println!("wrote the archive's hub key to {}", path.display());
    Ok(())
}
