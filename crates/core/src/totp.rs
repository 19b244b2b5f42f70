//! TOTP as CONTRACT 3 fixes it: RFC 6238 with HMAC-SHA-1, 6 digits, 30-second steps, and
//! one step of tolerance either side. Pure functions; the caller passes the time.

use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;

/// Length of a time step in seconds.
pub const STEP_SECS: i64 = 30;
/// Digits of a code.
pub const DIGITS: u32 = 6;
/// Steps accepted either side of the current one.
pub const SKEW_STEPS: i64 = 1;

/// The time step that contains a unix time.
pub fn step_at(unix: i64) -> i64 {
    unix.div_euclid(STEP_SECS)
}

/// HOTP (RFC 4226) value of `counter` with `digits` digits.
pub fn hotp(secret: &[u8], counter: u64, digits: u32) -> u32 {
    // HMAC accepts keys of any length, so construction cannot fail.
    let mut mac = <Hmac<Sha1> as KeyInit>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    mac.update(&counter.to_be_bytes());
    let digest = mac.finalize().into_bytes();
    let offset = usize::from(digest[digest.len() - 1] & 0x0f);
    let binary = (u32::from(digest[offset]) & 0x7f) << 24
        | u32::from(digest[offset + 1]) << 16
        | u32::from(digest[offset + 2]) << 8
        | u32::from(digest[offset + 3]);
    binary % 10u32.pow(digits)
}

/// The code for a unix time, zero-padded to [`DIGITS`].
pub fn code_at(secret: &[u8], unix: i64) -> String {
    let step = step_at(unix).max(0) as u64;
    format!(
        "{:0width$}",
        hotp(secret, step, DIGITS),
        width = DIGITS as usize
    )
}

/// Checks a submitted code at `unix` with one step of tolerance either side.
/// Returns the step it matched, which the caller records so it is never accepted again.
pub fn verify(secret: &[u8], code: &str, unix: i64) -> Option<i64> {
    let code = code.trim();
    if code.len() != DIGITS as usize || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let now = step_at(unix);
    (now - SKEW_STEPS..=now + SKEW_STEPS)
        .filter(|s| *s >= 0)
        .find(|s| {
            let expected = format!(
                "{:0width$}",
                hotp(secret, *s as u64, DIGITS),
                width = DIGITS as usize
            );
            constant_time_eq(expected.as_bytes(), code.as_bytes())
        })
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Base32 (RFC 4648, no padding) of a secret, as authenticator apps expect.
pub fn secret_base32(secret: &[u8]) -> String {
    data_encoding::BASE32_NOPAD.encode(secret)
}

/// Decodes what [`secret_base32`] produced.
pub fn secret_from_base32(s: &str) -> Option<Vec<u8>> {
    data_encoding::BASE32_NOPAD.decode(s.as_bytes()).ok()
}

/// The `otpauth://` URI for enrolment in an authenticator app.
pub fn otpauth_uri(issuer: &str, account: &str, secret: &[u8]) -> String {
    format!(
        "otpauth://totp/{}:{}?secret={}&issuer={}&algorithm=SHA1&digits={}&period={}",
        percent_encode(issuer),
        percent_encode(account),
        secret_base32(secret),
        percent_encode(issuer),
        DIGITS,
        STEP_SECS
    )
}

fn percent_encode(s: &str) -> String {
    crate::encode::with(s, crate::encode::LABEL)
}

/// Recovery codes made at once.
pub const RECOVERY_CODES: usize = 10;

/// A recovery code from 10 random bytes: 16 base32 characters (80 bits) in groups of four,
/// `abcd-efgh-ijkl-mnop`, lowercase.
pub fn recovery_code(random: &[u8; 10]) -> String {
    let s = data_encoding::BASE32_NOPAD
        .encode(random)
        .to_ascii_lowercase();
    s.as_bytes()
        .chunks(4)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join("-")
}

/// A typed recovery code in its canonical form (dashes and spaces dropped, lowercase), or
/// `None` when it cannot be one.
pub fn normalize_recovery_code(typed: &str) -> Option<String> {
    let s: String = typed
        .chars()
        .filter(|c| *c != '-' && !c.is_whitespace())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    (s.len() == 16
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b)))
    .then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_codes_read_back_however_they_are_typed() {
        let code = recovery_code(&[7u8; 10]);
        assert_eq!(code.len(), 19);
        assert_eq!(code.matches('-').count(), 3);
        let canonical = normalize_recovery_code(&code).expect("canonical");
        assert_eq!(
            normalize_recovery_code(&code.to_uppercase()).as_deref(),
            Some(canonical.as_str())
        );
        assert_eq!(
            normalize_recovery_code(&canonical.replace('-', " ")).as_deref(),
            Some(canonical.as_str())
        );
        assert_eq!(normalize_recovery_code("123456"), None);
        assert_eq!(normalize_recovery_code("abcd-efgh-ijkl-mno1"), None);
    }

    const RFC_SECRET: &[u8] = b"12345678901234567890";

    /// RFC 6238 appendix B, SHA-1 column (8 digits).
    #[test]
    fn contract_3_rfc6238_appendix_b_sha1_vectors() {
        let vectors: [(u64, u32); 6] = [
            (59, 94287082),
            (1111111109, 7081804),
            (1111111111, 14050471),
            (1234567890, 89005924),
            (2000000000, 69279037),
            (20000000000, 65353130),
        ];
        for (t, expected) in vectors {
            assert_eq!(hotp(RFC_SECRET, t / 30, 8), expected, "time {t}");
        }
    }

    /// RFC 4226 appendix D: the 6-digit HOTP values for counters 0..9.
    #[test]
    fn rfc4226_appendix_d_vectors() {
        let expected = [
            755224, 287082, 359152, 969429, 338314, 254676, 287922, 162583, 399871, 520489,
        ];
        for (counter, want) in expected.iter().enumerate() {
            assert_eq!(hotp(RFC_SECRET, counter as u64, 6), *want);
        }
    }

    #[test]
    fn contract_3_six_digits_zero_padded_and_one_step_tolerance() {
        // 1111111109 gives 07081804 with 8 digits; 6 digits keep the leading zero.
        assert_eq!(code_at(RFC_SECRET, 1111111109), "081804");
        let t = 1_700_000_000;
        let code = code_at(RFC_SECRET, t);
        assert_eq!(verify(RFC_SECRET, &code, t), Some(step_at(t)));
        assert_eq!(verify(RFC_SECRET, &code, t + 30), Some(step_at(t)));
        assert_eq!(verify(RFC_SECRET, &code, t - 30), Some(step_at(t)));
        assert_eq!(verify(RFC_SECRET, &code, t + 90), None);
        assert_eq!(verify(RFC_SECRET, "12345", t), None);
        assert_eq!(verify(RFC_SECRET, "abcdef", t), None);
    }

    #[test]
    fn otpauth_uri_names_issuer_account_and_parameters() {
        let uri = otpauth_uri("Trusthub", "ops@example.com", b"12345678901234567890");
        assert_eq!(
            uri,
            "otpauth://totp/Trusthub:ops@example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Trusthub&algorithm=SHA1&digits=6&period=30"
        );
        assert_eq!(
            secret_from_base32("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ").as_deref(),
            Some(&b"12345678901234567890"[..])
        );
    }
}
