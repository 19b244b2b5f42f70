//! QR codes drawn as SVG on the server (the TOTP enrolment URI), so no script or image
//! service ever sees the secret.

use qrcodegen::{QrCode, QrCodeEcc};
use std::fmt::Write;

/// The QR code of `text` as an SVG (one path of dark modules, a 4-module quiet zone),
/// `None` when the text is too long for a QR code.
pub fn svg(text: &str, label: &str) -> Option<String> {
    let qr = QrCode::encode_text(text, QrCodeEcc::Medium).ok()?;
    let border = 4;
    let size = qr.size() + 2 * border;
    let mut path = String::new();
    for y in 0..qr.size() {
        for x in 0..qr.size() {
            if qr.get_module(x, y) {
                let _ = write!(path, "M{},{}h1v1h-1z", x + border, y + border);
            }
        }
    }
    Some(format!(
        "<svg class=\"qr\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {size} {size}\" \
         role=\"img\" aria-label=\"{}\" shape-rendering=\"crispEdges\">\
         <rect width=\"{size}\" height=\"{size}\" fill=\"#fff\"/>\
         <path d=\"{path}\" fill=\"#000\"/></svg>",
        super::chart::escape(label)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_dark_modules_inside_a_quiet_zone() {
        let s = svg(
            "otpauth://totp/Trusthub:a%40b.c?secret=JBSWY3DPEHPK3PXP",
            "QR \"x\"",
        )
        .expect("fits");
        assert!(s.starts_with("<svg class=\"qr\""));
        assert!(s.contains("aria-label=\"QR &quot;x&quot;\""));
        // The top-left finder pattern starts at the quiet zone's edge.
        assert!(s.contains("M4,4h1v1h-1z"));
        assert!(!s.contains("M0,0h1"));
        assert!(svg(&"x".repeat(5000), "too long").is_none());
    }
}
