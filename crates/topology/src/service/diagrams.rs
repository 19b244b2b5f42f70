//! Diagrams: generated, from templates or edited, with their share links.

use super::*;

/// A diagram.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DiagramView {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// `mermaid`.
    pub kind: String,
    /// Its Mermaid text.
    pub source: String,
    /// When (RFC 3339).
    pub created_at: String,
    /// Last change (RFC 3339).
    pub updated_at: String,
    /// The public link's token while it is shared.
    pub share_token: Option<String>,
}

pub(super) fn diagram_view(state: &AppState, d: &Diagram) -> ApiResult<DiagramView> {
    let share_token = match &d.share_sealed {
        None => None,
        Some(s) => Some(
            String::from_utf8(
                state
                    .key
                    .open(SHARE_SEAL, s)
                    .map_err(|e| ApiError::Internal(e.to_string()))?,
            )
            .map_err(|e| ApiError::Internal(e.to_string()))?,
        ),
    };
    Ok(DiagramView {
        id: d.id,
        name: d.name.clone(),
        kind: d.kind.clone(),
        source: d.source.clone(),
        created_at: rfc3339(d.created_at),
        updated_at: rfc3339(d.updated_at),
        share_token,
    })
}

pub(super) fn source(s: &str) -> ApiResult<String> {
    if s.trim().is_empty() || s.len() > MAX_SOURCE {
        return Err(ApiError::invalid(
            "source",
            "must be 1 byte to 512 KiB of Mermaid text",
        ));
    }
    if s.contains('\0') {
        return Err(ApiError::invalid("source", "must not contain NUL"));
    }
    Ok(s.to_owned())
}

pub(super) async fn insert_diagram(
    state: &AppState,
    p: &Principal,
    name_: &str,
    text: String,
) -> ApiResult<DiagramView> {
    let d = Diagram {
        id: Uuid::now_v7(),
        name: name("name", name_)?,
        kind: "mermaid".into(),
        source: source(&text)?,
        created_at: now(),
        updated_at: now(),
        share_sealed: None,
    };
    let mut tx = state.db.begin().await?;
    store::insert_diagram(&mut tx, p.tenant(), &d).await?;
    tx.commit().await?;
    diagram_view(state, &d)
}

/// The tenant's diagrams, by name.
pub async fn diagrams(state: &AppState, tenant: TenantId) -> ApiResult<Vec<DiagramView>> {
    let mut c = state.db.conn().await?;
    store::diagrams(&mut c, tenant)
        .await?
        .iter()
        .map(|d| diagram_view(state, d))
        .collect()
}

/// One diagram.
pub async fn diagram(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<DiagramView> {
    let mut c = state.db.conn().await?;
    let d = store::diagram(&mut c, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("diagram"))?;
    diagram_view(state, &d)
}

/// A diagram made from the topology (operator): of the whole tenant, of a zone, or of a
/// host and its neighbours.
pub async fn generate(
    state: &AppState,
    p: &Principal,
    scope: Scope,
    name_: Option<&str>,
) -> ApiResult<DiagramView> {
    let text = mermaid(state, p.tenant(), scope).await?;
    let default = match scope {
        Scope::Tenant => "Topology".to_owned(),
        Scope::Zone(z) => {
            let mut c = state.db.conn().await?;
            let zs = store::zones(&mut c, p.tenant()).await?;
            format!(
                "Zone {}",
                zs.iter()
                    .find(|x| x.id == z)
                    .map(|x| x.name.as_str())
                    .unwrap_or_default()
            )
        }
        Scope::Agent(a) => {
            let mut c = state.db.conn().await?;
            let h = trusthub_fleet::agent(&mut c, p.tenant(), a)
                .await?
                .map(|a| a.hostname)
                .unwrap_or_default();
            format!("Host {h}")
        }
    };
    // A name given is checked as given (422 when too long); only the one made from the
    // scope is cut to fit.
    let title = match name_ {
        Some(n) => n.to_owned(),
        None => default.chars().take(200).collect(),
    };
    insert_diagram(state, p, &title, text).await
}

/// A built-in starting point.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TemplateView {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// What it shows.
    pub description: String,
}

/// The built-in templates: `(id, name, description, source)`.
pub const TEMPLATES: [(&str, &str, &str, &str); 4] = [
    (
        "three-tier",
        "Three-tier web application",
        "A load balancer, application servers and a primary database with its replica.",
        "flowchart LR\n  users([\"Users\"]) --> lb{{\"Load balancer\"}}\n  lb --> app1[\"app-1\"]\n  lb --> app2[\"app-2\"]\n  app1 --> db[(\"PostgreSQL primary\")]\n  app2 --> db\n  db -->|\"streaming replication\"| replica[(\"PostgreSQL replica\")]\n",
    ),
    (
        "trust-zones",
        "Trust zones",
        "Internet, DMZ and internal network as nested zones, with what may cross them.",
        "flowchart LR\n  internet([\"Internet\"])\n  subgraph dmz[\"DMZ\"]\n    proxy[\"Reverse proxy\"]\n  end\n  subgraph internal[\"Internal network\"]\n    app[\"Application\"]\n    db[(\"Database\")]\n  end\n  internet -->|\"https/443\"| proxy\n  proxy -->|\"http/8080\"| app\n  app -->|\"tcp/5432\"| db\n",
    ),
    (
        "backup-flow",
        "Backup flow",
        "Hosts backing up to a repository, copied off-site.",
        "flowchart LR\n  h1[\"web-1\"] -->|\"restic\"| repo[(\"Backup repository\")]\n  h2[\"db-1\"] -->|\"pg_dump + restic\"| repo\n  repo -->|\"nightly copy\"| offsite[/\"Off-site storage\"/]\n",
    ),
    (
        "monitoring",
        "Monitoring with Trusthub",
        "Agents reporting to the hub, alerts leaving it.",
        "flowchart LR\n  subgraph hosts[\"Hosts\"]\n    a1[\"agent on web-1\"]\n    a2[\"agent on db-1\"]\n  end\n  a1 -->|\"signed ingest\"| hub[\"Trusthub hub\"]\n  a2 -->|\"signed ingest\"| hub\n  hub -->|\"signed webhooks\"| chat([\"Chat / on-call\"])\n",
    ),
];

/// The built-in templates.
pub fn templates() -> Vec<TemplateView> {
    TEMPLATES
        .iter()
        .map(|(id, name, description, _)| TemplateView {
            id: (*id).into(),
            name: (*name).into(),
            description: (*description).into(),
        })
        .collect()
}

/// A diagram from a template (operator).
pub async fn from_template(
    state: &AppState,
    p: &Principal,
    id: &str,
    name_: Option<&str>,
) -> ApiResult<DiagramView> {
    let (_, tname, _, text) = TEMPLATES
        .iter()
        .find(|t| t.0 == id)
        .ok_or(ApiError::NotFound("template"))?;
    insert_diagram(state, p, name_.unwrap_or(tname), (*text).to_owned()).await
}

/// A diagram's new name and text.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DiagramPut {
    /// Name, 1 to 200 characters, not only spaces.
    #[schema(value_type = trusthub_platform::openapi::Name200)]
    pub name: String,
    /// `mermaid` (the only kind).
    #[schema(pattern = "^mermaid$")]
    pub kind: Option<String>,
    /// Mermaid text, at most 512 KiB, not only spaces, no NUL.
    #[schema(min_length = 1, max_length = 524288, pattern = r"^[^\x00]*\S[^\x00]*$")]
    pub source: String,
}

/// Replaces a diagram's name and text (operator); a share link stays valid.
pub async fn update_diagram(
    state: &AppState,
    p: &Principal,
    id: Uuid,
    req: DiagramPut,
) -> ApiResult<DiagramView> {
    if let Some(k) = &req.kind {
        named("kind", k, &["mermaid"])?;
    }
    let name_ = name("name", &req.name)?;
    let text = source(&req.source)?;
    let mut tx = state.db.begin().await?;
    let mut d = store::diagram(&mut tx, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("diagram"))?;
    d.name = name_;
    d.source = text;
    d.updated_at = now();
    store::update_diagram(&mut tx, p.tenant(), &d).await?;
    tx.commit().await?;
    diagram_view(state, &d)
}

/// Deletes a diagram and its share link (operator).
pub async fn delete_diagram(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    if !store::delete_diagram(&mut tx, p.tenant(), id).await? {
        return Err(ApiError::NotFound("diagram"));
    }
    tx.commit().await?;
    Ok(())
}

/// A diagram's public link.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Shared {
    /// The token (256 random bits): whoever has it reads the diagram, until unshared.
    pub share_token: String,
    /// The public page.
    pub url: String,
}

/// The public address of a share token.
pub fn share_url(state: &AppState, token: &str) -> String {
    format!(
        "{}/api/v1/diagrams/share/{token}",
        state.public_url.trim_end_matches('/')
    )
}

/// Shares a diagram by a public link (operator, audited). Sharing a shared diagram gives
/// its current link.
pub async fn share(state: &AppState, meta: &Meta, p: &Principal, id: Uuid) -> ApiResult<Shared> {
    let mut tx = state.db.begin().await?;
    let d = store::diagram(&mut tx, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("diagram"))?;
    if let Some(token) = diagram_view(state, &d)?.share_token {
        return Ok(Shared {
            url: share_url(state, &token),
            share_token: token,
        });
    }
    let token =
        trusthub_core::secret::new_token("thd_").map_err(|e| ApiError::Internal(e.to_string()))?;
    let sealed = state
        .key
        .seal(SHARE_SEAL, token.as_bytes())
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    store::set_share(
        &mut tx,
        p.tenant(),
        id,
        Some((trusthub_core::secret::token_hash(&token), sealed)),
    )
    .await?;
    meta.record(
        &mut tx,
        p,
        trusthub_core::audit::DIAGRAM_SHARED,
        format!("diagram:{id}"),
        json!({"name": d.name}),
    )
    .await?;
    tx.commit().await?;
    Ok(Shared {
        url: share_url(state, &token),
        share_token: token,
    })
}

/// Ends a diagram's public link (operator, audited): the token answers 404 from now on.
pub async fn unshare(state: &AppState, meta: &Meta, p: &Principal, id: Uuid) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    let d = store::diagram(&mut tx, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("diagram"))?;
    if d.share_sealed.is_some() {
        store::set_share(&mut tx, p.tenant(), id, None).await?;
        meta.record(
            &mut tx,
            p,
            trusthub_core::audit::DIAGRAM_UNSHARED,
            format!("diagram:{id}"),
            json!({"name": d.name}),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// What a share link shows.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PublicDiagram {
    /// Name.
    pub name: String,
    /// `mermaid`.
    pub kind: String,
    /// Its Mermaid text.
    pub source: String,
}

/// The diagram a share token opens (404 for any other token, an unshared one included).
pub async fn shared(state: &AppState, token: &str) -> ApiResult<PublicDiagram> {
    if token.len() > 100 {
        return Err(ApiError::NotFound("diagram"));
    }
    let mut c = state.db.conn().await?;
    let d = store::shared(&mut c, &trusthub_core::secret::token_hash(token))
        .await?
        .ok_or(ApiError::NotFound("diagram"))?;
    Ok(PublicDiagram {
        name: d.name,
        kind: d.kind,
        source: d.source,
    })
}
