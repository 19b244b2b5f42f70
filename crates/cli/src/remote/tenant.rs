//! `trusthub tenant …` (CONTRACT 28, 33): the tenant's settings — the public badge and the
//! private networks its hub checks, channels and webhooks may reach.

use super::{Global, client, print};
use crate::remote::client::Failure;
use reqwest::Method;
use serde_json::{Map, Value, json};

/// `trusthub tenant …`.
#[derive(Debug, clap::Subcommand)]
pub enum TenantCmd {
    /// The settings: badge, the tenant's private networks and what the operator allows.
    Get,
    /// Change settings (owner); what is not given stays as it is.
    Set {
        /// The public Trust Score badge: true or false.
        #[arg(long, value_parser = clap::builder::BoolishValueParser::new())]
        badge_public: Option<bool>,
        /// The private ranges (comma-separated CIDRs) hub checks, channels and webhooks may
        /// reach, within the operator's; `none` for none, `operator` for all the operator's.
        #[arg(long)]
        allowed_networks: Option<String>,
    },
}

const COLUMNS: &[super::Column] = &[
    ("name", "/name"),
    ("badge public", "/badge_public"),
    ("allowed networks", "/allowed"),
    ("operator allows", "/operator"),
];

/// One row for people: the lists joined, `null` said in words.
fn row(v: &Value) -> Value {
    let list = |x: &Value| {
        x.as_array()
            .map(|a| {
                let items: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
                if items.is_empty() {
                    "none".to_owned()
                } else {
                    items.join(", ")
                }
            })
            .unwrap_or_else(|| "all the operator allows".to_owned())
    };
    json!([{
        "name": v["name"],
        "badge_public": v["badge_public"],
        "allowed": list(&v["allowed_networks"]),
        "operator": match v["operator_networks"].as_array() {
            Some(a) if a.is_empty() => "public addresses only".to_owned(),
            _ => list(&v["operator_networks"]),
        },
    }])
}

/// `trusthub tenant …`.
pub async fn tenant(cmd: TenantCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    let v = match cmd {
        TenantCmd::Get => c.get("/tenant").await?,
        TenantCmd::Set {
            badge_public,
            allowed_networks,
        } => {
            let mut patch = Map::new();
            if let Some(on) = badge_public {
                patch.insert("badge_public".into(), on.into());
            }
            if let Some(n) = allowed_networks {
                let value = match n.trim() {
                    "operator" => Value::Null,
                    "none" | "" => json!([]),
                    list => list
                        .split(',')
                        .map(|x| Value::from(x.trim()))
                        .collect::<Value>(),
                };
                patch.insert("allowed_networks".into(), value);
            }
            if patch.is_empty() {
                return Err(Failure {
                    code: 2,
                    message: "nothing to change: give --badge-public or --allowed-networks".into(),
                });
            }
            c.json(Method::PATCH, "/tenant", &Value::Object(patch))
                .await?
        }
    };
    if matches!(
        g.output,
        super::output::Format::Json | super::output::Format::Yaml
    ) {
        return print(&v, &[], g.output);
    }
    print(&row(&v), COLUMNS, g.output)
}
