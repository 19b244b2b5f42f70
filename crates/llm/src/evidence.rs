//! Building evidence packs (SPEC 2.10; CONTRACT 8) from the stored traces, on disk.
//!
//! A build reads one database snapshot page by page into three work files (`traces.jsonl`,
//! `spans.jsonl`, the blobs), hashing as it writes, so memory does not grow with the period.
//! If a ready pack with the same inputs has the same data digests, that pack is the answer
//! (same `pack_id`, byte-identical manifest). Otherwise an id is reserved, the manifest is
//! written and signed with the evidence key, the bundle is written next to its final name and
//! renamed into place, and the pack's record, its transparency-log entry and its audit row
//! commit together.

use crate::error::{ApiError, ApiResult};
use crate::state::{AppState, rfc3339};
use crate::store::evidence::{self as store, Digests, Pack, Scope};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use time::OffsetDateTime;
use trusthub_core::ai::{Cost, PriceTable, Usage};
use trusthub_core::evidence::{self as ev, BlobRef, Manifest, Section, SpanLine, TraceLine};
use trusthub_core::secret::hex;
use trusthub_store::{StoreResult, TenantId, Tx};

/// The shortest evidence retention accepted (SPEC 8: at least 12 months on disk).
pub const MIN_RETENTION_DAYS: i64 = 365;

const DATE: &[time::format_description::BorrowedFormatItem<'static>] =
    time::macros::format_description!("[year]-[month]-[day]");

/// The hub's Ed25519 key for evidence packs (SPEC 2.10), published with its fingerprint at
/// `GET /ai/evidence-key` (a part of the state).
#[derive(Debug)]
pub struct EvidenceKey(pub ed25519_dalek::SigningKey);

/// Rows per page read from the database.
const PAGE: i64 = 5000;
/// Blobs per page (each up to 256 KiB).
const BLOB_PAGE: usize = 100;
/// Builds running at once in this process; more wait their turn.
static BUILDS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);
/// A reservation older than this belongs to a build that died.
const STALE_BUILD: time::Duration = time::Duration::hours(6);

/// What to build.
#[derive(Debug, Clone)]
pub struct Request {
    /// Tenant, app and period.
    pub scope: Scope,
    /// Bundle the redacted content.
    pub include_blobs: bool,
    /// The audit actor.
    pub actor: String,
}

/// A build's outcome.
#[derive(Debug)]
pub enum Built {
    /// A new pack.
    New(Pack),
    /// The existing pack over the same inputs and unchanged data.
    Existing(Pack),
}

/// The bundle file of a pack.
pub fn pack_path(state: &AppState, tenant: TenantId, id: i64) -> PathBuf {
    crate::settings::of(&state.settings)
        .evidence_dir(&state.settings.db.data_dir)
        .join(tenant.0.to_string())
        .join(format!("pack-{id}.tar.gz"))
}

/// A file being written, hashed and counted at once.
struct Hashed {
    out: BufWriter<std::fs::File>,
    sha: Sha256,
    len: u64,
    lines: u64,
    /// One line, reused: a million-span pack would otherwise allocate a million times.
    line: Vec<u8>,
}

impl Hashed {
    fn create(path: &Path) -> std::io::Result<Hashed> {
        Ok(Hashed {
            out: BufWriter::with_capacity(256 * 1024, std::fs::File::create(path)?),
            sha: Sha256::new(),
            len: 0,
            lines: 0,
            line: Vec::with_capacity(1024),
        })
    }

    fn line<T: serde::Serialize>(&mut self, v: &T) -> std::io::Result<()> {
        self.line.clear();
        ev::write_line(&mut self.line, v)?;
        self.sha.update(&self.line);
        self.len += self.line.len() as u64;
        self.lines += 1;
        self.out.write_all(&self.line)
    }

    fn finish(mut self) -> std::io::Result<(String, u64, u64)> {
        self.out.flush()?;
        Ok((hex(&self.sha.finalize()), self.len, self.lines))
    }
}

/// Removes a work directory when dropped.
struct WorkDir(PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What the data pass produced.
struct Data {
    traces: (String, u64, u64),
    spans: (String, u64, u64),
    blobs: Vec<(BlobRef, u64)>,
    total_cost: u64,
    unpriced: u64,
}

fn io(e: std::io::Error) -> ApiError {
    ApiError::Internal(format!("evidence pack: {e}"))
}

/// Builds a pack, or finds the identical one.
pub async fn build(
    state: &AppState,
    req: &Request,
    prices: &PriceTable,
    meta: &crate::extract::Meta,
) -> ApiResult<Built> {
    let _permit = BUILDS
        .acquire()
        .await
        .map_err(|_| ApiError::Internal("evidence builds are closed".into()))?;
    let root = crate::settings::of(&state.settings).evidence_dir(&state.settings.db.data_dir);
    let work = WorkDir(
        root.join("work")
            .join(uuid::Uuid::new_v4().simple().to_string()),
    );
    std::fs::create_dir_all(&work.0).map_err(io)?;
    let started = std::time::Instant::now();
    let data = read_data(state, req, prices, &work.0).await?;
    let read_ms = started.elapsed().as_millis() as u64;
    let index: Vec<BlobRef> = data.blobs.iter().map(|(b, _)| b.clone()).collect();
    let digests = Digests {
        traces_sha256: data.traces.0.clone(),
        spans_sha256: data.spans.0.clone(),
        blobs_sha256: ev::sha256_hex(&serde_json::to_vec(&index).unwrap_or_default()),
    };
    {
        let mut c = state.db.conn().await?;
        if let Some(p) = store::find_same(&mut c, &req.scope, req.include_blobs, &digests).await?
            && pack_path(state, req.scope.tenant, p.id).exists()
        {
            return Ok(Built::Existing(p));
        }
    }
    let created_at = crate::state::now();
    let expires_at = created_at
        + time::Duration::days(crate::settings::of(&state.settings).evidence_retention_days);
    let id = {
        let mut tx = state.db.begin().await?;
        let id = store::reserve(
            &mut tx,
            &store::NewPack {
                scope: req.scope,
                include_blobs: req.include_blobs,
                created_by: &req.actor,
                created_at,
                expires_at,
            },
        )
        .await?;
        tx.commit().await?;
        id
    };
    match write_pack(
        state, req, id, created_at, &data, index, &digests, &work.0, meta,
    )
    .await
    {
        Ok(p) => {
            tracing::info!(
                pack_id = id,
                spans = p.span_count,
                blobs = p.blob_count,
                bytes = p.size_bytes,
                read_ms,
                total_ms = started.elapsed().as_millis() as u64,
                "evidence pack built"
            );
            Ok(Built::New(p))
        }
        Err(e) => {
            let _ = std::fs::remove_file(pack_path(state, req.scope.tenant, id));
            if let Ok(mut tx) = state.db.begin().await
                && store::abandon(&mut tx, req.scope.tenant, id).await.is_ok()
            {
                let _ = tx.commit().await;
            }
            Err(e)
        }
    }
}

/// Writes the work files from one database snapshot.
async fn read_data(
    state: &AppState,
    req: &Request,
    prices: &PriceTable,
    work: &Path,
) -> ApiResult<Data> {
    let s = &req.scope;
    let mut snap = state.db.snapshot().await?;

    let mut traces = Hashed::create(&work.join(ev::TRACES)).map_err(io)?;
    let mut pager = store::Pager::new(*s);
    loop {
        let page = pager.traces(&mut snap, PAGE).await?;
        if page.is_empty() {
            break;
        }
        for t in page {
            let tags: Vec<String> = serde_json::from_str(&t.6).unwrap_or_default();
            traces
                .line(&TraceLine {
                    app_id: t.3,
                    ended_at: t.5,
                    name: t.1,
                    started_at: t.4,
                    tags,
                    team: t.2,
                    trace_id: t.0,
                })
                .map_err(io)?;
        }
    }

    let mut spans = Hashed::create(&work.join(ev::SPANS)).map_err(io)?;
    let (mut total_cost, mut unpriced) = (0u64, 0u64);
    // Spans come in time order: the day changes rarely.
    let mut last_day: Option<(String, time::Date)> = None;
    // Content hashes the spans reference, in hash order (the blobs' order in the bundle).
    let mut referenced: BTreeSet<[u8; 32]> = BTreeSet::new();
    let mut pager = store::Pager::new(*s);
    loop {
        let page = pager.spans(&mut snap, PAGE).await?;
        if page.is_empty() {
            break;
        }
        for k in page {
            let n = |v: i64| v.max(0) as u64;
            let usage = Usage {
                prompt_tokens: n(k.5),
                completion_tokens: n(k.6),
                cache_read_tokens: n(k.7),
                cache_write_tokens: n(k.8),
                reasoning_tokens: n(k.9),
            };
            let day = k.2.get(..10).unwrap_or_default();
            if last_day.as_ref().is_none_or(|(d, _)| d != day) {
                let date = time::Date::parse(day, DATE)
                    .map_err(|_| ApiError::Internal("stored call date".into()))?;
                last_day = Some((day.to_owned(), date));
            }
            let date = last_day
                .as_ref()
                .map(|(_, d)| *d)
                .unwrap_or(time::Date::MIN);
            let cost = match prices.cost(&k.3, date, &usage) {
                Cost::Priced(c) => {
                    total_cost = total_cost.saturating_add(c);
                    Some(c)
                }
                Cost::Unpriced => {
                    unpriced += 1;
                    None
                }
            };
            if req.include_blobs
                && let Some(h) = k.12.as_deref().and_then(|h| {
                    // 32 bytes sort like their lowercase hex: the blobs' order in the bundle.
                    data_encoding::HEXLOWER
                        .decode(h.as_bytes())
                        .ok()?
                        .try_into()
                        .ok()
                })
            {
                referenced.insert(h);
            }
            spans
                .line(&SpanLine {
                    cache_read_tokens: usage.cache_read_tokens,
                    cache_write_tokens: usage.cache_write_tokens,
                    completion_tokens: usage.completion_tokens,
                    content_sha256: k.12,
                    cost_micro_eur: cost,
                    latency_ms: n(k.10),
                    model: k.3,
                    prompt_sha256: k.11,
                    prompt_tokens: usage.prompt_tokens,
                    provider: k.4,
                    reasoning_tokens: usage.reasoning_tokens,
                    refused: k.13 != 0,
                    span_id: k.0,
                    started_at: k.2,
                    trace_id: k.1,
                })
                .map_err(io)?;
        }
    }

    let mut blobs = Vec::new();
    if req.include_blobs {
        let mut out = BufWriter::new(std::fs::File::create(work.join("blobs.bin")).map_err(io)?);
        let wanted: Vec<String> = referenced.iter().map(|h| hex(h)).collect();
        for chunk in wanted.chunks(BLOB_PAGE) {
            for (hash, text) in store::blobs_by_hash(&mut snap, s.tenant, chunk).await? {
                out.write_all(text.as_bytes()).map_err(io)?;
                blobs.push((
                    BlobRef {
                        sha256: ev::sha256_hex(text.as_bytes()),
                        hash,
                    },
                    text.len() as u64,
                ));
            }
        }
        out.flush().map_err(io)?;
    }
    drop(snap);
    Ok(Data {
        traces: traces.finish().map_err(io)?,
        spans: spans.finish().map_err(io)?,
        blobs,
        total_cost,
        unpriced,
    })
}

#[allow(clippy::too_many_arguments)]
async fn write_pack(
    state: &AppState,
    req: &Request,
    id: i64,
    created_at: OffsetDateTime,
    data: &Data,
    index: Vec<BlobRef>,
    digests: &Digests,
    work: &Path,
    meta: &crate::extract::Meta,
) -> ApiResult<Pack> {
    let s = &req.scope;
    let public_hex = hex(state
        .part::<crate::evidence::EvidenceKey>()
        .0
        .verifying_key()
        .as_bytes());
    let manifest = Manifest {
        app_id: s.app_id.map(|a| a.to_string()),
        blob_count: index.len() as u64,
        blob_index: index,
        created_at: rfc3339(created_at),
        include_blobs: req.include_blobs,
        pack_id: id.to_string(),
        period_end: rfc3339(s.to),
        period_start: rfc3339(s.from),
        schema_version: ev::SCHEMA_VERSION,
        signing_public_hex: public_hex.clone(),
        span_count: data.spans.2,
        spans_sha256: data.spans.0.clone(),
        tenant_id: s.tenant.0.to_string(),
        total_cost_micro_eur: data.total_cost,
        trace_count: data.traces.2,
        traces_sha256: data.traces.0.clone(),
        unpriced_span_count: data.unpriced,
    };
    let manifest_bytes = manifest.to_bytes();
    let manifest_sha256 = ev::sha256_hex(&manifest_bytes);
    let signature = ev::sign_manifest(
        &state.part::<crate::evidence::EvidenceKey>().0,
        &manifest_bytes,
    );
    let final_path = pack_path(state, s.tenant, id);
    let dir = final_path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let part = final_path.with_extension("gz.part");
    let work = work.to_path_buf();
    let sizes: Vec<(String, u64)> = data
        .blobs
        .iter()
        .map(|(b, n)| (b.hash.clone(), *n))
        .collect();
    let (spans_len, traces_len) = (data.spans.1, data.traces.1);
    let mtime = created_at.unix_timestamp().max(0) as u64;
    let target = part.clone();
    let size = tokio::task::spawn_blocking(move || -> std::io::Result<u64> {
        use std::fs::File;
        use std::io::{BufReader, Read};
        std::fs::create_dir_all(&dir)?;
        let out = BufWriter::with_capacity(1 << 20, File::create(&target)?);
        let mut blobs_file = match sizes.is_empty() {
            true => None,
            false => Some(BufReader::new(File::open(work.join("blobs.bin"))?)),
        };
        let blobs = sizes.into_iter().map(move |(hash, len)| {
            let mut text = vec![0u8; len as usize];
            if let Some(f) = blobs_file.as_mut() {
                f.read_exact(&mut text)?;
            }
            Ok((
                hash,
                Section {
                    len,
                    reader: std::io::Cursor::new(text),
                },
            ))
        });
        let out = ev::write_bundle(
            out,
            mtime,
            &manifest_bytes,
            signature.as_bytes(),
            blobs,
            Section {
                len: spans_len,
                reader: BufReader::with_capacity(1 << 20, File::open(work.join(ev::SPANS))?),
            },
            Section {
                len: traces_len,
                reader: BufReader::with_capacity(1 << 20, File::open(work.join(ev::TRACES))?),
            },
        )?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(file.metadata()?.len())
    })
    .await
    .map_err(|e| ApiError::Internal(format!("evidence pack writer: {e}")))?
    .map_err(io)?;
    std::fs::rename(&part, &final_path).map_err(io)?;

    let mut tx = state.db.begin().await?;
    let entry = trusthub_fleet::append_log(
        &mut tx,
        s.tenant,
        "evidence_pack_created",
        &format!("evidence_pack:{id}"),
        &serde_json::json!({
            "pack_id": id.to_string(),
            "manifest_sha256": manifest_sha256,
            "signing_public_hex": public_hex,
            "app_id": s.app_id,
            "period_start": rfc3339(s.from),
            "period_end": rfc3339(s.to),
            "trace_count": data.traces.2,
            "span_count": data.spans.2,
            "blob_count": data.blobs.len(),
        }),
        created_at,
    )
    .await?;
    let finished = store::Finished {
        digests,
        trace_count: data.traces.2 as i64,
        span_count: data.spans.2 as i64,
        blob_count: data.blobs.len() as i64,
        total_cost_micro_eur: i64::try_from(data.total_cost).unwrap_or(i64::MAX),
        unpriced_span_count: data.unpriced as i64,
        manifest_sha256: &manifest_sha256,
        signing_public_hex: &public_hex,
        size_bytes: size as i64,
        transparency_seq: entry.seq,
    };
    store::finish(&mut tx, s.tenant, id, &finished).await?;
    let audit = meta.audit(
        trusthub_core::audit::EVIDENCE_PACK_CREATED,
        req.actor.clone(),
        format!("evidence_pack:{id}"),
        serde_json::json!({"manifest_sha256": manifest_sha256, "span_count": data.spans.2,
            "period_start": rfc3339(s.from), "period_end": rfc3339(s.to)}),
    );
    trusthub_store::audit::append(&mut tx, s.tenant, &audit, created_at).await?;
    let pack = store::get(&mut tx, s.tenant, id)
        .await?
        .ok_or_else(|| ApiError::Internal("evidence pack vanished".into()))?;
    tx.commit().await?;
    Ok(pack)
}

/// Deletes packs past their retention and reservations of builds that died (files first,
/// then records). Runs in housekeeping.
pub async fn purge(state: &AppState, tx: &mut Tx, now: OffsetDateTime) -> StoreResult<()> {
    for (tenant, id) in store::due_for_removal(tx, now, now - STALE_BUILD).await? {
        let tenant = TenantId(tenant);
        let path = pack_path(state, tenant, id);
        let mut kept = false;
        for p in [path.with_extension("gz.part"), path] {
            if let Err(e) = std::fs::remove_file(&p)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(path = %p.display(), error = %e, "cannot delete an evidence pack file");
                kept = true;
            }
        }
        if kept {
            continue;
        }
        store::delete(tx, tenant, id).await?;
        tracing::info!(pack_id = id, tenant = %tenant, "evidence pack removed after its retention");
    }
    Ok(())
}
