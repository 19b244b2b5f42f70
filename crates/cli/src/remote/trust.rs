//! `trusthub trust …` (CONTRACT 21, 28, 33): the tenant's newest Trust Score (v13) with its
//! reasons and what caps its band, and a gate for scripts (`check --min N` exits 1 below N).

use super::{Global, client, print};
use crate::remote::client::Failure;
use crate::remote::output::Format;
use serde_json::{Value, json};

/// `trusthub trust …`.
#[derive(Debug, clap::Subcommand)]
pub enum TrustCmd {
    /// The score now: each component, its weight and every lost point with its reason.
    Get,
    /// Exit 1 when the score is below `--min` (a CI or cron gate); prints the score.
    Check {
        /// The lowest acceptable score, 0 to 100.
        #[arg(long)]
        min: f64,
    },
}

const PATH: &str = "/trust-score/v13/tenant";

/// One row per lost point (a component without any shows once, with its score).
fn rows(v: &Value) -> Value {
    let mut out = Vec::new();
    for c in v["components"].as_array().into_iter().flatten() {
        let score = if c["score"].is_null() {
            json!("no inputs")
        } else {
            c["score"].clone()
        };
        let reasons = c["reasons"].as_array().cloned().unwrap_or_default();
        if reasons.is_empty() {
            out.push(json!({"component": c["id"], "weight": c["weight"], "score": score, "points": "", "reason": ""}));
        }
        for r in reasons {
            out.push(json!({"component": c["id"], "weight": c["weight"], "score": score, "points": r["points"], "reason": r["message"]}));
        }
    }
    Value::Array(out)
}

const COLUMNS: &[super::Column] = &[
    ("component", "/component"),
    ("weight", "/weight"),
    ("score", "/score"),
    ("points", "/points"),
    ("reason", "/reason"),
];

/// `trusthub trust …`.
pub async fn trust(cmd: TrustCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    let v = c.get(PATH).await?;
    let headline = format!(
        "trust score {:.1} ({}), {}",
        v["final_score"].as_f64().unwrap_or_default(),
        v["band"].as_str().unwrap_or_default(),
        v["version"].as_str().unwrap_or_default()
    );
    match cmd {
        TrustCmd::Get => {
            if matches!(g.output, Format::Json | Format::Yaml) {
                return print(&v, &[], g.output);
            }
            eprintln!("{headline}");
            for cap in v["caps"].as_array().into_iter().flatten() {
                eprintln!(
                    "capped at {}: {}",
                    cap["band"].as_str().unwrap_or_default(),
                    cap["message"].as_str().unwrap_or_default()
                );
            }
            print(&rows(&v), COLUMNS, g.output)
        }
        TrustCmd::Check { min } => {
            if !(0.0..=100.0).contains(&min) {
                return Err(Failure {
                    code: 2,
                    message: "--min must be 0 to 100".into(),
                });
            }
            let score = v["final_score"].as_f64().unwrap_or_default();
            println!("{headline}");
            if score < min {
                return Err(Failure {
                    code: 1,
                    message: format!("the trust score {score:.1} is below {min:.1}"),
                });
            }
            Ok(())
        }
    }
}
