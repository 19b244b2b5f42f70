//! A receiver URL's userinfo: taken out of the URL (where answers and logs would show it)
//! and kept as Basic-auth credentials (CONTRACT 30).

/// Basic-auth user and password.
pub(crate) type Credentials = (String, Option<String>);

/// An `http`/`https` URL with a host, split into the URL without userinfo and the userinfo
/// (user and password, percent-decoded); errors never show the userinfo.
pub(crate) fn split_userinfo(raw: &str) -> Result<(String, Option<Credentials>), String> {
    let mut url =
        reqwest::Url::parse(raw).map_err(|e| format!("`{}` is not a URL: {e}", redact(raw)))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!(
            "`{}` is not an http or https URL with a host",
            redact(raw)
        ));
    }
    let basic = (!url.username().is_empty() || url.password().is_some()).then(|| {
        (
            percent_decode(url.username()),
            url.password().map(percent_decode),
        )
    });
    let _ = url.set_username("");
    let _ = url.set_password(None);
    Ok((url.to_string(), basic))
}

/// A URL as logs and errors show it: without its userinfo.
fn redact(raw: &str) -> String {
    match reqwest::Url::parse(raw) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) => "(unparsable)".into(),
    }
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}
