//! Evidence packs (SPEC 2.10 and its Appendix; CONTRACT 8): the manifest, the JSON lines, the
//! deterministic `tar.gz` layout, the signature, and the streaming verifier that needs no
//! account and no network.
//!
//! Determinism: every JSON document here is written from a struct whose fields are declared in
//! alphabetical order, compact (serde_json's writer: sorted keys, no insignificant
//! whitespace); tar entries are in sorted path order (`blobs/…`, `manifest.json`,
//! `manifest.sig`, `spans.jsonl`, `traces.jsonl`), ustar headers with mode 0644, uid/gid 0,
//! empty owner names and mtime = `created_at`; gzip has no file name and mtime 0. So the bytes
//! are a pure function of the inputs (the compressed bytes also of the deflate
//! implementation, which is why `manifest_sha256` is the identity of a pack, not the file's
//! hash).

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};

/// The manifest format version (SPEC 9.3).
pub const SCHEMA_VERSION: u32 = 1;
/// Path of the manifest in the bundle.
pub const MANIFEST: &str = "manifest.json";
/// Path of the signature in the bundle.
pub const SIGNATURE: &str = "manifest.sig";
/// Path of the trace lines in the bundle.
pub const TRACES: &str = "traces.jsonl";
/// Path of the span lines in the bundle.
pub const SPANS: &str = "spans.jsonl";
/// Largest manifest the verifier reads into memory (its blob index grows with the pack).
const MAX_MANIFEST: u64 = 512 * 1024 * 1024;
/// gzip level of every bundle (fixed, with the zlib-rs backend pinned in Cargo.lock: part of
/// what makes bundles reproducible). Level 3 makes the same size as 6 on span lines at twice
/// the speed (bench/RESULTS.md).
const GZIP_LEVEL: u32 = 3;

/// One content blob of the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobRef {
    /// The content id (the SHA-256 the sender computed of the redacted text); the file is
    /// `blobs/<hash>.txt`.
    pub hash: String,
    /// SHA-256 (hex) of the file's bytes.
    pub sha256: String,
}

/// `manifest.json` (SPEC 2.10). Fields in alphabetical order: serialized as declared, that
/// gives sorted keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// One app of the tenant, or null for all its apps.
    pub app_id: Option<String>,
    /// Unique content blobs in the bundle.
    pub blob_count: u64,
    /// One entry per blob, sorted by hash.
    pub blob_index: Vec<BlobRef>,
    /// Generation time, RFC 3339.
    pub created_at: String,
    /// Whether redacted content was bundled.
    pub include_blobs: bool,
    /// Numeric id, as a string.
    pub pack_id: String,
    /// End of the window (exclusive), RFC 3339.
    pub period_end: String,
    /// Start of the window (inclusive), RFC 3339.
    pub period_start: String,
    /// Format version.
    pub schema_version: u32,
    /// Ed25519 public key (hex) whose signature is `manifest.sig`.
    pub signing_public_hex: String,
    /// Lines of `spans.jsonl`.
    pub span_count: u64,
    /// SHA-256 (hex) of `spans.jsonl`.
    pub spans_sha256: String,
    /// Owner.
    pub tenant_id: String,
    /// Sum of the priced spans' costs, micro-EUR.
    pub total_cost_micro_eur: u64,
    /// Lines of `traces.jsonl`.
    pub trace_count: u64,
    /// SHA-256 (hex) of `traces.jsonl`.
    pub traces_sha256: String,
    /// Spans of models with no price on their date (not in the total, never costed 0).
    pub unpriced_span_count: u64,
}

impl Manifest {
    /// The exact bytes of `manifest.json`.
    pub fn to_bytes(&self) -> Vec<u8> {
        // A struct of strings, numbers and vectors always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// One line of `traces.jsonl`. Fields in alphabetical order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceLine {
    /// App, or null.
    pub app_id: Option<String>,
    /// End, RFC 3339.
    pub ended_at: String,
    /// Name.
    pub name: String,
    /// Start, RFC 3339.
    pub started_at: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Team.
    pub team: String,
    /// Sender's id.
    pub trace_id: String,
}

/// One line of `spans.jsonl` (an LLM call). Fields in alphabetical order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpanLine {
    /// Input read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input written to the prompt cache.
    pub cache_write_tokens: u64,
    /// All output tokens.
    pub completion_tokens: u64,
    /// SHA-256 of the redacted content, or null.
    pub content_sha256: Option<String>,
    /// Micro-EUR at the price in force on the span's date; null when unpriced.
    pub cost_micro_eur: Option<u64>,
    /// Milliseconds.
    pub latency_ms: u64,
    /// Model.
    pub model: String,
    /// SHA-256 of the redacted prompt.
    pub prompt_sha256: String,
    /// All input tokens.
    pub prompt_tokens: u64,
    /// Provider, or null.
    pub provider: Option<String>,
    /// Reasoning output.
    pub reasoning_tokens: u64,
    /// The model refused.
    pub refused: bool,
    /// Sender's id.
    pub span_id: String,
    /// Start (of its trace), RFC 3339.
    pub started_at: String,
    /// Its trace.
    pub trace_id: String,
}

/// Writes one compact JSON line (`\n`-terminated).
pub fn write_line<T: Serialize>(out: &mut impl Write, line: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *out, line).map_err(io::Error::other)?;
    out.write_all(b"\n")
}

/// SHA-256 (hex) of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::secret::hex(&Sha256::digest(bytes))
}

/// The content of `manifest.sig`: base64 Ed25519 signature over the manifest bytes.
pub fn sign_manifest(key: &SigningKey, manifest: &[u8]) -> String {
    data_encoding::BASE64.encode(&key.sign(manifest).to_bytes())
}

/// The published fingerprint of a public key: SHA-256 (hex) of its 32 bytes.
pub fn key_fingerprint(public: &VerifyingKey) -> String {
    sha256_hex(public.as_bytes())
}

/// A section of the bundle given as a reader of known length.
#[derive(Debug)]
pub struct Section<R> {
    /// Its length in bytes.
    pub len: u64,
    /// Its bytes.
    pub reader: R,
}

/// Writes the bundle. `blobs` must come sorted by hash (the index order) with the exact
/// bytes the index hashed. Returns `out` after the gzip trailer.
pub fn write_bundle<W: Write, B: Read, S: Read, T: Read>(
    out: W,
    created_at_unix: u64,
    manifest: &[u8],
    signature: &[u8],
    blobs: impl IntoIterator<Item = io::Result<(String, Section<B>)>>,
    spans: Section<S>,
    traces: Section<T>,
) -> io::Result<W> {
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(out, flate2::Compression::new(GZIP_LEVEL));
    let mut tar = tar::Builder::new(gz);
    let mut previous: Option<String> = None;
    for blob in blobs {
        let (hash, s) = blob?;
        if previous.as_deref().is_some_and(|p| p >= hash.as_str()) {
            return Err(io::Error::other(
                "blobs must be sorted by hash, without repeats",
            ));
        }
        append(&mut tar, &format!("blobs/{hash}.txt"), created_at_unix, s)?;
        previous = Some(hash);
    }
    append(&mut tar, MANIFEST, created_at_unix, bytes(manifest))?;
    append(&mut tar, SIGNATURE, created_at_unix, bytes(signature))?;
    append(&mut tar, SPANS, created_at_unix, spans)?;
    append(&mut tar, TRACES, created_at_unix, traces)?;
    tar.into_inner()?.finish()
}

fn bytes(b: &[u8]) -> Section<&[u8]> {
    Section {
        len: b.len() as u64,
        reader: b,
    }
}

fn append<W: Write, R: Read>(
    tar: &mut tar::Builder<W>,
    path: &str,
    mtime: u64,
    s: Section<R>,
) -> io::Result<()> {
    let mut h = tar::Header::new_ustar();
    h.set_path(path)?;
    h.set_size(s.len);
    h.set_mode(0o644);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(mtime);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_username("")?;
    h.set_groupname("")?;
    h.set_cksum();
    // A reader that yields fewer bytes than announced would corrupt the archive: refuse it.
    let mut counted = Counted {
        inner: s.reader.take(s.len),
        n: 0,
    };
    tar.append(&h, &mut counted)?;
    if counted.n != s.len {
        return Err(io::Error::other(format!(
            "{path}: fewer bytes than its length"
        )));
    }
    Ok(())
}

struct Counted<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n += k as u64;
        Ok(k)
    }
}

/// One verification step and its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// Whether it holds.
    pub ok: bool,
    /// What was found.
    pub detail: String,
}

/// Everything the verifier found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The checks, in order.
    pub checks: Vec<Check>,
    /// The manifest, when it could be read.
    pub manifest: Option<Manifest>,
    /// Bytes hashed (every entry's content).
    pub bytes_hashed: u64,
}

impl Report {
    /// True when every check holds (and there was at least one).
    pub fn ok(&self) -> bool {
        !self.checks.is_empty() && self.checks.iter().all(|c| c.ok)
    }

    fn check(&mut self, name: impl Into<String>, ok: bool, detail: impl Into<String>) {
        self.checks.push(Check {
            name: name.into(),
            ok,
            detail: detail.into(),
        });
    }
}

/// What the verifier learned of one entry while streaming it.
struct Seen {
    sha256: String,
    lines: u64,
}

/// Verifies a gzip-compressed bundle (see [`verify_tar`]).
pub fn verify_gz(r: impl Read, expect_key: Option<&str>) -> Report {
    verify_tar(flate2::read::GzDecoder::new(r), expect_key)
}

/// Verifies an uncompressed bundle stream in one pass (SPEC Appendix): the Ed25519
/// signature over the manifest bytes with the manifest's key (and that key against
/// `expect_key`, hex, when given), SHA-256 and line counts of `traces.jsonl` and
/// `spans.jsonl`, SHA-256 of every indexed blob, and that the bundle holds nothing unlisted.
pub fn verify_tar(r: impl Read, expect_key: Option<&str>) -> Report {
    let mut report = Report::default();
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    let mut manifest_bytes: Option<Vec<u8>> = None;
    let mut signature: Option<Vec<u8>> = None;
    let mut archive = tar::Archive::new(r);
    let entries = match archive.entries() {
        Ok(e) => e,
        Err(e) => {
            report.check("archive", false, format!("not a readable tar.gz: {e}"));
            return report;
        }
    };
    let mut buf = vec![0u8; 256 * 1024];
    for entry in entries {
        let mut entry = match entry {
            Ok(e) => e,
            Err(e) => {
                report.check("archive", false, format!("not a readable tar.gz: {e}"));
                return report;
            }
        };
        let path = match entry.path() {
            Ok(p) => p.to_string_lossy().into_owned(),
            Err(e) => {
                report.check("archive", false, format!("unreadable entry name: {e}"));
                return report;
            }
        };
        if seen.contains_key(&path) {
            report.check("contents", false, format!("{path} appears twice"));
            return report;
        }
        let keep = path == MANIFEST || path == SIGNATURE;
        if keep && entry.size() > MAX_MANIFEST {
            report.check("manifest", false, format!("{path} is implausibly large"));
            return report;
        }
        let mut kept = Vec::new();
        let mut h = Sha256::new();
        let mut lines = 0u64;
        loop {
            let n = match entry.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    report.check("archive", false, format!("{path}: {e}"));
                    return report;
                }
            };
            let chunk = &buf[..n];
            h.update(chunk);
            lines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
            if keep {
                kept.extend_from_slice(chunk);
            }
            report.bytes_hashed += n as u64;
        }
        if path == MANIFEST {
            manifest_bytes = Some(kept);
        } else if path == SIGNATURE {
            signature = Some(kept);
        }
        seen.insert(
            path,
            Seen {
                sha256: crate::secret::hex(&h.finalize()),
                lines,
            },
        );
    }
    report.check(
        "archive",
        true,
        format!("{} entries, {} bytes", seen.len(), report.bytes_hashed),
    );
    let Some(manifest_bytes) = manifest_bytes else {
        report.check("manifest", false, "manifest.json is missing");
        return report;
    };
    let manifest: Manifest = match serde_json::from_slice(&manifest_bytes) {
        Ok(m) => m,
        Err(e) => {
            report.check(
                "manifest",
                false,
                format!("manifest.json does not parse: {e}"),
            );
            return report;
        }
    };
    report.check(
        "manifest",
        manifest.schema_version == SCHEMA_VERSION,
        format!(
            "pack {} of tenant {}, schema_version {}",
            manifest.pack_id, manifest.tenant_id, manifest.schema_version
        ),
    );
    check_signature(
        &mut report,
        &manifest,
        &manifest_bytes,
        signature.as_deref(),
    );
    if let Some(expected) = expect_key {
        let ok = expected
            .trim()
            .eq_ignore_ascii_case(&manifest.signing_public_hex);
        report.check(
            "expected key",
            ok,
            if ok {
                "the manifest's key is the pinned key".to_owned()
            } else {
                format!(
                    "the manifest is signed by {}, not by the pinned key {}",
                    manifest.signing_public_hex,
                    expected.trim()
                )
            },
        );
    }
    for (path, want, count) in [
        (TRACES, &manifest.traces_sha256, manifest.trace_count),
        (SPANS, &manifest.spans_sha256, manifest.span_count),
    ] {
        match seen.get(path) {
            None => report.check(path, false, format!("{path} is missing")),
            Some(s) if &s.sha256 != want => report.check(
                path,
                false,
                format!("SHA-256 is {}, the manifest says {want}", s.sha256),
            ),
            Some(s) if s.lines != count => report.check(
                path,
                false,
                format!("{} lines, the manifest says {count}", s.lines),
            ),
            Some(s) => report.check(
                path,
                true,
                format!("{} lines, SHA-256 {}", s.lines, s.sha256),
            ),
        }
    }
    let mut bad_blobs = 0;
    for b in &manifest.blob_index {
        let path = format!("blobs/{}.txt", b.hash);
        let problem = match seen.get(&path) {
            None => Some(format!("{path} is missing")),
            Some(s) if s.sha256 != b.sha256 => Some(format!(
                "SHA-256 is {}, the manifest says {}",
                s.sha256, b.sha256
            )),
            Some(_) if b.sha256 != b.hash => Some(format!(
                "content id {} differs from its SHA-256 {}",
                b.hash, b.sha256
            )),
            Some(_) => None,
        };
        if let Some(p) = problem {
            bad_blobs += 1;
            report.check(format!("blob {}", b.hash), false, p);
        }
    }
    if bad_blobs == 0 {
        let counted = manifest.blob_index.len() as u64 == manifest.blob_count;
        report.check(
            "blobs",
            counted,
            if counted {
                format!("{} blobs match", manifest.blob_count)
            } else {
                format!(
                    "blob_count is {}, the index lists {}",
                    manifest.blob_count,
                    manifest.blob_index.len()
                )
            },
        );
    }
    let listed: std::collections::HashSet<String> = manifest
        .blob_index
        .iter()
        .map(|b| format!("blobs/{}.txt", b.hash))
        .chain([MANIFEST, SIGNATURE, TRACES, SPANS].map(String::from))
        .collect();
    let unlisted: Vec<&String> = seen.keys().filter(|p| !listed.contains(*p)).collect();
    report.check(
        "contents",
        unlisted.is_empty(),
        if unlisted.is_empty() {
            "nothing unlisted".to_owned()
        } else {
            format!("files the manifest does not list: {unlisted:?}")
        },
    );
    report.manifest = Some(manifest);
    report
}

fn check_signature(report: &mut Report, m: &Manifest, manifest: &[u8], sig: Option<&[u8]>) {
    let Some(sig) = sig else {
        report.check("signature", false, "manifest.sig is missing");
        return;
    };
    let key = data_encoding::HEXLOWER_PERMISSIVE
        .decode(m.signing_public_hex.as_bytes())
        .ok()
        .and_then(|k| <[u8; 32]>::try_from(k).ok())
        .and_then(|k| VerifyingKey::from_bytes(&k).ok());
    let Some(key) = key else {
        report.check(
            "signature",
            false,
            "signing_public_hex is not an Ed25519 public key",
        );
        return;
    };
    let text = String::from_utf8_lossy(sig);
    let signature = data_encoding::BASE64
        .decode(text.trim().as_bytes())
        .ok()
        .and_then(|s| <[u8; 64]>::try_from(s).ok())
        .map(|s| Signature::from_bytes(&s));
    let Some(signature) = signature else {
        report.check(
            "signature",
            false,
            "manifest.sig is not a base64 Ed25519 signature",
        );
        return;
    };
    match key.verify_strict(manifest, &signature) {
        Ok(()) => report.check(
            "signature",
            true,
            format!(
                "valid Ed25519 signature by key fingerprint {}",
                key_fingerprint(&key)
            ),
        ),
        Err(_) => report.check(
            "signature",
            false,
            "manifest.sig is not a valid signature of manifest.json by the manifest's key",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[7u8; 32])
    }

    struct Fixture {
        manifest: Manifest,
        traces: Vec<u8>,
        spans: Vec<u8>,
        blobs: Vec<(String, Vec<u8>)>,
    }

    fn fixture() -> Fixture {
        let mut traces = Vec::new();
        write_line(
            &mut traces,
            &TraceLine {
                app_id: None,
                ended_at: "2026-11-05T08:00:02Z".into(),
                name: "answer".into(),
                started_at: "2026-11-05T08:00:00Z".into(),
                tags: vec!["team:search".into()],
                team: "search".into(),
                trace_id: "t1".into(),
            },
        )
        .expect("test");
        let text = b"hello [EMAIL]".to_vec();
        let hash = sha256_hex(&text);
        let mut spans = Vec::new();
        for (id, model, cost) in [("s1", "gpt-4o", Some(3910)), ("s2", "mystery", None)] {
            write_line(
                &mut spans,
                &SpanLine {
                    cache_read_tokens: 0,
                    cache_write_tokens: 0,
                    completion_tokens: 200,
                    content_sha256: Some(hash.clone()),
                    cost_micro_eur: cost,
                    latency_ms: 840,
                    model: model.into(),
                    prompt_sha256: "ab".repeat(32),
                    prompt_tokens: 900,
                    provider: None,
                    reasoning_tokens: 0,
                    refused: false,
                    span_id: id.into(),
                    started_at: "2026-11-05T08:00:00Z".into(),
                    trace_id: "t1".into(),
                },
            )
            .expect("test");
        }
        let manifest = Manifest {
            app_id: None,
            blob_count: 1,
            blob_index: vec![BlobRef {
                hash: hash.clone(),
                sha256: hash.clone(),
            }],
            created_at: "2026-11-22T10:00:00Z".into(),
            include_blobs: true,
            pack_id: "1".into(),
            period_end: "2026-12-01T00:00:00Z".into(),
            period_start: "2026-11-01T00:00:00Z".into(),
            schema_version: SCHEMA_VERSION,
            signing_public_hex: crate::secret::hex(key().verifying_key().as_bytes()),
            span_count: 2,
            spans_sha256: sha256_hex(&spans),
            tenant_id: "00000000-0000-0000-0000-000000000001".into(),
            total_cost_micro_eur: 3910,
            trace_count: 1,
            traces_sha256: sha256_hex(&traces),
            unpriced_span_count: 1,
        };
        Fixture {
            manifest,
            traces,
            spans,
            blobs: vec![(hash, text)],
        }
    }

    fn bundle(f: &Fixture) -> Vec<u8> {
        let m = f.manifest.to_bytes();
        let sig = sign_manifest(&key(), &m);
        write_bundle(
            Vec::new(),
            1_795_341_600,
            &m,
            sig.as_bytes(),
            f.blobs.iter().map(|(h, b)| {
                Ok((
                    h.clone(),
                    Section {
                        len: b.len() as u64,
                        reader: b.as_slice(),
                    },
                ))
            }),
            Section {
                len: f.spans.len() as u64,
                reader: f.spans.as_slice(),
            },
            Section {
                len: f.traces.len() as u64,
                reader: f.traces.as_slice(),
            },
        )
        .expect("test")
    }

    fn gunzip(b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(b)
            .read_to_end(&mut out)
            .expect("test");
        out
    }

    #[test]
    fn contract_8_manifest_has_sorted_keys_and_no_whitespace_golden() {
        let f = fixture();
        let m = String::from_utf8(f.manifest.to_bytes()).expect("test");
        let h = &f.manifest.blob_index[0].hash;
        let golden = format!(
            concat!(
                r#"{{"app_id":null,"blob_count":1,"blob_index":[{{"hash":"{h}","sha256":"{h}"}}],"#,
                r#""created_at":"2026-11-22T10:00:00Z","include_blobs":true,"pack_id":"1","#,
                r#""period_end":"2026-12-01T00:00:00Z","period_start":"2026-11-01T00:00:00Z","#,
                r#""schema_version":1,"signing_public_hex":"{k}","span_count":2,"spans_sha256":"{s}","#,
                r#""tenant_id":"00000000-0000-0000-0000-000000000001","total_cost_micro_eur":3910,"#,
                r#""trace_count":1,"traces_sha256":"{t}","unpriced_span_count":1}}"#
            ),
            h = h,
            k = f.manifest.signing_public_hex,
            s = f.manifest.spans_sha256,
            t = f.manifest.traces_sha256
        );
        assert_eq!(m, golden);
        let line = std::str::from_utf8(&f.traces).expect("test");
        assert_eq!(
            line,
            "{\"app_id\":null,\"ended_at\":\"2026-11-05T08:00:02Z\",\"name\":\"answer\",\"started_at\":\"2026-11-05T08:00:00Z\",\"tags\":[\"team:search\"],\"team\":\"search\",\"trace_id\":\"t1\"}\n"
        );
        assert!(std::str::from_utf8(&f.spans).expect("test").starts_with(
            "{\"cache_read_tokens\":0,\"cache_write_tokens\":0,\"completion_tokens\":200,\"content_sha256\":\""
        ));
    }

    #[test]
    fn contract_8_bundle_layout_is_byte_identical_golden() {
        let f = fixture();
        let a = bundle(&f);
        let b = bundle(&f);
        assert_eq!(a, b, "same inputs, same bytes");
        // gzip: no name flag, mtime 0.
        assert_eq!(&a[..4], &[0x1f, 0x8b, 8, 0]);
        assert_eq!(&a[4..8], &[0, 0, 0, 0]);
        let tar = gunzip(&a);
        // The layout (tar bytes) does not depend on the deflate implementation: pin it.
        assert_eq!(
            sha256_hex(&tar),
            "6ec538c8c40b686298b70dce3f6c48680f6b27662caec3dfe78d34e7854b45dc"
        );
        // The compressed bytes depend on the deflate backend and level, both pinned (Cargo.lock,
        // GZIP_LEVEL): an upgrade that changes them must be a deliberate change.
        assert_eq!(
            sha256_hex(&a),
            "7bc6a6f257f2c03c84657d7a30452374355008217af996c4ad52f65cfb2efee5"
        );
        let mut names = Vec::new();
        for e in tar::Archive::new(tar.as_slice()).entries().expect("test") {
            let e = e.expect("test");
            let h = e.header();
            assert_eq!(h.mode().expect("test"), 0o644);
            assert_eq!((h.uid().expect("test"), h.gid().expect("test")), (0, 0));
            assert_eq!(h.mtime().expect("test"), 1_795_341_600);
            names.push(e.path().expect("test").to_string_lossy().into_owned());
        }
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert_eq!(names.len(), 5);
    }

    #[test]
    fn appendix_a_good_bundle_verifies() {
        let f = fixture();
        let r = verify_gz(bundle(&f).as_slice(), None);
        assert!(r.ok(), "{:?}", r.checks);
        let key = f.manifest.signing_public_hex.clone();
        assert!(verify_gz(bundle(&f).as_slice(), Some(&key)).ok());
        let other = crate::secret::hex(
            SigningKey::from_bytes(&[8u8; 32])
                .verifying_key()
                .as_bytes(),
        );
        let r = verify_gz(bundle(&f).as_slice(), Some(&other));
        assert!(!r.ok());
        assert!(r.checks.iter().any(|c| c.name == "expected key" && !c.ok));
    }

    #[test]
    fn appendix_a_one_changed_byte_anywhere_fails() {
        let f = fixture();
        let tar = gunzip(&bundle(&f));
        // Flip one byte inside the content of every entry in turn (tar stream offsets).
        let mut targets = Vec::new();
        for e in tar::Archive::new(tar.as_slice()).entries().expect("test") {
            let e = e.expect("test");
            let start = e.raw_file_position() as usize;
            targets.push((
                e.path().expect("test").to_string_lossy().into_owned(),
                start,
            ));
        }
        assert_eq!(targets.len(), 5);
        for (name, start) in targets {
            let mut bad = tar.clone();
            bad[start] ^= 0x01;
            let r = verify_tar(bad.as_slice(), None);
            assert!(!r.ok(), "a changed byte in {name} must fail");
        }
    }

    #[test]
    fn appendix_a_missing_or_extra_files_and_garbage_fail() {
        let f = fixture();
        let mut g = fixture();
        g.blobs.clear();
        let r = verify_gz(bundle(&g).as_slice(), None);
        assert!(!r.ok());
        assert!(
            r.checks
                .iter()
                .any(|c| c.name.starts_with("blob ") && !c.ok)
        );
        let mut g = fixture();
        g.blobs.push(("f".repeat(64), b"x".to_vec()));
        assert!(!verify_gz(bundle(&g).as_slice(), None).ok());
        assert!(!verify_gz(&b"not a pack"[..], None).ok());
        let whole = bundle(&f);
        assert!(!verify_gz(&whole[..whole.len() / 2], None).ok());
    }
}
