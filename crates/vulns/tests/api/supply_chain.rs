//! npm maintainer tracking (SPEC 2.7, CONTRACT 15) against a local registry that speaks the
//! npm registry's protocol (full packuments, `ETag`/`If-None-Match` and 304, 429 with
//! `Retry-After`, scoped names as `@scope%2Fname`): the first read is the baseline, a change
//! of the maintainer set raises one warning alert per depending tenant and is listed with the
//! previous set, polling is capped per minute and backs off; passes are driven with chosen
//! instants.

use crate::harness::*;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

crate::dual!(maintainer_changes_are_detected_politely_and_alerted_once_per_tenant);

/// The registry's packages (path as requested -> packument) and what it saw.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) packuments: HashMap<String, Value>,
    /// Path -> status to answer once (429).
    throttle: HashMap<String, u64>,
    /// Every request: path and whether it carried `If-None-Match`.
    log: Vec<(String, bool, String)>,
}

fn etag(v: &Value) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(v.to_string().as_bytes());
    format!(
        "\"{}\"",
        d[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    )
}

pub(crate) async fn start_registry(reg: Arc<Mutex<Registry>>) -> String {
    use axum::http::{HeaderMap, StatusCode, Uri};
    use axum::response::IntoResponse;
    let handler = move |uri: Uri, headers: HeaderMap| {
        let reg = reg.clone();
        async move {
            let path = uri.path().trim_start_matches('/').to_owned();
            let accept = headers
                .get("accept")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let inm = headers
                .get("if-none-match")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let mut r = reg.lock().expect("registry");
            r.log.push((path.clone(), inm.is_some(), accept));
            if let Some(after) = r.throttle.remove(&path) {
                return (
                    StatusCode::TOO_MANY_REQUESTS,
                    [("retry-after", after.to_string())],
                    "slow down",
                )
                    .into_response();
            }
            let Some(p) = r.packuments.get(&path).cloned() else {
                return (StatusCode::NOT_FOUND, "{\"error\":\"Not found\"}").into_response();
            };
            let tag = etag(&p);
            if inm.as_deref() == Some(tag.as_str()) {
                return (StatusCode::NOT_MODIFIED, [("etag", tag)]).into_response();
            }
            (
                StatusCode::OK,
                [("etag", tag), ("content-type", "application/json".into())],
                p.to_string(),
            )
                .into_response()
        }
    };
    let app = axum::Router::new().fallback(handler);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

pub(crate) fn packument(
    name: &str,
    maintainers: &[&str],
    latest: &str,
    publisher: &str,
    deprecated: Option<&str>,
) -> Value {
    let mut version = json!({"name": name, "version": latest, "_npmUser": {"name": publisher, "email": format!("{publisher}@example.com")}});
    if let Some(d) = deprecated {
        version["deprecated"] = json!(d);
    }
    json!({
        "_id": name, "name": name,
        "dist-tags": {"latest": latest},
        "maintainers": maintainers.iter().map(|m| json!({"name": m, "email": format!("{m}@example.com")})).collect::<Vec<_>>(),
        "versions": {latest: version},
        "time": {"created": "2012-04-23T16:37:11.912Z", "modified": "2026-11-20T10:00:00.000Z", latest: "2026-11-20T10:00:00.000Z"},
    })
}

async fn maintainer_changes_are_detected_politely_and_alerted_once_per_tenant(b: Backend) {
    let reg = Arc::new(Mutex::new(Registry::default()));
    {
        let mut r = reg.lock().expect("registry");
        r.packuments.insert(
            "lodash".into(),
            packument(
                "lodash",
                &["jdalton", "mathias"],
                "4.17.21",
                "jdalton",
                None,
            ),
        );
        r.packuments.insert(
            "left-pad".into(),
            packument("left-pad", &["stevemao"], "1.3.0", "stevemao", None),
        );
        r.packuments.insert(
            "@babel%2Fcore".into(),
            packument(
                "@babel/core",
                &["hzoo", "nicolo-ribaudo"],
                "7.26.0",
                "nicolo-ribaudo",
                None,
            ),
        );
    }
    let url = start_registry(reg.clone()).await;
    let app = TestApp::spawn_with(b, |s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Vulns| v.npm_registry = url.clone());
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Vulns| v.npm_registry_requests_per_minute = 2);
    })
    .await;
    let host = crate::agents::register(&app).await;
    let mut batch = crate::cve::inventory("4.17.20");
    batch["inventory"]["app_dependencies"] = json!([
        {"project_path": "/srv/web", "ecosystem": "npm", "name": "lodash", "version": "4.17.20"},
        {"project_path": "/srv/web", "ecosystem": "npm", "name": "left-pad", "version": "1.3.0"},
        {"project_path": "/srv/web", "ecosystem": "npm", "name": "@babel/core", "version": "7.26.0"},
        {"project_path": "/srv/api", "ecosystem": "pip", "name": "requests", "version": "2.31.0"},
    ]);
    let r = crate::agents::send(
        &app,
        &host,
        &serde_json::to_vec(&batch).expect("json"),
        None,
        true,
    )
    .await;
    assert_eq!(r.status(), 202);
    let track =
        |at: time::OffsetDateTime| trusthub_hub::workers::supply_chain::track(&app.state, at);
    let t0 = time::OffsetDateTime::now_utc();
    let minute = time::Duration::minutes(1);

    // Two requests a minute: the first pass reads two packages (the baseline), the next the third.
    let first = track(t0).await.expect("pass");
    assert_eq!((first.requests, first.changed.len()), (2, 0), "{first:?}");
    let second = track(t0 + minute).await.expect("pass");
    assert_eq!(second.requests, 1, "{second:?}");
    {
        let r = reg.lock().expect("registry");
        assert_eq!(r.log.len(), 3);
        assert!(
            r.log.iter().any(|(p, _, _)| p == "@babel%2Fcore"),
            "{:?}",
            r.log
        );
        // Full packuments (the abbreviated ones have no maintainers), no pip package asked.
        assert!(r.log.iter().all(|(_, _, a)| a == "application/json"));
        assert!(!r.log.iter().any(|(p, _, _)| p.contains("requests")));
    }
    // Nothing is due again within the interval.
    assert_eq!(track(t0 + 2 * minute).await.expect("pass").requests, 0);
    let quiet = body(
        app.get("/supply-chain/maintainer-changes", &app.owner)
            .await,
    )
    .await;
    assert_eq!(quiet, json!([]));

    // lodash gets a new publisher, and its latest version is deprecated.
    reg.lock().expect("registry").packuments.insert(
        "lodash".into(),
        packument(
            "lodash",
            &["jdalton", "mathias"],
            "4.17.22",
            "mallory",
            Some("this version is compromised"),
        ),
    );
    // A day later everything is due again; two a minute, so two passes.
    let day = t0 + time::Duration::days(1) + 3 * minute;
    let third = track(day).await.expect("pass");
    let fourth = track(day + minute).await.expect("pass");
    assert_eq!(
        (third.requests, fourth.requests),
        (2, 1),
        "{third:?} {fourth:?}"
    );
    assert_eq!(
        [third.changed.clone(), fourth.changed.clone()].concat(),
        ["lodash"]
    );
    assert_eq!(
        third.not_modified + fourth.not_modified,
        2,
        "left-pad and @babel/core answered 304 to If-None-Match"
    );
    assert!(
        reg.lock()
            .expect("registry")
            .log
            .iter()
            .skip(3)
            .all(|(_, inm, _)| *inm),
        "every second read sends If-None-Match"
    );
    let changes = body(
        app.get("/supply-chain/maintainer-changes?days=7", &app.owner)
            .await,
    )
    .await;
    let list = changes.as_array().expect("list");
    assert_eq!(list.len(), 1, "{changes}");
    let c = &list[0];
    assert_eq!(c["package_name"], "lodash");
    assert_eq!(c["ecosystem"], "npm");
    assert_eq!(c["maintainers"], json!(["jdalton", "mallory", "mathias"]));
    assert_eq!(c["previous_maintainers"], json!(["jdalton", "mathias"]));
    assert_eq!(c["deprecated"], true);
    assert_eq!(c["deprecation_message"], "this version is compromised");
    assert_eq!(c["last_maintainer_change_at"], "2026-11-20T10:00:00Z");
    assert_eq!(c["agents"][0]["agent_id"], host.id.as_str());
    assert!(c["seen_at"].is_string());
    // One warning alert, in this tenant.
    let alerts = body(app.get("/alerts", &app.owner).await).await;
    let supply: Vec<&Value> = alerts
        .as_array()
        .expect("alerts")
        .iter()
        .filter(|a| a["source"] == "supply_chain")
        .collect();
    assert_eq!(supply.len(), 1, "{alerts}");
    assert_eq!(supply[0]["severity"], "warning");
    assert!(
        supply[0]["title"]
            .as_str()
            .is_some_and(|t| t.contains("lodash"))
    );
    let stranger = app.other_tenant().await;
    assert_eq!(
        body(app.get("/supply-chain/maintainer-changes", &stranger).await).await,
        json!([])
    );
    let theirs = body(app.get("/alerts", &stranger).await).await;
    assert!(!theirs.to_string().contains("supply_chain"), "{theirs}");

    // 429 with Retry-After: the pass stops there, the package waits that long.
    reg.lock()
        .expect("registry")
        .throttle
        .insert("left-pad".into(), 120);
    let day2 = day + time::Duration::days(1) + 5 * minute;
    let throttled = track(day2).await.expect("pass");
    assert!(throttled.throttled, "{throttled:?}");
    assert_eq!(throttled.requests, 2, "@babel/core, then left-pad's 429");
    let next = track(day2 + minute).await.expect("pass");
    assert_eq!(
        (next.requests, next.throttled),
        (1, false),
        "lodash only: {next:?}"
    );
    assert_eq!(
        track(day2 + 2 * minute - time::Duration::seconds(1))
            .await
            .expect("pass")
            .requests,
        0
    );
    let after = track(day2 + time::Duration::seconds(121))
        .await
        .expect("pass");
    assert_eq!((after.requests, after.throttled), (1, false), "{after:?}");

    // The window and its refusals.
    assert_problem(
        app.get("/supply-chain/maintainer-changes?days=0", &app.owner)
            .await,
        400,
        "bad_request",
    )
    .await;
    assert_problem(
        app.get("/supply-chain/maintainer-changes?dayz=7", &app.owner)
            .await,
        400,
        "bad_request",
    )
    .await;
    assert_eq!(
        app.get("/supply-chain/maintainer-changes", &Auth::None)
            .await
            .status(),
        401
    );
}
