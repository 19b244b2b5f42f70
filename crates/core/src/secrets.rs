//! Secrets taken out of text before it goes to a language model (CONTRACT 30), beside the
//! personal data [`crate::redact`] takes out: the values of secret-named keys (`password`,
//! `db_pass`, `api_key`, `token`, `auth`, … in `k=v`, `k: v` and JSON forms), the values of
//! `Authorization` headers, URL userinfo, PEM blocks, JWTs, AWS access key ids, and hex or
//! base64 runs of 32 characters or more. Each becomes [`SECRET`]. Hand-written scanners like
//! [`crate::redact`]: a path, a UUID, a version or an ordinary word stays as it is.

/// The marker a secret becomes.
pub const SECRET: &str = "[SECRET]";

/// `text` with every secret replaced by [`SECRET`].
pub fn secrets(text: &str) -> String {
    let text = pem_blocks(text);
    let text = userinfo(&text);
    let text = key_values(&text);
    token_runs(&text)
}

/// `-----BEGIN …-----` to the matching `-----END …-----` (or the end of the text).
fn pem_blocks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        out.push_str(&rest[..start]);
        out.push_str(SECRET);
        let after = &rest[start + 11..];
        rest = match after.find("-----END ") {
            Some(end) => {
                let tail = &after[end + 9..];
                match tail.find("-----") {
                    Some(close) => &tail[close + 5..],
                    None => "",
                }
            }
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// `scheme://user:password@host` → `scheme://[SECRET]@host`.
fn userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c.is_whitespace() || "/?#\"'<>`".contains(c))
            .unwrap_or(tail.len());
        match tail[..end].rfind('@') {
            Some(sep) => {
                out.push_str(SECRET);
                rest = &tail[sep..];
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// Whether a key names a secret: its letters (case, `_`, `-` and `.` aside) hold a secret's
/// name, or one of its parts is a short one (`pass`, `pwd`, `auth`, `pw`).
pub fn secret_key(key: &str) -> bool {
    const LONG: [&str; 12] = [
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "apikey",
        "accesskey",
        "privatekey",
        "credential",
        "authorization",
        "sessionkey",
        "signature",
    ];
    const SHORT: [&str; 4] = ["pass", "pwd", "pw", "auth"];
    let lower = key.to_ascii_lowercase();
    let squeezed: String = lower
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let parts: Vec<&str> = lower.split(['_', '-', '.']).collect();
    LONG.iter().any(|l| squeezed.contains(l))
        || parts.iter().any(|p| SHORT.contains(p))
        // `ssh_key`, `private-key`; a bare `key` is an ordinary word.
        || (parts.len() > 1 && parts.last() == Some(&"key"))
}

fn key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"_-.".contains(&c)
}

/// `key=value`, `key: value`, `"key": "value"`, `key => value` with a secret-named key: the
/// value replaced. An `Authorization` header's value runs to the end of its line.
fn key_values(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if !key_char(b[i]) || (i > 0 && key_char(b[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && key_char(b[i]) {
            i += 1;
        }
        let key = &text[start..i];
        // A quoted key closes its quote; then spaces, the separator, spaces, a quote.
        let mut j = i;
        if j < b.len() && (b[j] == b'"' || b[j] == b'\'') && start > 0 && b[start - 1] == b[j] {
            j += 1;
        }
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        let sep = match b.get(j) {
            Some(b'=') if b.get(j + 1) == Some(&b'>') => 2,
            Some(b'=') | Some(b':') => 1,
            _ => 0,
        };
        if sep == 0 || !secret_key(key) || (b[j] == b':' && b.get(j + 1) == Some(&b'/')) {
            continue;
        }
        j += sep;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        let header = key.eq_ignore_ascii_case("authorization")
            || key.eq_ignore_ascii_case("proxy-authorization");
        let (v_start, v_end) = match b.get(j) {
            Some(&q @ (b'"' | b'\'')) => {
                let mut k = j + 1;
                while k < b.len() && b[k] != q {
                    k += if b[k] == b'\\' { 2 } else { 1 };
                }
                (j + 1, k.min(b.len()))
            }
            _ if header => {
                let end = text[j..].find(['\n', '\r']).map_or(b.len(), |e| j + e);
                (j, end)
            }
            _ => {
                let mut k = j;
                while k < b.len() && !b[k].is_ascii_whitespace() && !b",;&)]}".contains(&b[k]) {
                    k += 1;
                }
                (j, k)
            }
        };
        if v_end > v_start {
            out.push_str(&text[copied..v_start]);
            out.push_str(SECRET);
            copied = v_end;
        }
        i = v_end.max(i);
    }
    out.push_str(&text[copied..]);
    out
}

fn b64_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"+/=_-".contains(&c)
}

/// JWTs, AWS access key ids, hex runs of 32+ and mixed base64 runs of 32+ characters.
fn token_runs(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if !(b64_char(b[i]) || b[i] == b'.') || (i > 0 && (b64_char(b[i - 1]) || b[i - 1] == b'.'))
        {
            i += 1;
            continue;
        }
        // A run of token characters, dots included (a JWT's parts).
        let start = i;
        while i < b.len() && (b64_char(b[i]) || b[i] == b'.') {
            i += 1;
        }
        let run = &text[start..i];
        let mut spans: Vec<(usize, usize)> = Vec::new();
        if run.starts_with("eyJ") && run.matches('.').count() == 2 && run.len() >= 24 {
            spans.push((start, i));
        } else {
            // Without dots: each dot-free piece on its own.
            let mut at = start;
            for piece in run.split('.') {
                if secret_piece(piece) {
                    spans.push((at, at + piece.len()));
                }
                at += piece.len() + 1;
            }
        }
        for (s, e) in spans {
            out.push_str(&text[copied..s]);
            out.push_str(SECRET);
            copied = e;
        }
    }
    out.push_str(&text[copied..]);
    out
}

fn secret_piece(p: &str) -> bool {
    let b = p.as_bytes();
    let aws_id = b.len() == 20
        && (p.starts_with("AKIA") || p.starts_with("ASIA"))
        && b.iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if aws_id {
        return true;
    }
    if b.len() < 32 {
        return false;
    }
    if b.iter().all(u8::is_ascii_hexdigit) {
        return true;
    }
    // A base64 run mixes cases and digits; a UUID or a word joined with hyphens does not,
    // and a path (it starts with `/`) only where one of its parts is such a run itself.
    let mixed = |b: &[u8]| {
        b.iter().any(u8::is_ascii_uppercase)
            && b.iter().any(u8::is_ascii_lowercase)
            && b.iter().any(u8::is_ascii_digit)
    };
    mixed(b)
        && (!p.starts_with('/')
            || p.split('/')
                .any(|part| part.len() >= 16 && mixed(part.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_is_replaced() {
        let cases = [
            ("password=hunter2 user=bob", "password=[SECRET] user=bob"),
            ("db_pass: s3cr3t!", "db_pass: [SECRET]"),
            (
                r#"{"api_key": "abc def", "n": 1}"#,
                r#"{"api_key": "[SECRET]", "n": 1}"#,
            ),
            ("apikey=zz&x=1", "apikey=[SECRET]&x=1"),
            (
                "Authorization: Basic dXNlcjpwYXNz\nnext",
                "Authorization: [SECRET]\nnext",
            ),
            (
                "connect postgres://bob:pw@db:5432/app",
                "connect postgres://[SECRET]@db:5432/app",
            ),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [SECRET]",
            ),
            (
                "key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY used",
                "key [SECRET] used",
            ),
            ("id AKIAIOSFODNN7EXAMPLE here", "id [SECRET] here"),
            (
                "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY----- tail",
                "[SECRET] tail",
            ),
            (
                "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_nature-x done",
                "jwt [SECRET] done",
            ),
            (
                "sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                "sha [SECRET]",
            ),
            ("PGPASSWORD='x y' psql", "PGPASSWORD='[SECRET]' psql"),
        ];
        for (input, want) in cases {
            assert_eq!(secrets(input), want, "{input}");
        }
    }

    #[test]
    fn ordinary_log_text_stays() {
        for s in [
            "Failed password for invalid user admin from 10.0.0.1 port 22 ssh2",
            "tests passed: 5, author=carol",
            "/usr/lib/x86_64-linux-gnu/libssl.so.3 loaded from /var/lib/postgresql/15/main/base",
            "request 550e8400-e29b-41d4-a716-446655440000 took 12 ms",
            "kernel: Out of memory: Killed process 1234 (java) total-vm:123456kB",
            "see https://example.com/docs?x=1 for systemd-journald-audit.socket",
            "key=value pairs and monkey: banana",
        ] {
            assert_eq!(secrets(s), s);
        }
    }

    /// Generated lines with planted secrets of every kind, in varied surroundings: none of
    /// the planted values survives.
    #[test]
    fn planted_secrets_never_survive() {
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let word = |n: usize, set: &[u8], next: &mut dyn FnMut() -> u64| -> String {
            (0..n)
                .map(|_| set[(next() % set.len() as u64) as usize] as char)
                .collect()
        };
        let keys = [
            "password",
            "PASSWORD",
            "passwd",
            "pwd",
            "db_pass",
            "secret",
            "client_secret",
            "token",
            "access_token",
            "api_key",
            "apiKey",
            "API-KEY",
            "apikey",
            "access_key",
            "auth",
            "x-auth-token",
            "DB_PASSWORD",
        ];
        let before = [
            "",
            "Dec  3 10:00:00 web app[42]: ",
            "level=error msg=\"x\" ",
            "{\"cfg\": {",
            "ENV ",
        ];
        for round in 0..2000 {
            let kind = next() % 9;
            let payload = match kind {
                0..=3 => format!("Zq{}", word(8 + (next() % 12) as usize, ALNUM, &mut next)),
                4 => {
                    word(
                        40,
                        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+",
                        &mut next,
                    ) + "Aa1"
                }
                5 => word(40, b"0123456789abcdef", &mut next),
                6 => format!(
                    "eyJ{}.eyJ{}.{}",
                    word(20, ALNUM, &mut next),
                    word(20, ALNUM, &mut next),
                    word(30, ALNUM, &mut next)
                ),
                7 => format!(
                    "AKIA{}",
                    word(16, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", &mut next)
                ),
                _ => word(12, ALNUM, &mut next),
            };
            let key = keys[(next() % keys.len() as u64) as usize];
            let planted = match (kind, next() % 6) {
                (0..=3, 0) => format!("{key}={payload}"),
                (0..=3, 1) => format!("{key}: {payload}"),
                (0..=3, 2) => format!("\"{key}\": \"{payload}\""),
                (0..=3, 3) => format!("{key} = '{payload}'"),
                (0..=3, 4) => format!("Authorization: Basic {payload}"),
                (0..=3, _) => format!("https://deploy:{payload}@git.example.com/repo.git"),
                (8, _) => format!(
                    "-----BEGIN RSA PRIVATE KEY-----\n{payload}\n-----END RSA PRIVATE KEY-----"
                ),
                _ => payload.clone(),
            };
            let line = format!(
                "{}{} and more after, round {round}",
                before[(next() % before.len() as u64) as usize],
                planted
            );
            let got = secrets(&line);
            assert!(!got.contains(&payload), "{line}\n-> {got}");
            assert!(got.contains(SECRET), "{line}\n-> {got}");
        }
    }
}
