//! `trusthub compliance …`, `trusthub security` and `trusthub explain` (CONTRACT 25, 28): the
//! latest host check results per framework, runs, the exports for other tools; honeypots,
//! host DNA and silent agents; a log line explained.

use super::{AGENT, Global, client, download, list, named_opt, print, with_query};
use crate::remote::client::Failure;
use reqwest::Method;
use serde_json::json;

/// `trusthub compliance …`.
#[derive(Debug, clap::Subcommand)]
pub enum ComplianceCmd {
    /// The latest result of each check on each host.
    Ls {
        /// `cis-debian`, `iso27001`, `soc2` or `nis2` (default: all).
        #[arg(long, value_parser = ["cis-debian", "iso27001", "soc2", "nis2"])]
        framework: Option<String>,
        /// One host (agent id).
        #[arg(long)]
        agent: Option<String>,
        /// `pass`, `fail`, `not_applicable` or `error`.
        #[arg(long, value_parser = ["pass", "fail", "not_applicable", "error"])]
        status: Option<String>,
    },
    /// Ask one host (or every host) to run the checks now (admin).
    Run {
        /// One host (agent id); default every host.
        #[arg(long)]
        agent: Option<String>,
    },
    /// The runs asked for, newest first, with how many hosts answered.
    Runs,
    /// Save an export: `generic` (OSCAL assessment results), `vanta`, `trustos`, `cyberday`.
    Export {
        /// The tool.
        #[arg(value_parser = ["generic", "vanta", "trustos", "cyberday"])]
        tool: String,
        /// Where to write it.
        #[arg(long)]
        out: std::path::PathBuf,
        /// One framework (default: all).
        #[arg(long, value_parser = ["cis-debian", "iso27001", "soc2", "nis2"])]
        framework: Option<String>,
        /// One host (agent id).
        #[arg(long)]
        agent: Option<String>,
        /// `vanta`: the id of the custom resource type made in Vanta.
        #[arg(long)]
        resource_id: Option<String>,
    },
}

/// `trusthub security …`.
#[derive(Debug, clap::Subcommand)]
pub enum SecurityCmd {
    /// Every honeypot with its latest touch.
    Honeypots,
    /// Every host's DNA.
    Dna,
    /// Hosts not heard from for three push intervals.
    Silent,
}

const RESULTS: &[super::Column] = &[
    ("host", "/hostname"),
    ("check", "/check_id"),
    ("framework", "/framework"),
    ("controls", "/control_ids"),
    ("status", "/status"),
    ("checked", "/checked_at"),
    ("evidence", "/evidence"),
];
const RUNS: &[super::Column] = &[
    ("id", "/id"),
    ("asked", "/created_at"),
    ("host", "/agent_id"),
    ("answered", "/done"),
    ("hosts", "/hosts"),
    ("by", "/requested_by_name"),
];
const HONEYPOTS: &[super::Column] = &[
    ("host", "/agent_id"),
    ("kind", "/kind"),
    ("target", "/target"),
    ("touched", "/triggered_at"),
    ("detail", "/detail"),
];
const DNA: &[super::Column] = &[
    ("host", "/agent_id"),
    ("fingerprint", "/fingerprint_sha256"),
    ("changed", "/changed_at"),
    ("previous", "/previous"),
    ("machine id", "/parts/machine_id"),
    ("kernel", "/parts/kernel"),
];
const SILENT: &[super::Column] = &[
    ("agent", "/agent_id"),
    ("host", "/hostname"),
    ("last seen", "/last_seen_at"),
    ("every (s)", "/expected_every_secs"),
];
const EXPLAINED: &[super::Column] = &[
    ("source", "/source"),
    ("lang", "/lang"),
    ("explanation", "/explanation"),
];

/// `trusthub compliance …`.
pub async fn compliance(cmd: ComplianceCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        ComplianceCmd::Ls {
            framework,
            agent,
            status,
        } => {
            let path = with_query(
                "/compliance",
                &[
                    ("framework", framework),
                    ("agent_id", named_opt(&c, agent, AGENT).await?),
                    ("status", status),
                ],
            );
            list(&c, &path, RESULTS, g, false).await
        }
        ComplianceCmd::Run { agent } => {
            let v = c
                .json(
                    Method::POST,
                    "/compliance/run",
                    &json!({"agent_id": named_opt(&c, agent, AGENT).await?}),
                )
                .await?;
            eprintln!(
                "asked {} host(s); results arrive with their next batch",
                v["agents"].as_array().map_or(0, Vec::len)
            );
            print(
                &json!({"id": v["run_id"], "hosts": v["agents"].as_array().map_or(0, Vec::len), "done": 0}),
                RUNS,
                g.output,
            )
        }
        ComplianceCmd::Runs => list(&c, "/compliance/runs", RUNS, g, false).await,
        ComplianceCmd::Export {
            tool,
            out,
            framework,
            agent,
            resource_id,
        } => {
            let path = with_query(
                &format!("/compliance/export/{tool}"),
                &[
                    ("framework", framework),
                    ("agent_id", named_opt(&c, agent, AGENT).await?),
                    ("resource_id", resource_id),
                ],
            );
            let n = download(&c, &path, &out).await?;
            eprintln!("wrote {} ({n} bytes)", out.display());
            Ok(())
        }
    }
}

/// `trusthub security …`.
pub async fn security(cmd: SecurityCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    let v = c.get("/security").await?;
    let named = |mut rows: serde_json::Value| async {
        if matches!(g.output, super::Format::Table) {
            super::for_people(&c, &mut rows).await;
        }
        rows
    };
    match cmd {
        SecurityCmd::Honeypots => print(&named(v["honeypots"].clone()).await, HONEYPOTS, g.output),
        SecurityCmd::Dna => print(&named(v["dna"].clone()).await, DNA, g.output),
        SecurityCmd::Silent => print(&v["silent_agents"], SILENT, g.output),
    }
}

/// `trusthub explain <line>`.
pub async fn explain(
    line: &str,
    agent: Option<String>,
    lang: Option<String>,
    g: &Global,
) -> Result<(), Failure> {
    let c = client(g)?;
    let path = with_query(
        "/ai/explain",
        &[
            ("log", Some(line.to_owned())),
            ("agent_id", named_opt(&c, agent, AGENT).await?),
            ("lang", lang),
        ],
    );
    print(&c.get(&path).await?, EXPLAINED, g.output)
}
