//! `trusthub apps …`.

use super::*;

/// `trusthub apps …`.
#[derive(Debug, clap::Subcommand)]
pub enum AppsCmd {
    /// Tracked apps and checks: expected against observed.
    Ls(Watch),
    /// One app.
    Get {
        /// App id or name.
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
        /// The host it runs on, or that runs the check (hostname or agent id); a check without
        /// it is run by the hub.
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
        /// App id or name.
        id: String,
    },
    /// Change what is expected of an app.
    Expect {
        /// App id or name.
        id: String,
        /// running or stopped.
        #[arg(value_parser = ["running", "stopped"])]
        state: String,
    },
    /// Restart an app on its host (admin; asks for a TOTP code).
    Restart {
        /// App id or name.
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

pub(crate) const APPS: &[Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("type", "/app_type"),
    ("target", "/identifier"),
    ("expected", "/expected_state"),
    ("observed", "/observed_state"),
];
/// `trusthub apps …`.
pub async fn apps(cmd: AppsCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        AppsCmd::Ls(w) => list(&c, "/apps", APPS, g, w.watch).await,
        AppsCmd::Get { id: a } => print(
            &c.get(&format!("/apps/{}", named(&c, &a, APP).await?))
                .await?,
            APPS,
            g.output,
        ),
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
                body["agent_id"] = json!(named(&c, &a, AGENT).await?);
            }
            let v = c.json(Method::POST, "/apps", &body).await?;
            print(&v, APPS, g.output)
        }
        AppsCmd::Rm { id: a } => {
            delete(
                &c,
                &format!("/apps/{}", named(&c, &a, APP).await?),
                format!("stopped tracking {a}"),
            )
            .await
        }
        AppsCmd::Expect { id: a, state } => {
            let v = c
                .json(
                    Method::PATCH,
                    &format!("/apps/{}", named(&c, &a, APP).await?),
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
            let path = format!("/apps/{}/restart", named(&c, &a, APP).await?);
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
