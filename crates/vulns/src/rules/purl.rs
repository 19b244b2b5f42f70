//! Package URLs (purl, ECMA-427) of what the scan sees, for the exports that name packages
//! (CycloneDX `purl`, OpenVEX products, SARIF): `pkg:npm/%40scope/name@1.0.0`,
//! `pkg:pypi/name@1.0`, `pkg:gem/…`, `pkg:golang/…`, `pkg:composer/vendor/name@…`,
//! `pkg:deb/debian/openssl@3.0.11-1~deb12u2?distro=debian-12`, `pkg:apk/alpine/…`,
//! `pkg:rpm/redhat/…`.

/// Percent-encodes everything but the unreserved characters (RFC 3986).
fn enc(s: &str) -> String {
    trusthub_core::encode::component(s)
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
            enc(&crate::rules::scan::normalize_name("PyPI", name)),
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

fn dec(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Reads a purl of a type the hub knows: `(OSV ecosystem, package name, version)`. A
/// distribution's release comes from the `distro` qualifier (`debian-12` → `Debian:12`);
/// without it the ecosystem is the distribution alone.
pub fn parse(purl: &str) -> Option<(String, String, Option<String>)> {
    let rest = purl.strip_prefix("pkg:")?.trim_start_matches('/');
    let (rest, _subpath) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, qualifiers) = rest.split_once('?').unwrap_or((rest, ""));
    let (path, version) = match rest.rsplit_once('@') {
        Some((p, v)) if !p.is_empty() && !p.ends_with('/') => (p, Some(dec(v)?)),
        _ => (rest, None),
    };
    let (ty, path) = path.split_once('/')?;
    let segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(dec)
        .collect::<Option<_>>()?;
    let (name, namespace) = segments.split_last()?;
    let distro = qualifiers
        .split('&')
        .filter_map(|q| q.split_once('='))
        .find(|(k, _)| *k == "distro")
        .and_then(|(_, v)| dec(v));
    let release = |prefix: &str| {
        distro
            .as_deref()
            .and_then(|d| d.strip_prefix(prefix))
            .map(str::to_owned)
    };
    let (ecosystem, name) = match ty.to_ascii_lowercase().as_str() {
        "npm" => (
            "npm".to_owned(),
            if namespace.is_empty() {
                name.clone()
            } else {
                format!("{}/{name}", namespace.join("/"))
            },
        ),
        "pypi" => ("PyPI".to_owned(), name.clone()),
        "gem" => ("RubyGems".to_owned(), name.clone()),
        "golang" => ("Go".to_owned(), segments.join("/")),
        "composer" => ("Packagist".to_owned(), segments.join("/")),
        "deb" => {
            let distro_name = match namespace.first().map(|n| n.to_ascii_lowercase()) {
                Some(n) if n == "ubuntu" => "Ubuntu",
                _ => "Debian",
            };
            let r = release(&format!("{}-", distro_name.to_ascii_lowercase()));
            (
                r.map_or(distro_name.to_owned(), |r| format!("{distro_name}:{r}")),
                name.clone(),
            )
        }
        "apk" => (
            release("alpine-").map_or("Alpine".to_owned(), |r| format!("Alpine:v{r}")),
            name.clone(),
        ),
        "rpm" => {
            let (eco, prefix) = match namespace.first().map(|n| n.to_ascii_lowercase()) {
                Some(n) if n == "almalinux" => ("AlmaLinux", "almalinux-"),
                Some(n) if n == "rocky" => ("Rocky Linux", "rocky-"),
                _ => ("Red Hat", "redhat-"),
            };
            (
                release(prefix).map_or(eco.to_owned(), |r| format!("{eco}:{r}")),
                name.clone(),
            )
        }
        _ => return None,
    };
    Some((ecosystem, name, version))
}

#[cfg(test)]
mod parse_tests {
    use super::{of, parse};

    #[test]
    fn purls_read_back() {
        for (eco, name, version) in [
            ("npm", "@babel/core", Some("7.0.0")),
            ("npm", "lodash", None),
            ("PyPI", "django-rest", Some("1.0+local")),
            ("Debian:12", "openssl", Some("1:3.0.11-1~deb12u2")),
            ("Ubuntu:22.04", "curl", Some("7.81.0-1ubuntu1.15")),
            ("Go", "golang.org/x/net", Some("0.17.0")),
            ("Packagist", "monolog/monolog", Some("3.5.0")),
            ("Alpine:v3.19", "musl", Some("1.2.4-r2")),
            ("Rocky Linux:9", "openssl", Some("1:3.0.7-25.el9_3")),
            ("RubyGems", "rails", Some("7.1.0")),
        ] {
            let purl = of(eco, name, version).expect("purl");
            assert_eq!(
                parse(&purl),
                Some((eco.to_owned(), name.to_owned(), version.map(str::to_owned))),
                "{purl}"
            );
        }
        assert_eq!(parse("pkg:cargo/serde@1.0.0"), None);
        assert_eq!(parse("npm/lodash"), None);
        assert_eq!(parse("pkg:npm/lod%zzash"), None);
    }
}
