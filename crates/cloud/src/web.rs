//! The cloud pages — coverage ("47 of 52 machines have an agent") with the uncovered
//! machines and their install command, accounts with a form per provider (checked live on
//! submit), resources with filters, findings, runs — through the same services as the API.

use crate::service::{self, AccountView, NewAccount, ResourceFilter, ResourceView, Summary};
use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Map, Value};
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_identity::auth::Admin;
use trusthub_identity::auth::Operator;
use trusthub_identity::auth::Viewer;
use trusthub_identity::{UserBar, WebUser};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult};
use trusthub_platform::extract::Meta;
use trusthub_platform::page::NoFields;
use trusthub_platform::page::{ASSETS, Assets, Flash, FormPairs, outcome};
use trusthub_platform::page::{PageResult, render};
use uuid::Uuid;

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/ui/cloud", get(overview))
        .route("/ui/cloud/accounts", post(add_account))
        .route("/ui/cloud/accounts/{id}/discover", post(discover))
        .route("/ui/cloud/accounts/{id}/delete", post(delete))
        .route("/ui/cloud/resources", get(resources))
        .route("/ui/cloud/resources/{id}/install", post(install))
        .route("/ui/cloud/findings", get(findings))
        .route("/ui/cloud/runs", get(runs))
}

/// An install command shown after the admin asked for it.
struct Shown {
    name: String,
    shell: String,
    cloud_init: String,
    expires: String,
}

#[derive(Template)]
#[template(path = "cloud.html")]
struct OverviewPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    admin: bool,
    operator: bool,
    summary: Summary,
    vms: u64,
    vms_with: u64,
    accounts: Vec<AccountView>,
    uncovered: Vec<ResourceView>,
    install: Option<Shown>,
    flash: Flash,
}

async fn overview_page(
    state: &AppState,
    user: &WebUser,
    flash: Flash,
    install: Option<Shown>,
    code: StatusCode,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let all = service::resources(state, p.tenant(), &ResourceFilter::default()).await?;
    let vms: Vec<&ResourceView> = all.iter().filter(|r| r.kind == "vm").collect();
    let page = OverviewPage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        admin: p.has_role(Role::Admin),
        operator: p.has_role(Role::Operator),
        summary: service::summary(state, p.tenant()).await?,
        vms: vms.len() as u64,
        vms_with: vms.iter().filter(|r| r.has_agent).count() as u64,
        accounts: service::accounts(state, p.tenant()).await?,
        uncovered: vms.into_iter().filter(|r| !r.has_agent).cloned().collect(),
        install,
        flash,
    };
    render(page.render(), code)
}

/// The overview after a form: its notice, or its refusal in words.
async fn after<T>(
    state: &AppState,
    user: &WebUser,
    done: ApiResult<T>,
    notice: &str,
    status: StatusCode,
) -> PageResult {
    let (flash, code) = outcome(done, notice, status)?;
    overview_page(state, user, flash, None, code).await
}

/// `GET /ui/cloud`.
pub async fn overview(State(state): State<AppState>, user: WebUser) -> PageResult {
    overview_page(&state, &user, Flash::default(), None, StatusCode::OK).await
}

/// The credential fields of the form, by provider: `(form field, credential name)`.
const FORM_CREDENTIALS: [(&str, &str, &str); 20] = [
    ("aws", "aws_access_key_id", "access_key_id"),
    ("aws", "aws_secret_access_key", "secret_access_key"),
    ("aws", "aws_session_token", "session_token"),
    ("hetzner", "hetzner_token", "token"),
    ("digitalocean", "do_token", "token"),
    ("proxmox", "pve_token_id", "token_id"),
    ("proxmox", "pve_token_secret", "token_secret"),
    ("ovh", "ovh_application_key", "application_key"),
    ("ovh", "ovh_application_secret", "application_secret"),
    ("ovh", "ovh_consumer_key", "consumer_key"),
    ("ovh", "ovh_project_id", "project_id"),
    ("gcp", "gcp_service_account_json", "service_account_json"),
    ("azure", "azure_tenant_id", "tenant_id"),
    ("azure", "azure_client_id", "client_id"),
    ("azure", "azure_client_secret", "client_secret"),
    ("azure", "azure_subscription_id", "subscription_id"),
    ("scaleway", "scw_access_key", "access_key"),
    ("scaleway", "scw_secret_key", "secret_key"),
    ("scaleway", "scw_project_id", "project_id"),
    ("ionos", "ionos_token", "token"),
];

/// `POST /ui/cloud/accounts` (admin, CSRF): the provider's form, checked live like the API.
pub async fn add_account(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form, .. }: Act<Admin, FormPairs>,
) -> PageResult {
    let names: Vec<&str> = ["provider", "name", "regions", "endpoint", "ca_pem"]
        .into_iter()
        .chain(FORM_CREDENTIALS.iter().map(|(_, field, _)| *field))
        .collect();
    let form = form.only(&names)?;
    let provider = form.get("provider");
    let mut credentials = Map::new();
    for (p, field, name) in FORM_CREDENTIALS {
        let v = form.get(field);
        if p == provider && !v.is_empty() {
            credentials.insert(name.to_owned(), Value::String(v));
        }
    }
    let optional = |k: &str| Some(form.get(k)).filter(|v| !v.is_empty());
    let req = NewAccount {
        provider,
        name: form.get("name"),
        credentials: Value::Object(credentials),
        regions: form
            .get("regions")
            .split([',', ' '])
            .filter(|r| !r.is_empty())
            .map(str::to_owned)
            .collect(),
        endpoint: optional("endpoint"),
        ca_pem: optional("ca_pem"),
    };
    let done = service::create(&state, &meta, &user.principal, req).await;
    after(
        &state,
        &user,
        done,
        "Account added: the credentials were accepted and a first discovery runs now.",
        StatusCode::CREATED,
    )
    .await
}

/// `POST /ui/cloud/accounts/{id}/discover` (operator, CSRF).
pub async fn discover(
    State(state): State<AppState>,
    Path(id): Path<Uuid>,
    Act { user, .. }: Act<Operator, NoFields>,
) -> PageResult {
    let done = service::discover(&state, user.principal.tenant(), id).await;
    after(
        &state,
        &user,
        done,
        "Discovery started.",
        StatusCode::ACCEPTED,
    )
    .await
}

/// `POST /ui/cloud/accounts/{id}/delete` (admin, CSRF).
pub async fn delete(
    State(state): State<AppState>,
    meta: Meta,
    Path(id): Path<Uuid>,
    Act { user, .. }: Act<Admin, NoFields>,
) -> PageResult {
    let done = service::delete(&state, &meta, &user.principal, id).await;
    after(
        &state,
        &user,
        done,
        "Account deleted with what was discovered through it.",
        StatusCode::OK,
    )
    .await
}

/// `POST /ui/cloud/resources/{id}/install` (admin, CSRF): the machine's install commands
/// with a fresh single-use enrollment token.
pub async fn install(
    State(state): State<AppState>,
    meta: Meta,
    Path(id): Path<Uuid>,
    Act { user, .. }: Act<Admin, NoFields>,
) -> PageResult {
    let shown = async {
        let r = service::resource(&state, user.principal.tenant(), id).await?;
        let i = service::install(&state, &meta, &user.principal, id).await?;
        Ok::<_, ApiError>(Shown {
            name: r.name,
            shell: i.commands.shell,
            cloud_init: i.commands.cloud_init,
            expires: i.expires_at,
        })
    }
    .await;
    match shown {
        Ok(s) => overview_page(&state, &user, Flash::default(), Some(s), StatusCode::OK).await,
        Err(e) => Err(e),
    }
}

#[derive(Template)]
#[template(path = "cloud_resources.html")]
struct ResourcesPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    rows: Vec<ResourceView>,
    accounts: Vec<AccountView>,
    q: ResourceForm,
}

/// The resource filters of the page (empty: any).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceForm {
    #[serde(default)]
    account_id: String,
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    has_agent: String,
    #[serde(default)]
    is_public: String,
}

fn flag(field: &str, v: &str) -> ApiResult<Option<bool>> {
    match v {
        "" => Ok(None),
        "true" | "1" => Ok(Some(true)),
        "false" | "0" => Ok(Some(false)),
        _ => Err(ApiError::invalid(field, "must be true or false")),
    }
}

/// `GET /ui/cloud/resources`.
pub async fn resources(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Query(q): axum::extract::Query<ResourceForm>,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let account_id = match q.account_id.as_str() {
        "" => None,
        s => Some(
            Uuid::parse_str(s).map_err(|_| ApiError::invalid("account_id", "must be a UUID"))?,
        ),
    };
    let f = ResourceFilter {
        account_id,
        kind: Some(q.kind.clone()).filter(|k| !k.is_empty()),
        has_agent: flag("has_agent", &q.has_agent)?,
        is_public: flag("is_public", &q.is_public)?,
        include_removed: false,
    };
    let page = ResourcesPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        rows: service::resources(&state, p.tenant(), &f).await?,
        accounts: service::accounts(&state, p.tenant()).await?,
        q,
    };
    render(page.render(), StatusCode::OK)
}

#[derive(Template)]
#[template(path = "cloud_findings.html")]
struct FindingsPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    rows: Vec<(service::FindingView, String)>,
    status: String,
}

/// The findings filter of the page.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingForm {
    #[serde(default)]
    status: String,
}

/// `GET /ui/cloud/findings`: open ones unless `?status=resolved`.
pub async fn findings(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Query(q): axum::extract::Query<FindingForm>,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let status = match q.status.as_str() {
        "" | "open" => "open",
        "resolved" => "resolved",
        _ => return Err(ApiError::invalid("status", "must be open or resolved")),
    };
    let names: std::collections::HashMap<Uuid, String> = service::resources(
        &state,
        p.tenant(),
        &ResourceFilter {
            include_removed: true,
            ..ResourceFilter::default()
        },
    )
    .await?
    .into_iter()
    .map(|r| (r.id, format!("{} ({})", r.name, r.provider_id)))
    .collect();
    let rows = service::findings(&state, p.tenant(), None, Some(status))
        .await?
        .into_iter()
        .map(|f| {
            let n = names.get(&f.resource_id).cloned().unwrap_or_default();
            (f, n)
        })
        .collect();
    let page = FindingsPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        rows,
        status: status.to_owned(),
    };
    render(page.render(), StatusCode::OK)
}

#[derive(Template)]
#[template(path = "cloud_runs.html")]
struct RunsPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    rows: Vec<(service::RunView, String)>,
}

/// `GET /ui/cloud/runs`.
pub async fn runs(State(state): State<AppState>, user: WebUser) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let names: std::collections::HashMap<Uuid, String> = service::accounts(&state, p.tenant())
        .await?
        .into_iter()
        .map(|a| (a.id, format!("{} ({})", a.name, a.provider)))
        .collect();
    let rows = service::runs(&state, p.tenant(), None)
        .await?
        .into_iter()
        .map(|r| {
            let n = names.get(&r.account_id).cloned().unwrap_or_default();
            (r, n)
        })
        .collect();
    let page = RunsPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        rows,
    };
    render(page.render(), StatusCode::OK)
}
