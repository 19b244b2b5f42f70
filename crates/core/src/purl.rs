//! Package URLs (purl, ECMA-427) of what the scan sees, for the exports that name packages
//! (CycloneDX `purl`, OpenVEX products, SARIF): `pkg:npm/%40scope/name@1.0.0`,
//! `pkg:pypi/name@1.0`, `pkg:gem/…`, `pkg:golang/…`, `pkg:composer/vendor/name@…`,
//! `pkg:deb/debian/openssl@3.0.11-1~deb12u2?distro=debian-12`, `pkg:apk/alpine/…`,
//! `pkg:rpm/redhat/…`.

/// Percent-encodes everything but the unreserved characters (RFC 3986).
fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The purl of `name` at `version` (none: the package in general) in an OSV ecosystem;
/// `None` for an ecosystem without a purl type here.
pub fn of(ecosystem: &str, name: &str, version: Option<&str>) -> Option<String> {
    let (base, release) = match ecosystem.split_once(':') {
        Some((b, r)) => (b, Some(r)),
        None => (ecosystem, None),
    };
    let path_of = |n: &str| n.split('/').map(enc).collect::<Vec<_>>().join("/");
    let (ty, namespace, name, qualifier) = match base {
        "npm" => match name.strip_prefix('@').and_then(|n| n.split_once('/')) {
            Some((scope, n)) => ("npm", Some(format!("%40{}", enc(scope))), enc(n), None),
            None => ("npm", None, enc(name), None),
        },
        "PyPI" => (
            "pypi",
            None,
            enc(&crate::scan::normalize_name("PyPI", name)),
            None,
        ),
        "RubyGems" => ("gem", None, enc(name), None),
        "Go" => match name.rsplit_once('/') {
            Some((ns, n)) => ("golang", Some(path_of(ns)), enc(n), None),
            None => ("golang", None, enc(name), None),
        },
        "Packagist" => match name.split_once('/') {
            Some((vendor, n)) => ("composer", Some(enc(vendor)), enc(n), None),
            None => ("composer", None, enc(name), None),
        },
        "Debian" | "Ubuntu" => {
            let distro = base.to_ascii_lowercase();
            let q = release.map(|r| format!("distro={distro}-{}", enc(r)));
            ("deb", Some(distro), enc(name), q)
        }
        "Alpine" => (
            "apk",
            Some("alpine".to_owned()),
            enc(name),
            release.map(|r| format!("distro=alpine-{}", enc(r.trim_start_matches('v')))),
        ),
        "Red Hat" | "AlmaLinux" | "Rocky Linux" => {
            let ns = match base {
                "Red Hat" => "redhat",
                "AlmaLinux" => "almalinux",
                _ => "rocky",
            };
            (
                "rpm",
                Some(ns.to_owned()),
                enc(name),
                release.map(|r| format!("distro={ns}-{}", enc(r))),
            )
        }
        _ => return None,
    };
    let mut out = format!("pkg:{ty}/");
    if let Some(ns) = namespace {
        out.push_str(&ns);
        out.push('/');
    }
    out.push_str(&name);
    if let Some(v) = version {
        out.push('@');
        out.push_str(&enc(v));
    }
    if let Some(q) = qualifier {
        out.push('?');
        out.push_str(&q);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::of;

    #[test]
    fn purls() {
        assert_eq!(
            of("npm", "@babel/core", Some("7.0.0")).as_deref(),
            Some("pkg:npm/%40babel/core@7.0.0")
        );
        assert_eq!(
            of("PyPI", "Django_REST", Some("1.0+local")).as_deref(),
            Some("pkg:pypi/django-rest@1.0%2Blocal")
        );
        assert_eq!(
            of("Debian:12", "openssl", Some("1:3.0.11-1~deb12u2")).as_deref(),
            Some("pkg:deb/debian/openssl@1%3A3.0.11-1~deb12u2?distro=debian-12")
        );
        assert_eq!(
            of("Go", "golang.org/x/net", None).as_deref(),
            Some("pkg:golang/golang.org/x/net")
        );
        assert_eq!(
            of("Alpine:v3.19", "musl", Some("1.2.4-r2")).as_deref(),
            Some("pkg:apk/alpine/musl@1.2.4-r2?distro=alpine-3.19")
        );
        assert_eq!(of("crates.io", "serde", None), None);
    }
}
