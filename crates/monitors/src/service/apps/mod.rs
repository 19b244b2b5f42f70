//! The tracked applications' services (SPEC 2.1, 3.1, 4.1): create, list, change the expected state,
//! untrack, and the discovery list of what an agent runs.

use crate::auth::Viewer;
use crate::error::{ApiError, ApiResult, FieldError, all_valid};
use crate::extract::Meta;
use crate::state::{AppState, now};
use crate::store::apps::{self, App, NewApp};
use axum::http::StatusCode;
pub(crate) use create::create_app;
use create::expected;
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;
use trusthub_core::apps::{self as core_apps, AppKind};
use trusthub_core::inventory::{Listening, Process};
use trusthub_core::{audit as ev, probe, validate};
use trusthub_store::TenantId;
use utoipa::ToSchema;
use uuid::Uuid;

pub mod create;

/// Shortest HTTP check interval.
pub const MIN_HTTP_INTERVAL: i64 = 10;
/// Longest HTTP check interval.
pub const MAX_HTTP_INTERVAL: i64 = 86_400;

/// An app to track. Either `app_type` (`systemd`, `docker`, `compose`, `process`) with
/// `identifier` and `agent_id`, or a check — `type` `http`, `tcp` or `tls` with `endpoint` —
/// run by the hub itself when `agent_id` is omitted, or by that agent (http, dns and ping).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAppRequest {
    /// The host that runs it, or that runs the http check; omit it for a check the hub runs.
    pub agent_id: Option<Uuid>,
    /// Label, 1 to 100 characters.
    #[schema(value_type = trusthub_platform::openapi::Label)]
    pub name: String,
    /// `systemd`, `docker`, `compose` or `process` (for a check, `type`; this may repeat it).
    pub app_type: Option<String>,
    /// `http`, `tcp` or `tls`: a check (SPEC 4.1's SLO-style form; CONTRACT 27).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// systemd: unit name (`.service` is added when there is no suffix); docker: container
    /// name; compose: `<project>::<service>`; process: absolute path of the binary.
    pub identifier: Option<String>,
    /// Contact to notify.
    pub owner_email: Option<String>,
    /// Runbook URL (http or https).
    pub runbook_url: Option<String>,
    /// Free text, at most 2000 characters.
    pub notes: Option<String>,
    /// `running` (default) or `stopped`.
    #[schema(pattern = "^(running|stopped)$")]
    pub expected_state: Option<String>,
    /// process: what a restart runs; absolute path first.
    pub restart_command: Option<String>,
    /// The target of a check: an http(s) URL, `tcp://host:port`, `tls://host:port` or
    /// `https://host[:port]` for tls.
    pub endpoint: Option<String>,
    /// Seconds between checks: 10 to 3600 for the hub's checks (default 60), 10 to 86400 for
    /// an agent's (required).
    pub interval_seconds: Option<i64>,
    /// Checks: seconds a probe may take, 1 to 60 (default 10).
    pub timeout_seconds: Option<i64>,
    /// Checks: failed checks tolerated before the app is down, 0 to 10 (default 2: down,
    /// and alerting, on the third failure in a row).
    pub retries: Option<i64>,
    /// Checks: successful checks in a row before it is up again, 1 to 10 (default 1).
    pub recoveries: Option<i64>,
    /// http: the accepted statuses, codes and ranges (`200-399`, the default; `200,204`).
    pub expected_status: Option<String>,
    /// http: text the response body must contain (its first MiB).
    pub keyword: Option<String>,
    /// tls: days before the certificate's expiry that raise a warning, 1 to 365 (default 14).
    pub tls_min_days: Option<i64>,
    /// push: seconds past `interval_seconds` a ping may be late before it counts as missed,
    /// 0 to 2678400 (default 60).
    pub grace_seconds: Option<i64>,
    /// dns: values the answer must all hold (1 to 20): addresses for A and AAAA, names for
    /// CNAME, `mail.example.com` or `10 mail.example.com` for MX, the text for TXT.
    pub expected: Option<Vec<String>>,
    /// http: an assertion on the JSON body.
    pub json_query: Option<JsonQueryBody>,
}

/// An assertion on an http check's JSON body (CONTRACT 32): the value at `path` compared
/// with `value` by `op`. Numbers compare by value (`"200"` equals `200`), `contains` looks
/// in a string or an array.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonQueryBody {
    /// JSONPath (a subset: `$`, `.name`, `['name']`, `[0]`, `[-1]`), e.g. `$.checks[0].status`.
    #[schema(max_length = 500, pattern = r"^\s*\$")]
    pub path: String,
    /// `==`, `!=`, `<`, `>` or `contains`.
    #[schema(pattern = r"^\s*(==|!=|<|>|contains)\s*$")]
    pub op: String,
    /// A string, number, boolean or null (a number for `<` and `>`).
    pub value: serde_json::Value,
}

/// The latest HTTP check of an `http` app.
#[derive(Debug, Serialize, ToSchema)]
pub struct LastCheck {
    /// When the agent ran it.
    #[serde(with = "time::serde::rfc3339")]
    pub checked_at: OffsetDateTime,
    /// 2xx or 3xx within the timeout.
    pub ok: bool,
    /// HTTP status, when one came.
    pub status_code: Option<i64>,
    /// Latency.
    pub latency_ms: Option<i64>,
    /// Why it failed.
    pub error: Option<String>,
}

/// A tracked app (SPEC 2.1).
#[derive(Debug, Serialize, ToSchema)]
pub struct AppView {
    /// Id.
    pub id: Uuid,
    /// Host (null: a check the hub runs itself).
    pub agent_id: Option<Uuid>,
    /// Label.
    pub name: String,
    /// `systemd`, `docker`, `compose`, `process`, `http`, `tcp` or `tls`.
    pub app_type: String,
    /// Unit, container, `<project>::<service>`, binary path; the target of a check.
    pub identifier: String,
    /// Contact.
    pub owner_email: Option<String>,
    /// Runbook.
    pub runbook_url: Option<String>,
    /// Notes.
    pub notes: Option<String>,
    /// `running` or `stopped`.
    pub expected_state: String,
    /// What the last liveness check observed: `running`, `stopped`, `unknown` (none yet:
    /// null).
    pub observed_state: Option<String>,
    /// Consecutive observed-vs-expected differences.
    pub consecutive_mismatch: i64,
    /// When the observed state last changed.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_state_change: Option<OffsetDateTime>,
    /// A liveness alert is open for it (the red marker).
    pub alerting: bool,
    /// process: the restart command.
    pub restart_command: Option<String>,
    /// http: URL.
    pub endpoint: Option<String>,
    /// http: seconds between checks.
    pub interval_seconds: Option<i64>,
    /// Checks: the latest one.
    pub last_check: Option<LastCheck>,
    /// Checks: seconds a probe may take (the hub's checks).
    pub timeout_seconds: Option<i64>,
    /// Checks: failures tolerated before down.
    pub retries: i64,
    /// Checks: successes needed to be up again.
    pub recoveries: i64,
    /// Checks: failed checks in a row now.
    pub consecutive_failures: i64,
    /// http: accepted statuses (null: 200-399).
    pub expected_status: Option<String>,
    /// http: text the body must contain.
    pub keyword: Option<String>,
    /// tls: days before expiry that warn.
    pub tls_min_days: Option<i64>,
    /// tls: when the certificate last seen expires.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub tls_expires_at: Option<OffsetDateTime>,
    /// push: the URL the app calls (GET or POST; `?status=down&msg=...` reports a failure,
    /// `/start` before a run measures its duration). Whole only in the answer that creates
    /// it (or a new one); masked after, as the token is kept hashed.
    pub push_url: Option<String>,
    /// push: seconds a ping may be late.
    pub grace_seconds: Option<i64>,
    /// dns: the values the answer must hold.
    pub expected: Option<Vec<String>>,
    /// http: the assertion on the JSON body.
    pub json_query: Option<JsonQueryBody>,
    /// The public badge's token while it is on (not a secret: the badge is published).
    pub badge_token: Option<String>,
    /// The public badge (`?type=status|uptime|latency&days=30`), while it is on.
    pub badge_url: Option<String>,
    /// The hub's checks: when the next one runs.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_check_at: Option<OffsetDateTime>,
    /// The agent's tags (apps inherit them).
    pub tags: Vec<String>,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl AppView {
    /// `a` as shown; `base` is the hub's public URL (a push URL's, masked).
    pub(crate) fn new(a: App, tags: Vec<String>, base: &str) -> AppView {
        let expected = a.expected_values.is_some().then(|| a.expected());
        let json_query = a.query().map(|q| JsonQueryBody {
            path: q.path,
            op: q.op,
            value: q.value,
        });
        let push_url = a
            .push_token_prefix
            .as_deref()
            .map(|p| create::push_url(base, &format!("{p}…")));
        let last_check = a.last_check_at.map(|checked_at| LastCheck {
            checked_at,
            ok: a.last_check_ok.unwrap_or(false),
            status_code: a.last_check_status,
            latency_ms: a.last_check_latency_ms,
            error: a.last_check_error.clone(),
        });
        AppView {
            id: a.id,
            agent_id: a.agent_id,
            name: a.name,
            app_type: a.app_type,
            identifier: a.identifier,
            owner_email: a.owner_email,
            runbook_url: a.runbook_url,
            notes: a.notes,
            expected_state: a.expected_state,
            observed_state: a.observed_state,
            consecutive_mismatch: a.consecutive_mismatch,
            last_state_change: a.last_state_change,
            alerting: a.alerting,
            restart_command: a.restart_command,
            endpoint: a.endpoint,
            interval_seconds: a.interval_seconds,
            last_check,
            timeout_seconds: a.timeout_seconds,
            retries: a.retries,
            recoveries: a.recoveries,
            consecutive_failures: a.consecutive_failures,
            expected_status: a.expected_status,
            keyword: a.keyword,
            tls_min_days: a.tls_min_days,
            tls_expires_at: a.tls_expires_at,
            push_url,
            badge_url: a
                .badge_token
                .as_deref()
                .map(|t| format!("{base}/badge/app/{t}.svg")),
            badge_token: a.badge_token,
            grace_seconds: a.grace_seconds,
            expected,
            json_query,
            next_check_at: a.next_check_at,
            tags,
            created_at: a.created_at,
        }
    }
}

pub(crate) async fn tags_by_agent(
    state: &AppState,
    tenant: TenantId,
) -> ApiResult<std::collections::HashMap<Uuid, Vec<String>>> {
    let mut c = state.db.conn().await?;
    Ok(trusthub_fleet::agents(&mut c, tenant)
        .await?
        .into_iter()
        .map(|a| (a.id, a.tags.0))
        .collect())
}

pub(crate) async fn load(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<AppView> {
    let mut c = state.db.conn().await?;
    let app = apps::get(&mut c, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("app"))?;
    let tags = match app.agent_id {
        Some(agent) => trusthub_fleet::agent(&mut c, tenant, agent)
            .await?
            .map(|a| a.tags.0)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    Ok(AppView::new(app, tags, &state.public_url))
}

/// The service behind the `get_app` handler, for the API and the dashboard alike.
pub async fn get_app(state: &AppState, by: &Viewer, id: Uuid) -> ApiResult<AppView> {
    let p = &by.0;
    load(state, p.tenant(), id).await
}

/// A change of an app: its expected state, its public badge, or both.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AppPatch {
    /// `running` or `stopped`.
    #[schema(pattern = r"^(running|stopped)$")]
    pub expected_state: Option<String>,
    /// `true` turns the public badge on (a random `badge_token`; kept while on), `false`
    /// turns it off (its URL answers 404; on again gives a new token).
    pub badge: Option<bool>,
}

/// Changes an app's expected state (the API and the dashboard), audited.
pub(crate) async fn set_expected_state(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    id: Uuid,
    req: AppPatch,
) -> ApiResult<AppView> {
    let mut errors = Vec::new();
    let expected_state = req
        .expected_state
        .as_deref()
        .map(|e| expected(Some(e), &mut errors));
    if expected_state.is_none() && req.badge.is_none() {
        errors.push(FieldError::new(
            "expected_state",
            "send `expected_state`, `badge` or both",
        ));
    }
    all_valid(errors)?;
    let mut tx = state.db.begin().await?;
    let Some(before) = apps::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("app"));
    };
    if let Some(on) = req.badge
        && on != before.badge_token.is_some()
    {
        let token = match on {
            true => Some(
                trusthub_core::secret::new_token("thb_")
                    .map_err(|e| ApiError::Internal(e.to_string()))?,
            ),
            false => None,
        };
        apps::set_badge(&mut tx, p.tenant(), id, token.as_deref()).await?;
        meta.record(
            &mut tx,
            p,
            ev::APP_BADGE_CHANGED,
            format!("app:{id}"),
            json!({"badge": on}),
        )
        .await?;
    }
    if let Some(expected_state) = expected_state
        && before.expected_state != expected_state
    {
        apps::set_expected(&mut tx, p.tenant(), id, expected_state).await?;
        meta.record(
            &mut tx,
            p,
            ev::APP_EXPECTED_STATE_CHANGED,
            format!("app:{id}"),
            json!({"from": before.expected_state, "to": expected_state}),
        )
        .await?;
    }
    tx.commit().await?;
    load(state, p.tenant(), id).await
}

/// Stops tracking an app (the API and the dashboard), audited.
pub(crate) async fn untrack(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    id: Uuid,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    let Some(app) = apps::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("app"));
    };
    apps::delete(&mut tx, p.tenant(), id).await?;
    meta.record(
        &mut tx,
        p,
        ev::APP_DELETED,
        format!("app:{id}"),
        json!({"app_type": app.app_type, "identifier": app.identifier, "name": app.name}),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Something an agent runs that could be tracked.
#[derive(Debug, Serialize, ToSchema)]
pub struct AppCandidate {
    /// `systemd`, `docker`, `compose` or `process`.
    pub app_type: String,
    /// What to put in `identifier`.
    pub identifier: String,
    /// A suggested name.
    pub name: String,
    /// Its state in the snapshot (`active`, `running`, `exited`, ...).
    pub state: String,
    /// Whether an app already tracks it.
    pub tracked: bool,
    /// What it listens on (`tcp 0.0.0.0:6379`, ...), for processes and units that do.
    pub listening: Vec<String>,
}

/// What an agent runs that could be tracked (the API and the dashboard).
pub(crate) async fn candidates_of(
    state: &AppState,
    p: &crate::auth::Principal,
    id: Uuid,
) -> ApiResult<Vec<AppCandidate>> {
    let mut c = state.db.conn().await?;
    trusthub_fleet::agent(&mut c, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("agent"))?;
    let snapshot = trusthub_fleet::latest_inventory(&mut c, p.tenant(), id)
        .await?
        .map(|s| s.inventory);
    let snapshot = snapshot.as_ref();
    let tracked: std::collections::HashSet<(String, String)> =
        apps::list(&mut c, p.tenant(), Some(id))
            .await?
            .into_iter()
            .map(|a| (a.app_type, a.identifier))
            .collect();
    let mut out = Vec::new();
    let mut push =
        |kind: AppKind, identifier: &str, name: &str, st: &str, listening: Vec<String>| {
            out.push(AppCandidate {
                app_type: kind.as_str().into(),
                identifier: identifier.into(),
                name: name.into(),
                state: st.into(),
                tracked: tracked.contains(&(kind.as_str().to_owned(), identifier.to_owned())),
                listening,
            })
        };
    for u in snapshot.map(|i| i.systemd()).unwrap_or_default() {
        let (Some(unit), Some(st)) = (u.unit.as_deref(), u.active_state.as_deref()) else {
            continue;
        };
        if st == "active" {
            push(
                AppKind::Systemd,
                unit,
                unit.trim_end_matches(".service"),
                st,
                Vec::new(),
            );
        }
    }
    let mut compose = std::collections::BTreeSet::new();
    for ct in snapshot.map(|i| i.containers()).unwrap_or_default() {
        let (Some(name), Some(st)) = (ct.bare_name(), ct.state.as_deref()) else {
            continue;
        };
        if st != "running" {
            continue;
        }
        push(AppKind::Docker, name, name, st, Vec::new());
        if let (Some(pr), Some(sv)) = (&ct.compose_project, &ct.compose_service) {
            compose.insert(format!("{pr}::{sv}"));
        }
    }
    for cs in compose {
        let name = cs.replace("::", "/");
        push(AppKind::Compose, &cs, &name, "running", Vec::new());
    }
    // Processes: the live list of the latest batch, else the snapshot's.
    let live = trusthub_fleet::processes(&mut c, p.tenant(), id).await?;
    let processes: Vec<Process> = match live {
        Some((_, list)) => list,
        None => snapshot.map(|i| i.processes().to_vec()).unwrap_or_default(),
    };
    let listening = snapshot.map(|i| i.listening()).unwrap_or_default();
    for cand in process_candidates(&processes, listening) {
        push(
            AppKind::Process,
            &cand.exe,
            &cand.name,
            "running",
            cand.listening,
        );
    }
    Ok(out)
}

/// A process worth offering for tracking.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProcessCandidate {
    exe: String,
    name: String,
    listening: Vec<String>,
}

/// Processes that listen on a socket or are daemons (parent pid 1), one per binary;
/// listening ones first, then by name.
pub(crate) fn process_candidates(
    processes: &[Process],
    listening: &[Listening],
) -> Vec<ProcessCandidate> {
    let mut ports: std::collections::HashMap<u64, Vec<String>> = Default::default();
    for l in listening {
        if let (Some(pid), Some(proto), Some(addr), Some(port)) =
            (l.pid, l.proto.as_deref(), l.addr.as_deref(), l.port)
        {
            let at = if addr.contains(':') {
                format!("{proto} [{addr}]:{port}")
            } else {
                format!("{proto} {addr}:{port}")
            };
            ports.entry(pid).or_default().push(at);
        }
    }
    let mut by_exe: std::collections::BTreeMap<String, ProcessCandidate> = Default::default();
    for p in processes {
        let exe = p.exe.as_deref().unwrap_or_default();
        let exe = exe.strip_suffix(" (deleted)").unwrap_or(exe);
        // The name it was started by when that is a symlink to the binary: what the user
        // knows (`/usr/bin/redis-server`, not `/usr/bin/redis-check-rdb`).
        let exe = match p.paths.first() {
            Some(alias) if !core_apps::is_interpreter(exe) => alias.as_str(),
            _ => exe,
        };
        let pid = p.pid.unwrap_or(0);
        let name = exe.rsplit('/').next().unwrap_or_default();
        let daemon = p.ppid == Some(1);
        let listens = ports.get(&pid);
        let skip = !exe.starts_with('/')
            || pid <= 1
            || name.starts_with("trusthub")
            || core_apps::is_interpreter(exe) && listens.is_none()
            || (!daemon && listens.is_none());
        if skip {
            continue;
        }
        let entry = by_exe
            .entry(exe.to_owned())
            .or_insert_with(|| ProcessCandidate {
                exe: exe.to_owned(),
                name: name.to_owned(),
                listening: Vec::new(),
            });
        for at in listens.into_iter().flatten() {
            if !entry.listening.contains(at) {
                entry.listening.push(at.clone());
            }
        }
    }
    let mut out: Vec<ProcessCandidate> = by_exe.into_values().collect();
    out.sort_by(|a, b| {
        b.listening
            .is_empty()
            .cmp(&a.listening.is_empty())
            .reverse()
            .then(a.name.cmp(&b.name))
    });
    out
}

/// The service behind the `checks` handler, for the API and the dashboard alike.
pub async fn checks(state: &AppState, by: &Viewer, id: Uuid) -> ApiResult<Vec<LastCheck>> {
    let p = &by.0;
    let mut c = state.db.conn().await?;
    apps::get(&mut c, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("app"))?;
    Ok(apps::checks(&mut c, id, 100)
        .await?
        .into_iter()
        .map(
            |(checked_at, ok, status_code, latency_ms, error)| LastCheck {
                checked_at,
                ok,
                status_code,
                latency_ms,
                error,
            },
        )
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A host without systemd running postgres, redis, mariadb, nats and mosquitto: each is
    /// offered once, by its binary, with what it listens on; shells, children and the
    /// agent are not.
    #[test]
    fn services_without_systemd_are_offered_as_processes() {
        let processes = json!([
            {"pid": 1, "ppid": 0, "exe": "/usr/bin/tini", "cmdline": "tini -- sh"},
            {"pid": 10, "ppid": 1, "exe": "/usr/lib/postgresql/16/bin/postgres", "cmdline": "postgres -D /var/lib/pg"},
            {"pid": 11, "ppid": 10, "exe": "/usr/lib/postgresql/16/bin/postgres", "cmdline": "postgres: checkpointer"},
            {"pid": 20, "ppid": 1, "exe": "/usr/bin/redis-check-rdb", "cmdline": "redis-server 127.0.0.1:6379", "paths": ["/usr/bin/redis-server"]},
            {"pid": 30, "ppid": 1, "exe": "/usr/sbin/mariadbd", "cmdline": "/usr/sbin/mariadbd"},
            {"pid": 40, "ppid": 1, "exe": "/usr/bin/nats-server", "cmdline": "nats-server"},
            {"pid": 50, "ppid": 1, "exe": "/usr/sbin/mosquitto (deleted)", "cmdline": "mosquitto"},
            {"pid": 60, "ppid": 1, "exe": "/usr/bin/bash", "cmdline": "bash"},
            {"pid": 61, "ppid": 60, "exe": "/usr/bin/vim", "cmdline": "vim notes"},
            {"pid": 70, "ppid": 1, "exe": "/usr/local/bin/trusthub-agent", "cmdline": "trusthub-agent"},
            {"pid": 80, "ppid": 2, "exe": "", "cmdline": ""}
        ]);
        let listening = json!([
            {"proto": "tcp", "addr": "0.0.0.0", "port": 5432, "pid": 10},
            {"proto": "tcp6", "addr": "::", "port": 5432, "pid": 10},
            {"proto": "tcp", "addr": "127.0.0.1", "port": 6379, "pid": 20},
            {"proto": "tcp", "addr": "0.0.0.0", "port": 3306, "pid": 30},
            {"proto": "tcp", "addr": "0.0.0.0", "port": 4222, "pid": 40},
            {"proto": "tcp", "addr": "0.0.0.0", "port": 1883, "pid": 50}
        ]);
        let processes: Vec<Process> = serde_json::from_value(processes).expect("processes");
        let listening: Vec<Listening> = serde_json::from_value(listening).expect("listening");
        let got = process_candidates(&processes, &listening);
        let names: Vec<&str> = got.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "mariadbd",
                "mosquitto",
                "nats-server",
                "postgres",
                "redis-server"
            ]
        );
        let redis = got
            .iter()
            .find(|c| c.name == "redis-server")
            .expect("redis");
        assert_eq!(
            redis.exe, "/usr/bin/redis-server",
            "the name it was started by"
        );
        let pg = got.iter().find(|c| c.name == "postgres").expect("postgres");
        assert_eq!(pg.exe, "/usr/lib/postgresql/16/bin/postgres");
        assert_eq!(pg.listening, ["tcp 0.0.0.0:5432", "tcp6 [::]:5432"]);
        let mq = got
            .iter()
            .find(|c| c.name == "mosquitto")
            .expect("mosquitto");
        assert_eq!(
            mq.exe, "/usr/sbin/mosquitto",
            "an upgraded binary is its path"
        );
    }
}
