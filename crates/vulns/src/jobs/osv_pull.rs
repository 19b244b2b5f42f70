//! The daily pull of `TRUSTHUB_OSV_URL` (CONTRACT 15), once per cluster: per ecosystem of
//! `TRUSTHUB_OSV_ECOSYSTEMS`, the first pull imports the bucket's `<Ecosystem>/all.zip`; the
//! next ones read `<Ecosystem>/modified_id.csv` (`<modified>,<id>` per line) and fetch only the
//! records changed since the last pull (`<Ecosystem>/<ID>.json`). Records land in the
//! hub-wide data, by id and `modified` as every import; the scan then runs for everyone.

use crate::state::AppState;
use crate::store::osv::Pull;
use time::OffsetDateTime;
use trusthub_store::StoreResult;

/// The lease and log name of this job.
pub const JOB: &str = "osv_pull";

/// Records fetched one by one per ecosystem and pull at most (the rest the next pull).
pub const MAX_RECORDS_PER_PULL: usize = 20_000;

/// The largest `modified_id.csv` read (the biggest ecosystem's is a few MiB).
const CSV_BYTES: u64 = 256 * 1024 * 1024;

/// Seconds between checks (`TRUSTHUB_OSV_PULL_CHECK_SECS`, 3600).
pub fn interval(s: &trusthub_platform::settings::Settings) -> u64 {
    crate::settings::of(s).osv_pull_check_secs.max(1)
}

/// One scheduled run at `now`.
pub async fn tick(state: &AppState, now: OffsetDateTime) -> StoreResult<()> {
    pull(state, now).await.map(|_| ())
}

/// The bucket path of an ecosystem folder (spaces and other bytes percent-encoded).
fn folder(eco: &str) -> String {
    trusthub_core::encode::with(eco, trusthub_core::encode::FOLDER)
}

/// `(modified, id)` of a modified_id.csv, oldest first.
pub fn read_csv(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| {
            let (t, id) = l.trim().split_once(',')?;
            let (t, id) = (t.trim(), id.trim());
            let ok = !id.is_empty()
                && id.len() <= 200
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
                && OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).is_ok();
            ok.then(|| (t.to_owned(), id.to_owned()))
        })
        .collect();
    out.sort();
    out
}

/// What one ecosystem's pull did.
#[derive(Debug, Clone, PartialEq)]
pub struct Pulled {
    /// The ecosystem.
    pub ecosystem: String,
    /// Whether it was the first (all.zip).
    pub full: bool,
    /// Records imported (inserted or updated).
    pub records: u64,
    /// Why it failed.
    pub error: Option<String>,
}

/// The outbound client and its policy.
struct Http {
    client: reqwest::Client,
    policy: crate::outbound::Policy,
}

async fn get(http: &Http, url: &str) -> Result<reqwest::Response, String> {
    // A literal address is judged here; names by the client's resolver.
    http.policy.check_target(url)?;
    let r = http
        .client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    if !r.status().is_success() {
        return Err(format!("{url}: HTTP {}", r.status().as_u16()));
    }
    Ok(r)
}

/// A response's body, read chunk by chunk into `out` and refused at the first byte past `max`.
async fn read_into(
    mut r: reqwest::Response,
    url: &str,
    max: u64,
    out: &mut (dyn std::io::Write + Send),
) -> Result<(), String> {
    let mut total: u64 = 0;
    while let Some(chunk) = r.chunk().await.map_err(|e| format!("{url}: {e}"))? {
        total += chunk.len() as u64;
        if total > max {
            return Err(format!("{url}: larger than {max} bytes"));
        }
        out.write_all(&chunk).map_err(|e| format!("{url}: {e}"))?;
    }
    Ok(())
}

/// A small body (the csv, one record) in memory, bounded.
async fn fetch(http: &Http, url: &str, max: u64) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    read_into(get(http, url).await?, url, max, &mut out).await?;
    Ok(out)
}

/// Pulls every ecosystem that is due at `now`.
pub async fn pull(state: &AppState, now: OffsetDateTime) -> StoreResult<Vec<Pulled>> {
    let settings = crate::settings::of(&state.settings);
    let Some(base) = settings.osv_url.as_deref() else {
        return Ok(Vec::new());
    };
    let base = base.trim_end_matches('/').to_owned();
    let known: std::collections::HashMap<String, Pull> = {
        let mut c = state.db.conn().await?;
        crate::store::osv::pulls(&mut c)
            .await?
            .into_iter()
            .map(|p| (p.ecosystem.clone(), p))
            .collect()
    };
    let every = time::Duration::seconds(
        crate::settings::of(&state.settings)
            .osv_pull_interval_secs
            .max(1) as i64,
    );
    let policy = crate::outbound::Policy::of(&state.settings);
    let Ok(client) = policy
        .client()
        .timeout(std::time::Duration::from_secs(600))
        .build()
    else {
        return Ok(Vec::new());
    };
    let http = Http { client, policy };
    let limits = crate::archive::Limits::with_total(state.settings.import_max_bytes);
    let mut out = Vec::new();
    for eco in crate::settings::of(&state.settings)
        .osv_ecosystems
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
    {
        let last = known.get(eco);
        if last.is_some_and(|p| p.pulled_at + every > now) {
            continue;
        }
        let high_water = last.and_then(|p| p.high_water.clone());
        let dir = format!("{base}/{}", folder(eco));
        let result: Result<(bool, u64, Option<String>), String> = async {
            let csv = fetch(&http, &format!("{dir}/modified_id.csv"), CSV_BYTES).await?;
            let entries = read_csv(&String::from_utf8_lossy(&csv));
            let newest = entries.last().map(|e| e.0.clone());
            match &high_water {
                None => {
                    // Spooled to a file as it arrives, never held in memory.
                    let url = format!("{dir}/all.zip");
                    let mut zip = crate::archive::TempFile::new("osv-pull")
                        .map_err(|e| format!("{url}: {e}"))?;
                    read_into(
                        get(&http, &url).await?,
                        &url,
                        limits.total_bytes,
                        zip.file(),
                    )
                    .await?;
                    let report = crate::cve::import_zip_file(&state.db, "", zip, limits, now)
                        .await
                        .map_err(|e| e.message())?;
                    Ok((
                        true,
                        report.inserted + report.updated,
                        newest.or(high_water.clone()),
                    ))
                }
                Some(hw) => {
                    let mut files = Vec::new();
                    let mut reached = hw.clone();
                    let todo: Vec<(String, String)> =
                        entries.into_iter().filter(|e| e.0 > *hw).collect();
                    for (i, (t, id)) in todo.iter().enumerate() {
                        let url = format!("{dir}/{}.json", folder(id));
                        let body = fetch(&http, &url, limits.record_bytes).await?;
                        files.push((format!("{eco}/{id}.json"), body));
                        reached = t.clone();
                        // Stop at the cap, but never inside a group of one instant.
                        if files.len() >= MAX_RECORDS_PER_PULL
                            && todo.get(i + 1).is_none_or(|next| next.0 != *t)
                        {
                            break;
                        }
                    }
                    let report = crate::cve::import_files(&state.db, "", files, limits, now)
                        .await
                        .map_err(|e| e.message())?;
                    Ok((false, report.inserted + report.updated, Some(reached)))
                }
            }
        }
        .await;
        let (pulled, record) = match result {
            Ok((full, records, hw)) => (
                Pulled {
                    ecosystem: eco.to_owned(),
                    full,
                    records,
                    error: None,
                },
                Pull {
                    ecosystem: eco.to_owned(),
                    high_water: hw,
                    pulled_at: now,
                    records: records as i64,
                    last_error: None,
                },
            ),
            Err(e) => {
                tracing::warn!(ecosystem = eco, error = %e, "OSV pull failed");
                (
                    Pulled {
                        ecosystem: eco.to_owned(),
                        full: high_water.is_none(),
                        records: 0,
                        error: Some(e.clone()),
                    },
                    // Tried again at the next check, the high-water mark kept.
                    Pull {
                        ecosystem: eco.to_owned(),
                        high_water: high_water.clone(),
                        pulled_at: last.map_or(now - every, |p| p.pulled_at),
                        records: 0,
                        last_error: Some(e),
                    },
                )
            }
        };
        let mut tx = state.db.begin().await?;
        crate::store::osv::save_pull(&mut tx, &record).await?;
        tx.commit().await?;
        if pulled.records > 0 {
            trusthub_platform::scheduler::nudge(state, crate::jobs::cve_scan::JOB);
        }
        out.push(pulled);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_lines_and_folders() {
        let csv = "2024-03-01T00:00:00Z,GHSA-b\n2024-01-01T00:00:00Z,GHSA-a\nnot,a line\n\n2024-02-01T00:00:00.5Z,PYSEC-1\n";
        assert_eq!(
            read_csv(csv),
            [
                ("2024-01-01T00:00:00Z".to_owned(), "GHSA-a".to_owned()),
                ("2024-02-01T00:00:00.5Z".to_owned(), "PYSEC-1".to_owned()),
                ("2024-03-01T00:00:00Z".to_owned(), "GHSA-b".to_owned()),
            ]
        );
        assert_eq!(folder("Rocky Linux"), "Rocky%20Linux");
        assert_eq!(folder("Debian:12"), "Debian:12");
    }
}
