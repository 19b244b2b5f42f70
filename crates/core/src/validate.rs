//! Validation of values that come from clients: emails, passwords and names.
//!
//! Each check returns a message for the `errors[].message` of a 422 (CONTRACT 1).

/// Shortest password accepted (NIST SP 800-63B asks for at least 8).
pub const PASSWORD_MIN_CHARS: usize = 8;
/// Longest password accepted; argon2 would take any length, but a bound keeps hashing cheap.
pub const PASSWORD_MAX_CHARS: usize = 256;

/// Normalises and checks an email address: trimmed, lowercased, one `@`, a dot in the domain.
pub fn email(raw: &str) -> Result<String, &'static str> {
    let e = raw.trim().to_lowercase();
    if e.len() > 254 {
        return Err("must be at most 254 characters");
    }
    let Some((local, domain)) = e.split_once('@') else {
        return Err("must be an email address");
    };
    let ok_chars = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| !c.is_whitespace() && !c.is_control() && c != '@' && c != '<' && c != '>')
    };
    if !ok_chars(local)
        || !ok_chars(domain)
        || !domain.contains('.')
        || domain.starts_with('.')
        || domain.ends_with('.')
    {
        return Err("must be an email address");
    }
    Ok(e)
}

/// Checks a new password's length.
pub fn password(raw: &str) -> Result<(), &'static str> {
    let n = raw.chars().count();
    if n < PASSWORD_MIN_CHARS {
        return Err("must be at least 8 characters");
    }
    if n > PASSWORD_MAX_CHARS {
        return Err("must be at most 256 characters");
    }
    Ok(())
}

/// Checks a human label such as a token or tenant name: 1 to 100 printable characters.
pub fn name(raw: &str) -> Result<String, &'static str> {
    let n = raw.trim();
    if n.is_empty() {
        return Err("must not be empty");
    }
    if n.chars().count() > 100 {
        return Err("must be at most 100 characters");
    }
    if n.chars().any(char::is_control) {
        return Err("must not contain control characters");
    }
    Ok(n.to_owned())
}

/// Agent and filter tags: at most 32, each 1-64 characters of letters, digits and `- _ . : = /`,
/// trimmed and without repeats.
pub fn tags(tags: &[String]) -> Result<Vec<String>, String> {
    if tags.len() > 32 {
        return Err("at most 32 tags".into());
    }
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for t in tags {
        let t = t.trim();
        let ok = !t.is_empty()
            && t.len() <= 64
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.:=/".contains(c));
        if !ok {
            return Err(format!(
                "tag `{t}` must be 1-64 characters of letters, digits and - _ . : = /"
            ));
        }
        if !out.iter().any(|o| o == t) {
            out.push(t.to_owned());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalised_and_checked() {
        assert_eq!(
            email("  Ops@Example.COM ").as_deref(),
            Ok("ops@example.com")
        );
        for bad in [
            "",
            "ops",
            "ops@",
            "@example.com",
            "ops@example",
            "a b@c.d",
            "ops@.com",
        ] {
            assert!(email(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn passwords_need_eight_characters() {
        assert!(password("1234567").is_err());
        assert!(password("12345678").is_ok());
        assert!(password(&"x".repeat(257)).is_err());
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(name(" ci ").as_deref(), Ok("ci"));
        assert!(name("  ").is_err());
        assert!(name(&"x".repeat(101)).is_err());
        assert!(name("a\u{7}").is_err());
    }
}
