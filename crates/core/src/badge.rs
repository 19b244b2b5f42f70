//! Public badges (CONTRACT 21, 32) in shields.io's "flat" style — a grey label (`trust`, an
//! app's name) and a message on its colour — laid out as badge-maker lays it out (text
//! widths from Verdana at 11 px, rounded down then up to an odd number, 5 px of padding each
//! side), and the shields.io endpoint JSON.

/// Advance widths of Verdana at 11 px for the printable ASCII characters (32..=126), in px:
/// the font metrics badge-maker measures text with.
const VERDANA_11: [f64; 95] = [
    3.87, 4.33, 5.05, 9.0, 6.99, 11.84, 7.99, 2.95, 5.0, 5.0, 6.99, 9.0, 4.0, 5.0, 4.0, 5.0, 6.99,
    6.99, 6.99, 6.99, 6.99, 6.99, 6.99, 6.99, 6.99, 6.99, 5.0, 5.0, 9.0, 9.0, 9.0, 6.0, 11.0, 7.52,
    7.54, 7.68, 8.48, 6.96, 6.32, 8.53, 8.27, 4.63, 5.0, 7.62, 6.12, 9.27, 8.23, 8.66, 6.63, 8.66,
    7.65, 7.52, 6.78, 8.05, 7.52, 10.88, 7.54, 6.77, 7.54, 5.0, 5.0, 5.0, 9.0, 6.99, 6.99, 6.61,
    6.85, 5.73, 6.85, 6.55, 3.87, 6.85, 6.96, 3.02, 3.79, 6.51, 3.02, 10.7, 6.96, 6.68, 6.85, 6.85,
    4.69, 5.73, 4.33, 6.96, 6.51, 9.0, 6.51, 6.51, 5.78, 6.98, 5.0, 6.98, 9.0,
];

/// Width of a character outside printable ASCII: as wide as `M`.
const WIDE: f64 = 9.27;

/// The text's width as badge-maker rounds it: whole pixels, then up to an odd number.
pub fn text_width(text: &str) -> u32 {
    let w: f64 = text
        .chars()
        .map(|c| {
            let i = c as usize;
            if (32..=126).contains(&i) {
                VERDANA_11[i - 32]
            } else {
                WIDE
            }
        })
        .sum();
    let w = w.floor() as u32;
    if w.is_multiple_of(2) { w + 1 } else { w }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// Text colour and shadow for a background (`#rrggbb`): light backgrounds get dark text.
fn text_colours(hex: &str) -> (&'static str, &'static str) {
    let v = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap_or(0);
    let (r, g, b) = ((v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff);
    let brightness = f64::from(r * 299 + g * 587 + b * 114) / 255_000.0;
    if brightness <= 0.69 {
        ("#fff", "#010101")
    } else {
        ("#333", "#ccc")
    }
}

/// The flat badge: `label` on grey, `message` on `colour` (`rrggbb`), `title` as its title.
pub fn svg(label: &str, message: &str, colour: &str, title: &str) -> String {
    let (lw, mw) = (text_width(label), text_width(message));
    let left = lw + 10;
    let right = mw + 10;
    let width = left + right;
    let (label_fill, label_shadow) = text_colours("#555");
    let (fill, shadow) = text_colours(colour);
    let (label, message, title) = (escape(label), escape(message), escape(title));
    // Text is drawn at ten times the size and scaled down, as badge-maker does.
    let label_x = 10 * (1 + 5) + 5 * lw;
    let message_x = 10 * (left - 1 + 5) + 5 * mw;
    format!(
        concat!(
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" role="img" aria-label="{title}">"##,
            r##"<title>{title}</title>"##,
            r##"<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>"##,
            r##"<clipPath id="r"><rect width="{width}" height="20" rx="3" fill="#fff"/></clipPath>"##,
            r##"<g clip-path="url(#r)"><rect width="{left}" height="20" fill="#555"/><rect x="{left}" width="{right}" height="20" fill="#{colour}"/><rect width="{width}" height="20" fill="url(#s)"/></g>"##,
            r##"<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="110">"##,
            r##"<text aria-hidden="true" x="{label_x}" y="150" fill="{label_shadow}" fill-opacity=".3" transform="scale(.1)" textLength="{lw10}">{label}</text>"##,
            r##"<text x="{label_x}" y="140" transform="scale(.1)" fill="{label_fill}" textLength="{lw10}">{label}</text>"##,
            r##"<text aria-hidden="true" x="{message_x}" y="150" fill="{shadow}" fill-opacity=".3" transform="scale(.1)" textLength="{mw10}">{message}</text>"##,
            r##"<text x="{message_x}" y="140" transform="scale(.1)" fill="{fill}" textLength="{mw10}">{message}</text>"##,
            "</g></svg>"
        ),
        width = width,
        title = title,
        left = left,
        right = right,
        colour = colour.trim_start_matches('#'),
        label_x = label_x,
        label_shadow = label_shadow,
        label_fill = label_fill,
        lw10 = lw * 10,
        label = label,
        message_x = message_x,
        shadow = shadow,
        fill = fill,
        mw10 = mw * 10,
        message = message,
    )
}

/// The shields.io endpoint JSON for the same badge.
pub fn endpoint(message: &str, colour: &str) -> serde_json::Value {
    serde_json::json!({"schemaVersion": 1, "label": "trust", "message": message, "color": colour.trim_start_matches('#')})
}

#[cfg(test)]
mod tests {
    #[test]
    fn widths_round_as_badge_maker_does() {
        assert_eq!(super::text_width("trust"), 27);
        assert_eq!(super::text_width("87.5"), 25);
        let s = super::svg("trust", "87.5", "44cc11", "trust: 87.5 (tenant t)");
        assert!(
            s.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg" width="72" height="20""#),
            "{s}"
        );
        assert!(
            s.contains(r##"<rect x="37" width="35" height="20" fill="#44cc11"/>"##),
            "{s}"
        );
        assert!(
            s.contains(r#"x="195" y="140""#) && s.contains(r#"x="535" y="140""#),
            "{s}"
        );
    }
}
