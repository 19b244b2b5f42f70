//! `trusthub status-pages …` and `trusthub incidents …` (CONTRACT 32).

use super::*;

/// `trusthub status-pages …`.
#[derive(Debug, clap::Subcommand)]
pub enum StatusPagesCmd {
    /// The tenant's status pages and their public addresses.
    Ls,
    /// Make a status page (admin) of the apps named (one group; more through the API).
    Add {
        /// Its public address: /status/<slug>.
        #[arg(long)]
        slug: String,
        /// Its title.
        #[arg(long)]
        title: String,
        /// A line under the title.
        #[arg(long)]
        description: Option<String>,
        /// An app or check it shows (its name or id; repeat for more).
        #[arg(long = "app", required = true)]
        apps: Vec<String>,
        /// The group's heading.
        #[arg(long, default_value = "Services")]
        group: String,
        /// Days of daily uptime shown (1 to 90).
        #[arg(long)]
        days: Option<u32>,
    },
    /// Delete a status page (admin) and its incidents.
    Rm {
        /// Its slug or id.
        page: String,
    },
}

/// `trusthub incidents …`.
#[derive(Debug, clap::Subcommand)]
pub enum IncidentsCmd {
    /// A status page's incidents, newest first.
    Ls {
        /// The page's slug or id.
        page: String,
    },
    /// Open an incident on a status page (operator); subscribers get `incident.created`.
    Add {
        /// The page's slug or id.
        page: String,
        /// What is wrong, as the public reads it.
        #[arg(long)]
        title: String,
        /// The first update's text.
        #[arg(long)]
        message: String,
        /// investigating, identified, monitoring or resolved.
        #[arg(long, default_value = "investigating")]
        status: String,
        /// none, minor, major or critical.
        #[arg(long, default_value = "minor")]
        impact: String,
    },
    /// Post an update (operator); `--status resolved` closes the incident.
    Update {
        /// The incident's id.
        id: String,
        /// What changed.
        #[arg(long)]
        message: String,
        /// The status now.
        #[arg(long)]
        status: String,
        /// A new impact.
        #[arg(long)]
        impact: Option<String>,
    },
}

/// A status page, by its slug.
const PAGE: Kind = Kind {
    what: "status page",
    list: "/status-pages",
    field: "slug",
};

const PAGES: &[Column] = &[
    ("id", "/id"),
    ("slug", "/slug"),
    ("title", "/title"),
    ("url", "/url"),
];

const INCIDENTS: &[Column] = &[
    ("id", "/id"),
    ("title", "/title"),
    ("status", "/status"),
    ("impact", "/impact"),
    ("updated", "/updated_at"),
];

/// `trusthub status-pages …`.
pub async fn status_pages(cmd: StatusPagesCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        StatusPagesCmd::Ls => list(&c, "/status-pages", PAGES, g, false).await,
        StatusPagesCmd::Add {
            slug,
            title,
            description,
            apps,
            group,
            days,
        } => {
            let mut ids = Vec::new();
            for a in &apps {
                ids.push(named(&c, a, APP).await?);
            }
            let mut body = json!({"slug": slug, "title": title,
                "groups": [{"name": group, "app_ids": ids}]});
            if let Some(d) = description {
                body["description"] = json!(d);
            }
            if let Some(d) = days {
                body["show_uptime_days"] = json!(d);
            }
            let v = c.json(Method::POST, "/status-pages", &body).await?;
            print(&v, PAGES, g.output)
        }
        StatusPagesCmd::Rm { page } => {
            let id = named(&c, &page, PAGE).await?;
            delete(
                &c,
                &format!("/status-pages/{id}"),
                format!("deleted {page}"),
            )
            .await
        }
    }
}

/// `trusthub incidents …`.
pub async fn incidents(cmd: IncidentsCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        IncidentsCmd::Ls { page } => {
            let id = named(&c, &page, PAGE).await?;
            list(
                &c,
                &format!("/status-pages/{id}/incidents"),
                INCIDENTS,
                g,
                false,
            )
            .await
        }
        IncidentsCmd::Add {
            page,
            title,
            message,
            status,
            impact,
        } => {
            let id = named(&c, &page, PAGE).await?;
            let body =
                json!({"title": title, "message": message, "status": status, "impact": impact});
            let v = c
                .json(
                    Method::POST,
                    &format!("/status-pages/{id}/incidents"),
                    &body,
                )
                .await?;
            print(&v, INCIDENTS, g.output)
        }
        IncidentsCmd::Update {
            id,
            message,
            status,
            impact,
        } => {
            let mut body = json!({"message": message, "status": status});
            if let Some(i) = impact {
                body["impact"] = json!(i);
            }
            let v = c
                .json(Method::POST, &format!("/incidents/{id}/updates"), &body)
                .await?;
            print(&v, INCIDENTS, g.output)
        }
    }
}
