//! The shapes of `POST /apps` as the document states them (CONTRACT 30): which fields each
//! kind of app takes, so a client generated from the document builds only bodies
//! [`super::apps::create_app`] accepts. Rules no schema states (an `agent_id` of the tenant,
//! an endpoint the outbound policy allows, one app per target) stay in the operation's
//! description.

use serde_json::{Value, json};
use trusthub_core::probe;
use trusthub_platform::openapi::{Variant, tag};

use crate::service::apps::create::MAX_PUSH_SECS;
use crate::service::apps::{JsonQueryBody, MAX_HTTP_INTERVAL, MIN_HTTP_INTERVAL};

/// A field this shape does not take: null or absent.
fn none(why: &str) -> Value {
    json!({"type": "null", "description": why})
}

fn int(lo: i64, hi: i64) -> Value {
    json!({"type": ["integer", "null"], "format": "int64", "minimum": lo, "maximum": hi})
}

/// A text the hub trims and checks: `pattern` around optional spaces.
fn trimmed(pattern: &str, max: usize) -> Value {
    json!({"type": "string", "maxLength": max, "pattern": format!(r"^\s*{pattern}\s*$")})
}

/// The identifier of each kind an agent watches ([`trusthub_core::apps::identifier`]).
const WATCHED: [(&str, &str); 3] = [
    ("systemd", r"[A-Za-z0-9:_.\\@-]{1,256}"),
    ("docker", r"/?[A-Za-z0-9][A-Za-z0-9_.-]{0,254}"),
    (
        "compose",
        r"[a-z0-9][a-z0-9_-]*::[A-Za-z0-9][A-Za-z0-9_.-]{0,254}",
    ),
];

/// An absolute path without `..` segments or control characters.
const ABSOLUTE: &str = r"(/([^/.\x00-\x1f\x7f-\x9f][^/\x00-\x1f\x7f-\x9f]*|\.([^/.\x00-\x1f\x7f-\x9f][^/\x00-\x1f\x7f-\x9f]*)?|\.\.[^/\x00-\x1f\x7f-\x9f]+)?)+";

/// The check-only fields, absent for what an agent watches.
fn no_check_fields(shape: &mut Value) {
    let why = "Checks only (a `type`).";
    for f in [
        "grace_seconds",
        "expected",
        "json_query",
        "endpoint",
        "interval_seconds",
        "timeout_seconds",
        "retries",
        "recoveries",
        "expected_status",
        "keyword",
        "tls_min_days",
    ] {
        shape[f] = none(why);
    }
    shape["type"] = none("Checks only: what an agent watches is named by `app_type`.");
}

/// The shapes, one per kind (and, for http, per runner).
pub fn shapes() -> Vec<Variant> {
    let blank = json!({"type": ["string", "null"], "pattern": r"^\s*$",
        "description": "Process apps only (blank is none)."});
    let agent = json!({"type": "string", "format": "uuid"});
    let mut out = Vec::new();
    for (kind, pattern) in WATCHED {
        let mut shape = json!({"app_type": tag(&[kind]), "agent_id": agent,
            "identifier": trimmed(pattern, trusthub_core::apps::MAX_IDENTIFIER),
            "restart_command": blank});
        no_check_fields(&mut shape);
        out.push(Variant::new(shape, &["app_type", "agent_id", "identifier"]));
    }
    let mut process = json!({"app_type": tag(&["process"]), "agent_id": agent,
        "identifier": trimmed(ABSOLUTE, trusthub_core::apps::MAX_IDENTIFIER),
        "restart_command": {"type": ["string", "null"], "maxLength": 4096,
            "pattern": format!(r"^\s*({ABSOLUTE}(\s[\s\S]*)?)?$")}});
    no_check_fields(&mut process);
    out.push(Variant::new(
        process,
        &["app_type", "agent_id", "identifier"],
    ));
    // Checks: `type` names the kind (`app_type`, when sent too, repeats it).
    let check = |kind: &str, by_hub: bool| {
        let (lo, hi) = if kind == "push" {
            (probe::MIN_INTERVAL_SECS, MAX_PUSH_SECS)
        } else if by_hub {
            (probe::MIN_INTERVAL_SECS, probe::MAX_INTERVAL_SECS)
        } else {
            (MIN_HTTP_INTERVAL, MAX_HTTP_INTERVAL)
        };
        let mut shape = json!({
            "type": tag(&[kind]),
            "app_type": {"type": ["string", "null"], "enum": [kind, null],
                "description": "Repeats `type` when sent."},
            "identifier": none("Checks name their target in `endpoint`."),
            "restart_command": blank,
            "endpoint": {"type": "string", "minLength": 1,
                "maxLength": trusthub_core::apps::MAX_IDENTIFIER, "pattern": r"\S"},
            "interval_seconds": int(lo, hi),
            "retries": int(0, 10),
            "recoveries": int(1, 10),
        });
        // Hub and agent checks take the same options (CONTRACT 33).
        shape["timeout_seconds"] = int(1, 60);
        if kind == "push" {
            shape["endpoint"] = none("Push monitors call nothing: the app calls `push_url`.");
            shape["timeout_seconds"] = none("Push monitors call nothing.");
            shape["grace_seconds"] = int(0, MAX_PUSH_SECS);
        } else {
            shape["grace_seconds"] = none("push monitors only.");
        }
        if kind == "dns" {
            shape["expected"] = json!({"type": ["array", "null"], "minItems": 1, "maxItems": 20,
                "items": {"type": "string", "minLength": 1, "maxLength": 255}});
        } else {
            shape["expected"] = none("dns checks only.");
        }
        if kind == "http" {
            let mut q = trusthub_platform::openapi::schema_json::<JsonQueryBody>();
            q["type"] = json!(["object", "null"]);
            q["properties"]["value"] = json!({"type": ["string", "number", "boolean", "null"],
                "maxLength": trusthub_core::json_query::MAX_VALUE,
                "description": "A string, number, boolean or null (a number for `<` and `>`)."});
            shape["json_query"] = q;
        } else {
            shape["json_query"] = none("http checks only.");
        }
        if by_hub {
            shape["agent_id"] = none("The hub runs this check.");
        } else {
            shape["agent_id"] = json!({"type": "string", "format": "uuid",
                "description": "The host whose agent runs this check, judged as the hub judges its own."});
        }
        if kind != "http" {
            shape["expected_status"] = none("http checks only.");
            shape["keyword"] = none("http checks only.");
        } else {
            shape["keyword"] = json!({"type": ["string", "null"], "minLength": 1,
                "maxLength": 200, "pattern": r"^[^\x00-\x1f\x7f-\x9f]*$"});
        }
        if kind == "tls" {
            shape["tls_min_days"] = int(1, 365);
        } else {
            shape["tls_min_days"] = none("tls checks only.");
        }
        let required: &'static [&'static str] = if kind == "push" {
            &["type"]
        } else if by_hub {
            &["type", "endpoint"]
        } else {
            &["type", "endpoint", "agent_id"]
        };
        Variant::new(shape, required)
    };
    for (kind, by_hub) in [
        ("http", true),
        ("http", false),
        ("tcp", true),
        ("tls", true),
        ("push", true),
        ("dns", true),
        ("ping", true),
    ] {
        out.push(check(kind, by_hub));
    }
    out
}
