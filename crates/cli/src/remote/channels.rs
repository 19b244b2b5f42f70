//! `trusthub notification-channels …` and `trusthub totp …` (CONTRACT 28, 33): the alert
//! channels an admin keeps, and the user's own TOTP, from the terminal.

use super::*;

/// `trusthub notification-channels …`.
#[derive(Debug, clap::Subcommand)]
pub enum ChannelsCmd {
    /// The tenant's notification channels (secrets masked).
    Ls,
    /// Add a channel (admin): `--kind slack --config '{"url": "https://hooks.slack.com/…"}'`;
    /// a signed webhook made without a secret gets one, shown once.
    Add {
        /// Its label.
        #[arg(long)]
        name: String,
        /// slack, discord, teams, telegram, ntfy, pagerduty, email or webhook.
        #[arg(long)]
        kind: String,
        /// The kind's settings as JSON (`{"url": …}`, `{"to": ["…"]}`, …).
        #[arg(long)]
        config: String,
        /// The lowest severity sent: info, warning, critical.
        #[arg(long)]
        min_severity: Option<String>,
        /// Only alerts of agents with this tag.
        #[arg(long)]
        tag: Option<String>,
    },
    /// Send a test message through a channel (admin).
    Test {
        /// Channel id or name.
        id: String,
    },
    /// Delete a channel (admin).
    Rm {
        /// Channel id or name.
        id: String,
    },
}

/// A channel, by its name.
const CHANNEL: Kind = Kind {
    what: "notification channel",
    list: "/notification-channels",
    field: "name",
};

pub(crate) const CHANNELS: &[Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("kind", "/kind"),
    ("min severity", "/min_severity"),
    ("tag", "/agent_filter/tag"),
    ("secret", "/secret"),
];

/// `trusthub notification-channels …`.
pub async fn channels(cmd: ChannelsCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        ChannelsCmd::Ls => print(&c.get("/notification-channels").await?, CHANNELS, g.output),
        ChannelsCmd::Add {
            name,
            kind,
            config,
            min_severity,
            tag,
        } => {
            let config: Value = serde_json::from_str(&config).map_err(|e| Failure {
                code: 2,
                message: format!("--config is not JSON: {e}"),
            })?;
            let mut body = json!({"name": name, "kind": kind, "config": config});
            if let Some(s) = min_severity {
                body["min_severity"] = json!(s);
            }
            if let Some(t) = tag {
                body["agent_filter"] = json!({"tag": t});
            }
            let made = c
                .json(Method::POST, "/notification-channels", &body)
                .await?;
            if made.get("secret").is_some() {
                eprintln!(
                    "the signing secret is shown this once: keep it to check X-Service-Signature"
                );
            }
            print(&made, CHANNELS, g.output)
        }
        ChannelsCmd::Test { id } => {
            let id = named(&c, &id, CHANNEL).await?;
            c.json(
                Method::POST,
                &format!("/notification-channels/{id}/test"),
                &json!({}),
            )
            .await?;
            eprintln!(
                "test message queued; `trusthub notification-channels ls` and the dashboard show its delivery"
            );
            Ok(())
        }
        ChannelsCmd::Rm { id: name } => {
            let id = named(&c, &name, CHANNEL).await?;
            delete(
                &c,
                &format!("/notification-channels/{id}"),
                format!("deleted notification channel {name}"),
            )
            .await
        }
    }
}

/// `trusthub totp …`: the signed-in user's own TOTP (a login session, not a token).
#[derive(Debug, clap::Subcommand)]
pub enum TotpCmd {
    /// Start setting TOTP up: a new secret and its otpauth URI for an authenticator app.
    Setup,
    /// Turn TOTP on with the first code the app shows; prints ten recovery codes, once.
    Verify {
        /// The 6-digit code.
        code: String,
    },
    /// Turn TOTP off (a current code is asked, or --totp).
    Disable {
        /// The current code.
        #[arg(long)]
        totp: Option<String>,
    },
    /// New recovery codes; the old ones stop working (a current code is asked, or --totp).
    RecoveryCodes {
        /// The current code.
        #[arg(long)]
        totp: Option<String>,
    },
}

/// `trusthub totp …`.
pub async fn totp(cmd: TotpCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    let code = |given: Option<String>| match given {
        Some(code) => Ok(code),
        None => prompt("TOTP code: ", false),
    };
    let shown = match cmd {
        TotpCmd::Setup => {
            let s = c.json(Method::POST, "/auth/totp/setup", &json!({})).await?;
            if matches!(g.output, Format::Table) {
                println!(
                    "secret:  {}",
                    s["secret_base32"].as_str().unwrap_or_default()
                );
                println!("uri:     {}", s["otpauth_uri"].as_str().unwrap_or_default());
                eprintln!(
                    "add it to an authenticator app, then: trusthub totp verify <the code it shows>"
                );
                return Ok(());
            }
            s
        }
        TotpCmd::Verify { code } => {
            c.json(
                Method::POST,
                "/auth/totp/verify",
                &json!({"code": code.trim()}),
            )
            .await?
        }
        TotpCmd::Disable { totp } => {
            let code = code(totp)?;
            c.json(
                Method::POST,
                "/auth/totp/disable",
                &json!({"code": code.trim()}),
            )
            .await?
        }
        TotpCmd::RecoveryCodes { totp } => {
            let code = code(totp)?;
            c.json(
                Method::POST,
                "/auth/totp/recovery-codes",
                &json!({"code": code.trim()}),
            )
            .await?
        }
    };
    if !matches!(g.output, Format::Table) {
        return print(&shown, &[], g.output);
    }
    if let Some(on) = shown["totp_enabled"].as_bool() {
        println!("TOTP is {}", if on { "on" } else { "off" });
    }
    if let Some(codes) = shown["recovery_codes"].as_array() {
        eprintln!(
            "recovery codes, shown this once — each signs in once in place of a code; keep them offline:"
        );
        for c in codes {
            println!("{}", c.as_str().unwrap_or_default());
        }
    }
    Ok(())
}
