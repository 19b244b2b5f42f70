//! Notification channels (CONTRACT 27): an alert reaches people where they are, each service
//! in its own documented message format — Slack Block Kit (incoming webhook), Discord
//! webhook `embeds`, a Microsoft Teams workflow's Adaptive Card, Telegram Bot API
//! `sendMessage`, ntfy's JSON publish, SMTP mail, PagerDuty Events API v2 (`trigger` and
//! `resolve` with the alert's fingerprint as `dedup_key`, so a resolution closes the
//! incident) — or the signed webhook of SPEC 6.1. Every message links to the alert's page.
//!
//! A channel's config is checked when it is saved; secret fields (the webhook URLs of Slack,
//! Discord and Teams, which are credentials, Telegram's bot token, ntfy's token, PagerDuty's
//! routing key, a webhook's secret) are sealed with the hub key and only shown masked.

use serde::Deserialize;
use serde_json::{Value, json};
use trusthub_platform::openapi::Variant;
use utoipa::ToSchema;

/// The kinds of channel.
pub const KINDS: [&str; 8] = [
    "webhook",
    "slack",
    "discord",
    "teams",
    "telegram",
    "ntfy",
    "email",
    "pagerduty",
];

/// Sealing context of channel configs.
pub const SEAL_CONTEXT: &str = "notification_channel";

/// Telegram's Bot API.
pub const TELEGRAM_API: &str = "https://api.telegram.org";
/// PagerDuty's Events API.
pub const PAGERDUTY_API: &str = "https://events.pagerduty.com";

/// A channel's config, per kind (what is sealed).
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "snake_case")]
pub enum Config {
    /// Slack, Discord, Teams: the incoming-webhook (or workflow) URL.
    Url {
        /// The URL.
        url: String,
    },
    /// A signed webhook.
    Webhook {
        /// The URL.
        url: String,
        /// The HMAC secret.
        secret: String,
    },
    /// Telegram.
    Telegram {
        /// `123456:ABC…`.
        bot_token: String,
        /// A chat id or `@channel`.
        chat_id: String,
        /// The API's base.
        api_url: String,
    },
    /// ntfy.
    Ntfy {
        /// The server's base URL.
        url: String,
        /// The topic.
        topic: String,
        /// An access token.
        token: Option<String>,
    },
    /// Mail.
    Email {
        /// Recipients.
        to: Vec<String>,
    },
    /// PagerDuty.
    PagerDuty {
        /// The integration's routing key.
        routing_key: String,
        /// The API's base.
        api_url: String,
    },
}

// The configs as clients send them; their schemas state the checks of [`parse`] (a value
// is trimmed before it is checked, so the patterns allow surrounding spaces).

/// Slack, Discord, Teams: `{url}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct UrlIn {
    /// The incoming webhook (or Teams workflow) URL, http or https.
    #[schema(min_length = 1, max_length = 2048)]
    url: String,
}

/// A signed webhook: `{url, secret?}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct WebhookIn {
    /// The URL deliveries are posted to, http or https.
    #[schema(min_length = 1, max_length = 2048)]
    url: String,
    /// The HMAC secret, 16 to 256 characters; absent: one is generated and shown once.
    #[schema(
        pattern = r"^\s*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]{14,254}[^\s\x00-\x1f\x7f-\x9f]\s*$"
    )]
    secret: Option<String>,
}

/// Telegram: `{bot_token, chat_id, api_url?}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct TelegramIn {
    /// The bot's token from @BotFather (`123456:ABC…`).
    #[schema(pattern = r"^\s*[0-9]+:[A-Za-z0-9_-]{10,}\s*$", max_length = 100)]
    bot_token: String,
    /// A chat id (`-100…`) or `@channelname`.
    #[schema(schema_with = chat_id_schema)]
    chat_id: Value,
    /// The Bot API's base URL (default `https://api.telegram.org`).
    #[schema(min_length = 1, max_length = 2048)]
    api_url: Option<String>,
}

/// A chat id or a channel's name, as text.
const CHAT_ID: &str = r"^\s*(-?[0-9]{1,20}|@[A-Za-z0-9_]{1,64})\s*$";

fn chat_id_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    serde_json::from_value(json!({"oneOf": [
        {"type": "integer", "format": "int64"},
        {"type": "string", "pattern": CHAT_ID},
    ]}))
    .expect("a schema")
}

/// ntfy: `{url, topic, token?}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct NtfyIn {
    /// The server's base URL.
    #[schema(min_length = 1, max_length = 2048)]
    url: String,
    /// The topic: letters, digits, `_` and `-` (ntfy's rule), at most 64.
    #[schema(pattern = r"^\s*[A-Za-z0-9_-]{1,64}\s*$")]
    topic: String,
    /// An access token, at most 256 characters.
    #[schema(
        pattern = r"^\s*[^\s\x00-\x1f\x7f-\x9f]([^\x00-\x1f\x7f-\x9f]{0,254}[^\s\x00-\x1f\x7f-\x9f])?\s*$"
    )]
    token: Option<String>,
}

/// Mail: `{to}` through the hub's SMTP relay.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct EmailIn {
    /// 1 to 20 addresses.
    #[schema(schema_with = addresses_schema)]
    to: Vec<String>,
}

fn addresses_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    // `trusthub_core::validate::email`: one `@`, no spaces, control characters or `<>`, a
    // dot inside the domain.
    const C: &str = r"\s@<>\x00-\x1f\x7f-\x9f";
    let address = format!(r"^\s*[^{C}]+@[^{C}.](?=[^{C}]*\.)[^{C}]*[^{C}.]\s*$");
    serde_json::from_value(json!({"type": "array", "minItems": 1, "maxItems": 20,
        "items": {"type": "string", "maxLength": 254, "pattern": address}}))
    .expect("a schema")
}

/// PagerDuty Events API v2: `{routing_key, api_url?}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct PagerDutyIn {
    /// The 32-character integration key of an Events API v2 integration.
    #[schema(pattern = r"^\s*[A-Za-z0-9]{32}\s*$")]
    routing_key: String,
    /// The API's base URL (default `https://events.pagerduty.com`).
    #[schema(min_length = 1, max_length = 2048)]
    api_url: Option<String>,
}

/// Any kind's config (a change: the channel's own kind decides which).
pub fn any_config() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    let mut configs: Vec<Value> = shapes()
        .into_iter()
        .map(|v| v.properties["config"].clone())
        .collect();
    configs.push(json!({"type": "null"}));
    serde_json::from_value(json!({"anyOf": configs})).expect("a schema")
}

/// The shapes of a new channel: each `kind` with its `config` (the rule [`parse`] keeps),
/// for the document ([`trusthub_platform::openapi::one_of`]).
pub fn shapes() -> Vec<Variant> {
    use trusthub_platform::openapi::{schema_json, tag};
    let shape = |kinds: &[&str], config: Value| {
        Variant::new(json!({"kind": tag(kinds), "config": config}), &[])
    };
    vec![
        shape(&["slack", "discord", "teams"], schema_json::<UrlIn>()),
        shape(&["webhook"], schema_json::<WebhookIn>()),
        shape(&["telegram"], schema_json::<TelegramIn>()),
        shape(&["ntfy"], schema_json::<NtfyIn>()),
        shape(&["email"], schema_json::<EmailIn>()),
        shape(&["pagerduty"], schema_json::<PagerDutyIn>()),
    ]
}

/// A field error: `(config.<field>, message)`.
pub type Refusal = (String, String);

fn refuse(field: &str, m: impl Into<String>) -> Refusal {
    (format!("config.{field}"), m.into())
}

fn text(field: &str, v: &str, max: usize) -> Result<String, Refusal> {
    let v = v.trim();
    if v.is_empty() || v.chars().count() > max || v.chars().any(char::is_control) {
        return Err(refuse(
            field,
            format!("must be 1 to {max} characters without control characters"),
        ));
    }
    Ok(v.to_owned())
}

fn url(field: &str, v: &str) -> Result<String, Refusal> {
    let v = text(field, v, 2048)?;
    trusthub_core::apps::http_url(&v).map_err(|m| refuse(field, m))?;
    Ok(v.trim_end_matches('/').to_owned())
}

/// Reads and checks a channel's config for `kind` (the addresses it names are checked
/// against the outbound policy by the caller: [`Config::urls`]).
pub fn parse(
    kind: &str,
    config: &Value,
    new_secret: impl Fn() -> String,
) -> Result<Config, Refusal> {
    let de = |e: serde_json::Error| {
        let m = e.to_string();
        let m = m.split(" at line").next().unwrap_or(&m).to_owned();
        ("config".to_owned(), m)
    };
    match kind {
        "slack" | "discord" | "teams" => {
            let c: UrlIn = serde_json::from_value(config.clone()).map_err(de)?;
            Ok(Config::Url {
                url: url("url", &c.url)?,
            })
        }
        "webhook" => {
            let c: WebhookIn = serde_json::from_value(config.clone()).map_err(de)?;
            let secret = match c.secret {
                Some(s) => {
                    let s = text("secret", &s, 256)?;
                    if s.chars().count() < 16 {
                        return Err(refuse("secret", "must be at least 16 characters"));
                    }
                    s
                }
                None => new_secret(),
            };
            Ok(Config::Webhook {
                url: url("url", &c.url)?,
                secret,
            })
        }
        "telegram" => {
            let c: TelegramIn = serde_json::from_value(config.clone()).map_err(de)?;
            let token = text("bot_token", &c.bot_token, 100)?;
            let (id, secret) = token.split_once(':').ok_or_else(|| {
                refuse("bot_token", "must look like 123456:ABC… (from @BotFather)")
            })?;
            if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) || secret.len() < 10 {
                return Err(refuse(
                    "bot_token",
                    "must look like 123456:ABC… (from @BotFather)",
                ));
            }
            if !secret
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(refuse(
                    "bot_token",
                    "must look like 123456:ABC… (from @BotFather)",
                ));
            }
            let chat_id = match &c.chat_id {
                Value::Number(n) if n.is_i64() => n.to_string(),
                Value::String(s) => {
                    let s = text("chat_id", s, 100)?;
                    let digits = s.strip_prefix('-').unwrap_or(&s);
                    let name = s.strip_prefix('@').unwrap_or_default();
                    let ok = (!digits.is_empty()
                        && digits.len() <= 20
                        && digits.chars().all(|c| c.is_ascii_digit()))
                        || (!name.is_empty()
                            && name.len() <= 64
                            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
                    if !ok {
                        return Err(refuse(
                            "chat_id",
                            "must be a chat id (-100…) or @channelname",
                        ));
                    }
                    s
                }
                _ => {
                    return Err(refuse(
                        "chat_id",
                        "must be a chat id (-100…) or @channelname",
                    ));
                }
            };
            let api_url = match &c.api_url {
                Some(u) => url("api_url", u)?,
                None => TELEGRAM_API.to_owned(),
            };
            Ok(Config::Telegram {
                bot_token: token,
                chat_id,
                api_url,
            })
        }
        "ntfy" => {
            let c: NtfyIn = serde_json::from_value(config.clone()).map_err(de)?;
            let topic = text("topic", &c.topic, 64)?;
            if !topic
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(refuse(
                    "topic",
                    "must be letters, digits, _ and - (ntfy's rule)",
                ));
            }
            let token = match &c.token {
                Some(t) => Some(text("token", t, 256)?),
                None => None,
            };
            Ok(Config::Ntfy {
                url: url("url", &c.url)?,
                topic,
                token,
            })
        }
        "email" => {
            let c: EmailIn = serde_json::from_value(config.clone()).map_err(de)?;
            if c.to.is_empty() || c.to.len() > 20 {
                return Err(refuse("to", "must list 1 to 20 addresses"));
            }
            let mut to = Vec::new();
            for (i, a) in c.to.iter().enumerate() {
                let a = a.trim();
                trusthub_core::validate::email(a)
                    .map_err(|m| (format!("config.to[{i}]"), m.to_owned()))?;
                to.push(a.to_owned());
            }
            Ok(Config::Email { to })
        }
        "pagerduty" => {
            let c: PagerDutyIn = serde_json::from_value(config.clone()).map_err(de)?;
            let key = text("routing_key", &c.routing_key, 64)?;
            if key.len() != 32 || !key.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(refuse(
                    "routing_key",
                    "must be the 32-character integration key of an Events API v2 integration",
                ));
            }
            let api_url = match &c.api_url {
                Some(u) => url("api_url", u)?,
                None => PAGERDUTY_API.to_owned(),
            };
            Ok(Config::PagerDuty {
                routing_key: key,
                api_url,
            })
        }
        _ => Err((
            "kind".to_owned(),
            format!("must be one of {}", KINDS.join(", ")),
        )),
    }
}

fn mask(s: &str) -> String {
    let tail: String = s
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("***{tail}")
}

/// A URL as answers show it (CONTRACT 30): its userinfo as `***`, never the user or the
/// password.
fn shown_url(u: &str) -> String {
    trusthub_platform::outbound::redact(u)
}

/// A URL whose path is the secret (Slack, Discord): scheme and host only.
fn mask_url(u: &str) -> String {
    let u = shown_url(u);
    let u = u.as_str();
    match u.find("://").map(|i| i + 3) {
        Some(start) => {
            let host_end = u[start..].find('/').map_or(u.len(), |i| start + i);
            format!("{}/***", &u[..host_end])
        }
        None => "***".into(),
    }
}

impl Config {
    /// The config as answers show it: secrets masked.
    pub fn shown(&self) -> Value {
        match self {
            Config::Url { url } => json!({"url": mask_url(url)}),
            Config::Webhook { url, .. } => json!({"url": shown_url(url), "secret": "***"}),
            Config::Telegram {
                bot_token,
                chat_id,
                api_url,
            } => {
                json!({"bot_token": mask(bot_token), "chat_id": chat_id, "api_url": shown_url(api_url)})
            }
            Config::Ntfy { url, topic, token } => {
                json!({"url": shown_url(url), "topic": topic, "token": token.as_deref().map(mask)})
            }
            Config::Email { to } => json!({"to": to}),
            Config::PagerDuty {
                routing_key,
                api_url,
            } => json!({"routing_key": mask(routing_key), "api_url": shown_url(api_url)}),
        }
    }

    /// The URLs the hub will call (checked against the outbound policy when saved and
    /// before every delivery).
    pub fn urls(&self) -> Vec<String> {
        match self {
            Config::Url { url } | Config::Webhook { url, .. } => vec![url.clone()],
            Config::Telegram { api_url, .. } => vec![api_url.clone()],
            Config::Ntfy { url, .. } => vec![url.clone()],
            Config::Email { .. } => Vec::new(),
            Config::PagerDuty { api_url, .. } => vec![api_url.clone()],
        }
    }
}

/// What to send for one delivery.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    /// A JSON POST.
    Post {
        /// Where.
        url: String,
        /// Extra headers (`Authorization` for ntfy).
        headers: Vec<(String, String)>,
        /// The body.
        body: Value,
    },
    /// The signed webhook of SPEC 6.1: the exact event body, signed with the secret.
    Signed {
        /// Where.
        url: String,
        /// The HMAC secret.
        secret: String,
        /// The exact body.
        body: String,
    },
    /// A mail.
    Mail {
        /// Recipients.
        to: Vec<String>,
        /// Subject.
        subject: String,
        /// Plain text.
        body: String,
    },
}

use trusthub_platform::outbound::cut;

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The facts of an event body (`{event, alert, ...}`) every message shows.
struct Facts {
    event: String,
    resolved: bool,
    test: bool,
    severity: String,
    title: String,
    detail: String,
    host: Option<String>,
    category: String,
    fingerprint: String,
    created_at: String,
    resolution: Option<String>,
}

fn facts(body: &Value) -> Facts {
    let a = &body["alert"];
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let event = s(&body["event"]);
    // An incident of a status page (CONTRACT 32) reads as an alert of its impact.
    let i = &body["incident"];
    if i.is_object() {
        let severity = match i["impact"].as_str() {
            Some("major" | "critical") => "critical",
            Some("minor") => "warning",
            _ => "info",
        };
        return Facts {
            resolved: i["status"] == "resolved",
            test: false,
            event,
            severity: severity.into(),
            title: format!("Incident on {}: {}", s(&i["page"]["title"]), s(&i["title"])),
            detail: format!("{}: {}", s(&i["status"]), s(&i["message"])),
            host: Some(s(&i["page"]["title"])),
            category: "incident".into(),
            fingerprint: format!("incident:{}", s(&i["id"])),
            created_at: s(&i["created_at"]),
            resolution: i["message"].as_str().map(str::to_owned),
        };
    }
    Facts {
        resolved: event == crate::alerting::ALERT_RESOLVED,
        test: event == "test",
        event,
        severity: s(&a["severity"]),
        title: s(&a["title"]),
        detail: s(&a["detail"]),
        host: a["agent"]["hostname"].as_str().map(str::to_owned),
        category: s(&a["category"]),
        fingerprint: s(&a["fingerprint"]),
        created_at: s(&a["created_at"]),
        resolution: a["resolution"].as_str().map(str::to_owned),
    }
}

impl Facts {
    fn headline(&self) -> String {
        if self.test {
            format!("Test from Trusthub: {}", self.title)
        } else if self.resolved {
            format!("Resolved: {}", self.title)
        } else {
            format!("[{}] {}", self.severity.to_uppercase(), self.title)
        }
    }

    fn body_text(&self) -> String {
        let mut t = self.detail.clone();
        if let (true, Some(r)) = (self.resolved, &self.resolution) {
            if !t.is_empty() {
                t.push('\n');
            }
            t.push_str(r);
        }
        if t.is_empty() {
            t = self.title.clone();
        }
        t
    }

    fn host(&self) -> String {
        self.host.clone().unwrap_or_else(|| "the hub".into())
    }
}

/// The message for one delivery of `body` (the SPEC 6.1 event body) to a channel of `kind`,
/// linking to `link` (the alert's page).
pub fn render(kind: &str, config: &Config, body: &str, link: &str) -> Result<Outgoing, String> {
    let v: Value =
        serde_json::from_str(body).map_err(|e| format!("the stored event cannot be read: {e}"))?;
    let f = facts(&v);
    let headline = f.headline();
    let text_ = f.body_text();
    Ok(match config {
        Config::Webhook { url, secret } => Outgoing::Signed {
            url: url.clone(),
            secret: secret.clone(),
            body: body.to_owned(),
        },
        Config::Url { url } => match kind {
            "discord" => discord(url, &f, &headline, &text_, link),
            "teams" => teams(url, &f, &headline, &text_, link),
            _ => slack(url, &f, &headline, &text_, link),
        },
        Config::Telegram {
            bot_token,
            chat_id,
            api_url,
        } => {
            let mut html = format!(
                "<b>{}</b>\n{}\n<i>{} · {}</i>",
                html_escape(&headline),
                html_escape(&text_),
                html_escape(&f.severity),
                html_escape(&f.host())
            );
            html.push_str(&format!(
                "\n<a href=\"{}\">Open in Trusthub</a>",
                html_escape(link)
            ));
            Outgoing::Post {
                url: format!("{api_url}/bot{bot_token}/sendMessage"),
                headers: Vec::new(),
                body: json!({
                    "chat_id": chat_id,
                    "text": cut(&html, 4096),
                    "parse_mode": "HTML",
                    "link_preview_options": {"is_disabled": true},
                }),
            }
        }
        Config::Ntfy { url, topic, token } => {
            let (priority, tags) = match (f.resolved, f.severity.as_str()) {
                (true, _) => (3, vec!["white_check_mark"]),
                (false, "critical") => (5, vec!["rotating_light"]),
                (false, "warning") => (4, vec!["warning"]),
                _ => (3, vec!["information_source"]),
            };
            Outgoing::Post {
                url: url.clone(),
                headers: token
                    .iter()
                    .map(|t| ("Authorization".to_owned(), format!("Bearer {t}")))
                    .collect(),
                body: json!({
                    "topic": topic,
                    "title": cut(&headline, 250),
                    "message": cut(&format!("{text_}\n{} · {}", f.severity, f.host()), 4000),
                    "priority": priority,
                    "tags": tags,
                    "click": link,
                }),
            }
        }
        Config::Email { to } => Outgoing::Mail {
            to: to.clone(),
            subject: cut(&headline, 200),
            body: format!(
                "{headline}\n\n{text_}\n\nSeverity: {}\nHost: {}\nCategory: {}\nRaised: {}\n\n{link}\n",
                f.severity,
                f.host(),
                f.category,
                f.created_at
            ),
        },
        Config::PagerDuty {
            routing_key,
            api_url,
        } => {
            let dedup = if f.test {
                format!("trusthub-test-{}", f.fingerprint)
            } else {
                f.fingerprint.clone()
            };
            let body = if f.resolved {
                json!({"routing_key": routing_key, "event_action": "resolve", "dedup_key": dedup})
            } else {
                let severity = match f.severity.as_str() {
                    "critical" => "critical",
                    "warning" => "warning",
                    _ => "info",
                };
                json!({
                    "routing_key": routing_key,
                    "event_action": "trigger",
                    "dedup_key": dedup,
                    "payload": {
                        "summary": cut(&headline, 1024),
                        "source": f.host(),
                        "severity": severity,
                        "timestamp": f.created_at,
                        "class": f.category,
                        "custom_details": {"detail": f.detail, "event": f.event},
                    },
                    "client": "Trusthub",
                    "client_url": link,
                    "links": [{"href": link, "text": "Open in Trusthub"}],
                })
            };
            Outgoing::Post {
                url: format!("{api_url}/v2/enqueue"),
                headers: Vec::new(),
                body,
            }
        }
    })
}

fn colour(f: &Facts) -> u32 {
    match (f.resolved, f.severity.as_str()) {
        (true, _) => 0x2e7d32,
        (false, "critical") => 0xc62828,
        (false, "warning") => 0xef6c00,
        _ => 0x1565c0,
    }
}

fn slack(url: &str, f: &Facts, headline: &str, text_: &str, link: &str) -> Outgoing {
    Outgoing::Post {
        url: url.to_owned(),
        headers: Vec::new(),
        body: json!({
            "text": cut(headline, 3000),
            "blocks": [
                {"type": "header", "text": {"type": "plain_text", "text": cut(headline, 150), "emoji": true}},
                {"type": "section", "text": {"type": "mrkdwn", "text": cut(text_, 3000)},
                 "fields": [
                    {"type": "mrkdwn", "text": format!("*Severity*\n{}", f.severity)},
                    {"type": "mrkdwn", "text": format!("*Host*\n{}", cut(&f.host(), 1900))},
                 ]},
                {"type": "actions", "elements": [
                    {"type": "button", "text": {"type": "plain_text", "text": "Open in Trusthub"}, "url": link}
                ]},
            ],
        }),
    }
}

fn discord(url: &str, f: &Facts, headline: &str, text_: &str, link: &str) -> Outgoing {
    Outgoing::Post {
        url: url.to_owned(),
        headers: Vec::new(),
        body: json!({
            "username": "Trusthub",
            "allowed_mentions": {"parse": []},
            "embeds": [{
                "title": cut(headline, 256),
                "description": cut(text_, 4096),
                "url": link,
                "color": colour(f),
                "fields": [
                    {"name": "Severity", "value": cut(&f.severity, 1024), "inline": true},
                    {"name": "Host", "value": cut(&f.host(), 1024), "inline": true},
                ],
                "timestamp": f.created_at,
                "footer": {"text": "Trusthub"},
            }],
        }),
    }
}

fn teams(url: &str, f: &Facts, headline: &str, text_: &str, link: &str) -> Outgoing {
    Outgoing::Post {
        url: url.to_owned(),
        headers: Vec::new(),
        body: json!({
            "type": "message",
            "attachments": [{
                "contentType": "application/vnd.microsoft.card.adaptive",
                "contentUrl": null,
                "content": {
                    "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                    "type": "AdaptiveCard",
                    "version": "1.4",
                    "body": [
                        {"type": "TextBlock", "text": headline, "weight": "Bolder", "size": "Medium", "wrap": true},
                        {"type": "TextBlock", "text": text_, "wrap": true},
                        {"type": "FactSet", "facts": [
                            {"title": "Severity", "value": f.severity},
                            {"title": "Host", "value": f.host()},
                        ]},
                    ],
                    "actions": [{"type": "Action.OpenUrl", "title": "Open in Trusthub", "url": link}],
                },
            }],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CONTRACT 30: no answer shows a URL's user or password, whatever the kind.
    #[test]
    fn shown_configs_never_carry_userinfo() {
        let configs = [
            Config::Url {
                url: "https://bob:hunter2@hooks.slack.com/services/T/B/X".into(),
            },
            Config::Webhook {
                url: "https://bob:hunter2@hooks.example.com/x".into(),
                secret: "whsec_x".into(),
            },
            Config::Ntfy {
                url: "https://bob:hunter2@ntfy.lan".into(),
                topic: "ops".into(),
                token: None,
            },
            Config::Telegram {
                bot_token: "123:abc".into(),
                chat_id: "1".into(),
                api_url: "https://bob:hunter2@tg.lan".into(),
            },
            Config::PagerDuty {
                routing_key: "r".repeat(32),
                api_url: "https://bob:hunter2@pd.lan".into(),
            },
        ];
        for c in configs {
            let shown = c.shown().to_string();
            assert!(
                !shown.contains("hunter2") && !shown.contains("bob"),
                "{shown}"
            );
        }
    }
}
