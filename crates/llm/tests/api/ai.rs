//! LLM traces (CONTRACT 9): intake validation and idempotence, who may send, team views with
//! every token kind priced and unpriced models flagged, the monthly CSV, isolation.

use crate::harness::*;
use serde_json::{Value, json};

crate::dual!(
    an_operator_price_file_prices_models_for_every_tenant,
    traces_are_validated_idempotent_and_scoped,
    a_span_id_reused_in_another_trace_is_stored_and_counted,
    a_trace_of_this_second_is_in_the_default_period_and_unknown_cost_is_null,
    team_views_price_every_token_kind_and_export_csv,
);

fn sha(s: &str) -> String {
    use sha2::Digest;
    trusthub_core::secret::hex(&sha2::Sha256::digest(s.as_bytes()))
}

fn call(span: &str, model: &str, latency: u64, refused: bool) -> Value {
    json!({"span_id": span, "model": model, "prompt_tokens": 10_000, "completion_tokens": 3_000,
        "cache_read_tokens": 6_000, "cache_write_tokens": 1_000, "reasoning_tokens": 2_000,
        "latency_ms": latency, "prompt_sha256": sha(span), "refused": refused})
}

fn trace(id: &str, team: &str, started: &str, calls: Vec<Value>) -> Value {
    json!({"trace_id": id, "name": "answer", "team": team, "started_at": started, "ended_at": started, "calls": calls})
}

async fn traces_are_validated_idempotent_and_scoped(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (ingest, _) = app.token(&app.owner, "ai_ingest").await;
    let (read, _) = app.token(&app.owner, "read").await;
    let t0 = "2026-11-01T10:00:00Z";
    let text = "hello [EMAIL]";
    let good = json!({"traces": [trace("t1", "search", t0, vec![{
        let mut c = call("s1", "gpt-4o", 120, false);
        c["content_sha256"] = json!(sha(text));
        c
    }])], "blobs": [{"sha256": sha(text), "text": text}]});
    let r = app
        .post("/ai/traces", &Auth::Bearer(read.clone()), good.clone())
        .await;
    assert_problem(r, 403, "forbidden").await;
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_problem(
        app.post("/ai/traces", &viewer, good.clone()).await,
        403,
        "forbidden",
    )
    .await;

    for (bad, field) in [
        (json!({"traces": []}), "traces"),
        (
            json!({"traces": [trace("bad id!", "t", t0, vec![])]}),
            "traces[0].trace_id",
        ),
        (
            json!({"traces": [trace("t", "", t0, vec![])]}),
            "traces[0].team",
        ),
        (
            json!({"traces": [{"trace_id": "t", "name": "n", "team": "x", "started_at": t0, "ended_at": "2026-10-01T00:00:00Z"}]}),
            "traces[0].ended_at",
        ),
        (
            json!({"traces": [trace("t", "x", t0, vec![{let mut c = call("s", "m", 1, false); c["prompt_sha256"] = json!("xyz"); c}])]}),
            "traces[0].calls[0].prompt_sha256",
        ),
        (
            json!({"traces": [trace("t", "x", t0, vec![{let mut c = call("s", "m", 1, false); c["cache_read_tokens"] = json!(20_000); c}])]}),
            "traces[0].calls[0].tokens",
        ),
        (
            json!({"traces": [trace("t", "x", t0, vec![call("s", "m", 1, false), call("s", "m", 1, false)])]}),
            "traces[0].calls[1].span_id",
        ),
        (
            json!({"traces": [trace("t", "x", t0, vec![])], "blobs": [{"sha256": sha("a"), "text": "b"}]}),
            "blobs[0].sha256",
        ),
        (
            json!({"traces": [{"trace_id": "t", "name": "n", "team": "x", "started_at": t0, "ended_at": t0, "app_id": uuid::Uuid::new_v4()}]}),
            "app_id",
        ),
    ] {
        let p = assert_problem(
            app.post("/ai/traces", &Auth::Bearer(ingest.clone()), bad.clone())
                .await,
            422,
            "validation_failed",
        )
        .await;
        assert!(names_field(&p, field), "{bad}: {p}");
    }
    assert_problem(
        app.post(
            "/ai/traces",
            &Auth::Bearer(ingest.clone()),
            json!({"traces": "x"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(app.count("SELECT COUNT(*) FROM ai_traces").await, 0);

    let r = app
        .post("/ai/traces", &Auth::Bearer(ingest.clone()), good.clone())
        .await;
    assert_eq!(r.status(), 202);
    assert_eq!(
        body(r).await,
        json!({"accepted_traces": 1, "duplicate_traces": 0, "accepted_calls": 1, "duplicate_calls": 0, "stored_blobs": 1})
    );
    // The same batch again stores nothing.
    let r = app
        .post("/ai/traces", &Auth::Bearer(ingest.clone()), good.clone())
        .await;
    assert_eq!(
        body(r).await,
        json!({"accepted_traces": 0, "duplicate_traces": 1, "accepted_calls": 0, "duplicate_calls": 1, "stored_blobs": 0})
    );
    // An operator's session may send too; another tenant's traces are its own.
    let (operator, _) = app.user_with_role("operator").await;
    let r = app
        .post(
            "/ai/traces",
            &operator,
            json!({"traces": [trace("t2", "search", t0, vec![])]}),
        )
        .await;
    assert_eq!(r.status(), 202);
    let other = app.other_tenant().await;
    let r = app.post("/ai/traces", &other, good.clone()).await;
    assert_eq!(
        body(r).await["accepted_traces"],
        1,
        "trace ids are per tenant"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM ai_traces").await, 3);
    assert_eq!(app.count("SELECT COUNT(*) FROM ai_blobs").await, 2);
    let mine = body(
        app.get(
            "/ai/teams?from=2026-10-01T00:00:00Z&to=2026-12-01T00:00:00Z",
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(mine[0]["trace_count"], 2);
    let theirs = body(
        app.get(
            "/ai/teams?from=2026-10-01T00:00:00Z&to=2026-12-01T00:00:00Z",
            &other,
        )
        .await,
    )
    .await;
    assert_eq!(theirs[0]["trace_count"], 1);
}

async fn team_views_price_every_token_kind_and_export_csv(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (ingest, _) = app.token(&app.owner, "ai_ingest").await;
    let t0 = "2026-11-05T08:00:00Z";
    let latencies: Vec<Value> = (1..=20)
        .map(|i| call(&format!("a{i}"), "gpt-4o", i * 10, i == 20))
        .collect();
    let batch = json!({"traces": [
        trace("ta", "search", t0, latencies),
        trace("tb", "support, \"tier 1\"", t0, vec![call("b1", "claude-sonnet-4", 900, false), call("b2", "in-house-llm", 50, false)]),
        trace("tc", "search", "2026-10-31T23:59:59Z", vec![call("c1", "gpt-4o", 5, false)]),
    ]});
    assert_eq!(
        app.post("/ai/traces", &Auth::Bearer(ingest), batch)
            .await
            .status(),
        202
    );
    let q = "/ai/teams?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z";
    let v = body(app.get(q, &app.owner).await).await;
    let search = v
        .as_array()
        .expect("a")
        .iter()
        .find(|t| t["team"] == "search")
        .expect("search")
        .clone();
    // gpt-4o: uncached 3,000 × 2300 + cache read 6,000 × 1150 + cache write 1,000 × 2300
    // + output 1,000 × 9200 + reasoning 2,000 × 9200, per 1,000 tokens = 43,700 per call.
    assert_eq!(search["cost_micro_eur"], 20 * 43_700);
    assert_eq!(search["unpriced_calls"], 0);
    assert_eq!(search["p95_latency_ms"], 190);
    assert_eq!(search["refusal_rate"], 0.05);
    assert_eq!(search["trace_count"], 1);
    assert_eq!(search["top_models"], json!(["gpt-4o"]));
    let support = v
        .as_array()
        .expect("a")
        .iter()
        .find(|t| t["team"] != "search")
        .expect("support")
        .clone();
    assert_eq!(
        support["unpriced_calls"], 1,
        "a model without a price is flagged, not costed 0"
    );
    assert_eq!(support["cost_is_partial"], true);
    assert_eq!(search["cost_is_partial"], false);
    assert_eq!(
        support["top_models"],
        json!(["claude-sonnet-4", "in-house-llm"])
    );
    let by_cost: Vec<Value> = v
        .as_array()
        .expect("a")
        .iter()
        .map(|t| t["team"].clone())
        .collect();
    assert_eq!(by_cost[0], "search");
    let by_p95 = body(app.get(&format!("{q}&sort=p95"), &app.owner).await).await;
    assert_eq!(by_p95[0]["team"], "support, \"tier 1\"");
    assert_problem(
        app.get(&format!("{q}&sort=name"), &app.owner).await,
        422,
        "validation_failed",
    )
    .await;
    assert_problem(
        app.get("/ai/teams?from=nope", &app.owner).await,
        422,
        "validation_failed",
    )
    .await;

    let r = app
        .get("/ai/teams/export.csv?month=2026-11", &app.owner)
        .await;
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .expect("ct")
            .starts_with("text/csv")
    );
    let csv = r.text().await.expect("text");
    let lines: Vec<&str> = csv.split("\r\n").collect();
    assert_eq!(
        lines[0],
        "team,month,trace_count,call_count,cost_micro_eur,unpriced_calls,p95_latency_ms,refusal_rate,top_models"
    );
    assert_eq!(lines[1], "search,2026-11,1,20,874000,0,190,0.0500,gpt-4o");
    assert!(
        lines[2].starts_with("\"support, \"\"tier 1\"\"\",2026-11,1,2,"),
        "{}",
        lines[2]
    );
    assert_eq!(lines.len(), 4, "header, two teams, final CRLF");
    let oct = app
        .get("/ai/teams/export.csv?month=2026-10", &app.owner)
        .await
        .text()
        .await
        .expect("t");
    assert!(oct.contains("search,2026-10,1,1,43700,"), "{oct}");
    assert_problem(
        app.get("/ai/teams/export.csv?month=2026-13", &app.owner)
            .await,
        422,
        "validation_failed",
    )
    .await;
    assert_problem(
        app.get("/ai/teams/export.csv?month=26-1", &app.owner).await,
        422,
        "validation_failed",
    )
    .await;
}

async fn an_operator_price_file_prices_models_for_every_tenant(b: Backend) {
    let dir = TempDir::new();
    let file = dir.0.join("prices.json");
    std::fs::write(
        &file,
        r#"{"prices": [{"model": "in-house-llm", "effective_from": "2026-01-01", "input": 1000,
            "output": 2000, "cache_read": 100, "cache_write": 1000, "reasoning": 2000}]}"#,
    )
    .expect("write");
    let path = file.clone();
    let app = TestApp::spawn_with(b, move |s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Llm| v.ai_prices_file = Some(path))
    })
    .await;
    let (ingest, _) = app.token(&app.owner, "ai_ingest").await;
    let batch = json!({"traces": [trace("t", "ops", "2026-11-05T08:00:00Z", vec![call("k", "in-house-llm", 10, false)])]});
    assert_eq!(
        app.post("/ai/traces", &Auth::Bearer(ingest), batch)
            .await
            .status(),
        202
    );
    let prices = body(app.get("/ai/prices", &app.owner).await).await;
    let mine = prices
        .as_array()
        .expect("prices")
        .iter()
        .find(|p| p["model"] == "in-house-llm")
        .expect("priced by the file")
        .clone();
    assert_eq!(mine["source"], "file");
    let v = body(
        app.get(
            "/ai/teams?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z",
            &app.owner,
        )
        .await,
    )
    .await;
    // 3,000 uncached × 1000 + 6,000 cache read × 100 + 1,000 cache write × 1000 + 1,000
    // output × 2000 + 2,000 reasoning × 2000, per 1,000 tokens.
    assert_eq!(v[0]["cost_micro_eur"], 3_000 + 600 + 1_000 + 2_000 + 4_000);
    assert_eq!(v[0]["unpriced_calls"], 0);

    // A broken file stops the hub at start, with the reason.
    std::fs::write(
        &file,
        r#"{"prices": [{"model": "x", "effective_from": "soon"}]}"#,
    )
    .expect("write");
    let (mut settings, _) = TestApp::settings(Backend::Sqlite, &dir).await;
    settings
        .sections
        .edit(|v: &mut trusthub_hub::sections::Llm| v.ai_prices_file = Some(file.clone()));
    let err = trusthub_hub::Server::build(settings)
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("prices.json"), "{err}");
    // A well-formed file is held to the API's rules, and the error names the entry.
    std::fs::write(
        &file,
        r#"{"prices": [{"model": "x", "effective_from": "soon", "input": 1, "output": 1,
            "cache_read": 0, "cache_write": 0, "reasoning": 0}]}"#,
    )
    .expect("write");
    let (mut settings, _) = TestApp::settings(Backend::Sqlite, &dir).await;
    settings
        .sections
        .edit(|v: &mut trusthub_hub::sections::Llm| v.ai_prices_file = Some(file));
    let err = trusthub_hub::Server::build(settings)
        .await
        .expect_err("refused");
    assert!(
        err.to_string()
            .contains("prices[0].effective_from must be YYYY-MM-DD"),
        "{err}"
    );
}

/// CONTRACT 13: a call is identified by `(trace_id, span_id)`. A span id already used in
/// another trace was acknowledged and silently dropped (gone from costs and evidence packs).
async fn a_span_id_reused_in_another_trace_is_stored_and_counted(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (ingest, _) = app.token(&app.owner, "ai_ingest").await;
    let auth = Auth::Bearer(ingest);
    let t0 = "2026-11-01T10:00:00Z";
    let first =
        json!({"traces": [trace("a", "search", t0, vec![call("s1", "gpt-4o", 100, false)])]});
    let r = app.post("/ai/traces", &auth, first.clone()).await;
    assert_eq!(body(r).await["accepted_calls"], 1);
    // Another trace with the same span id, and in the same request one more trace reusing it.
    let second = json!({"traces": [
        trace("b", "search", t0, vec![call("s1", "gpt-4o", 200, false)]),
        trace("c", "search", t0, vec![call("s1", "gpt-4o", 300, false)]),
    ]});
    let r = app.post("/ai/traces", &auth, second.clone()).await;
    assert_eq!(r.status(), 202);
    assert_eq!(
        body(r).await,
        json!({"accepted_traces": 2, "duplicate_traces": 0, "accepted_calls": 2, "duplicate_calls": 0, "stored_blobs": 0})
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM ai_calls").await, 3);
    // A known trace sent again with one new call: the new one is stored, the old one counted.
    let again = json!({"traces": [trace("a", "search", t0, vec![
        call("s1", "gpt-4o", 100, false),
        call("s2", "gpt-4o", 100, false),
    ])]});
    let r = app.post("/ai/traces", &auth, again).await;
    assert_eq!(
        body(r).await,
        json!({"accepted_traces": 0, "duplicate_traces": 1, "accepted_calls": 1, "duplicate_calls": 1, "stored_blobs": 0})
    );
    let teams = body(
        app.get(
            "/ai/teams?from=2026-10-01T00:00:00Z&to=2026-12-01T00:00:00Z",
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(teams[0]["call_count"], 4, "{teams}");
    // Every call is in an evidence pack of the period.
    let r = app
        .post(
            "/ai/evidence-packs",
            &app.owner,
            json!({"period_start": "2026-11-01T00:00:00Z", "period_end": "2026-11-02T00:00:00Z"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let pack = body(r).await;
    assert_eq!(pack["span_count"], 4, "{pack}");
}

/// The default period ends after the current second (a trace just sent was "team not
/// found"), and a team whose every call is unpriced has an unknown cost, not 0.
async fn a_trace_of_this_second_is_in_the_default_period_and_unknown_cost_is_null(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (ingest, _) = app.token(&app.owner, "ai_ingest").await;
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .expect("ns")
        .format(&time::format_description::well_known::Rfc3339)
        .expect("fmt");
    let r = app
        .post(
            "/ai/traces",
            &Auth::Bearer(ingest),
            json!({"traces": [trace("now", "fresh", &now, vec![call("s1", "in-house-llm", 10, false)])]}),
        )
        .await;
    assert_eq!(r.status(), 202);
    let r = app.get("/ai/teams/fresh", &app.owner).await;
    assert_eq!(
        r.status(),
        200,
        "a trace of this second is in the default period"
    );
    let teams = body(app.get("/ai/teams", &app.owner).await).await;
    let fresh = &teams[0];
    assert_eq!(fresh["team"], "fresh");
    assert_eq!(fresh["call_count"], 1);
    assert_eq!(fresh["unpriced_calls"], 1);
    assert_eq!(
        fresh["cost_micro_eur"],
        Value::Null,
        "unknown, not 0: {fresh}"
    );
    let month = &now[..7];
    let csv = app
        .get(&format!("/ai/teams/export.csv?month={month}"), &app.owner)
        .await
        .text()
        .await
        .expect("csv");
    let row = csv.split("\r\n").nth(1).expect("row");
    assert!(row.starts_with(&format!("fresh,{month},1,1,,1,")), "{row}");
}
