//! The topology pages — the graph drawn from its Mermaid export with zones, nodes, edges,
//! what is detected and waiting for promotion; a blast-radius view from any node or host;
//! diagrams with their editor and share links; the public page of a shared diagram — through
//! the same services as the API.

use crate::service::{self, PublicDiagram, Scope};
use askama::Template;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use std::collections::HashMap;
use trusthub_core::Role;
use trusthub_identity::auth::{Operator, Viewer};
use trusthub_identity::{Act, UserBar, WebUser};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult};
use trusthub_platform::extract::Meta;
use trusthub_platform::page::{ASSETS, Assets, DIAGRAM_CSP, Flash, FormPairs, html, outcome};
use trusthub_platform::page::{PageResult, render};
use uuid::Uuid;

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/ui/topology", get(topology).post(topology_form))
        .route("/ui/topology/blast-radius", get(blast))
        .route("/ui/diagrams", get(diagrams).post(diagrams_form))
        .route("/ui/diagrams/{id}", get(diagram).post(diagram_form))
}

/// A page with a Mermaid drawing: inline styles allowed (Mermaid's SVG), scripts the hub's.
fn drawn(result: Result<String, askama::Error>, code: StatusCode) -> Response {
    let mut resp = html(result, code);
    resp.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(DIAGRAM_CSP),
    );
    resp
}

struct NodeRow {
    id: String,
    name: String,
    kind: String,
    zone: String,
    agent_id: String,
    tags: String,
}

struct EdgeRow {
    id: String,
    source: String,
    target: String,
    what: String,
}

struct DetectedRow {
    id: String,
    kind: String,
    what: String,
    source: String,
}

#[derive(Template)]
#[template(path = "topology.html")]
struct TopologyPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_edit: bool,
    mermaid: String,
    nodes: Vec<NodeRow>,
    edges: Vec<EdgeRow>,
    zones: Vec<(String, String, String, String)>,
    detected: Vec<DetectedRow>,
    snapshots: Vec<(String, String, i64, i64, String)>,
    node_kinds: &'static [&'static str],
    zone_kinds: &'static [&'static str],
    flash: Flash,
}

async fn topology_page(
    state: &AppState,
    user: &WebUser,
    flash: Flash,
    code: StatusCode,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let t = p.tenant();
    let nodes = service::nodes(state, t).await?;
    let edges = service::edges(state, t).await?;
    let zones = service::zones(state, t).await?;
    let zone_names: HashMap<Uuid, String> = zones.iter().map(|z| (z.id, z.name.clone())).collect();
    let node_names: HashMap<Uuid, String> = nodes.iter().map(|n| (n.id, n.name.clone())).collect();
    // One detection: every item names the nodes; the table lists those not held yet.
    let all_detected = service::detected(state, t, false).await?;
    let dnames: HashMap<Uuid, String> = all_detected
        .iter()
        .filter_map(|d| Some((d.id, d.name.clone()?)))
        .collect();
    let detected: Vec<&service::DetectedView> = all_detected
        .iter()
        .filter(|d| d.matched_id.is_none())
        .collect();
    let show = |id: Option<Uuid>| {
        id.and_then(|i| dnames.get(&i).cloned())
            .unwrap_or_else(|| "?".into())
    };
    let page = TopologyPage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        can_edit: p.has_role(Role::Operator),
        mermaid: service::mermaid(state, t, Scope::Tenant).await?,
        nodes: nodes
            .iter()
            .map(|n| NodeRow {
                id: n.id.to_string(),
                name: n.name.clone(),
                kind: n.kind.clone(),
                zone: n
                    .zone_id
                    .and_then(|z| zone_names.get(&z).cloned())
                    .unwrap_or_default(),
                agent_id: n.agent_id.map(|a| a.to_string()).unwrap_or_default(),
                tags: n.tags.join(", "),
            })
            .collect(),
        edges: edges
            .iter()
            .map(|e| EdgeRow {
                id: e.id.to_string(),
                source: node_names.get(&e.source_id).cloned().unwrap_or_default(),
                target: node_names.get(&e.target_id).cloned().unwrap_or_default(),
                what: e
                    .label
                    .clone()
                    .or_else(|| {
                        e.protocol.clone().map(|p| {
                            format!("{p}/{}", e.port.map(|x| x.to_string()).unwrap_or_default())
                        })
                    })
                    .unwrap_or_default(),
            })
            .collect(),
        zones: zones
            .iter()
            .map(|z| {
                (
                    z.id.to_string(),
                    z.name.clone(),
                    z.kind.clone(),
                    z.parent_id
                        .and_then(|p| zone_names.get(&p).cloned())
                        .unwrap_or_default(),
                )
            })
            .collect(),
        detected: detected
            .iter()
            .map(|d| DetectedRow {
                id: d.id.to_string(),
                kind: d.kind.clone(),
                what: match d.kind.as_str() {
                    "node" => d.name.clone().unwrap_or_default(),
                    _ => format!(
                        "{} → {}: {}",
                        show(d.source_ref),
                        show(d.target_ref),
                        d.label.clone().unwrap_or_default()
                    ),
                },
                source: d.source.clone(),
            })
            .collect(),
        snapshots: service::snapshots(state, t)
            .await?
            .into_iter()
            .take(10)
            .map(|s| {
                (
                    s.id.to_string(),
                    s.created_at,
                    s.node_count,
                    s.edge_count,
                    s.sha256,
                )
            })
            .collect(),
        node_kinds: &service::NODE_KINDS,
        zone_kinds: &service::ZONE_KINDS,
        flash,
    };
    Ok(drawn(page.render(), code))
}

/// `GET /ui/topology`.
pub async fn topology(State(state): State<AppState>, user: WebUser) -> PageResult {
    topology_page(&state, &user, Flash::default(), StatusCode::OK).await
}

fn opt_uuid(s: &str, field: &str) -> ApiResult<Option<Uuid>> {
    if s.trim().is_empty() {
        return Ok(None);
    }
    s.trim()
        .parse()
        .map(Some)
        .map_err(|_| ApiError::invalid(field, "must be an id"))
}

/// `POST /ui/topology` (operator, CSRF): `action` is `promote`, `add_node`, `add_edge`,
/// `add_zone`, `delete_node`, `delete_edge` or `snapshot`.
pub async fn topology_form(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form, .. }: Act<Operator, FormPairs>,
) -> PageResult {
    let action = form.get("action");
    let f = form.only(match action.as_str() {
        "promote" | "delete_node" | "delete_edge" => &["action", "id"],
        "add_node" => &["action", "name", "kind", "agent_id", "zone_id", "tags"],
        "add_edge" => &[
            "action",
            "source_id",
            "target_id",
            "protocol",
            "port",
            "label",
        ],
        "add_zone" => &["action", "name", "kind", "parent_id"],
        _ => &["action"],
    })?;
    let p = &user.principal;
    let result: ApiResult<String> = async {
        let id = || {
            f.get("id")
                .trim()
                .parse::<Uuid>()
                .map_err(|_| ApiError::invalid("id", "must be an id"))
        };
        match f.get("action").as_str() {
            "promote" => {
                let r = service::promote(&state, &meta, p, id()?).await?;
                Ok(match (r.node, r.edge) {
                    (Some(n), _) => format!("Promoted {} to a node.", n.name),
                    (_, Some(_)) => format!(
                        "Promoted the edge ({} node(s) made with it).",
                        r.created_nodes.len()
                    ),
                    _ => "Promoted.".into(),
                })
            }
            "add_node" => {
                let n = service::create_node(
                    &state,
                    p,
                    service::NewNode {
                        name: f.get("name"),
                        kind: f.get("kind"),
                        agent_id: opt_uuid(&f.get("agent_id"), "agent_id")?,
                        cloud_resource_id: None,
                        zone_id: opt_uuid(&f.get("zone_id"), "zone_id")?,
                        tags: f
                            .get("tags")
                            .split(',')
                            .map(str::trim)
                            .filter(|t| !t.is_empty())
                            .map(str::to_owned)
                            .collect(),
                        attributes: None,
                    },
                )
                .await?;
                Ok(format!("Added node {}.", n.name))
            }
            "add_edge" => {
                let port = match f.get("port").trim() {
                    "" => None,
                    x => Some(
                        x.parse::<u32>()
                            .map_err(|_| ApiError::invalid("port", "must be 1 to 65535"))?,
                    ),
                };
                let blank = |s: String| Some(s).filter(|s| !s.trim().is_empty());
                service::create_edge(
                    &state,
                    p,
                    service::NewEdge {
                        source_id: opt_uuid(&f.get("source_id"), "source_id")?
                            .ok_or_else(|| ApiError::invalid("source_id", "choose a node"))?,
                        target_id: opt_uuid(&f.get("target_id"), "target_id")?
                            .ok_or_else(|| ApiError::invalid("target_id", "choose a node"))?,
                        protocol: blank(f.get("protocol")),
                        port,
                        label: blank(f.get("label")),
                    },
                )
                .await?;
                Ok("Added the edge.".into())
            }
            "add_zone" => {
                let z = service::create_zone(
                    &state,
                    p,
                    service::NewZone {
                        name: f.get("name"),
                        kind: f.get("kind"),
                        parent_id: opt_uuid(&f.get("parent_id"), "parent_id")?,
                    },
                )
                .await?;
                Ok(format!("Added zone {}.", z.name))
            }
            "delete_node" => service::delete_node(&state, p, id()?)
                .await
                .map(|()| "Deleted the node and its edges.".into()),
            "delete_edge" => service::delete_edge(&state, p, id()?)
                .await
                .map(|()| "Deleted the edge.".into()),
            "snapshot" => {
                let s = service::create_snapshot(&state, p).await?;
                Ok(format!("Snapshot taken: SHA-256 {}.", s.sha256))
            }
            _ => Err(ApiError::invalid("action", "unknown action")),
        }
    }
    .await;
    let notice = result.as_ref().cloned().unwrap_or_default();
    let (flash, code) = outcome(result, &notice, StatusCode::OK)?;
    topology_page(&state, &user, flash, code).await
}

#[derive(Template)]
#[template(path = "topology_blast.html")]
struct BlastPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    choices: Vec<(String, String, bool)>,
    chosen: bool,
    root: String,
    depth: u32,
    impacted: Vec<(String, String, u32, String)>,
    apps: Vec<(String, String)>,
    slos: Vec<(String, String)>,
}

/// The view's root.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlastQuery {
    #[serde(default)]
    id: Option<String>,
}

/// `GET /ui/topology/blast-radius?id=` (a node or an agent).
pub async fn blast(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Query(q): axum::extract::Query<BlastQuery>,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let t = p.tenant();
    let nodes = service::nodes(&state, t).await?;
    let id = opt_uuid(q.id.as_deref().unwrap_or_default(), "id")?;
    let names: HashMap<Uuid, String> = nodes.iter().map(|n| (n.id, n.name.clone())).collect();
    let mut page = BlastPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        choices: Vec::new(),
        chosen: false,
        root: String::new(),
        depth: 0,
        impacted: Vec::new(),
        apps: Vec::new(),
        slos: Vec::new(),
    };
    if let Some(id) = id {
        let b = service::blast_radius(&state, t, id, service::DEFAULT_MAX_DEPTH).await?;
        let edges: HashMap<Uuid, service::EdgeView> = service::edges(&state, t)
            .await?
            .into_iter()
            .map(|e| (e.id, e))
            .collect();
        let app_names: HashMap<Uuid, String> =
            b.apps.iter().map(|a| (a.id, a.name.clone())).collect();
        page.chosen = true;
        page.root = b.root.name.clone();
        page.depth = b.depth;
        page.impacted = b
            .impacted
            .iter()
            .map(|i| {
                // The step toward the root: this node → the one it depends on.
                let to = edges
                    .get(&i.edge)
                    .and_then(|e| names.get(&e.target_id).cloned())
                    .or_else(|| names.get(&i.via).cloned())
                    .unwrap_or_default();
                (
                    i.name.clone(),
                    i.kind.clone(),
                    i.depth,
                    format!("{} → {to}", i.name),
                )
            })
            .collect();
        page.apps = b
            .apps
            .iter()
            .map(|a| (a.id.to_string(), a.name.clone()))
            .collect();
        page.slos = b
            .slos_at_risk
            .iter()
            .map(|s| {
                (
                    app_names.get(&s.app_id).cloned().unwrap_or_default(),
                    s.budget_remaining_minutes
                        .map(|m| format!("{m:.1} min"))
                        .unwrap_or_else(|| "not evaluated yet".into()),
                )
            })
            .collect();
    }
    page.choices = nodes
        .iter()
        .map(|n| {
            (
                n.id.to_string(),
                format!("{} ({})", n.name, n.kind),
                Some(n.id) == id || n.agent_id.is_some() && n.agent_id == id,
            )
        })
        .collect();
    let page = page;
    render(page.render(), StatusCode::OK)
}

#[derive(Template)]
#[template(path = "diagrams.html")]
struct DiagramsPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_edit: bool,
    diagrams: Vec<(String, String, String, bool)>,
    templates: Vec<service::TemplateView>,
    zones: Vec<(String, String)>,
    hosts: Vec<(String, String)>,
    flash: Flash,
}

async fn diagrams_page(
    state: &AppState,
    user: &WebUser,
    flash: Flash,
    code: StatusCode,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let t = p.tenant();
    let page = DiagramsPage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        can_edit: p.has_role(Role::Operator),
        diagrams: service::diagrams(state, t)
            .await?
            .into_iter()
            .map(|d| {
                (
                    d.id.to_string(),
                    d.name,
                    d.updated_at,
                    d.share_token.is_some(),
                )
            })
            .collect(),
        templates: service::templates(),
        zones: service::zones(state, t)
            .await?
            .into_iter()
            .map(|z| (z.id.to_string(), z.name))
            .collect(),
        hosts: service::nodes(state, t)
            .await?
            .into_iter()
            .filter_map(|n| Some((n.agent_id?.to_string(), n.name)))
            .collect(),
        flash,
    };
    render(page.render(), code)
}

/// `GET /ui/diagrams`.
pub async fn diagrams(State(state): State<AppState>, user: WebUser) -> PageResult {
    diagrams_page(&state, &user, Flash::default(), StatusCode::OK).await
}

/// `POST /ui/diagrams` (operator, CSRF): `action` `generate` (scope, id) or `template`
/// (template); the new diagram opens.
pub async fn diagrams_form(
    State(state): State<AppState>,
    Act { user, form, .. }: Act<Operator, FormPairs>,
) -> PageResult {
    let action = form.get("action");
    let f = form.only(match action.as_str() {
        "generate" => &["action", "scope", "zone_id", "agent_id", "name"],
        "template" => &["action", "template"],
        _ => &["action"],
    })?;
    let p = &user.principal;
    let made = async {
        match f.get("action").as_str() {
            "generate" => {
                let scope = match f.get("scope").as_str() {
                    "tenant" => Scope::Tenant,
                    "zone" => Scope::Zone(
                        opt_uuid(&f.get("zone_id"), "zone_id")?
                            .ok_or_else(|| ApiError::invalid("zone_id", "choose a zone"))?,
                    ),
                    "agent" => Scope::Agent(
                        opt_uuid(&f.get("agent_id"), "agent_id")?
                            .ok_or_else(|| ApiError::invalid("agent_id", "choose a host"))?,
                    ),
                    _ => return Err(ApiError::invalid("scope", "must be tenant, zone or agent")),
                };
                let name = f.get("name");
                service::generate(
                    &state,
                    p,
                    scope,
                    Some(name.as_str()).filter(|n| !n.trim().is_empty()),
                )
                .await
            }
            "template" => service::from_template(&state, p, &f.get("template"), None).await,
            _ => Err(ApiError::invalid("action", "unknown action")),
        }
    }
    .await;
    match made {
        Ok(d) => {
            Ok(axum::response::Redirect::to(&format!("/ui/diagrams/{}", d.id)).into_response())
        }
        Err(e) => match outcome::<()>(Err(e), "", StatusCode::OK) {
            Ok((flash, code)) => diagrams_page(&state, &user, flash, code).await,
            Err(e) => Err(e),
        },
    }
}

#[derive(Template)]
#[template(path = "diagram.html")]
struct DiagramPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_edit: bool,
    id: String,
    name: String,
    source: String,
    share_url: String,
    flash: Flash,
}

async fn diagram_page(
    state: &AppState,
    user: &WebUser,
    id: Uuid,
    flash: Flash,
    code: StatusCode,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let d = service::diagram(state, p.tenant(), id).await?;
    let page = DiagramPage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        can_edit: p.has_role(Role::Operator),
        id: d.id.to_string(),
        name: d.name,
        source: d.source,
        share_url: d
            .share_token
            .map(|t| service::share_url(state, &t))
            .unwrap_or_default(),
        flash,
    };
    Ok(drawn(page.render(), code))
}

/// `GET /ui/diagrams/{id}`.
pub async fn diagram(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
) -> PageResult {
    diagram_page(&state, &user, id, Flash::default(), StatusCode::OK).await
}

/// `POST /ui/diagrams/{id}` (operator, CSRF): `action` `save` (name, source), `share`,
/// `unshare` or `delete`.
pub async fn diagram_form(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { user, form, .. }: Act<Operator, FormPairs>,
) -> PageResult {
    let action = form.get("action");
    let f = form.only(match action.as_str() {
        "save" => &["action", "name", "source"],
        _ => &["action"],
    })?;
    let p = &user.principal;
    let result: ApiResult<String> = match f.get("action").as_str() {
        "save" => service::update_diagram(
            &state,
            p,
            id,
            service::DiagramPut {
                name: f.get("name"),
                kind: None,
                source: f.get("source"),
            },
        )
        .await
        .map(|_| "Saved.".into()),
        "share" => service::share(&state, &meta, p, id)
            .await
            .map(|_| "Shared: anyone with the link below can see this diagram.".into()),
        "unshare" => service::unshare(&state, &meta, p, id)
            .await
            .map(|()| "The public link no longer works.".into()),
        "delete" => match service::delete_diagram(&state, p, id).await {
            Ok(()) => return Ok(axum::response::Redirect::to("/ui/diagrams").into_response()),
            Err(e) => Err(e),
        },
        _ => Err(ApiError::invalid("action", "unknown action")),
    };
    let notice = result.as_ref().cloned().unwrap_or_default();
    let (flash, code) = outcome(result, &notice, StatusCode::OK)?;
    diagram_page(&state, &user, id, flash, code).await
}

#[derive(Template)]
#[template(path = "diagram_public.html")]
struct PublicPage<'a> {
    assets: &'a Assets,
    name: String,
    source: String,
}

/// The public page of a shared diagram (no user, no menu).
pub fn public_page(d: &PublicDiagram) -> Response {
    drawn(
        PublicPage {
            assets: &ASSETS,
            name: d.name.clone(),
            source: d.source.clone(),
        }
        .render(),
        StatusCode::OK,
    )
}
