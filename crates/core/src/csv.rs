//! CSV cells as every export writes them: RFC 4180 quoting, and guarded against formula
//! injection (OWASP): a cell that begins with `=`, `+`, `-`, `@`, a tab or a carriage return
//! gets a leading `'`, so a spreadsheet shows it as text instead of running it (CONTRACT 18).

/// One text cell, guarded and quoted where needed.
pub fn cell(s: &str) -> String {
    let guarded = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_owned()
    };
    if guarded.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", guarded.replace('"', "\"\""))
    } else {
        guarded
    }
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn formulas_are_text_and_quoting_is_rfc_4180() {
        assert_eq!(cell("team-a"), "team-a");
        assert_eq!(
            cell("=HYPERLINK(\"http://x\")"),
            "\"'=HYPERLINK(\"\"http://x\"\")\""
        );
        assert_eq!(cell("+1"), "'+1");
        assert_eq!(cell("-2+3"), "'-2+3");
        assert_eq!(cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(cell("\tx"), "'\tx");
        assert_eq!(cell("\rx"), "\"'\rx\"");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell(""), "");
    }
}
