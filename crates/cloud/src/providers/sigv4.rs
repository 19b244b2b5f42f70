//! AWS Signature Version 4 (the signing process as AWS publishes it), checked against AWS's
//! own examples: the canonical request, the string to sign, the derived key and the
//! `Authorization` header.

use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

type HmacSha256 = hmac::Hmac<Sha256>;

/// Who signs.
#[derive(Debug, Clone)]
pub struct Keys<'a> {
    /// Access key id.
    pub access_key_id: &'a str,
    /// Secret access key.
    pub secret_access_key: &'a str,
    /// Session token of temporary credentials.
    pub session_token: Option<&'a str>,
}

/// One request to sign.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// `GET`, `POST`.
    pub method: &'a str,
    /// Host (with the port when not the scheme's default).
    pub host: &'a str,
    /// The path, already URI-encoded.
    pub path: &'a str,
    /// Query parameters, not encoded.
    pub query: &'a [(&'a str, &'a str)],
    /// Headers besides `host` and `x-amz-date` to sign (lowercase names).
    pub headers: &'a [(&'a str, &'a str)],
    /// The body.
    pub body: &'a [u8],
}

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    m.update(data.as_bytes());
    m.finalize().into_bytes().to_vec()
}

fn hex(b: &[u8]) -> String {
    trusthub_core::secret::hex(b)
}

/// RFC 3986 encoding of everything but the unreserved characters.
pub fn uri_encode(s: &str) -> String {
    trusthub_core::encode::component(s)
}

/// The query string as signed (and as sent): encoded pairs sorted by name, then value.
pub fn canonical_query(query: &[(&str, &str)]) -> String {
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (uri_encode(k), uri_encode(v)))
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// The headers to send: `x-amz-date`, the session token when there is one, and the
/// `Authorization` header.
pub fn sign(
    keys: &Keys<'_>,
    region: &str,
    service: &str,
    req: &Request<'_>,
    now: OffsetDateTime,
) -> Vec<(String, String)> {
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let amz_date = now
        .to_offset(time::UtcOffset::UTC)
        .format(&fmt)
        .unwrap_or_default();
    let date = &amz_date[..8];
    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    headers.push(("host".into(), req.host.to_owned()));
    headers.push(("x-amz-date".into(), amz_date.clone()));
    if let Some(t) = keys.session_token {
        headers.push(("x-amz-security-token".into(), t.to_owned()));
    }
    headers.sort();
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let signed: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
    let signed = signed.join(";");
    let canonical = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        req.method,
        req.path,
        canonical_query(req.query),
        canonical_headers,
        signed,
        hex(&Sha256::digest(req.body))
    );
    let scope = format!("{date}/{region}/{service}/aws4_request");
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(&Sha256::digest(canonical.as_bytes()))
    );
    let k = hmac(format!("AWS4{}", keys.secret_access_key).as_bytes(), date);
    let k = hmac(&k, region);
    let k = hmac(&k, service);
    let k = hmac(&k, "aws4_request");
    let signature = hex(&hmac(&k, &to_sign));
    let mut out = vec![("x-amz-date".to_owned(), amz_date)];
    if let Some(t) = keys.session_token {
        out.push(("x-amz-security-token".into(), t.to_owned()));
    }
    out.push((
        "authorization".into(),
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={signature}",
            keys.access_key_id
        ),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: Keys<'static> = Keys {
        access_key_id: "AKIDEXAMPLE",
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        session_token: None,
    };

    fn at() -> OffsetDateTime {
        time::macros::datetime!(2015-08-30 12:36:00 UTC)
    }

    fn auth(h: &[(String, String)]) -> &str {
        &h.iter()
            .find(|(k, _)| k == "authorization")
            .expect("auth")
            .1
    }

    /// AWS's signing example (IAM ListUsers, as the general reference works it through).
    #[test]
    fn the_iam_list_users_example_signs_as_aws_shows() {
        let h = sign(
            &KEYS,
            "us-east-1",
            "iam",
            &Request {
                method: "GET",
                host: "iam.amazonaws.com",
                path: "/",
                query: &[("Action", "ListUsers"), ("Version", "2010-05-08")],
                headers: &[(
                    "content-type",
                    "application/x-www-form-urlencoded; charset=utf-8",
                )],
                body: b"",
            },
            at(),
        );
        assert_eq!(
            auth(&h),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, \
             Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
        );
    }

    /// The test suite's `get-vanilla` and `get-vanilla-query-order-key-case`.
    #[test]
    fn the_test_suite_vanilla_requests_sign_as_published() {
        let req = |query| Request {
            method: "GET",
            host: "example.amazonaws.com",
            path: "/",
            query,
            headers: &[],
            body: b"",
        };
        let h = sign(&KEYS, "us-east-1", "service", &req(&[]), at());
        assert!(
            auth(&h).ends_with(
                "SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
            ),
            "{}",
            auth(&h)
        );
        let h = sign(
            &KEYS,
            "us-east-1",
            "service",
            &req(&[("Param2", "value2"), ("Param1", "value1")]),
            at(),
        );
        assert!(
            auth(&h).ends_with(
                "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
            ),
            "{}",
            auth(&h)
        );
    }

    #[test]
    fn query_values_are_encoded_as_rfc_3986_says() {
        assert_eq!(
            canonical_query(&[("b", "a b/c~"), ("a", "é")]),
            "a=%C3%A9&b=a%20b%2Fc~"
        );
    }
}
