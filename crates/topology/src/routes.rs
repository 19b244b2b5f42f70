//! `/topology/*`, `/diagrams/*` and `/blast-radius/{id}` (CONTRACT 24; SPEC 4.7).

use crate::service::{
    self, BlastRadius, DetectedView, DiagramPut, DiagramView, EdgeView, EdgesPage, NewEdge,
    NewNode, NewZone, NodePatch, NodeView, NodesPage, Promoted, PublicDiagram, Scope, Shared,
    SnapshotSummary, SnapshotView, TemplateView, ZoneView,
};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use trusthub_identity::auth::{Operator, Viewer};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult, Problem};
use trusthub_platform::extract::{Json, Meta, Path, Query};
use trusthub_platform::openapi::api_routes;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    let mut r = OpenApiRouter::new()
        .routes(api_routes!(list_nodes, create_node))
        .routes(api_routes!(update_node, delete_node))
        .routes(api_routes!(list_edges, create_edge))
        .routes(api_routes!(delete_edge))
        .routes(api_routes!(list_zones, create_zone))
        .routes(api_routes!(delete_zone))
        .routes(api_routes!(detected))
        .routes(api_routes!(promote))
        .routes(api_routes!(list_snapshots, create_snapshot))
        .routes(api_routes!(snapshot))
        .routes(api_routes!(export_mermaid))
        .routes(api_routes!(list_diagrams))
        .routes(api_routes!(generate))
        .routes(api_routes!(templates))
        .routes(api_routes!(from_template))
        .routes(api_routes!(get_diagram, put_diagram, delete_diagram))
        .routes(api_routes!(share))
        .routes(api_routes!(unshare))
        .routes(api_routes!(shared))
        .routes(api_routes!(blast_radius));
    // A scope's `id` names its zone or agent; the tenant scope takes none.
    {
        use serde_json::json;
        use trusthub_platform::openapi::{Variant, one_of, tag};
        one_of(
            r.get_openapi_mut(),
            "GenerateRequest",
            vec![
                Variant::new(
                    json!({"scope": tag(&["tenant"]),
                        "id": {"type": "null", "description": "The tenant scope takes no id."}}),
                    &[],
                ),
                Variant::new(
                    json!({"scope": tag(&["zone", "agent"]), "id": {"type": "string", "format": "uuid"}}),
                    &["id"],
                ),
            ],
        );
    }
    r
}

fn created<T>(v: T) -> (StatusCode, axum::Json<T>) {
    (StatusCode::CREATED, axum::Json(v))
}

/// A page of a list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Items in this page (1 to 5000; default 500).
    #[param(minimum = 1, maximum = 5000)]
    pub limit: Option<i64>,
    /// The previous page's `next_cursor` (the last edge's id).
    #[param(pattern = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")]
    pub cursor: Option<String>,
}

/// A page of the node list: `cursor` is `<hex of a name>.<id>`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct NodePageQuery {
    /// Items in this page (1 to 5000; default 500).
    #[param(minimum = 1, maximum = 5000)]
    pub limit: Option<i64>,
    /// The previous page's `next_cursor` (the last node's name in hex, a dot, its id).
    #[param(
        pattern = "^([0-9a-f]{2}){0,800}\\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
    )]
    pub cursor: Option<String>,
}

/// The tenant's topology nodes, by name, a page at a time (`limit` 500, at most 5000;
/// follow `next_cursor`). A tenant holds at most `TRUSTHUB_TOPOLOGY_MAX_NODES` (50,000)
/// nodes and four times as many edges.
#[utoipa::path(get, path = "/topology/nodes", tag = "topology", params(NodePageQuery),
    responses((status = 200, body = NodesPage), (status = 422, body = Problem)))]
pub(crate) async fn list_nodes(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<NodePageQuery>,
) -> ApiResult<axum::Json<NodesPage>> {
    service::nodes_page(&state, by.0.tenant(), q.limit, q.cursor.as_deref())
        .await
        .map(axum::Json)
}

/// Add a node (operator). A name may contain any character but control characters and is
/// shown exactly (the Mermaid export encodes what Mermaid would read otherwise). An agent or
/// a cloud resource is linked to at most one node (409 otherwise); `agent_id`,
/// `cloud_resource_id` and `zone_id` must be the tenant's (422).
///
/// Beyond the schema: `agent_id`, `cloud_resource_id` and `zone_id` must be the tenant's, each agent and resource in one node at most.
#[utoipa::path(post, path = "/topology/nodes", tag = "topology", request_body = NewNode,
    responses((status = 201, body = NodeView), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn create_node(
    State(state): State<AppState>,
    by: Operator,
    Json(req): Json<NewNode>,
) -> ApiResult<(StatusCode, axum::Json<NodeView>)> {
    service::create_node(&state, &by.0, req).await.map(created)
}

/// Change a node (operator): fields absent stay, `null` clears `agent_id`,
/// `cloud_resource_id` or `zone_id`.
///
/// Beyond the schema: `agent_id`, `cloud_resource_id` and `zone_id` must be the tenant's, each agent and resource in one node at most.
#[utoipa::path(patch, path = "/topology/nodes/{id}", tag = "topology",
    params(("id" = Uuid, Path, description = "Node id")), request_body = NodePatch,
    responses((status = 200, body = NodeView), (status = 404, body = Problem), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn update_node(
    State(state): State<AppState>,
    by: Operator,
    Path(id): Path<Uuid>,
    Json(req): Json<NodePatch>,
) -> ApiResult<axum::Json<NodeView>> {
    service::update_node(&state, &by.0, id, req)
        .await
        .map(axum::Json)
}

/// Delete a node and its edges (operator).
#[utoipa::path(delete, path = "/topology/nodes/{id}", tag = "topology",
    params(("id" = Uuid, Path, description = "Node id")),
    responses((status = 204, description = "Deleted"), (status = 404, body = Problem)))]
pub(crate) async fn delete_node(
    State(state): State<AppState>,
    by: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete_node(&state, &by.0, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The tenant's edges (`source` depends on `target`), oldest first, a page at a time
/// (`limit` 500, at most 5000; follow `next_cursor`).
#[utoipa::path(get, path = "/topology/edges", tag = "topology", params(PageQuery),
    responses((status = 200, body = EdgesPage), (status = 422, body = Problem)))]
pub(crate) async fn list_edges(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<PageQuery>,
) -> ApiResult<axum::Json<EdgesPage>> {
    service::edges_page(&state, by.0.tenant(), q.limit, q.cursor.as_deref())
        .await
        .map(axum::Json)
}

/// Add an edge (operator): `source_id` depends on `target_id`, both the tenant's nodes and
/// different (422); the same ends, protocol and port twice is 409.
///
/// Beyond the schema: both ends must be different nodes of your tenant.
#[utoipa::path(post, path = "/topology/edges", tag = "topology", request_body = NewEdge,
    responses((status = 201, body = EdgeView), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn create_edge(
    State(state): State<AppState>,
    by: Operator,
    Json(req): Json<NewEdge>,
) -> ApiResult<(StatusCode, axum::Json<EdgeView>)> {
    service::create_edge(&state, &by.0, req).await.map(created)
}

/// Delete an edge (operator).
#[utoipa::path(delete, path = "/topology/edges/{id}", tag = "topology",
    params(("id" = Uuid, Path, description = "Edge id")),
    responses((status = 204, description = "Deleted"), (status = 404, body = Problem)))]
pub(crate) async fn delete_edge(
    State(state): State<AppState>,
    by: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete_edge(&state, &by.0, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The tenant's zones, by name.
#[utoipa::path(get, path = "/topology/zones", tag = "topology",
    responses((status = 200, body = Vec<ZoneView>)))]
pub(crate) async fn list_zones(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<Vec<ZoneView>>> {
    service::zones(&state, by.0.tenant()).await.map(axum::Json)
}

/// Add a zone (operator), optionally inside another (`parent_id`, the tenant's: 422
/// otherwise). Zones are drawn as nested `subgraph`s.
///
/// Beyond the schema: `parent_id` must be a zone of your tenant.
#[utoipa::path(post, path = "/topology/zones", tag = "topology", request_body = NewZone,
    responses((status = 201, body = ZoneView), (status = 422, body = Problem)))]
pub(crate) async fn create_zone(
    State(state): State<AppState>,
    by: Operator,
    Json(req): Json<NewZone>,
) -> ApiResult<(StatusCode, axum::Json<ZoneView>)> {
    service::create_zone(&state, &by.0, req).await.map(created)
}

/// Delete a zone (operator): its nodes leave it, the zones inside it move up to its parent.
#[utoipa::path(delete, path = "/topology/zones/{id}", tag = "topology",
    params(("id" = Uuid, Path, description = "Zone id")),
    responses((status = 204, description = "Deleted"), (status = 404, body = Problem)))]
pub(crate) async fn delete_zone(
    State(state): State<AppState>,
    by: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete_zone(&state, &by.0, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The detected list's filter.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DetectedQuery {
    /// Only what the topology does not hold yet (`1`/`true`).
    #[serde(default, deserialize_with = "trusthub_platform::extract::flag")]
    #[param(value_type = Option<String>, pattern = "^(true|false|1|0)$")]
    pub unmatched: Option<bool>,
}

/// What agents and cloud discovery show (nodes first): a node per host with an agent and per
/// cloud machine without one; an edge per service one known host uses on another, from the
/// established connections in the agents' latest inventories (loopback, link-local and
/// addresses several hosts share never make an edge), labelled `client processes → server
/// process (tcp/port)`. Ids are stable between reads; `matched_id` names the node or edge
/// that already is the item.
#[utoipa::path(get, path = "/topology/detected", tag = "topology", params(DetectedQuery),
    responses((status = 200, body = Vec<DetectedView>)))]
pub(crate) async fn detected(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<DetectedQuery>,
) -> ApiResult<axum::Json<Vec<DetectedView>>> {
    service::detected(&state, by.0.tenant(), q.unmatched.unwrap_or(false))
        .await
        .map(axum::Json)
}

/// Make a detected item part of the topology (operator, audited): a node becomes a `host`
/// (or `cloud_resource`) node linked to its agent (or resource); an edge becomes an edge,
/// its ends promoted with it when they are not nodes yet (`created_nodes`). An item already
/// held is 409; an id not detected (any more) is 404.
#[utoipa::path(post, path = "/topology/detected/{id}/promote", tag = "topology",
    params(("id" = Uuid, Path, description = "Detected item id")),
    responses((status = 201, body = Promoted), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub(crate) async fn promote(
    State(state): State<AppState>,
    meta: Meta,
    by: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<(StatusCode, axum::Json<Promoted>)> {
    service::promote(&state, &meta, &by.0, id)
        .await
        .map(created)
}

/// The tenant's snapshots, newest first (without their graphs).
#[utoipa::path(get, path = "/topology/snapshots", tag = "topology",
    responses((status = 200, body = Vec<SnapshotSummary>)))]
pub(crate) async fn list_snapshots(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<Vec<SnapshotSummary>>> {
    service::snapshots(&state, by.0.tenant())
        .await
        .map(axum::Json)
}

/// Freeze the topology as it is now (operator): its nodes and edges by id, and the SHA-256
/// of the canonical JSON (RFC 8785) of `{nodes, edges}`, which anyone can recompute.
#[utoipa::path(post, path = "/topology/snapshots", tag = "topology",
    responses((status = 201, body = SnapshotView)))]
pub(crate) async fn create_snapshot(
    State(state): State<AppState>,
    by: Operator,
) -> ApiResult<(StatusCode, axum::Json<SnapshotView>)> {
    service::create_snapshot(&state, &by.0).await.map(created)
}

/// One snapshot with its frozen graph.
#[utoipa::path(get, path = "/topology/snapshots/{id}", tag = "topology",
    params(("id" = Uuid, Path, description = "Snapshot id")),
    responses((status = 200, body = SnapshotView), (status = 404, body = Problem)))]
pub(crate) async fn snapshot(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<SnapshotView>> {
    service::snapshot(&state, by.0.tenant(), id)
        .await
        .map(axum::Json)
}

/// The topology as a Mermaid `flowchart LR`: zones as nested `subgraph`s, every edge `a -->
/// b` (a depends on b) with its label (else `protocol/port`). Identifiers are generated;
/// every label shows exactly the name, with `"`, `#`, `<`, `>`, `&` and the backtick written
/// as Mermaid entity codes, so Mermaid's parser accepts it whatever the names contain.
#[utoipa::path(get, path = "/topology/export/mermaid", tag = "topology",
    responses((status = 200, content_type = "text/plain", body = String)))]
pub(crate) async fn export_mermaid(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<Response> {
    let text = service::mermaid(&state, by.0.tenant(), Scope::Tenant).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}

/// The tenant's diagrams, by name.
#[utoipa::path(get, path = "/diagrams", tag = "diagrams",
    responses((status = 200, body = Vec<DiagramView>)))]
pub(crate) async fn list_diagrams(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<Vec<DiagramView>>> {
    service::diagrams(&state, by.0.tenant())
        .await
        .map(axum::Json)
}

/// What to generate a diagram of.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GenerateRequest {
    /// `tenant` (everything), `zone` (a zone, its zones, and the nodes joined to them) or
    /// `agent` (a host's node and its neighbours).
    #[schema(pattern = "^(tenant|zone|agent)$")]
    pub scope: String,
    /// The zone or the agent (required for those scopes).
    pub id: Option<Uuid>,
    /// The diagram's name (default: from the scope), 1 to 200 characters, not only spaces.
    #[schema(value_type = Option<trusthub_platform::openapi::Name200>)]
    pub name: Option<String>,
}

/// Generate a diagram from the topology (operator): its Mermaid text is the export of the
/// scope at this moment, editable afterwards. An agent without a node is 422.
///
/// Beyond the schema: the zone or agent must be your tenant's, and an agent's diagram needs the agent's node.
#[utoipa::path(post, path = "/diagrams/generate", tag = "diagrams", request_body = GenerateRequest,
    responses((status = 201, body = DiagramView), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn generate(
    State(state): State<AppState>,
    by: Operator,
    Json(req): Json<GenerateRequest>,
) -> ApiResult<(StatusCode, axum::Json<DiagramView>)> {
    let scope = match (req.scope.as_str(), req.id) {
        ("tenant", None) => Scope::Tenant,
        ("tenant", Some(_)) => return Err(ApiError::invalid("id", "the tenant scope takes no id")),
        ("zone", Some(z)) => Scope::Zone(z),
        ("agent", Some(a)) => Scope::Agent(a),
        ("zone" | "agent", None) => return Err(ApiError::invalid("id", "required for this scope")),
        _ => return Err(ApiError::invalid("scope", "must be tenant, zone or agent")),
    };
    if let Scope::Agent(a) = scope {
        let mut c = state.db.conn().await?;
        if trusthub_fleet::agent(&mut c, by.0.tenant(), a)
            .await?
            .is_none()
        {
            return Err(ApiError::NotFound("agent"));
        }
    }
    service::generate(&state, &by.0, scope, req.name.as_deref())
        .await
        .map(created)
}

/// The built-in diagram templates.
#[utoipa::path(get, path = "/diagrams/templates", tag = "diagrams",
    responses((status = 200, body = Vec<TemplateView>)))]
pub(crate) async fn templates(_by: Viewer) -> axum::Json<Vec<TemplateView>> {
    axum::Json(service::templates())
}

/// A diagram from a template's name.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FromTemplate {
    /// The diagram's name (default: the template's).
    #[schema(value_type = Option<trusthub_platform::openapi::Name200>)]
    pub name: Option<String>,
}

/// Make a diagram from a built-in template (operator). The body is optional: none at all,
/// `null`, or a JSON object (`Content-Type: application/json`, else 415) with the diagram's
/// name.
#[utoipa::path(post, path = "/diagrams/from-template/{id}", tag = "diagrams",
    params(("id" = String, Path, description = "Template id (`GET /diagrams/templates`)")),
    request_body(content = Option<FromTemplate>, description = "Optional: the diagram's name"),
    responses((status = 201, body = DiagramView), (status = 404, body = Problem), (status = 415, body = Problem),
        (status = 422, body = Problem)))]
pub(crate) async fn from_template(
    State(state): State<AppState>,
    by: Operator,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> ApiResult<(StatusCode, axum::Json<DiagramView>)> {
    let req: FromTemplate = if body.is_empty() || body.trim_ascii() == b"null" {
        FromTemplate { name: None }
    } else {
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return Err(ApiError::UnsupportedMediaType(
                "the body must be JSON (Content-Type: application/json)".into(),
            ));
        }
        trusthub_platform::extract::parse_json(&body)?
    };
    service::from_template(&state, &by.0, &id, req.name.as_deref())
        .await
        .map(created)
}

/// One diagram (with its share token while shared).
#[utoipa::path(get, path = "/diagrams/{id}", tag = "diagrams",
    params(("id" = Uuid, Path, description = "Diagram id")),
    responses((status = 200, body = DiagramView), (status = 404, body = Problem)))]
pub(crate) async fn get_diagram(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<DiagramView>> {
    service::diagram(&state, by.0.tenant(), id)
        .await
        .map(axum::Json)
}

/// Replace a diagram's name and Mermaid text (operator); its share link stays valid.
#[utoipa::path(put, path = "/diagrams/{id}", tag = "diagrams",
    params(("id" = Uuid, Path, description = "Diagram id")), request_body = DiagramPut,
    responses((status = 200, body = DiagramView), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn put_diagram(
    State(state): State<AppState>,
    by: Operator,
    Path(id): Path<Uuid>,
    Json(req): Json<DiagramPut>,
) -> ApiResult<axum::Json<DiagramView>> {
    service::update_diagram(&state, &by.0, id, req)
        .await
        .map(axum::Json)
}

/// Delete a diagram and its share link (operator).
#[utoipa::path(delete, path = "/diagrams/{id}", tag = "diagrams",
    params(("id" = Uuid, Path, description = "Diagram id")),
    responses((status = 204, description = "Deleted"), (status = 404, body = Problem)))]
pub(crate) async fn delete_diagram(
    State(state): State<AppState>,
    by: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete_diagram(&state, &by.0, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Share a diagram by a public link (operator, audited): a token of 256 random bits, kept
/// hashed for lookup and sealed with the hub key; sharing a shared diagram gives its link.
#[utoipa::path(post, path = "/diagrams/{id}/share", tag = "diagrams",
    params(("id" = Uuid, Path, description = "Diagram id")),
    responses((status = 200, body = Shared), (status = 404, body = Problem)))]
pub(crate) async fn share(
    State(state): State<AppState>,
    meta: Meta,
    by: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<Shared>> {
    service::share(&state, &meta, &by.0, id)
        .await
        .map(axum::Json)
}

/// End a diagram's public link (operator, audited): its token answers 404 from now on; a
/// new share makes a new token.
#[utoipa::path(post, path = "/diagrams/{id}/unshare", tag = "diagrams",
    params(("id" = Uuid, Path, description = "Diagram id")),
    responses((status = 204, description = "Not shared (any more)"), (status = 404, body = Problem)))]
pub(crate) async fn unshare(
    State(state): State<AppState>,
    meta: Meta,
    by: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::unshare(&state, &meta, &by.0, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A shared diagram (no authentication: the token is the key). JSON by default; a page
/// rendering it (Mermaid served by the hub) for `Accept: text/html`. An unknown or unshared
/// token is 404.
#[utoipa::path(get, path = "/diagrams/share/{token}", tag = "diagrams",
    params(("token" = String, Path, description = "Share token")),
    responses((status = 200, body = PublicDiagram), (status = 404, body = Problem)))]
pub(crate) async fn shared(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> ApiResult<Response> {
    let d = service::shared(&state, &token).await?;
    let wants_html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"));
    let mut resp = if wants_html {
        crate::web::public_page(&d)
    } else {
        axum::Json(d).into_response()
    };
    let h = resp.headers_mut();
    // The token is in the address: no caching, no referrer, no indexing.
    h.insert(
        header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    h.insert(
        header::REFERRER_POLICY,
        axum::http::HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        "x-robots-tag",
        axum::http::HeaderValue::from_static("noindex"),
    );
    Ok(resp)
}

/// How deep a blast radius goes.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct BlastQuery {
    /// Most edges between the root and a node listed (1 to 1000000; default 32). The answer
    /// lists each node once, so even a whole graph is as large as its nodes.
    #[param(minimum = 1, maximum = 1000000)]
    pub max_depth: Option<u32>,
}

/// What fails with a node, or with the host node of an agent: everything that depends on
/// it through edges up to `max_depth` (32), nearest first (breadth-first over the edges
/// reversed), each listed once with its `depth` and `via`, the node one step nearer the
/// root it was reached from (and that `edge`), so the answer grows with the nodes, never
/// with a path per node; the apps on the root's and the impacted hosts, and their SLOs
/// with the error budget left. An agent without a node is 404 (promote it from
/// `/topology/detected`).
#[utoipa::path(get, path = "/blast-radius/{id}", tag = "topology",
    params(("id" = Uuid, Path, description = "Node id or agent id"), BlastQuery),
    responses((status = 200, body = BlastRadius), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn blast_radius(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
    Query(q): Query<BlastQuery>,
) -> ApiResult<axum::Json<BlastRadius>> {
    let depth = q.max_depth.unwrap_or(service::DEFAULT_MAX_DEPTH);
    if !(1..=1_000_000).contains(&depth) {
        return Err(ApiError::invalid("max_depth", "must be 1 to 1000000"));
    }
    service::blast_radius(&state, by.0.tenant(), id, depth)
        .await
        .map(axum::Json)
}
