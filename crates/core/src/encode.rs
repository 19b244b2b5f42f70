//! Percent-encoding through the `percent-encoding` crate, so every part of the product
//! encodes a URL part the same way (hex and base64 go through `data-encoding`, see
//! [`crate::secret::hex`]).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Every byte but RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`).
pub const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// [`UNRESERVED`] keeping `@` too (an `otpauth://` label's account).
pub const LABEL: &AsciiSet = &UNRESERVED.remove(b'@');

/// [`UNRESERVED`] keeping `:` too (a folder of the OSV bucket, `Debian:12`).
pub const FOLDER: &AsciiSet = &UNRESERVED.remove(b':');

/// `s` with every byte outside [`UNRESERVED`] percent-encoded (uppercase hex): a path
/// segment, a query value, a canonical part of an AWS signature, a purl part.
pub fn component(s: &str) -> String {
    utf8_percent_encode(s, UNRESERVED).to_string()
}

/// `s` with every byte in `set` percent-encoded.
pub fn with(s: &str, set: &'static AsciiSet) -> String {
    utf8_percent_encode(s, set).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreserved_characters_stay_and_everything_else_is_encoded_in_uppercase() {
        assert_eq!(component("a-Z_0.~"), "a-Z_0.~");
        assert_eq!(component("a b/c?d=é"), "a%20b%2Fc%3Fd%3D%C3%A9");
        assert_eq!(with("ops@example.com:x", LABEL), "ops@example.com%3Ax");
        assert_eq!(with("Debian:12 x", FOLDER), "Debian:12%20x");
    }
}
