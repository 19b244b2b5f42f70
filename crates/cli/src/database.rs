//! The admin verbs' database: opened only where it exists, migrated forward; `trusthub admin
//! migrate [--dry-run]` (CONTRACT 31).

use trusthub_hub::DbSettings;
use trusthub_store::{Db, DbOptions};

/// `trusthub admin migrate`.
#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// List the migrations that would run, and change nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    db: DbSettings,
}

/// `trusthub admin migrate [--dry-run]`: what runs (or would), oldest first; a database of a
/// newer release is refused naming both versions.
pub async fn migrate(args: MigrateArgs) -> Result<(), String> {
    exists(&args.db)?;
    let db = Db::connect(&args.db.url(), &DbOptions::default())
        .await
        .map_err(|e| format!("{}: {e}", redact_url(&args.db.url())))?;
    let schema = db.schema().await.map_err(|e| e.to_string())?;
    if let Some(v) = schema.database.filter(|v| *v > schema.binary) {
        return Err(trusthub_store::StoreError::NewerSchema {
            database: v,
            binary: schema.binary,
        }
        .to_string());
    }
    let pending = db.pending().await.map_err(|e| e.to_string())?;
    let at = schema.database.unwrap_or(0);
    if pending.is_empty() {
        println!("the schema is current (version {at})");
        return Ok(());
    }
    for (v, description) in &pending {
        println!("{v:04} {description}");
    }
    if args.dry_run {
        println!(
            "{} migrations would run (version {at} to {}); nothing changed",
            pending.len(),
            schema.binary
        );
        return Ok(());
    }
    db.migrate().await.map_err(|e| e.to_string())?;
    println!(
        "{} migrations ran: version {at} to {}",
        pending.len(),
        schema.binary
    );
    Ok(())
}

/// An admin command never creates a database: run from the wrong directory, it would make
/// an empty one and act on that.
fn exists(db: &DbSettings) -> Result<(), String> {
    if db.database_url.is_none() {
        let file = db.data_dir.join("trusthub.db");
        if !file.exists() {
            return Err(format!(
                "no hub database at {} — run from the directory that holds the hub's data/, \
                 or pass --data-dir (TRUSTHUB_DATA_DIR) or --database-url",
                std::path::absolute(&file).unwrap_or(file).display()
            ));
        }
    }
    Ok(())
}

/// The database of an admin command, migrated forward.
pub async fn open(db: &DbSettings) -> Result<Db, String> {
    exists(db)?;
    let d = Db::connect(&db.url(), &DbOptions::default())
        .await
        .map_err(|e| format!("{}: {e}", redact_url(&db.url())))?;
    d.migrate().await.map_err(|e| e.to_string())?;
    Ok(d)
}

/// A database URL without its password, for messages.
fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}
