//! The operator CLI (CONTRACT 28): `trusthub login` saves a hub, then everyday verbs —
//! `agents`, `apps`, `alerts`, `tokens`, `audit` — speak the hub's public API with tables for
//! people and `-o json|yaml|csv` for scripts. Exit codes: 0 ok, 1 error, 2 usage (clap), 3
//! not found, 4 refused (401, 403, TOTP).

pub mod autopatch;
pub mod certs;
pub mod client;
pub mod cloud;
pub mod compliance;
pub mod config;
pub mod console;
pub mod drift;
pub mod output;
pub mod remote_write;
pub mod topology;
pub mod trust;

use client::{Client, Failure};
use config::{Config, Context};
use output::{Column, Format};
use reqwest::Method;
use serde_json::{Value, json};
use std::io::{BufRead as _, Write as _};

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

/// `trusthub context …`.
#[derive(Debug, clap::Subcommand)]
pub enum ContextCmd {
    /// The saved hubs; `*` marks the current one.
    Ls,
    /// Make a saved hub the current one.
    Use {
        /// Its name.
        name: String,
    },
}

/// `trusthub agents …`.
#[derive(Debug, clap::Subcommand)]
pub enum AgentsCmd {
    /// The fleet: status, last seen, version, tags.
    Ls(Watch),
    /// One agent.
    Get {
        /// Agent id.
        id: String,
    },
    /// Delete an agent (admin): its data goes, its certificate is revoked.
    Rm {
        /// Agent id.
        id: String,
    },
    /// Give an agent a new token (admin); the new token is shown once.
    RotateToken {
        /// Agent id.
        id: String,
    },
    /// Stop something on a host now (admin; asks for a TOTP code) and wait for its answer.
    Emergency {
        /// Agent id.
        id: String,
        /// kill_process, stop_unit, stop_container, lock_user or block_ip.
        #[arg(long, value_parser = ["kill_process", "stop_unit", "stop_container", "lock_user", "block_ip"])]
        action: String,
        /// A pid, a unit, a container, a login name or an IP address.
        #[arg(long)]
        target: String,
        /// Why (kept in the audit log and the signed action).
        #[arg(long)]
        reason: String,
        /// The TOTP code; asked for when not given.
        #[arg(long)]
        totp: Option<String>,
    },
}

/// `trusthub apps …`.
#[derive(Debug, clap::Subcommand)]
pub enum AppsCmd {
    /// Tracked apps and checks: expected against observed.
    Ls(Watch),
    /// One app.
    Get {
        /// App id.
        id: String,
    },
    /// Track an app on a host (--agent, --type systemd|docker|compose|process,
    /// --identifier) or add a check the hub runs (--type http|tcp|tls, --endpoint).
    Add {
        /// Its name.
        #[arg(long)]
        name: String,
        /// systemd, docker, compose, process; or http, tcp, tls for a check.
        #[arg(long = "type")]
        kind: String,
        /// The host it runs on (an agent id); a check without it is run by the hub.
        #[arg(long)]
        agent: Option<String>,
        /// The unit, container, `<project>::<service>` or binary path.
        #[arg(long)]
        identifier: Option<String>,
        /// A check's URL (`https://…`, `tcp://host:port`, `tls://host:port`).
        #[arg(long)]
        endpoint: Option<String>,
        /// A check's interval in seconds (10 to 3600).
        #[arg(long)]
        interval: Option<u32>,
        /// A check's failures in a row before it is down (default 2 + 1).
        #[arg(long)]
        retries: Option<u32>,
        /// A check's timeout in seconds (default 10).
        #[arg(long)]
        timeout: Option<u32>,
        /// An http check's body must contain this.
        #[arg(long)]
        keyword: Option<String>,
        /// What the host runs to restart it (default: by its type, e.g. `systemctl restart`).
        #[arg(long)]
        restart_command: Option<String>,
    },
    /// Stop tracking an app.
    Rm {
        /// App id.
        id: String,
    },
    /// Change what is expected of an app.
    Expect {
        /// App id.
        id: String,
        /// running or stopped.
        #[arg(value_parser = ["running", "stopped"])]
        state: String,
    },
    /// Restart an app on its host (admin; asks for a TOTP code).
    Restart {
        /// App id.
        id: String,
        /// Why (kept in the audit log and the signed action).
        #[arg(long)]
        reason: String,
        /// The TOTP code; asked for when not given.
        #[arg(long)]
        totp: Option<String>,
        /// Print the action's id and return at once instead of waiting for the host's
        /// answer (follow it with `trusthub actions get`).
        #[arg(long)]
        no_wait: bool,
    },
}

/// `trusthub actions …`.
#[derive(Debug, clap::Subcommand)]
pub enum ActionsCmd {
    /// Signed actions sent to hosts (restarts, patches), newest first.
    Ls {
        /// Only this agent's.
        #[arg(long)]
        agent: Option<String>,
        /// How many rows (1 to 500).
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[command(flatten)]
        watch: Watch,
    },
    /// One action and what the host answered.
    Get {
        /// The action's id (its token's jti).
        jti: String,
    },
}

/// `trusthub alerts …`.
#[derive(Debug, clap::Subcommand)]
pub enum AlertsCmd {
    /// Alerts, newest first.
    Ls {
        /// Only unresolved ones.
        #[arg(long)]
        open: bool,
        /// At least this severity: info, warning, critical.
        #[arg(long)]
        severity: Option<String>,
        /// Only hosts with this tag (`env:prod`).
        #[arg(long)]
        tag: Option<String>,
        #[command(flatten)]
        watch: Watch,
    },
    /// Resolve an alert (operator).
    Resolve {
        /// Alert id.
        id: String,
    },
}

/// `trusthub tokens …`.
#[derive(Debug, clap::Subcommand)]
pub enum TokensCmd {
    /// Your API tokens (admins: everyone's).
    Ls,
    /// Make an API token; shown once.
    Add {
        /// Its name.
        #[arg(long)]
        name: String,
        /// read, write, ai_ingest.
        #[arg(long, default_value = "read")]
        scope: String,
    },
    /// Revoke an API token.
    Rm {
        /// Token id.
        id: String,
    },
}

/// `trusthub audit …`.
#[derive(Debug, clap::Subcommand)]
pub enum AuditCmd {
    /// The audit log, newest first (admin).
    Ls {
        /// Only this event type (`login_succeeded`).
        #[arg(long)]
        event: Option<String>,
        /// How many rows (1 to 1000).
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
}

const AGENTS: &[Column] = &[
    ("id", "/id"),
    ("hostname", "/hostname"),
    ("status", "/status"),
    ("last seen", "/last_seen_at"),
    ("version", "/agent_version"),
    ("tags", "/tags"),
];
const APPS: &[Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("type", "/app_type"),
    ("target", "/identifier"),
    ("expected", "/expected_state"),
    ("observed", "/observed_state"),
];
const ALERTS: &[Column] = &[
    ("id", "/id"),
    ("severity", "/severity"),
    ("title", "/title"),
    ("host", "/agent"),
    ("created", "/created_at"),
    ("resolved", "/resolved_at"),
];
const TOKENS: &[Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("scope", "/scope"),
    ("last used", "/last_used_at"),
    ("expires", "/expires_at"),
];
const AUDIT: &[Column] = &[
    ("when", "/created_at"),
    ("event", "/event_type"),
    ("who", "/actor_name"),
    ("subject", "/subject_name"),
    ("raw subject", "/subject"),
];
const ME: &[Column] = &[
    ("email", "/user/email"),
    ("role", "/effective_role"),
    ("tenant", "/tenant/name"),
    ("auth", "/auth"),
];

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
        let v = client.get(path).await?;
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

/// Reads a line from the terminal after `prompt`; with `secret`, without echo when stdin is
/// a terminal.
fn prompt(question: &str, secret: bool) -> Result<String, Failure> {
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let stdin = std::io::stdin();
    let tty = std::io::IsTerminal::is_terminal(&stdin);
    let saved = if secret && tty {
        let t = rustix::termios::tcgetattr(&stdin).ok();
        if let Some(t) = &t {
            let mut quiet = t.clone();
            quiet.local_modes.remove(rustix::termios::LocalModes::ECHO);
            let _ =
                rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &quiet);
        }
        t
    } else {
        None
    };
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    if let Some(t) = saved {
        let _ = rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &t);
        eprintln!();
    }
    read.map_err(|e| Failure::error(format!("stdin: {e}")))?;
    Ok(line.trim_end_matches(['\n', '\r']).to_owned())
}

/// Sends `method path` (with `body`) and its TOTP code: `totp` when given; else first without
/// one, and when the hub answers that the operation needs TOTP (of `purpose`), asks the
/// terminal and sends again — so a request refused for another reason (a host not
/// connected, a bad target) asks for nothing.
async fn with_totp(
    c: &Client,
    method: Method,
    path: &str,
    body: Option<&Value>,
    totp: Option<String>,
    purpose: &str,
) -> Result<Value, Failure> {
    let send = |code: Option<&str>| {
        let mut r = c.request(method.clone(), path);
        if let Some(b) = body {
            r = r.json(b);
        }
        if let Some(code) = code {
            r = r.header("x-totp-code", code.trim());
        }
        c.send(r)
    };
    match totp {
        Some(code) => send(Some(&code)).await,
        None => match send(None).await {
            // The hub's totp_required problem names the header to send.
            Err(f) if f.code == 4 && f.message.contains("X-TOTP-Code") => {
                let code = prompt(&format!("TOTP code ({purpose}): "), false)?;
                send(Some(&code)).await
            }
            other => other,
        },
    }
}

/// The context name a URL gets by default: its host (and port).
fn default_name(url: &str) -> String {
    let rest = url.split("://").nth(1).unwrap_or(url);
    rest.split('/').next().unwrap_or(rest).to_owned()
}

/// `trusthub login <url>`: with `--token`, checks it with `GET /me`; else asks email,
/// password and, when the user has TOTP on, the code, and keeps the session.
pub async fn login(
    url: &str,
    token: Option<String>,
    email: Option<String>,
    name: Option<String>,
) -> Result<(), Failure> {
    let base = client::hub_base(url);
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(Failure {
            code: 2,
            message: format!("`{url}` is not a hub address (http:// or https://)"),
        });
    }
    let name = name.unwrap_or_else(|| default_name(&base));
    let ctx = match token {
        Some(t) => Context {
            url: base.clone(),
            token: Some(t),
            session: None,
            user: None,
        },
        None => {
            let email = match email {
                Some(e) => e,
                None => prompt("Email: ", false)?,
            };
            let password = prompt("Password: ", true)?;
            let http = client::http()?;
            let mut body = json!({"email": email, "password": password});
            let mut resp = http
                .post(format!("{base}/api/v1/auth/login"))
                .json(&body)
                .send()
                .await
                .map_err(|e| Failure::error(format!("cannot reach the hub at {base}: {e}")))?;
            if resp.status() == 401 {
                let problem: Value = resp.json().await.unwrap_or(Value::Null);
                if problem["code"] != "totp_required" {
                    return Err(Failure {
                        code: 4,
                        message: problem["detail"].as_str().unwrap_or("refused").to_owned(),
                    });
                }
                let code = prompt("TOTP code (or a recovery code): ", false)?;
                body["totp_code"] = json!(code);
                resp = http
                    .post(format!("{base}/api/v1/auth/login"))
                    .json(&body)
                    .send()
                    .await
                    .map_err(|e| Failure::error(format!("cannot reach the hub at {base}: {e}")))?;
            }
            let session = resp
                .headers()
                .get_all("set-cookie")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .find_map(|c| c.strip_prefix("trusthub_session="))
                .and_then(|c| c.split(';').next())
                .map(str::to_owned);
            client::answer(resp).await?;
            Context {
                url: base.clone(),
                token: None,
                session: Some(session.ok_or("the hub set no session")?),
                user: None,
            }
        }
    };
    let me = Client::new(ctx.clone())?.get("/me").await?;
    let user = me["user"]["email"].as_str().map(str::to_owned);
    let mut cfg = Config::load()?;
    cfg.contexts.insert(
        name.clone(),
        Context {
            user: user.clone(),
            ..ctx
        },
    );
    cfg.current = Some(name.clone());
    cfg.save()?;
    eprintln!(
        "logged in to {base} as {} (context `{name}`, saved in {})",
        user.as_deref().unwrap_or("?"),
        config::path()?.display()
    );
    Ok(())
}

/// `trusthub logout`: ends the session at the hub (a token stays valid: revoke it with
/// `tokens rm`) and forgets the context.
pub async fn logout(g: &Global) -> Result<(), Failure> {
    let (name, ctx) = config::resolve(g.context.as_deref())?;
    if name == "env" {
        return Err(Failure::error(
            "TRUSTHUB_URL and TRUSTHUB_TOKEN are set: nothing saved to log out of",
        ));
    }
    if ctx.session.is_some() {
        let c = Client::new(ctx)?;
        // Already ended at the hub (expired, password changed): forgotten here all the same.
        let _ = c.send(c.request(Method::POST, "/auth/logout")).await;
    }
    let mut cfg = Config::load()?;
    cfg.contexts.remove(&name);
    if cfg.current.as_deref() == Some(name.as_str()) {
        cfg.current = None;
    }
    cfg.save()?;
    eprintln!("logged out of `{name}`");
    Ok(())
}

/// `trusthub whoami`.
pub async fn whoami(g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    print(&c.get("/me").await?, ME, g.output)
}

/// `trusthub context …`.
pub fn context(cmd: ContextCmd, g: &Global) -> Result<(), Failure> {
    let mut cfg = Config::load()?;
    match cmd {
        ContextCmd::Ls => {
            let rows: Vec<Value> = cfg
                .contexts
                .iter()
                .map(|(n, c)| {
                    json!({"current": if cfg.current.as_deref() == Some(n.as_str()) { "*" } else { "" },
                        "name": n, "url": c.url, "user": c.user,
                        "auth": if c.token.is_some() { "token" } else { "session" }})
                })
                .collect();
            print(
                &Value::Array(rows),
                &[
                    ("current", "/current"),
                    ("name", "/name"),
                    ("url", "/url"),
                    ("user", "/user"),
                    ("auth", "/auth"),
                ],
                g.output,
            )
        }
        ContextCmd::Use { name } => {
            if !cfg.contexts.contains_key(&name) {
                return Err(Failure {
                    code: 3,
                    message: format!("no context `{name}` (see `trusthub context ls`)"),
                });
            }
            cfg.current = Some(name.clone());
            cfg.save()?;
            eprintln!("now using `{name}`");
            Ok(())
        }
    }
}

/// `trusthub agents …`.
pub async fn agents(cmd: AgentsCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        AgentsCmd::Ls(w) => list(&c, "/agents", AGENTS, g, w.watch).await,
        AgentsCmd::Get { id: a } => print(
            &c.get(&format!("/agents/{}", id(&a)?)).await?,
            AGENTS,
            g.output,
        ),
        AgentsCmd::Rm { id: a } => {
            delete(
                &c,
                &format!("/agents/{}", id(&a)?),
                format!("deleted agent {a}"),
            )
            .await
        }
        AgentsCmd::Emergency {
            id: a,
            action,
            target,
            reason,
            totp,
        } => {
            let path = format!("/agents/{}/emergency", id(&a)?);
            let body = json!({"action": action, "target": target, "reason": reason});
            let v = with_totp(
                &c,
                Method::POST,
                &path,
                Some(&body),
                totp,
                "agent_emergency",
            )
            .await?;
            let jti = v["jti"].as_str().unwrap_or_default().to_owned();
            eprintln!("dispatched {jti}; waiting for the host's answer…");
            finished(&c, &jti, g).await
        }
        AgentsCmd::RotateToken { id: a } => {
            let v = c
                .send(c.request(Method::POST, &format!("/agents/{}/rotate-token", id(&a)?)))
                .await?;
            print(
                &v,
                &[("agent", "/agent_id"), ("token", "/agent_token")],
                g.output,
            )
        }
    }
}

/// `trusthub apps …`.
pub async fn apps(cmd: AppsCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        AppsCmd::Ls(w) => list(&c, "/apps", APPS, g, w.watch).await,
        AppsCmd::Get { id: a } => {
            print(&c.get(&format!("/apps/{}", id(&a)?)).await?, APPS, g.output)
        }
        AppsCmd::Add {
            name,
            kind,
            agent,
            identifier,
            endpoint,
            interval,
            retries,
            timeout,
            keyword,
            restart_command,
        } => {
            let check = matches!(kind.as_str(), "http" | "tcp" | "tls");
            let mut body = json!({"name": name});
            if check {
                if restart_command.is_some() {
                    return Err(Failure {
                        code: 2,
                        message: "--restart-command: a check has nothing to restart".into(),
                    });
                }
                body["type"] = json!(kind);
                body["endpoint"] = json!(endpoint.or(identifier));
                for (field, value) in [
                    ("interval_seconds", interval),
                    ("retries", retries),
                    ("timeout_seconds", timeout),
                ] {
                    if let Some(v) = value {
                        body[field] = json!(v);
                    }
                }
                if let Some(k) = keyword {
                    body["keyword"] = json!(k);
                }
            } else {
                body["app_type"] = json!(kind);
                body["identifier"] = json!(identifier);
                if let Some(r) = restart_command {
                    body["restart_command"] = json!(r);
                }
            }
            if let Some(a) = agent {
                body["agent_id"] = json!(a);
            }
            let v = c.json(Method::POST, "/apps", &body).await?;
            print(&v, APPS, g.output)
        }
        AppsCmd::Rm { id: a } => {
            delete(
                &c,
                &format!("/apps/{}", id(&a)?),
                format!("stopped tracking {a}"),
            )
            .await
        }
        AppsCmd::Expect { id: a, state } => {
            let v = c
                .json(
                    Method::PATCH,
                    &format!("/apps/{}", id(&a)?),
                    &json!({"expected_state": state}),
                )
                .await?;
            print(&v, APPS, g.output)
        }
        AppsCmd::Restart {
            id: a,
            reason,
            totp,
            no_wait,
        } => {
            let path = format!("/apps/{}/restart", id(&a)?);
            let body = json!({"reason": reason});
            let v = with_totp(&c, Method::POST, &path, Some(&body), totp, "app_restart").await?;
            if no_wait {
                return print(&v, &[("action", "/jti"), ("status", "/status")], g.output);
            }
            let jti = v["jti"].as_str().unwrap_or_default().to_owned();
            eprintln!("dispatched {jti}; waiting for the host's answer…");
            finished(&c, &jti, g).await
        }
    }
}

const ACTIONS: &[Column] = &[
    ("action", "/jti"),
    ("act", "/act"),
    ("agent", "/agent_id"),
    ("status", "/status"),
    ("exit", "/exit_code"),
    ("requested", "/created_at"),
    ("reason", "/reason"),
];

/// Follows an action until the host answers or its token expires, prints it (with the host's
/// output on a table), and fails unless it succeeded.
async fn finished(c: &Client, jti: &str, g: &Global) -> Result<(), Failure> {
    let path = format!("/actions/{}", encode(jti));
    let action = loop {
        let a = c.get(&path).await?;
        if a["status"] != "dispatched" {
            break a;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };
    print(&action, ACTIONS, g.output)?;
    if g.output == Format::Table {
        for (name, stream) in [("stdout", "/stdout"), ("stderr", "/stderr")] {
            if let Some(t) = action.pointer(stream).and_then(Value::as_str)
                && !t.is_empty()
            {
                eprintln!("--- {name}\n{}", t.trim_end());
            }
        }
    }
    match action["status"].as_str() {
        Some("succeeded") => Ok(()),
        Some("refused") => Err(Failure {
            code: 4,
            message: format!(
                "the host refused it: {}",
                action["refused_reason"]
                    .as_str()
                    .unwrap_or("no reason given")
            ),
        }),
        other => Err(Failure::error(format!(
            "the action {} (exit code {})",
            other.unwrap_or("failed"),
            action["exit_code"]
        ))),
    }
}

/// `trusthub actions …`.
pub async fn actions(cmd: ActionsCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        ActionsCmd::Ls {
            agent,
            limit,
            watch,
        } => {
            let agent = agent.map(|a| id(&a)).transpose()?;
            let path = with_query(
                "/actions",
                &[("agent_id", agent), ("limit", Some(limit.to_string()))],
            );
            list(&c, &path, ACTIONS, g, watch.watch).await
        }
        ActionsCmd::Get { jti } => print(
            &c.get(&format!("/actions/{}", encode(&jti))).await?,
            ACTIONS,
            g.output,
        ),
    }
}

/// `trusthub alerts …`.
pub async fn alerts(cmd: AlertsCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        AlertsCmd::Ls {
            open,
            severity,
            tag,
            watch,
        } => {
            let path = with_query(
                "/alerts",
                &[
                    ("is_resolved", open.then(|| "false".to_owned())),
                    ("severity", severity),
                    ("tag", tag),
                ],
            );
            list(&c, &path, ALERTS, g, watch.watch).await
        }
        AlertsCmd::Resolve { id: a } => {
            let v = c
                .send(c.request(Method::PATCH, &format!("/alerts/{}/resolve", id(&a)?)))
                .await?;
            print(&v, ALERTS, g.output)
        }
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
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `trusthub tokens …`.
pub async fn tokens(cmd: TokensCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        TokensCmd::Ls => print(&c.get("/api-tokens").await?, TOKENS, g.output),
        TokensCmd::Add { name, scope } => {
            let v = c
                .json(
                    Method::POST,
                    "/api-tokens",
                    &json!({"name": name, "scope": scope}),
                )
                .await?;
            print(
                &v,
                &[
                    ("id", "/id"),
                    ("name", "/name"),
                    ("scope", "/scope"),
                    ("token", "/token"),
                ],
                g.output,
            )
        }
        TokensCmd::Rm { id: t } => {
            delete(
                &c,
                &format!("/api-tokens/{}", id(&t)?),
                format!("revoked token {t}"),
            )
            .await
        }
    }
}

/// `trusthub audit …`.
pub async fn audit(cmd: AuditCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        AuditCmd::Ls { event, limit } => {
            let path = with_query(
                "/audit-log",
                &[("limit", Some(limit.to_string())), ("event_type", event)],
            );
            print(&c.get(&path).await?, AUDIT, g.output)
        }
    }
}

/// `trusthub rules …`.
#[derive(Debug, clap::Subcommand)]
pub enum RulesCmd {
    /// Alert rules with their last evaluation.
    Ls,
    /// Add a rule: the average of --metric over --window compared with --threshold.
    Add {
        /// Its name.
        #[arg(long)]
        name: String,
        /// A metric name (`cpu.percent`).
        #[arg(long)]
        metric: String,
        /// `>`, `>=`, `<`, `<=`, `==`, `!=`.
        #[arg(long, allow_hyphen_values = true)]
        operator: String,
        /// The value compared with.
        #[arg(long, allow_hyphen_values = true)]
        threshold: f64,
        /// `5m`, `1h`, …
        #[arg(long, default_value = "5m")]
        window: String,
        /// info, warning, critical.
        #[arg(long)]
        severity: Option<String>,
    },
    /// Delete a rule.
    Rm {
        /// Rule id.
        id: String,
    },
}

/// `trusthub webhooks …`.
#[derive(Debug, clap::Subcommand)]
pub enum WebhooksCmd {
    /// Signed webhook endpoints (admin).
    Ls,
    /// Add an endpoint; its secret is shown once.
    Add {
        /// Where deliveries go.
        #[arg(long)]
        url: String,
        /// The lowest severity sent: info, warning, critical.
        #[arg(long)]
        min_severity: Option<String>,
    },
    /// Delete an endpoint.
    Rm {
        /// Webhook id.
        id: String,
    },
}

/// `trusthub slo …`.
#[derive(Debug, clap::Subcommand)]
pub enum SloCmd {
    /// An app's SLO: uptime, budget left, burn rates.
    Get {
        /// App id.
        app: String,
    },
    /// Set (or replace) an app's SLO.
    Set {
        /// App id.
        app: String,
        /// The target, e.g. 0.999.
        #[arg(long)]
        target: f64,
        /// The rolling window in days.
        #[arg(long, default_value_t = 30)]
        window_days: u32,
    },
    /// One CSV row per UTC day (RFC 4180).
    History {
        /// App id.
        app: String,
        /// How many days back.
        #[arg(long, default_value_t = 30)]
        days: u32,
    },
}

/// `trusthub evidence create|download` (`verify` works offline, with no hub).
#[derive(Debug, clap::Subcommand)]
pub enum EvidenceRemote {
    /// Make a signed pack of a period's LLM traces (operator).
    Create {
        /// Its first instant (RFC 3339).
        #[arg(long)]
        from: String,
        /// The instant after its last (RFC 3339).
        #[arg(long)]
        to: String,
        /// Include the redacted content blobs.
        #[arg(long)]
        blobs: bool,
    },
    /// Save a pack (`pack-<id>.tar.gz`, or --out).
    Download {
        /// Pack id.
        id: String,
        /// Where to write it.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
}

/// `trusthub cve ls|get|ack` (and `import`, which takes a folder or archive).
#[derive(Debug, clap::Subcommand)]
pub enum CveRemote {
    /// Findings, worst first; `--fail-on HIGH` exits 1 when an open one is at or above it.
    Ls {
        /// At least this severity: CRITICAL, HIGH, MEDIUM, LOW.
        #[arg(long)]
        severity: Option<String>,
        /// open, suppressed, acknowledged, fixed, unfixed.
        #[arg(long)]
        status: Option<String>,
        /// Exit 1 when an open finding at or above this severity exists (for CI gates).
        #[arg(long)]
        fail_on: Option<String>,
    },
    /// An advisory (by id or alias) with this tenant's findings of it.
    Get {
        /// `CVE-2021-23337`, `GHSA-…`, `DSA-…`.
        id: String,
    },
    /// Accept a package's vulnerabilities in a version range, for a reason, until a date
    /// (operator; at most a year ahead).
    Suppress {
        /// The package (for an OS package, its source or one of its binaries).
        #[arg(long)]
        package: String,
        /// npm, PyPI, Debian, …
        #[arg(long)]
        ecosystem: String,
        /// In the ecosystem's own syntax (`>=4.0.0 <4.17.21`, `~=1.4`, `<< 3.0.11-1`).
        #[arg(long, allow_hyphen_values = true)]
        range: String,
        /// Only this vulnerability (its id or any alias); all when absent.
        #[arg(long)]
        vuln: Option<String>,
        /// Why it is accepted.
        #[arg(long)]
        reason: String,
        /// The last day it applies (YYYY-MM-DD).
        #[arg(long)]
        until: String,
    },
    /// Update every application dependency with a known fix on every host (admin; asks for a
    /// TOTP code): one signed action per host per project and ecosystem, 25 at a time.
    /// `--dry-run` prints the plan and sends nothing.
    UpdateAll {
        /// Print what would be sent; send nothing (no TOTP code needed).
        #[arg(long)]
        dry_run: bool,
        /// Only this host (repeatable).
        #[arg(long = "agent")]
        agents: Vec<String>,
        /// Only this ecosystem: npm, pip, composer, RubyGems, Go (repeatable).
        #[arg(long = "ecosystem")]
        ecosystems: Vec<String>,
        /// The TOTP code; asked for when not given.
        #[arg(long)]
        totp: Option<String>,
    },
    /// Acknowledge a finding with a reason (operator).
    Ack {
        /// Finding id.
        id: String,
        /// Why it is accepted.
        #[arg(long)]
        reason: String,
    },
    /// Where each host's packages were read (lockfiles, installed trees, binaries, the OS
    /// package database) and what its last scan could check of each.
    Coverage {
        /// One host (its id).
        #[arg(long)]
        agent: Option<String>,
        /// covered or not_covered.
        #[arg(long)]
        status: Option<String>,
    },
}

const COVERAGE: &[Column] = &[
    ("host", "/hostname"),
    ("source", "/source"),
    ("kind", "/source_kind"),
    ("format", "/format"),
    ("packages", "/packages"),
    ("status", "/status"),
    ("reason", "/reason"),
];

const RULES: &[Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("metric", "/metric"),
    ("operator", "/operator"),
    ("threshold", "/threshold"),
    ("window", "/window"),
    ("severity", "/severity"),
];
const WEBHOOKS: &[Column] = &[
    ("id", "/id"),
    ("url", "/url"),
    ("min severity", "/min_severity"),
    ("secret", "/secret"),
];
const SLO: &[Column] = &[
    ("app", "/app_name"),
    ("target", "/target"),
    ("state", "/state"),
    ("uptime %", "/uptime_percent"),
    ("budget left (min)", "/budget_remaining_minutes"),
];
const FINDINGS: &[Column] = &[
    ("id", "/id"),
    ("severity", "/severity"),
    ("vuln", "/vuln_id"),
    ("host", "/hostname"),
    ("package", "/package"),
    ("installed", "/installed_version"),
    ("fixed in", "/fixed_versions"),
    ("source", "/source"),
    ("status", "/status"),
];

/// `trusthub rules …`.
pub async fn rules(cmd: RulesCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        RulesCmd::Ls => print(&c.get("/alert-rules").await?, RULES, g.output),
        RulesCmd::Add {
            name,
            metric,
            operator,
            threshold,
            window,
            severity,
        } => {
            let mut body = json!({"name": name, "metric": metric, "operator": operator,
                "threshold": threshold, "window": window});
            if let Some(s) = severity {
                body["severity"] = json!(s);
            }
            print(
                &c.json(Method::POST, "/alert-rules", &body).await?,
                RULES,
                g.output,
            )
        }
        RulesCmd::Rm { id: r } => {
            delete(
                &c,
                &format!("/alert-rules/{}", id(&r)?),
                format!("deleted rule {r}"),
            )
            .await
        }
    }
}

/// `trusthub webhooks …`.
pub async fn webhooks(cmd: WebhooksCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        WebhooksCmd::Ls => print(&c.get("/webhooks").await?, WEBHOOKS, g.output),
        WebhooksCmd::Add { url, min_severity } => {
            let mut body = json!({"url": url});
            if let Some(s) = min_severity {
                body["min_severity"] = json!(s);
            }
            print(
                &c.json(Method::POST, "/webhooks", &body).await?,
                WEBHOOKS,
                g.output,
            )
        }
        WebhooksCmd::Rm { id: w } => {
            delete(
                &c,
                &format!("/webhooks/{}", id(&w)?),
                format!("deleted webhook {w}"),
            )
            .await
        }
    }
}

/// `trusthub slo …`.
pub async fn slo(cmd: SloCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        SloCmd::Get { app } => print(
            &c.get(&format!("/apps/{}/slo", id(&app)?)).await?,
            SLO,
            g.output,
        ),
        SloCmd::Set {
            app,
            target,
            window_days,
        } => {
            let v = c
                .json(
                    Method::POST,
                    &format!("/apps/{}/slo", id(&app)?),
                    &json!({"target": target, "window_days": window_days}),
                )
                .await?;
            print(&v, SLO, g.output)
        }
        SloCmd::History { app, days } => {
            let csv = c
                .bytes(&format!("/apps/{}/slo/history?days={days}", id(&app)?))
                .await?;
            std::io::stdout()
                .write_all(&csv)
                .map_err(|e| Failure::error(format!("stdout: {e}")))
        }
    }
}

/// `trusthub evidence create|download`.
pub async fn evidence(cmd: EvidenceRemote, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        EvidenceRemote::Create { from, to, blobs } => {
            let v = c
                .json(
                    Method::POST,
                    "/ai/evidence-packs",
                    &json!({"period_start": from, "period_end": to, "include_blobs": blobs}),
                )
                .await?;
            print(
                &v,
                &[
                    ("pack", "/pack_id"),
                    ("traces", "/trace_count"),
                    ("spans", "/span_count"),
                    ("manifest sha256", "/manifest_sha256"),
                ],
                g.output,
            )
        }
        EvidenceRemote::Download { id: p, out } => {
            let p = id(&p)?;
            let out = out.unwrap_or_else(|| std::path::PathBuf::from(format!("pack-{p}.tar.gz")));
            let n = download(&c, &format!("/ai/evidence-packs/{p}/download"), &out).await?;
            eprintln!(
                "saved {} ({n} bytes); check it with `trusthub evidence verify {}`",
                out.display(),
                out.display()
            );
            Ok(())
        }
    }
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

/// The rank of a severity word (CRITICAL 4 … LOW 1), for `--fail-on`.
fn rank(s: &str) -> Option<u8> {
    match s.to_ascii_uppercase().as_str() {
        "CRITICAL" => Some(4),
        "HIGH" => Some(3),
        "MEDIUM" | "MODERATE" => Some(2),
        "LOW" => Some(1),
        _ => None,
    }
}

/// `trusthub cve ls|get|ack`.
pub async fn cve(cmd: CveRemote, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        CveRemote::Ls {
            severity,
            status,
            fail_on,
        } => {
            let gate = match fail_on.as_deref().map(|f| (f, rank(f))) {
                None => None,
                Some((_, Some(r))) => Some(r),
                Some((f, None)) => {
                    return Err(Failure {
                        code: 2,
                        message: format!("--fail-on {f}: use CRITICAL, HIGH, MEDIUM or LOW"),
                    });
                }
            };
            // Every page, so the gate sees every finding.
            let mut items: Vec<Value> = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let path = with_query(
                    "/inventory/cves",
                    &[
                        ("limit", Some("500".to_owned())),
                        ("severity", severity.clone()),
                        ("status", status.clone()),
                        ("cursor", cursor.clone()),
                    ],
                );
                let page = c.get(&path).await?;
                items.extend(page["items"].as_array().cloned().unwrap_or_default());
                match page["next_cursor"].as_str() {
                    Some(next) => cursor = Some(next.to_owned()),
                    None => break,
                }
            }
            let all = Value::Array(items);
            print(&all, FINDINGS, g.output)?;
            if let Some(gate) = gate {
                let failing = all
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|f| f["status"] == "open")
                    .filter(|f| {
                        f["severity"]
                            .as_str()
                            .and_then(rank)
                            .is_some_and(|r| r >= gate)
                    })
                    .count();
                if failing > 0 {
                    return Err(Failure::error(format!(
                        "{failing} open finding{} at or above {}",
                        if failing == 1 { "" } else { "s" },
                        fail_on.unwrap_or_default().to_ascii_uppercase()
                    )));
                }
            }
            Ok(())
        }
        CveRemote::Get { id: v } => {
            let advisory = c.get(&format!("/cves/{}", encode(v.trim()))).await?;
            match g.output {
                Format::Table => {
                    println!(
                        "{}  {}  {}\n{}\n",
                        advisory["id"].as_str().unwrap_or_default(),
                        advisory["severity"].as_str().unwrap_or_default(),
                        advisory["aliases"]
                            .as_array()
                            .map(|a| a
                                .iter()
                                .filter_map(Value::as_str)
                                .collect::<Vec<_>>()
                                .join(" "))
                            .unwrap_or_default(),
                        advisory["summary"].as_str().unwrap_or_default()
                    );
                    print(&advisory["findings"], FINDINGS, g.output)
                }
                other => print(&advisory, FINDINGS, other),
            }
        }
        CveRemote::Suppress {
            package,
            ecosystem,
            range,
            vuln,
            reason,
            until,
        } => {
            let mut body = json!({"package_name": package, "ecosystem": ecosystem,
                "version_range": range, "reason": reason, "expires_at": until});
            if let Some(v) = vuln {
                body["vuln_id"] = json!(v);
            }
            let v = c.json(Method::POST, "/cve-suppressions", &body).await?;
            print(
                &v,
                &[
                    ("id", "/id"),
                    ("package", "/package_name"),
                    ("ecosystem", "/ecosystem"),
                    ("range", "/version_range"),
                    ("findings", "/findings"),
                    ("until", "/expires_at"),
                ],
                g.output,
            )
        }
        CveRemote::UpdateAll {
            dry_run,
            agents,
            ecosystems,
            totp,
        } => {
            let mut body = json!({"dry_run": dry_run});
            if !agents.is_empty() {
                let ids: Result<Vec<String>, Failure> = agents.iter().map(|a| id(a)).collect();
                body["agent_ids"] = json!(ids?);
            }
            if !ecosystems.is_empty() {
                body["ecosystems"] = json!(ecosystems);
            }
            let v = if dry_run {
                c.json(Method::POST, "/cve/auto-update-all", &body).await?
            } else {
                with_totp(
                    &c,
                    Method::POST,
                    "/cve/auto-update-all",
                    Some(&body),
                    totp,
                    "auto_update_all",
                )
                .await?
            };
            if matches!(g.output, Format::Json | Format::Yaml) {
                return print(&v, &[], g.output);
            }
            // A row per package, then what was skipped and why.
            let mut rows = Vec::new();
            for a in v["dispatched"].as_array().into_iter().flatten() {
                for p in a["packages"].as_array().into_iter().flatten() {
                    rows.push(json!({"host": a["hostname"], "project": a["project_path"],
                        "ecosystem": a["ecosystem"], "package": p["name"], "from": p["from"],
                        "to": p["to"], "action": a["eat_nonce"]}));
                }
            }
            let skipped = v["skipped"].as_array().cloned().unwrap_or_default();
            eprintln!(
                "{} {} action(s); {} skipped{}",
                if dry_run { "would send" } else { "sent" },
                v["dispatched"].as_array().map_or(0, Vec::len),
                skipped.len(),
                if v["capped"] == true {
                    "; more are due: run it again"
                } else {
                    ""
                }
            );
            print(
                &Value::Array(rows),
                &[
                    ("host", "/host"),
                    ("project", "/project"),
                    ("ecosystem", "/ecosystem"),
                    ("package", "/package"),
                    ("from", "/from"),
                    ("to", "/to"),
                    ("action", "/action"),
                ],
                g.output,
            )?;
            if !skipped.is_empty() {
                eprintln!("skipped:");
                for s in skipped {
                    eprintln!(
                        "  {} {} ({}): {}",
                        s["package"].as_str().unwrap_or_default(),
                        s["vuln_ids"]
                            .as_array()
                            .map(|v| v
                                .iter()
                                .filter_map(Value::as_str)
                                .collect::<Vec<_>>()
                                .join(","))
                            .unwrap_or_default(),
                        s["ecosystem"].as_str().unwrap_or_default(),
                        s["reason"].as_str().unwrap_or_default()
                    );
                }
            }
            Ok(())
        }
        CveRemote::Ack { id: f, reason } => {
            let v = c
                .json(
                    Method::POST,
                    &format!("/cve-findings/{}/acknowledge", id(&f)?),
                    &json!({"reason": reason}),
                )
                .await?;
            print(&v, FINDINGS, g.output)
        }
        CveRemote::Coverage { agent, status } => {
            let agent = agent.as_deref().map(id).transpose()?;
            let path = with_query(
                "/inventory/cves/coverage",
                &[("agent_id", agent), ("status", status)],
            );
            print(&c.get(&path).await?, COVERAGE, g.output)
        }
    }
}

/// The OSV records of `path` as the zip `POST /cve/sources/import` takes: a `.zip` as it is;
/// a folder's or a `.tar.gz`'s `.json` files, zipped here.
fn import_zip(path: &std::path::Path) -> Result<Vec<u8>, Failure> {
    use std::io::Read as _;
    let name = path.to_string_lossy().to_ascii_lowercase();
    if name.ends_with(".zip") {
        return std::fs::read(path).map_err(|e| Failure::error(format!("{}: {e}", path.display())));
    }
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut add = |entry: &str, bytes: &[u8]| -> Result<(), Failure> {
        zip.start_file(entry, options)
            .and_then(|()| zip.write_all(bytes).map_err(zip::result::ZipError::Io))
            .map_err(|e| Failure::error(format!("{entry}: {e}")))
    };
    let mut files = 0usize;
    if path.is_dir() {
        let mut stack = vec![path.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let entries = std::fs::read_dir(&dir)
                .map_err(|e| Failure::error(format!("{}: {e}", dir.display())))?;
            for e in entries {
                let p = e.map_err(|e| Failure::error(e.to_string()))?.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "json") {
                    let rel = p
                        .strip_prefix(path)
                        .unwrap_or(&p)
                        .to_string_lossy()
                        .into_owned();
                    let bytes = std::fs::read(&p)
                        .map_err(|e| Failure::error(format!("{}: {e}", p.display())))?;
                    add(&rel, &bytes)?;
                    files += 1;
                }
            }
        }
    } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        let file = std::fs::File::open(path)
            .map_err(|e| Failure::error(format!("{}: {e}", path.display())))?;
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
        for entry in archive
            .entries()
            .map_err(|e| Failure::error(format!("{}: {e}", path.display())))?
        {
            let mut entry =
                entry.map_err(|e| Failure::error(format!("{}: {e}", path.display())))?;
            let rel = entry
                .path()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            if entry.header().entry_type().is_file() && rel.ends_with(".json") {
                let mut bytes = Vec::new();
                entry
                    .read_to_end(&mut bytes)
                    .map_err(|e| Failure::error(format!("{rel}: {e}")))?;
                add(&rel, &bytes)?;
                files += 1;
            }
        }
    } else {
        return Err(Failure {
            code: 2,
            message: format!(
                "{}: a folder, a .zip or a .tar.gz of OSV records",
                path.display()
            ),
        });
    }
    if files == 0 {
        return Err(Failure::error(format!(
            "{}: no .json records in it",
            path.display()
        )));
    }
    zip.finish()
        .map(|c| c.into_inner())
        .map_err(|e| Failure::error(e.to_string()))
}

/// `trusthub cve import <path>` with a context: the records uploaded to the hub (operator),
/// for this tenant.
pub async fn cve_import(path: &std::path::Path, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    let body = import_zip(path)?;
    // The hub answers once every record is stored: a spinner on a terminal meanwhile.
    let spinner =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    spinner.set_message(format!(
        "importing {} ({} bytes)",
        path.display(),
        body.len()
    ));
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let answer = c
        .send(
            c.request(Method::POST, "/cve/sources/import")
                .header("content-type", "application/zip")
                .body(body),
        )
        .await;
    spinner.finish_and_clear();
    let v = answer?;
    print(
        &v,
        &[
            ("files", "/files"),
            ("inserted", "/inserted"),
            ("updated", "/updated"),
            ("unchanged", "/unchanged"),
            ("withdrawn", "/withdrawn"),
            ("skipped", "/skipped_count"),
        ],
        g.output,
    )
}
