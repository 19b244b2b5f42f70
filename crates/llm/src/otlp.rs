//! OTLP/HTTP trace intake (issue 6): `ExportTraceServiceRequest` in protobuf (a small decoder
//! of the protobuf wire format for the fields we read) or in OTLP/JSON, and the mapping of
//! spans that carry the OpenTelemetry GenAI semantic conventions to traces and LLM calls.
//!
//! Mapping, per span with a model (`gen_ai.request.model`, else `gen_ai.response.model`):
//! - tokens: `gen_ai.usage.input_tokens` (or `…prompt_tokens`), `gen_ai.usage.output_tokens`
//!   (or `…completion_tokens`), `gen_ai.usage.cache_read.input_tokens` (or
//!   `…cache_read_input_tokens`, `…input_tokens.cached`),
//!   `gen_ai.usage.cache_creation.input_tokens` (or `…cache_creation_input_tokens`,
//!   `…input_tokens.cache_write`), `gen_ai.usage.reasoning.output_tokens` (or
//!   `…output_tokens.reasoning`);
//! - provider: `gen_ai.provider.name`, else `gen_ai.system`;
//! - refused: `gen_ai.response.finish_reasons` holds `content_filter` or `refusal`, or
//!   `trusthub.refused` is true;
//! - latency: end − start;
//! - prompt hash: `trusthub.prompt_sha256` when the sender computed it; else the SHA-256 of
//!   the prompt text found in `gen_ai.input.messages`, `gen_ai.prompt` or
//!   `gen_ai.prompt.<n>.content` **after redaction** (the text itself is never stored); else
//!   the SHA-256 of the empty string (no prompt seen);
//! - team: span attribute `trusthub.team`, else resource attribute `trusthub.team`, else the
//!   resource's `service.name`, else `default`.
//!
//! Spans without a model only give their trace its name (the root span's) and time range; a
//! trace none of whose spans carry a model is not stored.

use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Deepest nesting of attribute values accepted.
const MAX_DEPTH: usize = 8;

/// Why a request could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

fn bad(m: impl Into<String>) -> DecodeError {
    DecodeError(m.into())
}

/// One span, flattened with its resource's attributes.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// Attributes of its resource.
    pub resource: Arc<BTreeMap<String, Value>>,
    /// 16 bytes.
    pub trace_id: Vec<u8>,
    /// 8 bytes.
    pub span_id: Vec<u8>,
    /// Empty for a root span.
    pub parent_span_id: Vec<u8>,
    /// Name.
    pub name: String,
    /// Start, ns since the epoch.
    pub start_ns: u64,
    /// End, ns since the epoch.
    pub end_ns: u64,
    /// Attributes (values as JSON: strings, booleans, integers, doubles, arrays, objects;
    /// bytes as hex).
    pub attributes: BTreeMap<String, Value>,
}

// ---------------------------------------------------------------------------------------
// Protobuf wire format.

enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32,
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self
                .buf
                .get(self.pos)
                .ok_or_else(|| bad("truncated varint"))?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(bad("varint too long"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or_else(|| bad("truncated field"))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// The next field, or `None` at the end.
    fn field(&mut self) -> Result<Option<(u64, Wire<'a>)>, DecodeError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let (number, wire) = (key >> 3, key & 7);
        let w = match wire {
            0 => Wire::Varint(self.varint()?),
            1 => Wire::Fixed64(u64::from_le_bytes(
                self.take(8)?.try_into().map_err(|_| bad("fixed64"))?,
            )),
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| bad("length"))?;
                Wire::Bytes(self.take(n)?)
            }
            5 => {
                self.take(4)?;
                Wire::Fixed32
            }
            _ => return Err(bad(format!("unsupported wire type {wire}"))),
        };
        Ok(Some((number, w)))
    }
}

fn utf8(b: &[u8]) -> Result<String, DecodeError> {
    String::from_utf8(b.to_vec()).map_err(|_| bad("a string is not UTF-8"))
}

fn any_value(b: &[u8], depth: usize) -> Result<Value, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(bad("attribute values nest too deep"));
    }
    let mut r = Reader::new(b);
    let mut v = Value::Null;
    while let Some((n, w)) = r.field()? {
        v = match (n, w) {
            (1, Wire::Bytes(s)) => Value::String(utf8(s)?),
            (2, Wire::Varint(x)) => Value::Bool(x != 0),
            (3, Wire::Varint(x)) => Value::from(x as i64),
            (4, Wire::Fixed64(x)) => serde_json::Number::from_f64(f64::from_bits(x))
                .map(Value::Number)
                .unwrap_or(Value::Null),
            (5, Wire::Bytes(s)) => {
                let mut items = Vec::new();
                let mut a = Reader::new(s);
                while let Some((k, w)) = a.field()? {
                    if let (1, Wire::Bytes(x)) = (k, w) {
                        items.push(any_value(x, depth + 1)?);
                    }
                }
                Value::Array(items)
            }
            (6, Wire::Bytes(s)) => {
                let mut map = serde_json::Map::new();
                let mut a = Reader::new(s);
                while let Some((k, w)) = a.field()? {
                    if let (1, Wire::Bytes(x)) = (k, w) {
                        let (key, val) = key_value(x, depth + 1)?;
                        map.insert(key, val);
                    }
                }
                Value::Object(map)
            }
            (7, Wire::Bytes(s)) => Value::String(trusthub_core::secret::hex(s)),
            _ => v,
        };
    }
    Ok(v)
}

fn key_value(b: &[u8], depth: usize) -> Result<(String, Value), DecodeError> {
    let mut r = Reader::new(b);
    let (mut key, mut value) = (String::new(), Value::Null);
    while let Some((n, w)) = r.field()? {
        match (n, w) {
            (1, Wire::Bytes(s)) => key = utf8(s)?,
            (2, Wire::Bytes(s)) => value = any_value(s, depth)?,
            _ => {}
        }
    }
    Ok((key, value))
}

fn attributes_of(b: &[u8], field: u64) -> Result<BTreeMap<String, Value>, DecodeError> {
    let mut out = BTreeMap::new();
    let mut r = Reader::new(b);
    while let Some((n, w)) = r.field()? {
        if let (true, Wire::Bytes(s)) = (n == field, w) {
            let (k, v) = key_value(s, 0)?;
            out.insert(k, v);
        }
    }
    Ok(out)
}

fn proto_span(b: &[u8], resource: &Arc<BTreeMap<String, Value>>) -> Result<Span, DecodeError> {
    let mut s = Span {
        resource: resource.clone(),
        trace_id: Vec::new(),
        span_id: Vec::new(),
        parent_span_id: Vec::new(),
        name: String::new(),
        start_ns: 0,
        end_ns: 0,
        attributes: attributes_of(b, 9)?,
    };
    let mut r = Reader::new(b);
    while let Some((n, w)) = r.field()? {
        match (n, w) {
            (1, Wire::Bytes(x)) => s.trace_id = x.to_vec(),
            (2, Wire::Bytes(x)) => s.span_id = x.to_vec(),
            (4, Wire::Bytes(x)) => s.parent_span_id = x.to_vec(),
            (5, Wire::Bytes(x)) => s.name = utf8(x)?,
            (7, Wire::Fixed64(x)) => s.start_ns = x,
            (8, Wire::Fixed64(x)) => s.end_ns = x,
            _ => {}
        }
    }
    Ok(s)
}

/// Decodes a protobuf `ExportTraceServiceRequest`.
pub fn decode_protobuf(body: &[u8]) -> Result<Vec<Span>, DecodeError> {
    let mut spans = Vec::new();
    let mut req = Reader::new(body);
    while let Some((n, w)) = req.field()? {
        let (1, Wire::Bytes(rs)) = (n, w) else {
            continue;
        };
        let mut resource = Arc::new(BTreeMap::new());
        let mut scopes = Vec::new();
        let mut r = Reader::new(rs);
        while let Some((n, w)) = r.field()? {
            match (n, w) {
                (1, Wire::Bytes(x)) => resource = Arc::new(attributes_of(x, 1)?),
                (2, Wire::Bytes(x)) => scopes.push(x),
                _ => {}
            }
        }
        for scope in scopes {
            let mut r = Reader::new(scope);
            while let Some((n, w)) = r.field()? {
                if let (2, Wire::Bytes(x)) = (n, w) {
                    spans.push(proto_span(x, &resource)?);
                }
            }
        }
    }
    Ok(spans)
}

// ---------------------------------------------------------------------------------------
// OTLP/JSON (lowerCamelCase, or the proto field names; ids in hex; 64-bit integers as
// strings or numbers).

fn get<'a>(v: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    v.get(camel).or_else(|| v.get(snake))
}

fn json_u64(v: Option<&Value>) -> Result<u64, DecodeError> {
    match v {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) => n.as_u64().ok_or_else(|| bad("not an unsigned integer")),
        Some(Value::String(s)) => s.parse().map_err(|_| bad("not an unsigned integer")),
        Some(_) => Err(bad("not an unsigned integer")),
    }
}

fn json_any(v: &Value, depth: usize) -> Result<Value, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(bad("attribute values nest too deep"));
    }
    if let Some(s) = get(v, "stringValue", "string_value") {
        return Ok(s.clone());
    }
    if let Some(b) = get(v, "boolValue", "bool_value") {
        return Ok(b.clone());
    }
    if let Some(i) = get(v, "intValue", "int_value") {
        return match i {
            Value::String(s) => s
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| bad("intValue")),
            other => Ok(other.clone()),
        };
    }
    if let Some(d) = get(v, "doubleValue", "double_value") {
        return Ok(d.clone());
    }
    if let Some(a) = get(v, "arrayValue", "array_value") {
        let values = a.get("values").and_then(Value::as_array);
        return Ok(Value::Array(
            values
                .into_iter()
                .flatten()
                .map(|x| json_any(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ));
    }
    if let Some(kv) = get(v, "kvlistValue", "kvlist_value") {
        return Ok(Value::Object(
            json_attributes(kv.get("values"), depth + 1)?
                .into_iter()
                .collect(),
        ));
    }
    if let Some(Value::String(b)) = get(v, "bytesValue", "bytes_value") {
        let raw = data_encoding::BASE64
            .decode(b.as_bytes())
            .map_err(|_| bad("bytesValue is not base64"))?;
        return Ok(Value::String(trusthub_core::secret::hex(&raw)));
    }
    Ok(Value::Null)
}

fn json_attributes(
    list: Option<&Value>,
    depth: usize,
) -> Result<BTreeMap<String, Value>, DecodeError> {
    let mut out = BTreeMap::new();
    for kv in list.and_then(Value::as_array).into_iter().flatten() {
        let key = kv
            .get("key")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("an attribute has no key"))?;
        let value = match kv.get("value") {
            Some(v) => json_any(v, depth)?,
            None => Value::Null,
        };
        out.insert(key.to_owned(), value);
    }
    Ok(out)
}

fn json_id(v: Option<&Value>) -> Result<Vec<u8>, DecodeError> {
    match v.and_then(Value::as_str) {
        None | Some("") => Ok(Vec::new()),
        Some(s) => data_encoding::HEXLOWER_PERMISSIVE
            .decode(s.as_bytes())
            .map_err(|_| bad("ids are hex in OTLP/JSON")),
    }
}

/// Decodes an OTLP/JSON `ExportTraceServiceRequest`.
pub fn decode_json(body: &[u8]) -> Result<Vec<Span>, DecodeError> {
    let root: Value = serde_json::from_slice(body).map_err(|e| bad(format!("not JSON: {e}")))?;
    let mut spans = Vec::new();
    for rs in get(&root, "resourceSpans", "resource_spans")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let resource = Arc::new(json_attributes(
            rs.get("resource").and_then(|r| r.get("attributes")),
            0,
        )?);
        for ss in get(rs, "scopeSpans", "scope_spans")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for s in ss
                .get("spans")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                spans.push(Span {
                    resource: resource.clone(),
                    trace_id: json_id(get(s, "traceId", "trace_id"))?,
                    span_id: json_id(get(s, "spanId", "span_id"))?,
                    parent_span_id: json_id(get(s, "parentSpanId", "parent_span_id"))?,
                    name: s
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    start_ns: json_u64(get(s, "startTimeUnixNano", "start_time_unix_nano"))?,
                    end_ns: json_u64(get(s, "endTimeUnixNano", "end_time_unix_nano"))?,
                    attributes: json_attributes(s.get("attributes"), 0)?,
                });
            }
        }
    }
    Ok(spans)
}

// ---------------------------------------------------------------------------------------
// GenAI mapping.

/// An LLM call read from a span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// Span id, hex.
    pub span_id: String,
    /// Model.
    pub model: String,
    /// Provider.
    pub provider: Option<String>,
    /// Token counts.
    pub usage: trusthub_core::ai::Usage,
    /// End − start.
    pub latency_ms: u64,
    /// SHA-256 of the redacted prompt (see the module docs).
    pub prompt_sha256: String,
    /// The model refused.
    pub refused: bool,
}

/// A trace of this request: its GenAI calls and what its other spans say of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// Trace id, hex.
    pub trace_id: String,
    /// The root span's name when the request holds it, else the earliest span's.
    pub name: String,
    /// Whether `name` is the root span's.
    pub root_seen: bool,
    /// Team.
    pub team: String,
    /// Earliest start, ns.
    pub start_ns: u64,
    /// Latest end, ns.
    pub end_ns: u64,
    /// Calls.
    pub calls: Vec<Call>,
}

/// Traces of the request, and how many spans were refused, with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mapped {
    /// Traces with their calls (also traces without a call of their own in this request:
    /// they may only widen a trace already stored).
    pub traces: Vec<Trace>,
    /// Spans that could not be taken.
    pub rejected: u64,
    /// The first reasons.
    pub errors: Vec<String>,
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ => None,
    }
}

fn count(a: &BTreeMap<String, Value>, keys: &[&str]) -> u64 {
    keys.iter()
        .find_map(|k| match a.get(*k) {
            Some(Value::Number(n)) => n.as_u64().or_else(|| n.as_f64().map(|f| f.max(0.0) as u64)),
            Some(Value::String(s)) => s.parse().ok(),
            _ => None,
        })
        .unwrap_or(0)
}

fn prompt_text(a: &BTreeMap<String, Value>) -> String {
    let mut parts = Vec::new();
    for (k, v) in a {
        let indexed = k.starts_with("gen_ai.prompt.") && k.ends_with(".content");
        if k == "gen_ai.input.messages" || k == "gen_ai.prompt" || indexed {
            match v {
                Value::String(s) => parts.push(s.clone()),
                Value::Null => {}
                other => parts.push(other.to_string()),
            }
        }
    }
    parts.join("\n")
}

fn hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// Maps decoded spans to traces and calls (see the module docs).
pub fn map(spans: &[Span]) -> Mapped {
    let mut out = Mapped::default();
    let mut by_trace: BTreeMap<String, Trace> = BTreeMap::new();
    let reject = |out: &mut Mapped, why: String| {
        out.rejected += 1;
        if out.errors.len() < 5 {
            out.errors.push(why);
        }
    };
    for s in spans {
        if s.trace_id.len() != 16 || s.trace_id.iter().all(|b| *b == 0) {
            reject(&mut out, "a span has no valid 16-byte trace id".into());
            continue;
        }
        if s.span_id.len() != 8 || s.span_id.iter().all(|b| *b == 0) {
            reject(&mut out, "a span has no valid 8-byte span id".into());
            continue;
        }
        if s.end_ns < s.start_ns || s.start_ns == 0 {
            reject(
                &mut out,
                format!(
                    "span {} ends before it starts",
                    trusthub_core::secret::hex(&s.span_id)
                ),
            );
            continue;
        }
        let a = &s.attributes;
        let trace_id = trusthub_core::secret::hex(&s.trace_id);
        let team = text(a.get("trusthub.team"))
            .or_else(|| text(s.resource.get("trusthub.team")))
            .or_else(|| text(s.resource.get("service.name")))
            .unwrap_or_else(|| "default".into());
        let root = s.parent_span_id.iter().all(|b| *b == 0);
        let t = by_trace.entry(trace_id.clone()).or_insert_with(|| Trace {
            trace_id: trace_id.clone(),
            name: s.name.clone(),
            root_seen: false,
            team: team.clone(),
            start_ns: s.start_ns,
            end_ns: s.end_ns,
            calls: Vec::new(),
        });
        if root && !t.root_seen {
            t.root_seen = true;
            t.name = s.name.clone();
            t.team = team;
        } else if !t.root_seen && s.start_ns < t.start_ns {
            t.name = s.name.clone();
        }
        t.start_ns = t.start_ns.min(s.start_ns);
        t.end_ns = t.end_ns.max(s.end_ns);
        let Some(model) =
            text(a.get("gen_ai.request.model")).or_else(|| text(a.get("gen_ai.response.model")))
        else {
            continue;
        };
        let usage = trusthub_core::ai::Usage {
            prompt_tokens: count(
                a,
                &["gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"],
            ),
            completion_tokens: count(
                a,
                &[
                    "gen_ai.usage.output_tokens",
                    "gen_ai.usage.completion_tokens",
                ],
            ),
            cache_read_tokens: count(
                a,
                &[
                    "gen_ai.usage.cache_read.input_tokens",
                    "gen_ai.usage.cache_read_input_tokens",
                    "gen_ai.usage.input_tokens.cached",
                ],
            ),
            cache_write_tokens: count(
                a,
                &[
                    "gen_ai.usage.cache_creation.input_tokens",
                    "gen_ai.usage.cache_creation_input_tokens",
                    "gen_ai.usage.input_tokens.cache_write",
                ],
            ),
            reasoning_tokens: count(
                a,
                &[
                    "gen_ai.usage.reasoning.output_tokens",
                    "gen_ai.usage.output_tokens.reasoning",
                ],
            ),
        };
        if let Err(e) = usage.check() {
            reject(
                &mut out,
                format!("span {}: {e}", trusthub_core::secret::hex(&s.span_id)),
            );
            continue;
        }
        let finish = a.get("gen_ai.response.finish_reasons");
        let refused = matches!(a.get("trusthub.refused"), Some(Value::Bool(true)))
            || finish.is_some_and(|f| {
                let has = |x: &Value| matches!(x.as_str(), Some("content_filter" | "refusal"));
                match f {
                    Value::Array(items) => items.iter().any(has),
                    other => has(other),
                }
            });
        let prompt_sha256 = match text(a.get("trusthub.prompt_sha256")) {
            Some(h) if hex64(&h) => h,
            _ => trusthub_core::evidence::sha256_hex(
                trusthub_core::redact::redact(&prompt_text(a))
                    .text
                    .as_bytes(),
            ),
        };
        t.calls.push(Call {
            span_id: trusthub_core::secret::hex(&s.span_id),
            model: model.chars().take(200).collect(),
            provider: text(a.get("gen_ai.provider.name")).or_else(|| text(a.get("gen_ai.system"))),
            usage,
            latency_ms: (s.end_ns - s.start_ns) / 1_000_000,
            prompt_sha256,
            refused,
        });
    }
    out.traces = by_trace.into_values().collect();
    out
}

/// The protobuf `ExportTraceServiceResponse`: empty, or `partial_success` with the
/// rejected span count and a message.
pub fn encode_response(rejected: u64, message: &str) -> Vec<u8> {
    if rejected == 0 && message.is_empty() {
        return Vec::new();
    }
    let mut inner = Vec::new();
    if rejected > 0 {
        inner.push(0x08);
        put_varint(&mut inner, rejected);
    }
    if !message.is_empty() {
        inner.push(0x12);
        put_varint(&mut inner, message.len() as u64);
        inner.extend_from_slice(message.as_bytes());
    }
    let mut out = vec![0x0a];
    put_varint(&mut out, inner.len() as u64);
    out.extend(inner);
    out
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn otlp_json() -> Value {
        json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "checkout"}}]},
            "scopeSpans": [{"spans": [
                {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
                 "name": "POST /answer", "startTimeUnixNano": "1794000000000000000", "endTimeUnixNano": "1794000003000000000"},
                {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "00f067aa0ba902b7",
                 "parentSpanId": "b7ad6b7169203331", "name": "chat gpt-4o",
                 "startTimeUnixNano": 1794000001000000000u64, "endTimeUnixNano": "1794000001840000000",
                 "attributes": [
                    {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
                    {"key": "gen_ai.provider.name", "value": {"stringValue": "openai"}},
                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "900"}},
                    {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 200}},
                    {"key": "gen_ai.usage.cache_read.input_tokens", "value": {"intValue": "100"}},
                    {"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [{"stringValue": "content_filter"}]}}},
                    {"key": "gen_ai.prompt.0.content", "value": {"stringValue": "mail me at jane@example.com"}},
                    {"key": "trusthub.team", "value": {"stringValue": "search"}}
                 ]}
            ]}]
        }]})
    }

    #[test]
    fn otlp_json_genai_spans_become_calls() {
        let spans = decode_json(otlp_json().to_string().as_bytes()).expect("decode");
        assert_eq!(spans.len(), 2);
        let m = map(&spans);
        assert_eq!(m.rejected, 0);
        assert_eq!(m.traces.len(), 1);
        let t = &m.traces[0];
        assert_eq!(t.trace_id, "0af7651916cd43dd8448eb211c80319c");
        assert_eq!((t.name.as_str(), t.root_seen), ("POST /answer", true));
        assert_eq!(
            t.team, "checkout",
            "the root span's team (resource service.name)"
        );
        let c = &t.calls[0];
        assert_eq!(c.model, "gpt-4o");
        assert_eq!(c.provider.as_deref(), Some("openai"));
        assert_eq!(
            (
                c.usage.prompt_tokens,
                c.usage.completion_tokens,
                c.usage.cache_read_tokens
            ),
            (900, 200, 100)
        );
        assert_eq!(c.latency_ms, 840);
        assert!(c.refused);
        // The prompt is hashed after redaction, never kept.
        assert_eq!(
            c.prompt_sha256,
            trusthub_core::evidence::sha256_hex(b"mail me at [EMAIL]")
        );
    }

    #[test]
    fn protobuf_wire_format_is_read_field_by_field() {
        // Hand-encoded: one resource span, one scope span, one span with an int attribute.
        fn ld(tag: u8, body: &[u8]) -> Vec<u8> {
            let mut v = vec![tag];
            put_varint(&mut v, body.len() as u64);
            v.extend_from_slice(body);
            v
        }
        let int_value = [0x18, 0xac, 0x02]; // int_value = 300
        let kv = [ld(0x0a, b"gen_ai.usage.input_tokens"), ld(0x12, &int_value)].concat();
        let model = [
            ld(0x0a, b"gen_ai.request.model"),
            ld(0x12, &ld(0x0a, b"m1")),
        ]
        .concat();
        let mut span = [ld(0x0a, &[1; 16]), ld(0x12, &[2; 8]), ld(0x2a, b"llm")].concat();
        span.push(0x39);
        span.extend_from_slice(&1_000_000_000u64.to_le_bytes());
        span.push(0x41);
        span.extend_from_slice(&1_500_000_000u64.to_le_bytes());
        span.extend(ld(0x4a, &kv));
        span.extend(ld(0x4a, &model));
        let req = ld(0x0a, &ld(0x12, &ld(0x12, &span)));
        let spans = decode_protobuf(&req).expect("decode");
        assert_eq!(spans.len(), 1);
        assert_eq!(spans[0].attributes["gen_ai.usage.input_tokens"], json!(300));
        let m = map(&spans);
        assert_eq!(m.traces[0].calls[0].latency_ms, 500);
        assert_eq!(m.traces[0].team, "default");
        assert!(decode_protobuf(&req[..req.len() - 3]).is_err(), "truncated");
        assert!(decode_protobuf(&[0x0b]).is_err(), "groups are not accepted");
    }

    #[test]
    fn bad_spans_are_rejected_and_counted() {
        let mut v = otlp_json();
        v["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["spanId"] = json!("");
        v["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["endTimeUnixNano"] = json!("1");
        let m = map(&decode_json(v.to_string().as_bytes()).expect("decode"));
        assert_eq!(m.rejected, 2);
        assert!(m.traces.is_empty());
        assert!(decode_json(b"[1,").is_err());
    }

    #[test]
    fn partial_success_response_encoding() {
        assert!(encode_response(0, "").is_empty());
        assert_eq!(
            encode_response(2, "x"),
            vec![0x0a, 0x05, 0x08, 0x02, 0x12, 0x01, b'x']
        );
    }
}
