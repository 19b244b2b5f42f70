//! CONTRACT 26, end to end: a hub with `TRUSTHUB_REMOTE_WRITE_URL` forwards what agents
//! push to a real VictoriaMetrics and a real Prometheus, read back through their own APIs;
//! the receiver stopped for a while, and the hub restarted mid-stream, lose nothing; the
//! figures on `//metrics`, `GET /remote-write` and the "Metrics storage" page.

use crate::agents::{Host, register, send, ts};
use crate::harness::*;
use crate::rw_rig;
use reqwest::Method;
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

crate::dual!(
    stored_samples_arrive_in_victoria_metrics_named_and_labelled,
    a_receiver_down_for_a_while_gets_everything_when_back,
    a_hub_restarted_mid_stream_loses_nothing_and_resumes_from_its_position,
    a_receiver_refusing_a_request_drops_it_and_moves_on,
    ranges_and_charts_are_read_from_victoria_metrics,
    ranges_and_charts_are_read_from_prometheus,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_reads_the_metrics_storage_page_in_a_browser() {
    let vm = rw_rig::victoria_metrics().await;
    let app = forwarding_hub(Backend::Sqlite, &[vm.write_url()]).await;
    let Some(browser) = crate::webdriver::Browser::start("remote-write").await else {
        return;
    };
    let host = register(&app).await;
    push(
        &app,
        &host,
        OffsetDateTime::now_utc().replace_nanosecond(0).expect("ns"),
        7,
        1.0,
    )
    .await;
    eventually(30, "the samples were sent", || async {
        (status_of(&app).await["receivers"][0]["samples_sent"] == 7).then_some(())
    })
    .await;
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.goto(&format!("{}/", app.base)).await;
    browser.click("a[href='/ui/remote-write']").await;
    browser.wait_text("Metrics storage").await;
    let row = browser.text("#receivers tr.receiver").await;
    assert!(row.contains(&vm.write_url()), "{row}");
    assert_eq!(browser.text("#receivers tr.receiver td.sent").await, "7");
    assert!(
        browser
            .text("#receivers tr.receiver td.lag")
            .await
            .ends_with(" s")
    );
    browser.screenshot("remote-write").await;
    browser.assert_no_js_errors().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_transaction_committing_late_is_not_skipped() {
    if !require_postgres().await {
        return;
    }
    postgres_late_commit(Backend::Postgres).await;
}

async fn forwarding_hub(b: Backend, urls: &[String]) -> TestApp {
    let urls = urls.to_vec();
    TestApp::spawn_with(b, move |s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::RemoteWrite| v.remote_write_urls = urls)
    })
    .await
}

/// A batch of `n` series (`rw.test{i=...}`) at `at`, each with one sample `value + i`.
async fn push(app: &TestApp, host: &Host, at: OffsetDateTime, n: usize, value: f64) {
    let metrics: Vec<Value> = (0..n)
        .map(|i| json!({"name": "rw.test", "ts": ts(at), "value": value + i as f64, "labels": {"i": i.to_string()}}))
        .collect();
    let batch = json!({"batch_id": Uuid::new_v4(), "sent_at": ts(OffsetDateTime::now_utc()), "metrics": metrics});
    let r = send(app, host, batch.to_string().as_bytes(), None, true).await;
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap_or_default());
}

fn samples_in(rows: &[Value]) -> usize {
    rows.iter()
        .map(|r| r["values"].as_array().map_or(0, Vec::len))
        .sum()
}

/// Every (series label `i`, timestamp, value) VictoriaMetrics holds, sorted.
fn points_of(rows: &[Value]) -> Vec<(String, i64, f64)> {
    let mut out = Vec::new();
    for r in rows {
        let i = r["metric"]["i"].as_str().unwrap_or_default().to_owned();
        let ts = r["timestamps"].as_array().cloned().unwrap_or_default();
        let vs = r["values"].as_array().cloned().unwrap_or_default();
        for (t, v) in ts.iter().zip(vs) {
            out.push((
                i.clone(),
                t.as_i64().unwrap_or_default(),
                v.as_f64().unwrap_or_default(),
            ));
        }
    }
    out.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    out
}

async fn metrics_text(app: &TestApp) -> String {
    app.get("//metrics", &Auth::None)
        .await
        .text()
        .await
        .expect("text")
}

/// The value of one line of the exposition.
fn figure(text: &str, line_start: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn status_of(app: &TestApp) -> Value {
    let r = app.get("/remote-write", &app.owner).await;
    assert_eq!(r.status(), 200);
    body(r).await
}

fn at(base: OffsetDateTime, secs: i64) -> OffsetDateTime {
    base + time::Duration::seconds(secs)
}

/// Milliseconds of a timestamp, as sent (whole seconds in these tests).
fn ms(t: OffsetDateTime) -> i64 {
    t.unix_timestamp() * 1000
}

async fn stored_samples_arrive_in_victoria_metrics_named_and_labelled(b: Backend) {
    let vm = rw_rig::victoria_metrics().await;
    // A second receiver with the same data; its URL's userinfo is its basic auth and is
    // never shown.
    let prom = rw_rig::prometheus().await;
    let with_user = prom
        .write_url()
        .replace("http://", "http://scraper:s3cret@");
    let app = forwarding_hub(b, &[vm.write_url(), with_user]).await;
    let host = register(&app).await;
    let me = body(app.get("/me", &app.owner).await).await;
    let tenant = me["tenant"]["id"].as_str().expect("tenant").to_owned();
    let now = OffsetDateTime::now_utc().replace_nanosecond(0).expect("ns");
    let batch = json!({"batch_id": Uuid::new_v4(), "sent_at": ts(now), "metrics": [
        {"name": "cpu.percent", "ts": ts(at(now, -20)), "value": 12.5, "labels": {"cpu": "total"}},
        {"name": "cpu.percent", "ts": ts(at(now, -10)), "value": 17.25, "labels": {"cpu": "total"}},
        {"name": "disk.used_bytes", "ts": ts(now), "value": 1024.0, "labels": {"mount": "/", "hostname": "not-this"}}
    ]});
    let r = send(&app, &host, batch.to_string().as_bytes(), None, true).await;
    assert_eq!(r.status(), 202);
    let selector = format!("{{agent_id=\"{}\"}}", host.id);
    let mut rows = vm.wait_for_samples(&selector, 3, 30).await;
    rows.sort_by_key(|r| {
        r["metric"]["__name__"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    });
    assert_eq!(rows.len(), 2, "{rows:?}");
    // The contract's names and labels: tenant, agent, host, the metric's own labels (the
    // hub's `hostname` wins over a metric's), each tag as `tag_<key>`.
    assert_eq!(
        rows[0]["metric"],
        json!({"__name__": "cpu_percent", "tenant_id": tenant, "agent_id": host.id,
            "hostname": "web-1", "cpu": "total", "tag_env": "test", "tag_role": "web"})
    );
    assert_eq!(rows[0]["values"], json!([12.5, 17.25]));
    assert_eq!(
        rows[0]["timestamps"],
        json!([ms(at(now, -20)), ms(at(now, -10))])
    );
    assert_eq!(rows[1]["metric"]["__name__"], "disk_used_bytes");
    assert_eq!(rows[1]["metric"]["hostname"], "web-1");
    assert_eq!(rows[1]["metric"]["mount"], "/");
    assert_eq!(rows[1]["values"][0].as_f64(), Some(1024.0));
    assert_eq!(rows[1]["timestamps"], json!([ms(now)]));

    // Prometheus has the same, read through its query API.
    let query = format!("cpu_percent{{agent_id=\"{}\"}}[5m]", host.id);
    let answer = eventually(30, "Prometheus has the samples", || async {
        let a = rw_rig::prom_query(&prom.base, &query, ms(now)).await;
        (a["data"]["result"][0]["values"].as_array().map(Vec::len) == Some(2)).then_some(a)
    })
    .await;
    let result = &answer["data"]["result"][0];
    assert_eq!(result["metric"]["tenant_id"], tenant.as_str());
    assert_eq!(result["metric"]["tag_role"], "web");
    assert_eq!(
        result["values"],
        json!([
            [ms(at(now, -20)) / 1000, "12.5"],
            [ms(at(now, -10)) / 1000, "17.25"]
        ])
    );

    // A tag changed later labels what is stored from then on.
    let gov = body(
        app.get(&format!("/agents/{}/governance", host.id), &app.owner)
            .await,
    )
    .await;
    let mut put = json!({});
    for k in [
        "ingest_interval_secs",
        "inventory_interval_secs",
        "allowed_actions",
    ] {
        put[k] = gov[k].clone();
    }
    put["tags"] = json!(["role:db", "canary"]);
    let r = app
        .send_json(
            Method::PUT,
            &format!("/agents/{}/governance", host.id),
            &app.owner,
            put,
        )
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
    let batch = json!({"batch_id": Uuid::new_v4(), "sent_at": ts(now), "metrics": [
        {"name": "cpu.percent", "ts": ts(at(now, 1)), "value": 3.0, "labels": {"cpu": "total"}}
    ]});
    let r = send(&app, &host, batch.to_string().as_bytes(), None, true).await;
    assert_eq!(r.status(), 202);
    let rows = vm
        .wait_for_samples(
            &format!("{{agent_id=\"{}\",tag_canary=\"true\"}}", host.id),
            1,
            30,
        )
        .await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["metric"]["tag_role"], "db");
    assert_eq!(rows[0]["values"][0].as_f64(), Some(3.0));

    // The figures: on `//metrics` (never the userinfo), the API and the page.
    let text = eventually(10, "the figures count the samples", || async {
        let t = metrics_text(&app).await;
        (figure(
            &t,
            &format!(
                "trusthub_remote_write_samples_total{{url=\"{}\",result=\"sent\"}}",
                prom.write_url()
            ),
        ) == Some(4.0))
        .then_some(t)
    })
    .await;
    assert_eq!(
        figure(
            &text,
            &format!(
                "trusthub_remote_write_samples_total{{url=\"{}\",result=\"sent\"}}",
                vm.write_url()
            )
        ),
        Some(4.0),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "trusthub_remote_write_lag_seconds{{url=\"{}\"}}",
            vm.write_url()
        )),
        "{text}"
    );
    assert!(
        !text.contains("s3cret") && !text.contains("scraper"),
        "{text}"
    );
    // The position is saved once the sender has had nothing to send for a moment (250 ms).
    let s = eventually(10, "the position is saved", || async {
        let s = status_of(&app).await;
        s["receivers"][0]["position_updated_at"]
            .is_string()
            .then_some(s)
    })
    .await;
    assert_eq!(s["enabled"], true);
    assert_eq!(s["receivers"][0]["url"], vm.write_url());
    assert_eq!(s["receivers"][1]["url"], prom.write_url());
    assert_eq!(s["receivers"][0]["samples_sent"], 4);
    assert_eq!(s["receivers"][0]["sending"], true);
    assert!(!s.to_string().contains("s3cret"));
    // Admins only (the receivers are the hub's); a viewer is refused.
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_problem(app.get("/remote-write", &viewer).await, 403, "forbidden").await;
    let page = app.get("//ui/remote-write", &app.owner).await;
    assert_eq!(page.status(), 200);
    let page = page.text().await.expect("page");
    assert!(page.contains(&vm.write_url()), "{page}");
    assert!(!page.contains("s3cret"));
}

async fn a_receiver_down_for_a_while_gets_everything_when_back(b: Backend) {
    let mut vm = rw_rig::victoria_metrics().await;
    let app = forwarding_hub(b, &[vm.write_url()]).await;
    let host = register(&app).await;
    let selector = format!("{{agent_id=\"{}\"}}", host.id);
    let base =
        OffsetDateTime::now_utc().replace_nanosecond(0).expect("ns") - time::Duration::minutes(30);
    push(&app, &host, base, 50, 0.0).await;
    assert_eq!(
        samples_in(&vm.wait_for_samples(&selector, 50, 30).await),
        50
    );

    // The receiver stops; the hub keeps storing and retries.
    vm.kill();
    for k in 1..=10 {
        push(&app, &host, at(base, k * 10), 50, k as f64 * 100.0).await;
    }
    let text = eventually(30, "the failures are counted as retried", || async {
        let t = metrics_text(&app).await;
        figure(
            &t,
            &format!(
                "trusthub_remote_write_samples_total{{url=\"{}\",result=\"retried\"}}",
                vm.write_url()
            ),
        )
        .is_some_and(|n| n > 0.0)
        .then_some(t)
    })
    .await;
    let lag = figure(
        &text,
        &format!(
            "trusthub_remote_write_lag_seconds{{url=\"{}\"}}",
            vm.write_url()
        ),
    );
    assert!(lag.is_some_and(|l| l >= 0.0), "{text}");
    let s = status_of(&app).await;
    assert!(s["receivers"][0]["last_error"].is_string(), "{s}");
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let s = status_of(&app).await;
    assert!(
        s["receivers"][0]["lag_seconds"]
            .as_f64()
            .is_some_and(|l| l >= 1.0),
        "{s}"
    );

    // Back: everything stored meanwhile arrives, each sample once per series and time.
    vm.start_again().await;
    let rows = vm.wait_for_samples(&selector, 550, 90).await;
    let points = points_of(&rows);
    let mut unique = points.clone();
    unique.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    assert_eq!(unique.len(), 550, "every stored sample arrived");
    for k in 0..=10i64 {
        for i in [0usize, 49] {
            let want = (
                i.to_string(),
                ms(at(base, k * 10)),
                k as f64 * 100.0 + i as f64,
            );
            assert!(unique.contains(&want), "{want:?}");
        }
    }
    let s = eventually(30, "the lag is back to 0", || async {
        let s = status_of(&app).await;
        (s["receivers"][0]["lag_seconds"] == 0.0).then_some(s)
    })
    .await;
    assert!(s["receivers"][0]["last_error"].is_null(), "{s}");
    assert!(
        s["receivers"][0]["samples_retried"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    // Where the sender took the samples from. On SQLite the writer hands each commit over in
    // memory; the request that failed is read back from the log, and the commits queued
    // behind it are sent from memory. On PostgreSQL the log is always read.
    let text = metrics_text(&app).await;
    let source = |from: &str| {
        figure(
            &text,
            &format!(
                "trusthub_remote_write_samples_source_total{{url=\"{}\",source=\"{from}\"}}",
                vm.write_url()
            ),
        )
    };
    assert!(source("log").is_some_and(|n| n > 0.0), "{text}");
    match b {
        Backend::Sqlite => assert!(source("memory").is_some_and(|n| n > 0.0), "{text}"),
        Backend::Postgres => assert_eq!(source("memory"), Some(0.0), "{text}"),
    }
}

async fn a_hub_restarted_mid_stream_loses_nothing_and_resumes_from_its_position(b: Backend) {
    let mut vm = rw_rig::victoria_metrics().await;
    let mut app = forwarding_hub(b, &[vm.write_url()]).await;
    let host = register(&app).await;
    let selector = format!("{{agent_id=\"{}\"}}", host.id);
    let base =
        OffsetDateTime::now_utc().replace_nanosecond(0).expect("ns") - time::Duration::minutes(20);
    push(&app, &host, base, 40, 0.0).await;
    assert_eq!(
        samples_in(&vm.wait_for_samples(&selector, 40, 30).await),
        40
    );
    // Everything accepted so far is recorded as accepted.
    eventually(30, "the position is saved", || async {
        (status_of(&app).await["receivers"][0]["lag_seconds"] == 0.0).then_some(())
    })
    .await;

    // The receiver goes away, batches keep coming, and the hub is restarted while they wait.
    vm.kill();
    for k in 1..=5 {
        push(&app, &host, at(base, k * 10), 40, k as f64 * 100.0).await;
    }
    app.restart(|_| {}).await;
    for k in 6..=8 {
        push(&app, &host, at(base, k * 10), 40, k as f64 * 100.0).await;
    }
    vm.start_again().await;
    let rows = vm.wait_for_samples(&selector, 360, 90).await;
    let mut points = points_of(&rows);
    points.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    assert_eq!(
        points.len(),
        360,
        "nothing stored was lost across the restart"
    );
    // The new process started from the stored position: what was accepted before the
    // restart was not sent again.
    let s = eventually(60, "the new process sent the rest", || async {
        let s = status_of(&app).await;
        (s["receivers"][0]["lag_seconds"] == 0.0).then_some(s)
    })
    .await;
    assert_eq!(s["receivers"][0]["samples_sent"], 320, "{s}");
    assert_eq!(
        samples_in(&vm.export(&selector).await),
        360,
        "no sample twice"
    );
}

async fn a_receiver_refusing_a_request_drops_it_and_moves_on(b: Backend) {
    // A receiver answering 400 to the first request and 204 after: the first request's
    // samples are dropped (counted), the next ones sent.
    let receiver = Receiver::start(&[400]).await;
    let url = receiver.url.clone();
    let app = forwarding_hub(b, std::slice::from_ref(&url)).await;
    let host = register(&app).await;
    let base = OffsetDateTime::now_utc().replace_nanosecond(0).expect("ns");
    push(&app, &host, base, 3, 0.0).await;
    receiver.wait_for(1, 30).await;
    push(&app, &host, at(base, 10), 2, 0.0).await;
    let got = receiver.wait_for(2, 30).await;
    // The requests are remote-write requests with the contract's headers.
    assert_eq!(got[1].header("content-type"), "application/x-protobuf");
    assert_eq!(got[1].header("content-encoding"), "snappy");
    assert_eq!(got[1].header("x-prometheus-remote-write-version"), "0.1.0");
    assert!(got[1].header("user-agent").starts_with("trusthub/"));
    let text = eventually(10, "the dropped samples are counted", || async {
        let t = metrics_text(&app).await;
        (figure(
            &t,
            &format!("trusthub_remote_write_samples_total{{url=\"{url}\",result=\"sent\"}}"),
        ) == Some(2.0))
        .then_some(t)
    })
    .await;
    assert_eq!(
        figure(
            &text,
            &format!("trusthub_remote_write_samples_total{{url=\"{url}\",result=\"dropped\"}}")
        ),
        Some(3.0),
        "{text}"
    );
    // Nothing is retried after a refusal.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(receiver.received().len(), 2);
}

/// On PostgreSQL a log row's id is taken at insert, not at commit: a transaction that stored
/// points earlier but commits after a later one must still be forwarded (the reader waits
/// for transactions older than what it takes).
async fn postgres_late_commit(b: Backend) {
    let vm = rw_rig::victoria_metrics().await;
    let app = forwarding_hub(b, &[vm.write_url()]).await;
    let host = register(&app).await;
    let selector = format!("{{agent_id=\"{}\"}}", host.id);
    let base =
        OffsetDateTime::now_utc().replace_nanosecond(0).expect("ns") - time::Duration::minutes(10);
    push(&app, &host, base, 1, 1.0).await;
    assert_eq!(samples_in(&vm.wait_for_samples(&selector, 1, 30).await), 1);
    let trusthub_store::Db::Postgres(pool) = &app.db else {
        panic!("postgres")
    };
    // A slow writer: stores a point and its log row, and has not committed yet.
    let mut slow = pool.begin().await.expect("begin");
    let late = ms(at(base, 10));
    sqlx::query(
        "INSERT INTO metric_points (agent_seq, ts, points) \
         SELECT a.seq, $2, json_build_array(json_build_array(s.id, 42.0)) FROM agents a \
         JOIN metric_series s ON s.agent_id = a.id WHERE a.id = $1 AND s.name = 'rw.test'",
    )
    .bind(Uuid::parse_str(&host.id).expect("id"))
    .bind(late)
    .execute(&mut *slow)
    .await
    .expect("point");
    sqlx::query(
        "INSERT INTO metric_log (agent_seq, ts, stored_at) SELECT seq, $2, $2 FROM agents WHERE id = $1",
    )
    .bind(Uuid::parse_str(&host.id).expect("id"))
    .bind(late)
    .execute(&mut *slow)
    .await
    .expect("log");
    // A later batch commits first (its log row has the higher id).
    push(&app, &host, at(base, 20), 1, 2.0).await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    slow.commit().await.expect("commit");
    let rows = vm.wait_for_samples(&selector, 3, 30).await;
    let points = points_of(&rows);
    assert_eq!(
        points,
        [
            ("0".to_owned(), ms(base), 1.0),
            ("0".to_owned(), late, 42.0),
            ("0".to_owned(), ms(at(base, 20)), 2.0)
        ]
    );
}

async fn ranges_and_charts_are_read_from_victoria_metrics(b: Backend) {
    let mut vm = rw_rig::victoria_metrics().await;
    let (app, host) = ranges_read_from(b, &vm).await;
    // The store down: the answer says so (503), it does not pretend there is no data.
    vm.kill();
    let p = assert_problem(
        app.get(&format!("/agents/{}/metrics", host.id), &app.owner)
            .await,
        503,
        "unavailable",
    )
    .await;
    assert!(
        p["detail"]
            .as_str()
            .is_some_and(|d| d.contains("TRUSTHUB_METRICS_QUERY_URL")),
        "{p}"
    );
}

async fn ranges_and_charts_are_read_from_prometheus(b: Backend) {
    let prom = rw_rig::prometheus().await;
    ranges_read_from(b, &prom).await;
}

/// With `TRUSTHUB_METRICS_QUERY_URL`, `GET /agents/:id/metrics` and the host page's charts
/// answer from the store (the hub's own points deleted, as a short raw retention does),
/// in CONTRACT 4's shape: raw points in [from, to), averages per bucket labelled with its
/// start and holding [start, start + interval), each series matched by its own labels.
async fn ranges_read_from(b: Backend, store: &rw_rig::Receiver) -> (TestApp, Host) {
    let (write, query) = (store.write_url(), store.base.clone());
    let app = TestApp::spawn_with(b, move |s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::RemoteWrite| v.remote_write_urls = vec![write]);
        s.sections
            .edit(|v: &mut trusthub_hub::sections::RemoteWrite| v.metrics_query_url = Some(query));
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Fleet| v.metrics_raw_retention_hours = 1);
    })
    .await;
    let host = register(&app).await;
    // Whole minutes two hours ago, and ten minutes ago for the host page's last hour.
    let now = OffsetDateTime::now_utc();
    let t0 =
        OffsetDateTime::from_unix_timestamp((now.unix_timestamp() - 7200) / 60 * 60).expect("t0");
    let recent = OffsetDateTime::from_unix_timestamp((now.unix_timestamp() - 600) / 60 * 60)
        .expect("recent");
    let mut metrics = Vec::new();
    for (secs, v) in [(0, 10.0), (30, 20.0), (60, 30.0), (90, 50.0), (120, 70.0)] {
        metrics.push(json!({"name": "cpu.percent", "ts": ts(at(t0, secs)), "value": v, "labels": {"cpu": "total"}}));
    }
    for (mount, v) in [("/", 40.0), ("/home", 60.0)] {
        metrics.push(json!({"name": "disk.used_percent", "ts": ts(at(t0, 30)), "value": v, "labels": {"mount": mount}}));
    }
    metrics.push(json!({"name": "cpu.percent", "ts": ts(recent), "value": 37.25, "labels": {"cpu": "total"}}));
    let batch = json!({"batch_id": Uuid::new_v4(), "sent_at": ts(now), "metrics": metrics});
    let r = send(&app, &host, batch.to_string().as_bytes(), None, true).await;
    assert_eq!(r.status(), 202);
    eventually(30, "everything was accepted", || async {
        (status_of(&app).await["receivers"][0]["lag_seconds"] == 0.0).then_some(())
    })
    .await;
    // Prometheus makes written samples queryable at once, VictoriaMetrics within a second.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    // The hub keeps nothing of its own any more.
    for table in ["metric_points", "metric_rollup_1m", "metric_rollup_1h"] {
        app.execute(&format!("DELETE FROM {table}")).await;
    }
    let url = |q: &str| format!("/agents/{}/metrics?{q}", host.id);
    let from = ts(t0);
    // Raw: [from, to) — the sample at `to` is left out.
    let raw = body(
        app.get(
            &url(&format!(
                "name=cpu.percent&from={}&to={}",
                rw_rig::enc(&from),
                rw_rig::enc(&ts(at(t0, 120)))
            )),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(
        raw,
        json!({"series": [{"name": "cpu.percent", "labels": {"cpu": "total"}, "points": [
            [ts(t0), 10.0], [ts(at(t0, 30)), 20.0], [ts(at(t0, 60)), 30.0], [ts(at(t0, 90)), 50.0]
        ]}]})
    );
    // Averages per minute, labelled with each minute's start.
    let avg = body(
        app.get(
            &url(&format!(
                "name=cpu.percent&interval=60s&from={}&to={}",
                rw_rig::enc(&from),
                rw_rig::enc(&ts(at(t0, 180)))
            )),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(
        avg["series"][0]["points"],
        json!([
            [ts(t0), 15.0],
            [ts(at(t0, 60)), 40.0],
            [ts(at(t0, 120)), 70.0]
        ]),
        "{avg}"
    );
    // Two series of one metric, each matched by its labels.
    let disks = body(
        app.get(
            &url(&format!(
                "name=disk.used_percent&from={}&to={}",
                rw_rig::enc(&from),
                rw_rig::enc(&ts(at(t0, 60)))
            )),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(
        disks,
        json!({"series": [
            {"name": "disk.used_percent", "labels": {"mount": "/"}, "points": [[ts(at(t0, 30)), 40.0]]},
            {"name": "disk.used_percent", "labels": {"mount": "/home"}, "points": [[ts(at(t0, 30)), 60.0]]}
        ]})
    );
    // The host page's CPU chart over the last hour, from the store.
    let page = app
        .get(&format!("//ui/agents/{}", host.id), &app.owner)
        .await
        .text()
        .await
        .expect("page");
    let data = page
        .split("class=\"chart-data\">")
        .nth(1)
        .and_then(|rest| rest.split("</script>").next())
        .expect("chart data");
    let chart: Value = serde_json::from_str(data).expect("json");
    let ys: Vec<f64> = chart["y"][0]
        .as_array()
        .expect("y")
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    assert_eq!(ys, [37.25], "{chart}");
    // Another tenant's host is still 404 (checked by the hub before asking the store).
    let other = app.other_tenant().await;
    assert_problem(
        app.get(&url("name=cpu.percent"), &other).await,
        404,
        "not_found",
    )
    .await;
    (app, host)
}
