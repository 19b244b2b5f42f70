//! `trusthub login`, `logout`, `whoami` and `context`: saved hubs and signing in.

use super::*;

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

pub(crate) const ME: &[Column] = &[
    ("email", "/user/email"),
    ("role", "/effective_role"),
    ("tenant", "/tenant/name"),
    ("auth", "/auth"),
];

/// Reads a line from the terminal after `prompt`; with `secret`, without echo when stdin is
/// a terminal.
pub(crate) fn prompt(question: &str, secret: bool) -> Result<String, Failure> {
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
pub(crate) async fn with_totp(
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
    let answered = match totp {
        Some(code) => send(Some(&code)).await,
        None => match send(None).await {
            // The hub's totp_required problem names the header to send.
            Err(f) if f.code == 4 && f.message.contains("X-TOTP-Code") => {
                let code = prompt(&format!("TOTP code ({purpose}): "), false)?;
                send(Some(&code)).await
            }
            other => other,
        },
    };
    // The hub names its API for setting TOTP up; here the verb says it (CONTRACT 33).
    answered.map_err(|mut f| {
        if f.message.contains("/auth/totp/setup") {
            f.message = f
                .message
                .replace("with /auth/totp/setup", "with `trusthub totp setup`");
        }
        f
    })
}

/// The context name a URL gets by default: its host (and port).
pub(crate) fn default_name(url: &str) -> String {
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
