//! JSON canonicalization (RFC 8785, JCS) and the hash-chained transparency log entries of
//! CONTRACT 5a: `entry_hash` = SHA-256 (hex) of the canonical JSON of `{seq, kind,
//! subject_ref, payload, prev_hash, created_at}`, `prev_hash` the previous entry's hash (64
//! zeros for the first).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt::Write;

/// The canonical form of a JSON value (RFC 8785): members sorted by their UTF-16 code units,
/// no whitespace, ECMAScript number formatting, minimal string escaping.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_value(out, &map[k]);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// ECMAScript `Number.prototype.toString` of a JSON number.
fn number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let x = n.as_f64().unwrap_or(0.0);
    if x == 0.0 {
        return "0".into();
    }
    // Shortest round-trip digits and exponent, from Rust's `{:e}` ("d.ddde-7").
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    let k = digits.len() as i32;
    let n = exp + 1; // position of the decimal point relative to the digits
    let sign = if x < 0.0 { "-" } else { "" };
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e = if e >= 0 {
            format!("+{e}")
        } else {
            e.to_string()
        };
        if k == 1 {
            format!("{digits}e{e}")
        } else {
            format!("{}.{}e{e}", &digits[..1], &digits[1..])
        }
    };
    format!("{sign}{body}")
}

/// `prev_hash` of the first entry.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A transparency-log entry (CONTRACT 5a).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// Position, from 1.
    pub seq: i64,
    /// What happened, e.g. `restart_result`, `remediation.auto_applied`.
    pub kind: String,
    /// What it is about.
    pub subject_ref: String,
    /// The facts.
    pub payload: Value,
    /// The previous entry's hash.
    pub prev_hash: String,
    /// RFC 3339.
    pub created_at: String,
    /// SHA-256 (hex) of the canonical JSON of the fields above.
    pub entry_hash: String,
}

/// The hash of an entry's content.
pub fn entry_hash(
    seq: i64,
    kind: &str,
    subject_ref: &str,
    payload: &Value,
    prev_hash: &str,
    created_at: &str,
) -> String {
    let body = serde_json::json!({
        "seq": seq, "kind": kind, "subject_ref": subject_ref, "payload": payload,
        "prev_hash": prev_hash, "created_at": created_at,
    });
    data_encoding::HEXLOWER.encode(&Sha256::digest(canonical_json(&body).as_bytes()))
}

/// Checks a chain from its first entry: every hash recomputes and links to the one before.
/// Returns the `seq` of the first bad entry.
pub fn verify_chain(entries: &[LogEntry]) -> Result<(), i64> {
    let mut prev = GENESIS_HASH.to_owned();
    for e in entries {
        let h = entry_hash(
            e.seq,
            &e.kind,
            &e.subject_ref,
            &e.payload,
            &e.prev_hash,
            &e.created_at,
        );
        if e.prev_hash != prev || e.entry_hash != h {
            return Err(e.seq);
        }
        prev = h;
    }
    Ok(())
}

/// Why a log does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    /// An entry's hash or link is wrong.
    #[error("entry {0}: its hash or its link to the previous entry does not match")]
    Chain(i64),
    /// The entries are not 1, 2, 3, ...
    #[error("entry {0}: sequence numbers must run 1, 2, 3, ... without gaps")]
    Gap(i64),
    /// The head names another entry than the last one.
    #[error("the signed head (seq {0}) does not match the last entry")]
    Head(i64),
    /// The public key or signature cannot be read.
    #[error("the head's public key or signature is malformed")]
    Malformed,
    /// The signature does not verify.
    #[error("the head's signature does not verify")]
    Signature,
    /// The key is not the expected one.
    #[error("the log is signed by {0}, not by the expected key")]
    UnexpectedKey(String),
}

/// Checks a whole log offline (CONTRACT 5a): the chain from genesis, the sequence numbers,
/// the head naming the last entry, and the head's Ed25519 signature over the `entry_hash` hex
/// text by `public_key_hex`.
pub fn verify_log(
    entries: &[LogEntry],
    head_seq: i64,
    head_hash: &str,
    signature_b64: &str,
    public_key_hex: &str,
) -> Result<(), LogError> {
    for (i, e) in entries.iter().enumerate() {
        if e.seq != i as i64 + 1 {
            return Err(LogError::Gap(e.seq));
        }
    }
    verify_chain(entries).map_err(LogError::Chain)?;
    let (last_seq, last_hash) = entries
        .last()
        .map_or((0, GENESIS_HASH), |e| (e.seq, e.entry_hash.as_str()));
    if head_seq != last_seq || head_hash != last_hash {
        return Err(LogError::Head(head_seq));
    }
    let key = crate::keys::ed25519_public(public_key_hex).ok_or(LogError::Malformed)?;
    let sig = data_encoding::BASE64
        .decode(signature_b64.as_bytes())
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
        .ok_or(LogError::Malformed)?;
    key.verify_strict(
        head_hash.as_bytes(),
        &ed25519_dalek::Signature::from_bytes(&sig),
    )
    .map_err(|_| LogError::Signature)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// RFC 8785 section 3.2.2 sample and appendix B number examples.
    #[test]
    fn rfc8785_sample_and_numbers() {
        let v: Value = serde_json::from_str(
            r#"{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
                "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
                "literals": [null, true, false]}"#,
        )
        .expect("json");
        assert_eq!(
            canonical_json(&v),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
        for (x, want) in [
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (-0.5, "-0.5"),
            (123.0, "123"),
        ] {
            assert_eq!(
                number(&serde_json::Number::from_f64(x).expect("finite")),
                want,
                "{x}"
            );
        }
    }

    #[test]
    fn rfc8785_keys_sort_by_utf16_code_units() {
        // U+1F600 is D83D DE00 in UTF-16 and F0 9F 98 80 in UTF-8; U+FB33 is FB33 and EF AC B3.
        // UTF-16 order puts U+1F600 first, UTF-8 (byte) order would put U+FB33 first.
        let v = json!({"\u{1F600}": 1, "\u{FB33}": 2, "a": 3});
        assert_eq!(
            canonical_json(&v),
            "{\"a\":3,\"\u{1F600}\":1,\"\u{FB33}\":2}"
        );
    }

    #[test]
    fn contract_5a_chain_links_and_detects_any_change() {
        let mut entries = Vec::new();
        let mut prev = GENESIS_HASH.to_owned();
        for seq in 1..=3 {
            let payload = json!({"exit_code": seq - 1, "jti": format!("n{seq}")});
            let created_at = format!("2026-11-21T09:3{seq}:00Z");
            let h = entry_hash(seq, "restart_result", "app:7", &payload, &prev, &created_at);
            entries.push(LogEntry {
                seq,
                kind: "restart_result".into(),
                subject_ref: "app:7".into(),
                payload,
                prev_hash: prev.clone(),
                created_at,
                entry_hash: h.clone(),
            });
            prev = h;
        }
        assert_eq!(verify_chain(&entries), Ok(()));
        let mut tampered = entries.clone();
        tampered[1].payload = json!({"exit_code": 0, "jti": "n2"});
        assert_eq!(verify_chain(&tampered), Err(2));
        let mut dropped = entries.clone();
        dropped.remove(1);
        assert_eq!(verify_chain(&dropped), Err(3));
    }
}
