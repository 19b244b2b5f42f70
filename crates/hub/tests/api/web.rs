//! The dashboard over HTTP (CONTRACT 17): every page needs a session and carries the security
//! headers, assets are embedded under content-hashed names, sign-in uses the API's checks, and
//! a state-changing form without its CSRF token (or from another origin) is refused.

use crate::harness::*;

crate::dual!(dashboard_pages_need_a_session_and_carry_the_contract_17_headers,);

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// `application/x-www-form-urlencoded`, as a browser sends a form.
fn form(pairs: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                    (b as char).to_string()
                }
                b' ' => "+".into(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn assert_headers(r: &reqwest::Response) {
    let h = r.headers();
    let csp = h["content-security-policy"].to_str().expect("csp");
    assert!(csp.contains("default-src 'self'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(h["x-frame-options"], "DENY");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "same-origin");
}

async fn dashboard_pages_need_a_session_and_carry_the_contract_17_headers(b: Backend) {
    let app = TestApp::spawn(b).await;
    let web = no_redirects();
    let at = |p: &str| format!("{}{p}", app.base);
    // No session: every page sends to the sign-in page.
    for page in ["/", "/ui/agents", "/ui/overview/live"] {
        let r = web.get(at(page)).send().await.expect("get");
        assert_eq!(r.status(), 303, "{page}");
        let to = r.headers()["location"].to_str().expect("loc").to_owned();
        assert!(to.starts_with("/login"), "{page}: {to}");
        assert_headers(&r);
    }
    let r = web.get(at("/login")).send().await.expect("login page");
    assert_eq!(r.status(), 200);
    assert_headers(&r);
    let page = r.text().await.expect("html");
    assert!(
        page.contains("<form") && page.contains("name=\"password\""),
        "{page}"
    );
    assert!(!page.contains("<script>"), "no inline scripts");
    // The assets it links, embedded, under content-hashed names.
    for link in page.split('"').filter(|s| s.starts_with("/assets/")) {
        let r = web.get(at(link)).send().await.expect("asset");
        assert_eq!(r.status(), 200, "{link}");
        assert!(
            r.headers()["cache-control"]
                .to_str()
                .expect("cc")
                .contains("immutable"),
            "{link}"
        );
    }
    assert_eq!(
        web.get(at("/assets/app-000000000000.css"))
            .send()
            .await
            .expect("x")
            .status(),
        404
    );

    // A wrong password re-renders the form; the right one signs in and sends to `next`.
    let r = web
        .post(at("/login?next=/ui/agents"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("email", OWNER_EMAIL),
            ("password", "wrong password"),
        ]))
        .send()
        .await
        .expect("login");
    assert_eq!(r.status(), 401);
    assert!(
        r.text()
            .await
            .expect("html")
            .contains("wrong email or password")
    );
    let r = web
        .post(at("/login?next=//evil.example/x"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("email", OWNER_EMAIL),
            ("password", OWNER_PASSWORD),
        ]))
        .send()
        .await
        .expect("login");
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/", "never an open redirect");
    let cookie = r.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_owned();
    let r = web
        .get(at("/"))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("overview");
    assert_eq!(r.status(), 200);
    assert_headers(&r);
    let page = r.text().await.expect("html");
    assert!(
        page.contains("Overview") && page.contains(OWNER_EMAIL),
        "{page}"
    );
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("csrf field")
        .to_owned();
    assert_eq!(
        web.get(at("/ui/agents"))
            .header("cookie", &cookie)
            .send()
            .await
            .expect("agents")
            .status(),
        200
    );

    // Sign-out: refused without the token and from another origin, done with it.
    let r = web
        .post(at("/logout"))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("csrf", "nope")]))
        .send()
        .await
        .expect("logout");
    assert_eq!(r.status(), 403);
    let r = web
        .post(at("/logout"))
        .header("cookie", &cookie)
        .header("origin", "https://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("csrf", csrf.as_str())]))
        .send()
        .await
        .expect("logout");
    assert_eq!(r.status(), 403);
    assert_eq!(
        web.get(at("/"))
            .header("cookie", &cookie)
            .send()
            .await
            .expect("still in")
            .status(),
        200,
        "refused sign-outs changed nothing"
    );
    let r = web
        .post(at("/logout"))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("csrf", csrf.as_str())]))
        .send()
        .await
        .expect("logout");
    assert_eq!(r.status(), 303);
    let r = web
        .get(at("/"))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("gone");
    assert_eq!(r.status(), 303, "the session ended");
}
