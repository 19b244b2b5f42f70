//! The rest of an agent's page: its inventory in tabs (one table per slice, filterable),
//! its processes, its governance, and the admin's token and signing-key rotation and delete.
//! Data and changes come from the API's own handlers.

use super::{ASSETS, Assets, Flash, WebUser, form_error};
use super::{UserBar, ago};
use crate::auth::{Admin, Operator, Viewer};
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::service::agents::{self as api, ACTION_KINDS, governance::GovernanceIn};
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect};
use serde::Deserialize;
use serde_json::Value;
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_platform::page::NoFields;
use trusthub_platform::page::{PageResult, render};
use uuid::Uuid;

/// The inventory tabs: path segment and title.
pub const TABS: [(&str, &str); 9] = [
    ("systemd", "systemd"),
    ("containers", "Containers"),
    ("packages", "Packages"),
    ("app-dependencies", "App dependencies"),
    ("users", "Users"),
    ("sudo", "sudo"),
    ("ssh-keys", "SSH keys"),
    ("listening", "Listening sockets"),
    ("backups", "Backups"),
];

/// Rows shown at most (the filter narrows them).
const MAX_ROWS: usize = 1000;

/// A table made from JSON objects: their keys become the columns.
#[derive(Debug, Default)]
pub struct Table {
    /// Column names.
    pub columns: Vec<String>,
    /// Cells.
    pub rows: Vec<Vec<String>>,
    /// Rows before the filter and the cap.
    pub total: usize,
    /// Rows matching the filter.
    pub matching: usize,
}

fn cell(v: &Value) -> String {
    let s = match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => a
            .iter()
            .map(|x| match x {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    };
    if s.chars().count() > 200 {
        format!("{}…", s.chars().take(200).collect::<String>())
    } else {
        s
    }
}

/// `items` as a table: columns in the order keys first appear (12 at most), rows containing
/// `filter` (case-insensitive) only, the first [`MAX_ROWS`] of them.
pub fn table(items: &[Value], filter: &str) -> Table {
    let mut columns: Vec<String> = Vec::new();
    for item in items.iter().take(200) {
        if let Value::Object(o) = item {
            for k in o.keys() {
                if columns.len() < 12 && !columns.contains(k) {
                    columns.push(k.clone());
                }
            }
        }
    }
    let needle = filter.trim().to_lowercase();
    let mut t = Table {
        total: items.len(),
        ..Table::default()
    };
    for item in items {
        let row: Vec<String> = match item {
            Value::Object(o) => columns
                .iter()
                .map(|c| o.get(c).map(cell).unwrap_or_default())
                .collect(),
            other => vec![cell(other)],
        };
        if !needle.is_empty() && !row.iter().any(|c| c.to_lowercase().contains(&needle)) {
            continue;
        }
        t.matching += 1;
        if t.rows.len() < MAX_ROWS {
            t.rows.push(row);
        }
    }
    if columns.is_empty() && !items.is_empty() {
        columns.push("value".into());
    }
    t.columns = columns;
    t
}

#[derive(Template)]
#[template(path = "agent_data.html")]
struct DataPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    id: String,
    hostname: String,
    tabs: Vec<(&'static str, &'static str, bool)>,
    title: String,
    note: String,
    filter: String,
    table: Table,
}

/// The filter of a table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    #[serde(default)]
    q: String,
}

async fn hostname(state: &AppState, user: &WebUser, id: Uuid) -> ApiResult<String> {
    let mut c = state.db.conn().await?;
    Ok(
        crate::store::agents::get(&mut c, user.principal.tenant(), id)
            .await?
            .ok_or(ApiError::NotFound("agent"))?
            .hostname,
    )
}

fn tabs(current: &str) -> Vec<(&'static str, &'static str, bool)> {
    let mut t: Vec<_> = TABS.iter().map(|(p, n)| (*p, *n, *p == current)).collect();
    t.push(("processes", "Processes", current == "processes"));
    t
}

/// `GET /ui/agents/{id}/inventory/{slice}`: one slice of the latest inventory.
pub async fn inventory(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path((id, slice)): axum::extract::Path<(Uuid, String)>,
    axum::extract::Query(f): axum::extract::Query<Filter>,
) -> PageResult {
    let title = TABS
        .iter()
        .find(|(p, _)| *p == slice)
        .map(|(_, n)| *n)
        .ok_or(ApiError::NotFound("inventory slice"))?;
    let host = hostname(&state, &user, id).await?;
    let v =
        api::inventory::inventory_slice(&state, &Viewer::of(&user.principal)?, id, slice.clone())
            .await?;
    let items = v.as_array().cloned().unwrap_or_default();
    let p = DataPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        id: id.to_string(),
        hostname: host,
        tabs: tabs(&slice),
        title: title.into(),
        note: "From the newest inventory the agent sent.".into(),
        table: table(&items, &f.q),
        filter: f.q,
    };
    render(p.render(), StatusCode::OK)
}

/// `GET /ui/agents/{id}/processes`: the newest process list.
pub async fn processes(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    axum::extract::Query(f): axum::extract::Query<Filter>,
) -> PageResult {
    let host = hostname(&state, &user, id).await?;
    let v = api::inventory::processes(&state, &Viewer::of(&user.principal)?, id).await?;
    // A program is shown by the name it was started with (`redis-server`, a symlink), its
    // binary beside it (`redis-check-rdb`) — CONTRACT 33.
    let rows: Vec<Value> = v
        .processes
        .iter()
        .map(|p| {
            let mut p = p.clone();
            let exe = p["exe"].as_str().unwrap_or_default().to_owned();
            if let Some(started) = p["paths"][0].as_str().map(str::to_owned)
                && !trusthub_core::apps::is_interpreter(&exe)
                && let Some(o) = p.as_object_mut()
            {
                let rest: Vec<Value> = o
                    .get("paths")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().skip(1).cloned().collect())
                    .unwrap_or_default();
                let mut shown = serde_json::Map::new();
                for (k, v) in std::mem::take(o) {
                    match k.as_str() {
                        "exe" => {
                            shown.insert("exe".into(), Value::String(started.clone()));
                            shown.insert("binary".into(), Value::String(exe.clone()));
                        }
                        "paths" if rest.is_empty() => {}
                        "paths" => {
                            shown.insert("paths".into(), Value::Array(rest.clone()));
                        }
                        _ => {
                            shown.insert(k, v);
                        }
                    }
                }
                *o = shown;
            }
            p
        })
        .collect();
    let page = DataPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        id: id.to_string(),
        hostname: host,
        tabs: tabs("processes"),
        title: "Processes".into(),
        note: format!("Received {}.", ago(v.received_at, now())),
        table: table(&rows, &f.q),
        filter: f.q,
    };
    render(page.render(), StatusCode::OK)
}

// ---------------------------------------------------------------- governance and keys

#[derive(Template)]
#[template(path = "agent_admin.html")]
struct AdminPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_edit: bool,
    can_govern: bool,
    id: String,
    hostname: String,
    config_paths: String,
    config_scan: i64,
    compliance: i64,
    honeypots: String,
    ingest: i64,
    inventory: i64,
    tags: String,
    actions: Vec<(&'static str, bool)>,
    host_actions: String,
    effective: String,
    pinned: bool,
    certs: Vec<CertRow>,
    flash: Flash,
}

/// One client certificate of the agent.
#[derive(Debug)]
struct CertRow {
    serial: String,
    fingerprint: String,
    expires: String,
    state: String,
    active: bool,
    last_seen: String,
}

async fn admin_page(
    state: &AppState,
    user: &WebUser,
    id: Uuid,
    flash: Flash,
    status: StatusCode,
) -> PageResult {
    let p = &user.principal;
    let agent = {
        let mut c = state.db.conn().await?;
        crate::store::agents::get(&mut c, p.tenant(), id)
            .await?
            .ok_or(ApiError::NotFound("agent"))?
    };
    let g = api::governance::get_governance(state, &Viewer::of(p)?, id).await?;
    let certs = api::certs::client_certs_of(state, &Viewer::of(p)?, id).await?;
    let now = now();
    let page = AdminPage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        can_edit: p.has_role(Role::Admin),
        can_govern: p.has_role(Role::Operator),
        config_paths: g.config_paths.join("\n"),
        config_scan: g.config_scan_interval_secs,
        compliance: g.compliance_interval_secs,
        honeypots: g
            .honeypots
            .iter()
            .map(|h| format!("{} {}", h.kind, h.target))
            .collect::<Vec<_>>()
            .join("\n"),
        id: id.to_string(),
        hostname: agent.hostname,
        pinned: agent.signing_pubkey.is_some(),
        certs: certs
            .into_iter()
            .map(|c| CertRow {
                active: c.revoked_at.is_none() && c.not_after > now,
                state: match (&c.revoked_at, &c.revoke_reason) {
                    (Some(_), Some(r)) => format!("revoked: {r}"),
                    (Some(_), None) => "revoked".into(),
                    (None, _) if c.not_after <= now => "expired".into(),
                    (None, _) => "active".into(),
                },
                expires: c.not_after.date().to_string(),
                last_seen: ago(c.last_seen_at, now),
                fingerprint: c.fingerprint_sha256,
                serial: c.serial,
            })
            .collect(),
        ingest: g.ingest_interval_secs,
        inventory: g.inventory_interval_secs,
        tags: g.tags.join(", "),
        actions: ACTION_KINDS
            .iter()
            .map(|k| (*k, g.allowed_actions.iter().any(|a| a == k)))
            .collect(),
        host_actions: match g.host_allowed_actions {
            Some(list) if list.is_empty() => "none".into(),
            Some(list) => list.join(", "),
            None => "not reported yet".into(),
        },
        effective: if g.effective_actions.is_empty() {
            "none".into()
        } else {
            g.effective_actions.join(", ")
        },
        flash,
    };
    render(page.render(), status)
}

async fn refused(state: &AppState, user: &WebUser, id: Uuid, e: ApiError) -> PageResult {
    let (status, m) = form_error(e)?;
    admin_page(state, user, id, Flash::error(m), status).await
}

/// `GET /ui/agents/{id}/settings`: governance (everyone reads, admins change), rotation and
/// delete (admin).
pub async fn settings(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
) -> PageResult {
    admin_page(&state, &user, id, Flash::default(), StatusCode::OK).await
}

/// `POST /ui/agents/{id}/governance` (admin); the actions arrive as repeated `actions`.
pub async fn governance(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { by, user, form }: Act<Operator, super::FormPairs>,
) -> PageResult {
    let form = form.only(&[
        "ingest_interval_secs",
        "inventory_interval_secs",
        "config_scan_interval_secs",
        "compliance_interval_secs",
        "honeypots",
        "tags",
        "actions",
        "config_paths",
    ])?;
    let field = |name: &str| form.get(name);
    let mut errors = Vec::new();
    let mut number = |name: &str| match field(name).parse::<i64>() {
        Ok(n) => n,
        Err(_) => {
            errors.push(crate::error::FieldError::new(
                name,
                "must be a whole number of seconds",
            ));
            0
        }
    };
    let ingest = number("ingest_interval_secs");
    let inventory = number("inventory_interval_secs");
    let scan = number("config_scan_interval_secs");
    let compliance = number("compliance_interval_secs");
    let mut honeypots = Vec::new();
    for (i, line) in field("honeypots")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        match line.split_once(char::is_whitespace) {
            Some((kind, target)) => honeypots.push(trusthub_core::compliance::Honeypot::new(
                kind,
                target.trim(),
            )),
            None => errors.push(crate::error::FieldError::new(
                "honeypots",
                format!("line {}: write `<file|user|port> <target>`", i + 1),
            )),
        }
    }
    if !errors.is_empty() {
        return refused(&state, &user, id, ApiError::Validation(errors)).await;
    }
    let req = GovernanceIn {
        ingest_interval_secs: ingest,
        inventory_interval_secs: inventory,
        tags: field("tags")
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect(),
        allowed_actions: form.all("actions"),
        config_paths: {
            let paths: Vec<String> = field("config_paths")
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect();
            // The default list as shown stays "the default" (it follows new releases).
            (paths != trusthub_core::drift::DEFAULT_CONFIG_PATHS.map(String::from)).then_some(paths)
        },
        config_scan_interval_secs: Some(scan),
        compliance_interval_secs: Some(compliance),
        honeypots: Some(honeypots),
        host_allowed_actions: None,
        effective_actions: None,
    };
    match super::outcome(
        api::governance::put_governance(&state, &meta, &by, id, req).await,
        "Saved; the agent picks it up at its next heartbeat.",
        StatusCode::OK,
    ) {
        Ok((flash, status)) => admin_page(&state, &user, id, flash, status).await,
        Err(e) => Err(e),
    }
}

/// `POST /ui/agents/{id}/rotate-token` (admin): the new token is shown this once; the old
/// one stops working now.
pub async fn rotate_token(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { by, user, .. }: Act<Admin, NoFields>,
) -> PageResult {
    match api::rotation::rotate_token(&state, &meta, &by, id).await {
        Ok(t) => {
            admin_page(
                &state,
                &user,
                id,
                Flash::secret(
                    "New agent token: put it in the agent's state directory (registration.json, \
                     field agent_token) and restart the agent; the old token no longer works",
                    t.agent_token,
                ),
                StatusCode::OK,
            )
            .await
        }
        Err(e) => refused(&state, &user, id, e).await,
    }
}

/// `POST /ui/agents/{id}/rotate-signing-key` (admin): the pinned key is dropped; the
/// agent's next registration pins its new one.
pub async fn rotate_signing_key(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { by, user, .. }: Act<Admin, NoFields>,
) -> PageResult {
    match api::rotation::rotate_signing_key(&state, &meta, &by, id).await {
        Ok(_) => {
            admin_page(
                &state,
                &user,
                id,
                Flash::notice(
                    "The pinned signing key is released: the agent's next registration pins \
                     its new key.",
                ),
                StatusCode::OK,
            )
            .await
        }
        Err(e) => refused(&state, &user, id, e).await,
    }
}

/// `POST /ui/agents/{id}/delete` (admin): the agent and everything it reported.
pub async fn delete(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { by, user, .. }: Act<Admin, NoFields>,
) -> PageResult {
    match api::records::delete_agent(&state, &meta, &by, id).await {
        Ok(_) => Ok(Redirect::to("/ui/agents").into_response()),
        Err(e) => refused(&state, &user, id, e).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_become_columns_and_the_filter_keeps_matching_rows() {
        let items = vec![
            json!({"name": "openssl", "version": "3.0.15-1", "arch": "amd64"}),
            json!({"name": "bash", "version": "5.2", "extra": ["a", "b"]}),
        ];
        let t = table(&items, "");
        assert_eq!(t.columns, ["arch", "name", "version", "extra"]);
        assert_eq!(t.rows[1], ["", "bash", "5.2", "a, b"]);
        let t = table(&items, "OPENSSL");
        assert_eq!((t.total, t.matching, t.rows.len()), (2, 1, 1));
        assert_eq!(t.rows[0][1], "openssl");
        assert_eq!(table(&[json!("x")], "").columns, ["value"]);
    }
}

/// Why a certificate is revoked.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokeForm {
    reason: String,
}

/// `POST /ui/agents/{id}/client-certs/{serial}/revoke` (admin).
pub async fn revoke_cert(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path((id, serial)): axum::extract::Path<(Uuid, String)>,
    Act { by, user, form: f }: Act<Admin, RevokeForm>,
) -> PageResult {
    match super::outcome(
        api::certs::revoke_client_cert(
            &state,
            &meta,
            &by,
            id,
            serial,
            api::certs::RevokeRequest { reason: f.reason },
        )
        .await,
        "Revoked: the certificate is in the CRL from now on.",
        StatusCode::OK,
    ) {
        Ok((flash, status)) => admin_page(&state, &user, id, flash, status).await,
        Err(e) => Err(e),
    }
}
