//! The agent records: list, one, delete.

use super::*;

/// An agent as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentView {
    /// Id.
    pub id: Uuid,
    /// Host name.
    pub hostname: String,
    /// Machine identity.
    pub machine_id: String,
    /// OS.
    pub os: String,
    /// Architecture.
    pub arch: String,
    /// Agent build.
    pub agent_version: String,
    /// Tags.
    pub tags: Vec<String>,
    /// When data last arrived.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_seen_at: Option<OffsetDateTime>,
    /// `online` (data within 3 intervals), `silent` (none for 3 intervals), `offline`
    /// (never, or none for a day).
    #[schema(value_type = String, example = "online")]
    pub status: AgentStatus,
    /// Whether its WebSocket is open to some hub process (actions can reach it).
    pub connected: bool,
    /// Whether a signing key is pinned (false after a rotation until it registers again).
    pub signing_key_pinned: bool,
    /// Whether it holds an active client certificate of the hub CA (neither revoked nor
    /// expired). Agents without one keep working; the Trust Score counts them.
    pub has_client_cert: bool,
    /// End of validity of that certificate.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub client_cert_not_after: Option<OffsetDateTime>,
    /// Push interval.
    pub ingest_interval_secs: i64,
    /// Inventory interval.
    pub inventory_interval_secs: i64,
    /// First registration.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl AgentView {
    pub(crate) fn new(
        a: Agent,
        now: OffsetDateTime,
        connected: bool,
        cert_not_after: Option<OffsetDateTime>,
    ) -> AgentView {
        AgentView {
            connected,
            has_client_cert: cert_not_after.is_some(),
            client_cert_not_after: cert_not_after,
            status: wire::status(a.last_seen_at, a.ingest_interval_secs, now),
            id: a.id,
            hostname: a.hostname,
            machine_id: a.machine_id,
            os: a.os,
            arch: a.arch,
            agent_version: a.agent_version,
            tags: a.tags.0,
            last_seen_at: a.last_seen_at,
            signing_key_pinned: a.signing_pubkey.is_some(),
            ingest_interval_secs: a.ingest_interval_secs,
            inventory_interval_secs: a.inventory_interval_secs,
            created_at: a.created_at,
        }
    }
}

pub(crate) async fn connected_since(
    c: &mut trusthub_store::Conn,
    tenant: TenantId,
    now: OffsetDateTime,
) -> ApiResult<std::collections::HashSet<Uuid>> {
    let since = now - time::Duration::seconds(crate::store::actions::CONNECTION_FRESH_SECS);
    Ok(crate::store::actions::connected_agents(c, tenant, since).await?)
}

pub(crate) async fn load(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<Agent> {
    let mut c = state.db.conn().await?;
    agents::get(&mut c, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("agent"))
}

/// The service behind the `delete_agent` handler, for the API and the dashboard alike.
pub async fn delete_agent(state: &AppState, meta: &Meta, by: &Admin, id: Uuid) -> ApiResult<()> {
    let p = &by.0;
    let mut tx = state.db.begin().await?;
    let Some(agent) = agents::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("agent"));
    };
    agents::delete(&mut tx, p.tenant(), id).await?;
    // Its certificates stay in the CRL until they expire.
    let revoked = trusthub_certs::client_certs::revoke_all_of_agent(
        &mut tx,
        p.tenant(),
        id,
        "agent_deleted",
        crate::state::now(),
    )
    .await?;
    meta.record(
        &mut tx,
        p,
        ev::AGENT_DELETED,
        format!("agent:{id}"),
        json!({"hostname": agent.hostname, "client_certs_revoked": revoked}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The service behind the `list` handler, for the API and the dashboard alike.
pub async fn list(state: &AppState, by: &Viewer) -> ApiResult<Vec<AgentView>> {
    let p = &by.0;
    let mut c = state.db.conn().await?;
    let now = now();
    let connected = connected_since(&mut c, p.tenant(), now).await?;
    let certs = trusthub_certs::client_certs::active_by_agent(&mut c, p.tenant(), now).await?;
    Ok(agents::list(&mut c, p.tenant())
        .await?
        .into_iter()
        .map(|a| {
            let on = connected.contains(&a.id);
            let cert = certs.get(&a.id).copied();
            AgentView::new(a, now, on, cert)
        })
        .collect())
}

/// The service behind the `get_agent` handler, for the API and the dashboard alike.
pub async fn get_agent(state: &AppState, by: &Viewer, id: Uuid) -> ApiResult<AgentView> {
    let p = &by.0;
    let now = now();
    let (connected, certs) = {
        let mut c = state.db.conn().await?;
        (
            connected_since(&mut c, p.tenant(), now).await?,
            trusthub_certs::client_certs::active_by_agent(&mut c, p.tenant(), now).await?,
        )
    };
    Ok(AgentView::new(
        load(state, p.tenant(), id).await?,
        now,
        connected.contains(&id),
        certs.get(&id).copied(),
    ))
}
