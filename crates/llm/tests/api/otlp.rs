//! OTLP/HTTP trace intake (issue 6): a protobuf body built with the opentelemetry-proto types
//! (what OpenLLMetry / OpenLIT exporters send), OTLP/JSON, gzip, spans of one trace over
//! several exports, idempotence, refusals, isolation.

use crate::harness::*;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use serde_json::{Value, json};

crate::dual!(
    otlp_protobuf_genai_spans_become_priced_calls,
    otlp_span_ids_are_scoped_to_their_trace,
    otlp_json_gzip_and_refusals,
);

const TRACE: [u8; 16] = [
    0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c,
];
/// 2026-11-05T08:00:00Z in ns.
const T0: u64 = 1_793_865_600_000_000_000;
const SEC: u64 = 1_000_000_000;

fn kv(key: &str, v: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(v) }),
        ..Default::default()
    }
}

fn s(key: &str, v: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(v.into()))
}

fn i(key: &str, v: i64) -> KeyValue {
    kv(key, any_value::Value::IntValue(v))
}

fn span(
    id: u8,
    parent: Option<u8>,
    name: &str,
    start: u64,
    end: u64,
    attrs: Vec<KeyValue>,
) -> Span {
    Span {
        trace_id: TRACE.to_vec(),
        span_id: vec![id; 8],
        parent_span_id: parent.map(|p| vec![p; 8]).unwrap_or_default(),
        name: name.into(),
        start_time_unix_nano: start,
        end_time_unix_nano: end,
        attributes: attrs,
        ..Default::default()
    }
}

fn llm(id: u8, model: &str, start: u64, latency_ms: u64) -> Span {
    span(
        id,
        Some(1),
        &format!("chat {model}"),
        start,
        start + latency_ms * 1_000_000,
        vec![
            s("gen_ai.operation.name", "chat"),
            s("gen_ai.provider.name", "openai"),
            s("gen_ai.request.model", model),
            i("gen_ai.usage.input_tokens", 10_000),
            i("gen_ai.usage.output_tokens", 3_000),
            i("gen_ai.usage.cache_read.input_tokens", 6_000),
            i("gen_ai.usage.cache_creation.input_tokens", 1_000),
            i("gen_ai.usage.reasoning.output_tokens", 2_000),
            s("gen_ai.prompt.0.content", "call me on +44 20 7946 0958"),
        ],
    )
}

fn request(spans: Vec<Span>) -> Vec<u8> {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![s("service.name", "checkout"), s("trusthub.team", "search")],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

async fn export(
    app: &TestApp,
    token: &str,
    ct: &str,
    body: Vec<u8>,
    gzip: bool,
) -> reqwest::Response {
    let mut req = app
        .client
        .post(app.url("/otlp/v1/traces"))
        .bearer_auth(token)
        .header("content-type", ct);
    let body = if gzip {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&body).expect("gzip");
        req = req.header("content-encoding", "gzip");
        e.finish().expect("gzip")
    } else {
        body
    };
    req.body(body).send().await.expect("send")
}

async fn teams(app: &TestApp, auth: &Auth) -> Value {
    body(
        app.get(
            "/ai/teams?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z",
            auth,
        )
        .await,
    )
    .await
}

async fn otlp_protobuf_genai_spans_become_priced_calls(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (token, _) = app.token(&app.owner, "ai_ingest").await;
    // The exporter sends the LLM spans first (they end first), the root span later.
    let first = request(vec![
        llm(2, "gpt-4o", T0 + 2 * SEC, 840),
        llm(3, "gpt-4o", T0 + 3 * SEC, 1200),
    ]);
    let r = export(&app, &token, "application/x-protobuf", first.clone(), false).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/x-protobuf");
    let resp = ExportTraceServiceResponse::decode(r.bytes().await.expect("b")).expect("response");
    assert!(resp.partial_success.is_none_or(|p| p.rejected_spans == 0));
    let root = request(vec![span(
        1,
        None,
        "POST /answer",
        T0,
        T0 + 5 * SEC,
        vec![],
    )]);
    assert_eq!(
        export(&app, &token, "application/x-protobuf", root, false)
            .await
            .status(),
        200
    );
    // A retried export stores nothing twice.
    assert_eq!(
        export(&app, &token, "application/x-protobuf", first, false)
            .await
            .status(),
        200
    );

    assert_eq!(app.count("SELECT COUNT(*) FROM ai_traces").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM ai_calls").await, 2);
    let v = teams(&app, &app.owner).await;
    let search = &v[0];
    assert_eq!(
        search["team"], "search",
        "team from the resource's trusthub.team"
    );
    assert_eq!(
        search["cost_micro_eur"],
        2 * 43_700,
        "every token kind priced"
    );
    assert_eq!(search["p95_latency_ms"], 1200);
    assert_eq!(search["trace_count"], 1);
    // The root span named the trace and widened it to its start; the prompt was hashed
    // after redaction and is stored nowhere.
    let detail = body(
        app.get(
            "/ai/teams/search?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z",
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(detail["daily"][0]["date"], "2026-11-05");
    let pack = body(
        app.post(
            "/ai/evidence-packs",
            &app.owner,
            json!({"period_start": "2026-11-05T08:00:00Z", "period_end": "2026-11-05T08:00:01Z"}),
        )
        .await,
    )
    .await;
    assert_eq!(
        pack["trace_count"], 1,
        "the trace starts at the root span's start"
    );
    assert_eq!(pack["span_count"], 2);
    let prompt = trusthub_core::evidence::sha256_hex(b"call me on [PHONE]");
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM ai_calls WHERE prompt_sha256 = '{prompt}'"
        ))
        .await,
        2
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM ai_blobs").await, 0);

    // Spans of a trace without any LLM call are not stored.
    let other = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans: vec![Span {
                    trace_id: vec![9; 16],
                    span_id: vec![9; 8],
                    name: "GET /health".into(),
                    start_time_unix_nano: T0,
                    end_time_unix_nano: T0 + 1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    assert_eq!(
        export(
            &app,
            &token,
            "application/x-protobuf",
            other.encode_to_vec(),
            false
        )
        .await
        .status(),
        200
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM ai_traces").await, 1);
    // Another tenant sees none of it.
    let them = app.other_tenant().await;
    assert_eq!(teams(&app, &them).await, json!([]));
}

async fn otlp_json_gzip_and_refusals(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (token, _) = app.token(&app.owner, "ai_ingest").await;
    let body_json = json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "helpdesk"}}]},
        "scopeSpans": [{"spans": [
            {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
             "name": "chat", "startTimeUnixNano": T0.to_string(), "endTimeUnixNano": (T0 + SEC).to_string(),
             "attributes": [
                {"key": "gen_ai.system", "value": {"stringValue": "anthropic"}},
                {"key": "gen_ai.response.model", "value": {"stringValue": "claude-sonnet-4"}},
                {"key": "gen_ai.usage.prompt_tokens", "value": {"intValue": "100"}},
                {"key": "gen_ai.usage.completion_tokens", "value": {"intValue": "5"}},
                {"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [{"stringValue": "refusal"}]}}}
             ]},
            {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "", "name": "broken",
             "startTimeUnixNano": T0.to_string(), "endTimeUnixNano": T0.to_string()}
        ]}]
    }]});
    let r = export(
        &app,
        &token,
        "application/json",
        body_json.to_string().into_bytes(),
        true,
    )
    .await;
    assert_eq!(r.status(), 200);
    let v = body(r).await;
    assert_eq!(v["partialSuccess"]["rejectedSpans"], "1", "{v}");
    let t = teams(&app, &app.owner).await;
    assert_eq!(t[0]["team"], "helpdesk", "team from service.name");
    assert_eq!(t[0]["refusal_rate"], 1.0);
    assert_eq!(t[0]["top_models"], json!(["claude-sonnet-4"]));

    // Refusals: who, what and how.
    let (read, _) = app.token(&app.owner, "read").await;
    assert_problem(
        export(
            &app,
            &read,
            "application/x-protobuf",
            request(vec![]),
            false,
        )
        .await,
        403,
        "forbidden",
    )
    .await;
    assert_problem(
        export(&app, &token, "text/plain", b"x".to_vec(), false).await,
        415,
        "unsupported_media_type",
    )
    .await;
    assert_problem(
        export(
            &app,
            &token,
            "application/x-protobuf",
            vec![0x0a, 0xff, 0xff],
            false,
        )
        .await,
        400,
        "bad_request",
    )
    .await;
    assert_problem(
        export(&app, &token, "application/json", b"{".to_vec(), false).await,
        400,
        "bad_request",
    )
    .await;
    let r = app
        .client
        .post(app.url("/otlp/v1/traces"))
        .header("content-type", "application/x-protobuf")
        .body(request(vec![]))
        .send()
        .await
        .expect("send");
    assert_problem(r, 401, "unauthenticated").await;
    assert_eq!(app.count("SELECT COUNT(*) FROM ai_calls").await, 1);
}

/// CONTRACT 13: a span id is unique within its trace only. The same span id in another trace
/// (exporters of different services may collide) is another call, stored and priced.
async fn otlp_span_ids_are_scoped_to_their_trace(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (token, _) = app.token(&app.owner, "ai_ingest").await;
    let first = request(vec![llm(2, "gpt-4o", T0 + 2 * SEC, 840)]);
    let r = export(&app, &token, "application/x-protobuf", first, false).await;
    assert_eq!(r.status(), 200);
    let mut other = llm(2, "gpt-4o", T0 + 3 * SEC, 900);
    other.trace_id = vec![7; 16];
    let r = export(
        &app,
        &token,
        "application/x-protobuf",
        request(vec![other]),
        false,
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(app.count("SELECT COUNT(*) FROM ai_calls").await, 2);
    let t = teams(&app, &app.owner).await;
    assert_eq!(t[0]["call_count"], 2, "{t}");
    assert_eq!(t[0]["trace_count"], 2, "{t}");
}
