//! The daily pull of `TRUSTHUB_OSV_URL` (CONTRACT 15) from a local server in the OSV bucket's
//! layout: the first pull imports `all.zip`, the next ones only the records that
//! `modified_id.csv` lists as changed since; not again within a day; a failing ecosystem is
//! recorded and does not stop the others. Pulls are driven with chosen instants.

use crate::harness::*;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

crate::dual!(the_osv_bucket_is_pulled_whole_once_then_by_modified_id);

#[derive(Default)]
struct Bucket {
    files: HashMap<String, Vec<u8>>,
    log: Vec<String>,
}

async fn start_bucket(bucket: Arc<Mutex<Bucket>>) -> String {
    use axum::http::{StatusCode, Uri};
    use axum::response::IntoResponse;
    let handler = move |uri: Uri| {
        let bucket = bucket.clone();
        async move {
            let path = uri.path().trim_start_matches('/').to_owned();
            let mut b = bucket.lock().expect("bucket");
            b.log.push(path.clone());
            match b.files.get(&path) {
                Some(body) => (StatusCode::OK, body.clone()).into_response(),
                None => StatusCode::NOT_FOUND.into_response(),
            }
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, axum::Router::new().fallback(handler)).await;
    });
    format!("http://{addr}/")
}

fn advisory(id: &str, modified: &str, fixed: &str) -> serde_json::Value {
    json!({"id": id, "modified": modified, "summary": format!("{id} in lodash"),
        "affected": [{"package": {"ecosystem": "npm", "name": "lodash"},
            "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": fixed}]}]}]})
}

async fn the_osv_bucket_is_pulled_whole_once_then_by_modified_id(b: Backend) {
    use crate::cve::{bytes, python_zip};
    let bucket = Arc::new(Mutex::new(Bucket::default()));
    let a = advisory("GHSA-aaaa", "2024-01-01T00:00:00Z", "4.17.21");
    {
        let mut bk = bucket.lock().expect("bucket");
        bk.files.insert(
            "npm/all.zip".into(),
            python_zip(&[("GHSA-aaaa.json", bytes(&a))], None),
        );
        bk.files.insert(
            "npm/modified_id.csv".into(),
            b"2024-01-01T00:00:00Z,GHSA-aaaa\n".to_vec(),
        );
    }
    let url = start_bucket(bucket.clone()).await;
    let app = TestApp::spawn_with(b, |s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Vulns| v.osv_url = Some(url.clone()));
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Vulns| v.osv_ecosystems = "npm, PyPI".into());
    })
    .await;
    let pull = |at| trusthub_hub::workers::osv_pull::pull(&app.state, at);
    let t0 = time::OffsetDateTime::now_utc();

    let first = pull(t0).await.expect("pull");
    assert_eq!(first.len(), 2, "{first:?}");
    let npm = first.iter().find(|p| p.ecosystem == "npm").expect("npm");
    assert!(
        npm.full && npm.records == 1 && npm.error.is_none(),
        "{npm:?}"
    );
    let pypi = first.iter().find(|p| p.ecosystem == "PyPI").expect("PyPI");
    assert!(
        pypi.error
            .as_deref()
            .is_some_and(|e| e.contains("HTTP 404")),
        "{pypi:?}"
    );
    let sources = body(app.get("/cve/sources", &app.owner).await).await;
    assert_eq!(sources[0]["ecosystem"], "npm");
    assert_eq!(sources[0]["advisories"], 1);

    // Within the day: npm is not pulled again; PyPI, which failed, is tried at each check.
    let again = pull(t0 + time::Duration::hours(1)).await.expect("pull");
    assert_eq!(
        again
            .iter()
            .map(|p| p.ecosystem.as_str())
            .collect::<Vec<_>>(),
        ["PyPI"]
    );

    // A new record and a changed one appear in the bucket.
    let b2 = advisory("GHSA-bbbb", "2024-02-01T00:00:00Z", "4.17.22");
    let a2 = advisory("GHSA-aaaa", "2024-03-01T00:00:00Z", "4.17.30");
    {
        let mut bk = bucket.lock().expect("bucket");
        bk.files.insert("npm/GHSA-bbbb.json".into(), bytes(&b2));
        bk.files.insert("npm/GHSA-aaaa.json".into(), bytes(&a2));
        bk.files.insert(
            "npm/modified_id.csv".into(),
            b"2024-03-01T00:00:00Z,GHSA-aaaa\n2024-02-01T00:00:00Z,GHSA-bbbb\n".to_vec(),
        );
        bk.log.clear();
    }
    let next = pull(t0 + time::Duration::days(1)).await.expect("pull");
    let npm = next.iter().find(|p| p.ecosystem == "npm").expect("npm");
    assert!(!npm.full && npm.records == 2, "{npm:?}");
    {
        let bk = bucket.lock().expect("bucket");
        let mut asked: Vec<&str> = bk
            .log
            .iter()
            .filter(|p| p.starts_with("npm/"))
            .map(String::as_str)
            .collect();
        asked.sort();
        assert_eq!(
            asked,
            [
                "npm/GHSA-aaaa.json",
                "npm/GHSA-bbbb.json",
                "npm/modified_id.csv"
            ],
            "no all.zip the second time"
        );
    }
    let adv = body(app.get("/cves/GHSA-aaaa", &app.owner).await).await;
    assert_eq!(adv["modified"], "2024-03-01T00:00:00Z");
    let sources = body(app.get("/cve/sources", &app.owner).await).await;
    assert_eq!(sources[0]["advisories"], 2);
    // Nothing changed since: the third pull fetches the list only.
    bucket.lock().expect("bucket").log.clear();
    let third = pull(t0 + time::Duration::days(2)).await.expect("pull");
    let npm = third.iter().find(|p| p.ecosystem == "npm").expect("npm");
    assert_eq!(npm.records, 0);
    assert_eq!(
        bucket
            .lock()
            .expect("bucket")
            .log
            .iter()
            .filter(|p| p.starts_with("npm/"))
            .count(),
        1
    );
}
