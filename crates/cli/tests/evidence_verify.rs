//! `trusthub evidence verify` (SPEC 7 last row, Appendix): the real binary exits 0 on a good
//! pack and 1 when one byte changed in any blob, spans.jsonl, traces.jsonl, manifest.json or
//! the signature, or when the pinned key differs; `--quiet` prints nothing.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use trusthub_core::evidence::{self as ev, BlobRef, Manifest, Section};

fn sha(b: &[u8]) -> String {
    ev::sha256_hex(b)
}

/// A pack as its files, in bundle order.
fn pack_files() -> (Vec<(String, Vec<u8>)>, String) {
    let key = ed25519_dalek::SigningKey::from_bytes(&[42u8; 32]);
    let traces = b"{\"trace_id\":\"t1\"}\n{\"trace_id\":\"t2\"}\n".to_vec();
    let spans = b"{\"span_id\":\"s1\"}\n".to_vec();
    let blob = b"redacted [EMAIL] content".to_vec();
    let public = trusthub_core::secret::hex(key.verifying_key().as_bytes());
    let manifest = Manifest {
        app_id: None,
        blob_count: 1,
        blob_index: vec![BlobRef {
            hash: sha(&blob),
            sha256: sha(&blob),
        }],
        created_at: "2026-11-22T10:00:00Z".into(),
        include_blobs: true,
        pack_id: "7".into(),
        period_end: "2026-12-01T00:00:00Z".into(),
        period_start: "2026-11-01T00:00:00Z".into(),
        schema_version: 1,
        signing_public_hex: public.clone(),
        span_count: 1,
        spans_sha256: sha(&spans),
        tenant_id: "00000000-0000-0000-0000-000000000007".into(),
        total_cost_micro_eur: 0,
        trace_count: 2,
        traces_sha256: sha(&traces),
        unpriced_span_count: 0,
    }
    .to_bytes();
    let sig = ev::sign_manifest(&key, &manifest).into_bytes();
    (
        vec![
            (format!("blobs/{}.txt", sha(&blob)), blob),
            ("manifest.json".into(), manifest),
            ("manifest.sig".into(), sig),
            ("spans.jsonl".into(), spans),
            ("traces.jsonl".into(), traces),
        ],
        public,
    )
}

type Blob = Section<std::io::Cursor<Vec<u8>>>;

/// Writes files as a bundle with the product's writer.
fn write(path: &Path, files: &[(String, Vec<u8>)]) {
    let sec = |b: &[u8]| Section {
        len: b.len() as u64,
        reader: std::io::Cursor::new(b.to_vec()),
    };
    let blobs: Vec<std::io::Result<(String, Blob)>> = files
        .iter()
        .filter(|(n, _)| n.starts_with("blobs/"))
        .map(|(n, b)| {
            Ok((
                n.trim_start_matches("blobs/")
                    .trim_end_matches(".txt")
                    .to_owned(),
                sec(b),
            ))
        })
        .collect();
    let get = |name: &str| {
        files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.clone())
            .expect("file")
    };
    let out = ev::write_bundle(
        Vec::new(),
        1_795_341_600,
        &get("manifest.json"),
        &get("manifest.sig"),
        blobs,
        sec(&get("spans.jsonl")),
        sec(&get("traces.jsonl")),
    )
    .expect("bundle");
    std::fs::write(path, out).expect("write");
}

fn verify(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trusthub"))
        .args(["evidence", "verify"])
        .args(args)
        .output()
        .expect("run trusthub");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_good_pack_exits_0_and_any_changed_byte_exits_1() {
    let dir = Dir(std::env::temp_dir().join(format!("th-ev-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).expect("dir");
    let (files, key) = pack_files();
    let good = dir.0.join("pack-7.tar.gz");
    write(&good, &files);
    let good_s = good.to_str().expect("utf-8");

    let (code, out) = verify(&[good_s]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("pack 7 verified"), "{out}");
    assert!(
        out.contains("key NOT pinned"),
        "an unpinned key is said: {out}"
    );
    let (code, out) = verify(&[good_s, "--expect-key", &key]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("signed by the pinned key"), "{out}");
    assert!(!out.contains("NOT pinned"), "{out}");
    let (code, out) = verify(&[good_s, "--quiet"]);
    assert_eq!((code, out.as_str()), (0, ""));

    let (code, out) = verify(&[good_s, "--expect-key", &"ab".repeat(32)]);
    assert_eq!(code, 1);
    assert!(out.contains("FAIL expected key"), "{out}");

    for (i, (name, _)) in files.iter().enumerate() {
        for at in [0usize, usize::MAX] {
            let mut bad = files.clone();
            let content = &mut bad[i].1;
            let pos = at.min(content.len() - 1);
            // Change one byte, keeping the signature base64 and the manifest's length.
            content[pos] = if content[pos] == b'A' { b'B' } else { b'A' };
            let path = dir.0.join(format!("bad-{i}-{pos}.tar.gz"));
            write(&path, &bad);
            let (code, out) = verify(&[path.to_str().expect("utf-8")]);
            assert_eq!(
                code, 1,
                "one changed byte in {name} at {pos} must fail:\n{out}"
            );
            assert!(out.contains("FAIL"), "{out}");
            let (code, out) = verify(&[path.to_str().expect("utf-8"), "-q"]);
            assert_eq!((code, out.as_str()), (1, ""));
        }
    }

    // A truncated file and a file that is no pack.
    let whole = std::fs::read(&good).expect("read");
    let cut = dir.0.join("cut.tar.gz");
    std::fs::write(&cut, &whole[..whole.len() - 40]).expect("write");
    assert_eq!(verify(&[cut.to_str().expect("u")]).0, 1);
    let junk = dir.0.join("junk.tar.gz");
    std::fs::write(&junk, b"hello").expect("write");
    assert_eq!(verify(&[junk.to_str().expect("u")]).0, 1);
    assert_eq!(verify(&["/nonexistent/pack.tar.gz"]).0, 1);

    // The bundle is a plain tar.gz any tool can open.
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(whole.as_slice())
        .read_to_end(&mut tar)
        .expect("gunzip");
    assert!(tar.len() > 5 * 512);
}
