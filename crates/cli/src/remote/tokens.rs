//! `trusthub tokens …`.

use super::*;

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

pub(crate) const TOKENS: &[Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("scope", "/scope"),
    ("last used", "/last_used_at"),
    ("expires", "/expires_at"),
];
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
