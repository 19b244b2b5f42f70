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
    /// --identifier) or add a check the hub runs (--type http|tcp|tls|dns|ping, --endpoint;
    /// --type push for a heartbeat: its push URL is printed once).
    Add {
        /// Its name.
        #[arg(long)]
        name: String,
        /// systemd, docker, compose, process; or http, tcp, tls, dns, ping, push for a check.
        #[arg(long = "type")]
        kind: String,
        /// The host it runs on, or that runs the check (hostname or agent id); a check without
        /// it is run by the hub.
        #[arg(long)]
        agent: Option<String>,
        /// The unit, container, `<project>::<service>` or binary path.
        #[arg(long)]
        identifier: Option<String>,
        /// A check's target (`https://…`, `tcp://host:port`, `tls://host:port`,
        /// `dns://name?type=A&server=ip`, `icmp://host`).
        #[arg(long)]
        endpoint: Option<String>,
        /// A check's interval in seconds (10 to 3600; a push monitor's up to 2678400).
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
        /// An http check's JSON body must pass this: `<path> <op> <value>`, e.g.
        /// `'$.status == ok'`, `'$.db.lag_ms < 100'`, `'$.regions contains eu'`.
        #[arg(long)]
        json_query: Option<String>,
        /// A dns check's answer must hold this value (repeat for more).
        #[arg(long)]
        expected: Vec<String>,
        /// A push monitor's grace in seconds past its interval (default 60).
        #[arg(long)]
        grace: Option<u32>,
        /// What the host runs to restart it (default: by its type, e.g. `systemctl restart`).
        #[arg(long)]
        restart_command: Option<String>,
    },
    /// Turn an app's public badge on (its URL printed) or off (the URL stops answering).
    Badge {
        /// App id or name.
        id: String,
        /// on or off.
        #[arg(value_parser = ["on", "off"])]
        state: String,
    },
    /// A new push URL for a push monitor (the old one stops answering); printed once.
    PushUrl {
        /// App id or name.
        id: String,
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
            json_query,
            expected,
            grace,
            restart_command,
        } => {
            let check = matches!(
                kind.as_str(),
                "http" | "tcp" | "tls" | "dns" | "ping" | "push"
            );
            let mut body = json!({"name": name});
            if check {
                if restart_command.is_some() {
                    return Err(Failure {
                        code: 2,
                        message: "--restart-command: a check has nothing to restart".into(),
                    });
                }
                body["type"] = json!(kind);
                if let Some(e) = endpoint.or(identifier) {
                    body["endpoint"] = json!(e);
                }
                if let Some(q) = json_query {
                    body["json_query"] = parse_query(&q)?;
                }
                if !expected.is_empty() {
                    body["expected"] = json!(expected);
                }
                if let Some(g) = grace {
                    body["grace_seconds"] = json!(g);
                }
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
            print_with_push_url(&v, g)
        }
        AppsCmd::Badge { id: a, state } => {
            let path = format!("/apps/{}", named(&c, &a, APP).await?);
            let v = c
                .json(Method::PATCH, &path, &json!({"badge": state == "on"}))
                .await?;
            print(
                &v,
                &[("name", "/name"), ("badge_url", "/badge_url")],
                g.output,
            )
        }
        AppsCmd::PushUrl { id: a } => {
            let path = format!("/apps/{}/push-url", named(&c, &a, APP).await?);
            let v = c.json(Method::POST, &path, &json!({})).await?;
            print_with_push_url(&v, g)
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

/// An app, and a push monitor's whole URL (shown this once) as its own column.
fn print_with_push_url(v: &Value, g: &Global) -> Result<(), Failure> {
    if v["push_url"].is_string() {
        let mut cols = APPS.to_vec();
        cols.retain(|(name, _)| *name != "target");
        cols.push(("push_url", "/push_url"));
        print(v, &cols, g.output)
    } else {
        print(v, APPS, g.output)
    }
}

/// `--json-query '<path> <op> <value>'`: the value is JSON when it reads as a number, a
/// boolean, null or a quoted string, else the text as it is.
fn parse_query(q: &str) -> Result<Value, Failure> {
    let bad = || Failure {
        code: 2,
        message: format!(
            "--json-query `{q}`: write `<path> <op> <value>`, e.g. '$.status == ok' (op: ==, !=, <, >, contains)"
        ),
    };
    let q = q.trim();
    let (path, rest) = q.split_once(char::is_whitespace).ok_or_else(bad)?;
    let (op, value) = rest
        .trim_start()
        .split_once(char::is_whitespace)
        .ok_or_else(bad)?;
    let value = value.trim();
    let value = match serde_json::from_str::<Value>(value) {
        Ok(v) if !v.is_array() && !v.is_object() => v,
        _ => json!(value),
    };
    Ok(json!({"path": path, "op": op, "value": value}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_queries_read_as_people_write_them() {
        let q = |s: &str| parse_query(s).map_err(|f| f.message);
        assert_eq!(
            q("$.status == ok"),
            Ok(json!({"path": "$.status", "op": "==", "value": "ok"}))
        );
        assert_eq!(
            q("$.lag  <  100"),
            Ok(json!({"path": "$.lag", "op": "<", "value": 100}))
        );
        assert_eq!(
            q("$.up == true"),
            Ok(json!({"path": "$.up", "op": "==", "value": true}))
        );
        assert_eq!(
            q(r#"$.msg contains "all good""#),
            Ok(json!({"path": "$.msg", "op": "contains", "value": "all good"}))
        );
        assert!(q("$.status").is_err());
    }
}
