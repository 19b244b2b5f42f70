//! The operator CLI (CONTRACT 28): `trusthub login` saves a hub, then everyday verbs —
//! `agents`, `apps`, `alerts`, `tokens`, `audit` — speak the hub's public API with tables for
//! people and `-o json|yaml|csv` for scripts. Exit codes: 0 ok, 1 error, 2 usage (clap), 3
//! not found, 4 refused (401, 403, TOTP).

mod actions;
mod agents;
mod alerts;
mod apps;
mod audit;
pub mod autopatch;
pub mod certs;
mod channels;
pub mod client;
pub mod cloud;
pub mod compliance;
pub mod config;
pub mod console;
mod cve;
pub mod drift;
mod evidence_remote;
pub mod output;
pub mod remote_write;
mod rules;
mod session;
mod slo;
mod status;
pub mod tenant;
mod tokens;
pub mod topology;
pub mod trust;
mod webhooks;

use client::{Client, Failure};
use config::{Config, Context};
use output::{Column, Format};
use reqwest::Method;
use serde_json::{Value, json};
use std::io::{BufRead as _, Write as _};

pub use actions::*;
pub use agents::*;
pub use alerts::*;
pub use apps::*;
pub use audit::*;
pub use channels::*;
pub use cve::*;
pub use evidence_remote::*;
pub use rules::*;
pub use session::*;
pub use slo::*;
pub use status::*;
pub use tokens::*;
pub use webhooks::*;

/// Flags every remote verb takes.
#[derive(Debug, Clone, clap::Args)]
pub struct Global {
    /// The saved hub to use (`trusthub context ls`); default: the current one, or
    /// TRUSTHUB_URL with TRUSTHUB_TOKEN.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// Output format: a table for people, or json (the API's own), yaml, csv.
    #[arg(short = 'o', long, global = true, value_enum, default_value = "table")]
    pub output: Format,
}

/// Flags of the list verbs.
#[derive(Debug, Clone, clap::Args)]
pub struct Watch {
    /// List again every 2 s until interrupted.
    #[arg(short, long)]
    pub watch: bool,
}

/// Prints `value` in the chosen format.
fn print(value: &Value, columns: &[Column], format: Format) -> Result<(), Failure> {
    let text = output::render(value, columns, format);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::error(format!("stdout: {e}")))
        }
        _ => Ok(()),
    }
}

/// Lists `path` once, or every 2 s with `--watch` (the screen cleared on a terminal).
async fn list(
    client: &Client,
    path: &str,
    columns: &[Column],
    g: &Global,
    watch: bool,
) -> Result<(), Failure> {
    loop {
        let mut v = client.get(path).await?;
        if matches!(g.output, Format::Table) && columns.iter().any(|(_, p)| *p == "/agent_id") {
            for_people(client, &mut v).await;
        }
        if watch && output::colour_on() {
            print!("\x1b[2J\x1b[H");
        }
        print(&v, columns, g.output)?;
        if !watch {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
}

/// A table names hosts (CONTRACT 33): each record's `agent_id` shown as its agent's
/// hostname (the id stays when the agent is gone). JSON, YAML and CSV keep the API's values.
pub(crate) async fn for_people(client: &Client, v: &mut Value) {
    let Ok(agents) = client.get("/agents").await else {
        return;
    };
    let names: std::collections::HashMap<&str, &str> = agents
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| Some((a["id"].as_str()?, a["hostname"].as_str()?)))
        .collect();
    let rows: Vec<&mut Value> = match v {
        Value::Array(rows) => rows.iter_mut().collect(),
        other => vec![other],
    };
    for row in rows {
        if let Some(name) = row["agent_id"].as_str().and_then(|id| names.get(id)) {
            row["agent_id"] = Value::String((*name).to_owned());
        }
    }
}

/// Every page of a paged list (`{items, next_cursor}`), as one array.
async fn all_pages(client: &Client, path: &str) -> Result<Value, Failure> {
    let mut items: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = client
            .get(&with_query(
                path,
                &[
                    ("limit", Some("5000".to_owned())),
                    ("cursor", cursor.clone()),
                ],
            ))
            .await?;
        items.extend(page["items"].as_array().cloned().unwrap_or_default());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(Value::Array(items)),
        }
    }
}

/// Prints every page of a paged list.
async fn list_paged(
    client: &Client,
    path: &str,
    columns: &[Column],
    g: &Global,
) -> Result<(), Failure> {
    let all = all_pages(client, path).await?;
    print(&all, columns, g.output)
}

/// `DELETE path`, then says what went.
async fn delete(c: &Client, path: &str, done: String) -> Result<(), Failure> {
    c.send(c.request(Method::DELETE, path)).await?;
    eprintln!("{done}");
    Ok(())
}

fn client(g: &Global) -> Result<Client, Failure> {
    let (_, ctx) = config::resolve(g.context.as_deref())?;
    Client::new(ctx)
}

/// An id as the API takes it in a path — a UUID, or a number (alert rules) — anything else
/// cannot name a record: not found.
fn id(s: &str) -> Result<String, Failure> {
    let s = s.trim();
    if !s.is_empty() && s.len() <= 19 && s.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(s.to_owned());
    }
    uuid::Uuid::parse_str(s)
        .map(|u| u.to_string())
        .map_err(|_| Failure {
            code: 3,
            message: format!(
                "`{s}` is not an id (ids look like 01a219be-c05f-7203-bcbb-1996cb1870ae)"
            ),
        })
}

/// What a name may stand for (CONTRACT 33): where such records are listed and which field
/// names them.
pub(crate) struct Kind {
    /// In messages: `agent`.
    pub what: &'static str,
    /// The list to look in.
    pub list: &'static str,
    /// The field holding the name.
    pub field: &'static str,
}

/// An agent, by its hostname.
pub(crate) const AGENT: Kind = Kind {
    what: "agent",
    list: "/agents",
    field: "hostname",
};
/// An app or check, by its name.
pub(crate) const APP: Kind = Kind {
    what: "app",
    list: "/apps",
    field: "name",
};
/// A cloud account, by its name.
pub(crate) const ACCOUNT: Kind = Kind {
    what: "cloud account",
    list: "/cloud/accounts",
    field: "name",
};
/// A topology node, by its name.
pub(crate) const NODE: Kind = Kind {
    what: "node",
    list: "/topology/nodes",
    field: "name",
};
/// A diagram, by its name.
pub(crate) const DIAGRAM: Kind = Kind {
    what: "diagram",
    list: "/diagrams",
    field: "name",
};

/// An id, or the id of the one record of `kind` named `s` (CONTRACT 33): a name no record
/// has is not found (exit 3); a name several have is a usage error (exit 2) listing them.
pub(crate) async fn named(c: &Client, s: &str, kind: Kind) -> Result<String, Failure> {
    if let Ok(id) = id(s) {
        return Ok(id);
    }
    let wanted = s.trim();
    let all = c.get(kind.list).await?;
    let found: Vec<&Value> = all
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r[kind.field].as_str().is_some_and(|n| n == wanted))
        .collect();
    match found.as_slice() {
        [one] => one["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| Failure::error(format!("the {} has no id", kind.what))),
        [] => Err(Failure {
            code: 3,
            message: format!(
                "no {} is named `{wanted}` (give its name as listed, or its id)",
                kind.what
            ),
        }),
        many => Err(Failure {
            code: 2,
            message: format!(
                "`{wanted}` names {} {}s; give the id of the one you mean:\n{}",
                many.len(),
                kind.what,
                many.iter()
                    .map(|r| format!("  {}", r["id"].as_str().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        }),
    }
}

/// [`named`] for an optional argument.
pub(crate) async fn named_opt(
    c: &Client,
    s: Option<String>,
    kind: Kind,
) -> Result<Option<String>, Failure> {
    match s {
        Some(s) => Ok(Some(named(c, &s, kind).await?)),
        None => Ok(None),
    }
}

/// `path?k=v&…` with the pairs that have a value, form-encoded.
pub(crate) fn with_query(path: &str, pairs: &[(&str, Option<String>)]) -> String {
    let given: Vec<(&str, &str)> = pairs
        .iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (*k, v)))
        .collect();
    match serde_urlencoded::to_string(&given) {
        Ok(q) if !q.is_empty() => format!("{path}?{q}"),
        _ => path.to_owned(),
    }
}

/// Percent-encodes one path segment (an advisory id, a template id).
pub(crate) fn encode(v: &str) -> String {
    trusthub_core::encode::component(v)
}

/// Streams `GET path` into `out` (written beside, then renamed), with a progress bar on a
/// terminal; the bytes written.
pub(crate) async fn download(
    c: &Client,
    path: &str,
    out: &std::path::Path,
) -> Result<u64, Failure> {
    let mut resp = c.fetch(path).await?;
    let bar = indicatif::ProgressBar::with_draw_target(
        resp.content_length(),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bytes:>10} / {total_bytes:<10} {wide_bar} {eta}")
    {
        bar.set_style(style);
    }
    let tmp = out.with_extension("part");
    let mut file = std::fs::File::create(&tmp)
        .map_err(|e| Failure::error(format!("{}: {e}", tmp.display())))?;
    let mut n = 0u64;
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| Failure::error(format!("download: {e}")))?
    {
        file.write_all(&chunk)
            .map_err(|e| Failure::error(format!("{}: {e}", tmp.display())))?;
        n += chunk.len() as u64;
        bar.set_position(n);
    }
    bar.finish_and_clear();
    drop(file);
    std::fs::rename(&tmp, out).map_err(|e| Failure::error(format!("{}: {e}", out.display())))?;
    Ok(n)
}
