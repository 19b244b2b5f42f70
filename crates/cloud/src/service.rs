//! The services behind the routes, the pages and the job: accounts (checked live, sealed),
//! runs, resources with their agent coverage, findings, the summary, install commands.

use crate::providers::{self, Http, Target};
use crate::rules::{self, Matcher};
use crate::store::{self, Account, Resource, Run, RunError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use time::OffsetDateTime;
use trusthub_identity::auth::Principal;
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult, FieldError};
use trusthub_platform::extract::Meta;
use trusthub_platform::state::{now, rfc3339};
use trusthub_store::{StoreResult, TenantId, audit};
use utoipa::ToSchema;
use uuid::Uuid;

/// The sealing context of account credentials.
const SEAL: &str = "cloud.credentials";

/// What is sealed: the credential fields and the account's CA.
#[derive(Debug, Serialize, Deserialize)]
struct Sealed {
    credentials: BTreeMap<String, String>,
    #[serde(default)]
    ca_pem: Option<String>,
}

/// An account to add.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAccount {
    /// `aws`, `azure`, `gcp`, `hetzner`, `proxmox`, `digitalocean`, `scaleway`, `ovh` or
    /// `ionos`.
    #[schema(pattern = "^(aws|azure|gcp|hetzner|proxmox|digitalocean|scaleway|ovh|ionos)$")]
    pub provider: String,
    /// A name (1 to 100 characters).
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    /// The provider's own credential names: aws `access_key_id`, `secret_access_key`,
    /// `session_token?`; hetzner, digitalocean and ionos `token`; proxmox `token_id`
    /// (`user@realm!name`), `token_secret`; ovh `application_key`, `application_secret`,
    /// `consumer_key`, `project_id`; gcp `service_account_json` (the key file's content;
    /// its `token_uri` is called); azure `tenant_id`, `client_id`, `client_secret`,
    /// `subscription_id`, `authority_host?`; scaleway `access_key`, `secret_key`,
    /// `project_id`. Checked live, stored sealed, never returned.
    #[schema(value_type = Object)]
    pub credentials: Value,
    /// Regions to read (AWS regions, Hetzner locations); none: every region.
    #[serde(default)]
    #[schema(value_type = Vec<trusthub_platform::openapi::RegionName>, max_items = 50)]
    pub regions: Vec<String>,
    /// The API base URL when not the provider's own (the URL its official SDK takes);
    /// required for Proxmox (`https://host:8006`). No userinfo (`user:secret@`): credentials
    /// belong in `credentials`.
    #[serde(default)]
    #[schema(max_length = 2048)]
    pub endpoint: Option<String>,
    /// A PEM CA the provider's TLS certificate chains to, besides the system roots.
    #[serde(default)]
    #[schema(max_length = 65536)]
    pub ca_pem: Option<String>,
}

/// An account as answered (never its credentials).
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountView {
    /// Id.
    pub id: Uuid,
    /// Provider.
    pub provider: String,
    /// Name.
    pub name: String,
    /// Regions read (empty: every region).
    pub regions: Vec<String>,
    /// API base URL override.
    pub endpoint: Option<String>,
    /// `pending` (no run finished yet), `ok` or `error` (the last run failed or was partial).
    pub status: String,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub created_at: String,
    /// The last run's start.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_run_at: Option<String>,
}

impl From<Account> for AccountView {
    fn from(a: Account) -> AccountView {
        AccountView {
            id: a.id,
            provider: a.provider,
            name: a.name,
            regions: a.regions.0,
            endpoint: a.endpoint.map(|e| trusthub_platform::outbound::redact(&e)),
            status: a.status,
            created_at: rfc3339(a.created_at),
            last_run_at: a.last_run_at.map(rfc3339),
        }
    }
}

/// The shapes of a new account: each `provider` with its own credential fields (the rule
/// [`validate`] keeps; Proxmox also needs `endpoint`), for the document
/// ([`trusthub_platform::openapi::one_of`]).
pub fn shapes() -> Vec<trusthub_platform::openapi::Variant> {
    use trusthub_platform::openapi::{Variant, tag};
    providers::PROVIDERS
        .iter()
        .map(|p| {
            let fields = providers::credential_fields(p);
            let properties: serde_json::Map<String, Value> = fields
                .iter()
                .map(|(f, _)| {
                    let text = json!({"type": "string", "minLength": 1, "maxLength": 16384,
                        "pattern": r"\S"});
                    ((*f).to_owned(), text)
                })
                .collect();
            let required: Vec<&str> = fields.iter().filter(|(_, r)| *r).map(|(f, _)| *f).collect();
            let credentials = json!({"type": "object", "properties": properties,
                "required": required, "additionalProperties": false});
            let needs: &'static [&'static str] = if *p == "proxmox" { &["endpoint"] } else { &[] };
            // Required for Proxmox, so not null there.
            let endpoint_type = if *p == "proxmox" {
                json!("string")
            } else {
                json!(["string", "null"])
            };
            let shape = json!({"provider": tag(&[p]), "credentials": credentials,
                "endpoint": {"type": endpoint_type, "maxLength": 2048,
                    "pattern": trusthub_core::apps::HTTP_URL_NO_USERINFO_PATTERN}});
            Variant::new(shape, needs)
        })
        .collect()
}

fn validate(req: &NewAccount) -> Result<BTreeMap<String, String>, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut bad = |field: &str, message: String| errors.push(FieldError::new(field, message));
    if !providers::PROVIDERS.contains(&req.provider.as_str()) {
        bad(
            "provider",
            format!("must be one of {}", providers::PROVIDERS.join(", ")),
        );
    }
    if req.provider == "proxmox" && req.endpoint.is_none() {
        bad(
            "endpoint",
            "a Proxmox account needs the cluster's URL (https://host:8006)".into(),
        );
    }
    if let Some(e) = &req.endpoint {
        if let Err(m) = trusthub_core::apps::http_url(e) {
            bad("endpoint", m);
        } else if trusthub_core::apps::has_userinfo(e) {
            // CONTRACT 30: a secret never rides in the URL, where answers and audit rows
            // show it.
            bad(
                "endpoint",
                "must not hold a user or password (`user:secret@`): credentials belong in `credentials`"
                    .into(),
            );
        }
    }
    let name = req.name.trim();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        bad(
            "name",
            "must be 1 to 100 characters, no control characters".into(),
        );
    }
    if req.regions.len() > 50 {
        bad("regions", "at most 50".into());
    }
    for (i, r) in req.regions.iter().enumerate() {
        let ok = !r.is_empty()
            && r.len() <= 64
            && r.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            bad(
                &format!("regions[{i}]"),
                "a region name: letters, digits, - and _".into(),
            );
        }
    }
    let mut creds = BTreeMap::new();
    match req.credentials.as_object() {
        None => bad("credentials", "must be an object".into()),
        Some(obj) => {
            let fields = providers::credential_fields(&req.provider);
            for (k, v) in obj {
                if !fields.iter().any(|(f, _)| f == k) {
                    bad(
                        &format!("credentials.{k}"),
                        format!("is not a {} credential", req.provider),
                    );
                    continue;
                }
                match v.as_str() {
                    Some(s) if !s.trim().is_empty() && s.len() <= 16384 => {
                        creds.insert(k.clone(), s.trim().to_owned());
                    }
                    _ => bad(
                        &format!("credentials.{k}"),
                        "must be a non-empty string".into(),
                    ),
                }
            }
            for (f, required) in fields {
                if *required && !obj.contains_key(*f) {
                    bad(&format!("credentials.{f}"), "is required".into());
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(creds)
    } else {
        Err(errors)
    }
}

fn http(state: &AppState, ca_pem: Option<&str>) -> Result<Http, String> {
    Http::new(
        trusthub_platform::outbound::Policy::of(&state.settings),
        ca_pem,
    )
}

/// Adds an account (admin): the credentials are checked live with one read call (422
/// `credentials_rejected` with the provider's message, nothing stored), sealed, and a first
/// discovery starts.
pub async fn create(
    state: &AppState,
    meta: &Meta,
    p: &Principal,
    req: NewAccount,
) -> ApiResult<AccountView> {
    let credentials = validate(&req).map_err(ApiError::Validation)?;
    let policy = trusthub_platform::outbound::Policy::of(&state.settings);
    if let Some(e) = &req.endpoint {
        policy
            .check_url(e)
            .await
            .map_err(|m| ApiError::invalid("endpoint", m))?;
    }
    let ca_pem = req.ca_pem.clone().filter(|c| !c.trim().is_empty());
    let client = http(state, ca_pem.as_deref()).map_err(|m| ApiError::invalid("ca_pem", m))?;
    let target = Target {
        provider: req.provider.clone(),
        credentials,
        regions: req.regions.clone(),
        endpoint: req.endpoint.clone(),
    };
    providers::check(&client, &target).await.map_err(|detail| {
        // Not reached is not refused (CONTRACT 33): the credentials were never asked about.
        if detail.starts_with(providers::UNREACHABLE) {
            ApiError::Refused {
                code: "provider_unreachable",
                detail: format!(
                    "{detail} — the hub could not reach {}, so the credentials were not checked: check the endpoint, the CA and this hub's network",
                    req.provider
                ),
            }
        } else {
            ApiError::Refused {
                code: "credentials_rejected",
                detail: format!("{} refused the credentials: {detail}", req.provider),
            }
        }
    })?;
    let sealed = serde_json::to_vec(&Sealed {
        credentials: target.credentials,
        ca_pem,
    })
    .map_err(|e| ApiError::Internal(e.to_string()))?;
    let account = Account {
        id: Uuid::now_v7(),
        tenant_id: p.tenant().0,
        provider: req.provider.clone(),
        name: req.name.trim().to_owned(),
        regions: sqlx::types::Json(req.regions.clone()),
        endpoint: req.endpoint.clone(),
        credentials_sealed: state
            .key
            .seal(SEAL, &sealed)
            .map_err(|e| ApiError::Internal(e.to_string()))?,
        status: "pending".into(),
        created_at: now(),
        last_run_at: None,
    };
    let mut tx = state.db.begin().await?;
    store::insert_account(&mut tx, &account).await?;
    meta.record(
        &mut tx,
        p,
        trusthub_core::audit::CLOUD_ACCOUNT_ADDED,
        format!("cloud_account:{}", account.id),
        json!({"provider": account.provider, "name": account.name, "regions": account.regions.0,
            "endpoint": account.endpoint.as_deref().map(trusthub_platform::outbound::redact)}),
    )
    .await?;
    tx.commit().await?;
    let view = AccountView::from(account.clone());
    spawn_run(state, account).await?;
    Ok(view)
}

/// A tenant's accounts.
pub async fn accounts(state: &AppState, tenant: TenantId) -> ApiResult<Vec<AccountView>> {
    let mut c = state.db.conn().await?;
    Ok(store::accounts(&mut c, Some(tenant))
        .await?
        .into_iter()
        .map(AccountView::from)
        .collect())
}

/// One of a tenant's accounts (another tenant's id: 404).
pub async fn account_view(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<AccountView> {
    account(state, tenant, id).await.map(AccountView::from)
}

async fn account(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<Account> {
    let mut c = state.db.conn().await?;
    store::account(&mut c, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("cloud account"))
}

/// Deletes an account with everything discovered through it (admin).
pub async fn delete(state: &AppState, meta: &Meta, p: &Principal, id: Uuid) -> ApiResult<()> {
    let a = account(state, p.tenant(), id).await?;
    let mut tx = state.db.begin().await?;
    store::delete_account(&mut tx, p.tenant(), id).await?;
    meta.record(
        &mut tx,
        p,
        trusthub_core::audit::CLOUD_ACCOUNT_DELETED,
        format!("cloud_account:{id}"),
        json!({"provider": a.provider, "name": a.name}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Starts a discovery run of an account now (operator): its id. 409 while one is running.
pub async fn discover(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<Uuid> {
    let a = account(state, tenant, id).await?;
    spawn_run(state, a).await
}

async fn spawn_run(state: &AppState, a: Account) -> ApiResult<Uuid> {
    let run_id = Uuid::now_v7();
    {
        let mut tx = state.db.begin().await?;
        if let Some(r) = store::running(&mut tx, a.id, now()).await? {
            return Err(ApiError::Conflict(format!(
                "run {r} of this account is still running"
            )));
        }
        store::start_run(&mut tx, TenantId(a.tenant_id), a.id, run_id, now()).await?;
        tx.commit().await?;
    }
    let state = state.clone();
    tokio::spawn(async move {
        if let Err(e) = run(&state, &a, run_id).await {
            tracing::warn!(account = %a.id, error = %e, "cloud discovery failed");
        }
    });
    Ok(run_id)
}

/// One discovery run: list, then record what changed and the findings, in one transaction.
pub async fn run(state: &AppState, a: &Account, run_id: Uuid) -> StoreResult<Run> {
    let tenant = TenantId(a.tenant_id);
    let opened = state
        .key
        .open(SEAL, &a.credentials_sealed)
        .ok()
        .and_then(|b| serde_json::from_slice::<Sealed>(&b).ok());
    let discovery = match opened {
        None => providers::Discovery {
            found: Vec::new(),
            errors: vec![(
                String::new(),
                "the credentials cannot be opened with this hub's key".into(),
            )],
        },
        Some(s) => match http(state, s.ca_pem.as_deref()) {
            Err(e) => providers::Discovery {
                found: Vec::new(),
                errors: vec![(String::new(), e)],
            },
            Ok(client) => {
                let t = Target {
                    provider: a.provider.clone(),
                    credentials: s.credentials,
                    regions: a.regions.0.clone(),
                    endpoint: a.endpoint.clone(),
                };
                providers::discover(&client, &t).await
            }
        },
    };
    record(state, tenant, a, run_id, discovery, now()).await
}

/// Records a run's listing: resources added, changed and removed (not in a region that
/// failed), the findings opened and resolved, and the run's end.
pub async fn record(
    state: &AppState,
    tenant: TenantId,
    a: &Account,
    run_id: Uuid,
    d: providers::Discovery,
    now: OffsetDateTime,
) -> StoreResult<Run> {
    let whole_failed = d.errors.iter().any(|(r, _)| r.is_empty());
    let failed_regions: HashSet<&str> = d.errors.iter().map(|(r, _)| r.as_str()).collect();
    let mut tx = state.db.begin().await?;
    let hosts = trusthub_fleet::host_keys(&mut tx, tenant).await?;
    let matcher = Matcher::new(&hosts);
    let existing = store::resources(&mut tx, tenant, Some(a.id), true).await?;
    let mut by_pid: HashMap<String, Resource> = existing
        .into_iter()
        .map(|r| (r.provider_id.clone(), r))
        .collect();
    let (mut added, mut changed, mut removed) = (0i64, 0i64, 0i64);
    let mut unchanged = Vec::new();
    let mut live: Vec<(Uuid, String, bool, bool, crate::providers::Facts)> = Vec::new();
    for f in &d.found {
        let id = match by_pid.remove(&f.provider_id) {
            Some(r) => {
                if r.differs(f) {
                    if f.gone && r.removed_at.is_none() {
                        removed += 1;
                    } else {
                        changed += 1;
                    }
                    store::update_resource(&mut tx, r.id, f, now).await?;
                } else {
                    unchanged.push(r.id);
                }
                r.id
            }
            None => {
                if !f.gone {
                    added += 1;
                }
                store::insert_resource(&mut tx, tenant, a.id, &a.provider, f, now).await?
            }
        };
        if !f.gone {
            let agent = matcher.agent_of(&f.provider_id, &f.private_ips, &f.public_ips, &f.name);
            live.push((
                id,
                f.kind.clone(),
                !f.public_ips.is_empty(),
                agent.is_some(),
                f.facts.clone(),
            ));
        }
    }
    store::touch_resources(&mut tx, &unchanged, now).await?;
    // Not listed any more: removed, unless its region could not be read.
    let mut unreadable = HashSet::new();
    for r in by_pid.values() {
        if whole_failed || failed_regions.contains(r.region.as_str()) {
            unreadable.insert(r.id);
            continue;
        }
        if r.removed_at.is_none() {
            store::remove_resource(&mut tx, r.id, now).await?;
            removed += 1;
        }
    }
    // Findings: what live resources raise now opens; what is no longer raised resolves.
    let mut want: HashMap<(Uuid, String), (&str, String)> = HashMap::new();
    for (id, kind, public, has_agent, facts) in &live {
        for (rule, severity, detail) in rules::findings(kind, *public, *has_agent, facts) {
            want.insert((*id, rule.to_owned()), (severity, detail));
        }
    }
    for (finding, resource, rule) in store::open_findings(&mut tx, a.id).await? {
        let key = (resource, rule);
        if unreadable.contains(&resource) {
            want.remove(&key);
            continue;
        }
        if want.remove(&key).is_none() {
            store::resolve_finding(&mut tx, finding, now).await?;
        }
    }
    for ((resource, rule), (severity, detail)) in &want {
        store::open_finding(
            &mut tx,
            tenant,
            a.id,
            *resource,
            (rule, severity, detail),
            now,
        )
        .await?;
    }
    let status = match (d.errors.is_empty(), whole_failed) {
        (true, _) => "succeeded",
        (false, true) => "failed",
        (false, false) => "partial",
    };
    let r = Run {
        id: run_id,
        account_id: a.id,
        status: status.into(),
        started_at: now,
        finished_at: Some(now),
        resources_seen: d.found.len() as i64,
        added,
        changed,
        removed,
        errors: sqlx::types::Json(
            d.errors
                .into_iter()
                .map(|(region, message)| RunError { region, message })
                .collect(),
        ),
    };
    store::finish_run(
        &mut tx,
        &r,
        if status == "succeeded" { "ok" } else { "error" },
    )
    .await?;
    audit::append(
        &mut tx,
        tenant,
        &audit::NewEntry {
            event_type: trusthub_core::audit::CLOUD_DISCOVERY_FINISHED,
            actor: "system".into(),
            subject: format!("cloud_account:{}", a.id),
            details: json!({"run_id": run_id, "status": status, "resources_seen": r.resources_seen,
                "added": added, "changed": changed, "removed": removed}),
            ip: None,
            request_id: None,
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(r)
}

/// A run as answered.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunView {
    /// Id.
    pub id: Uuid,
    /// Its account.
    pub account_id: Uuid,
    /// `running`, `succeeded`, `partial` (some regions failed) or `failed`.
    pub status: String,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub started_at: String,
    /// When it ended.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub finished_at: Option<String>,
    /// Resources listed.
    pub resources_seen: i64,
    /// Seen for the first time.
    pub added: i64,
    /// Changed since the last run.
    pub changed: i64,
    /// Gone (no longer listed, or terminated).
    pub removed: i64,
    /// What could not be read.
    pub errors: Vec<RunError>,
}

/// A tenant's runs (of one account).
pub async fn runs(
    state: &AppState,
    tenant: TenantId,
    account: Option<Uuid>,
) -> ApiResult<Vec<RunView>> {
    let mut c = state.db.conn().await?;
    Ok(store::runs(&mut c, tenant, account)
        .await?
        .into_iter()
        .map(|r| RunView {
            id: r.id,
            account_id: r.account_id,
            status: r.status,
            started_at: rfc3339(r.started_at),
            finished_at: r.finished_at.map(rfc3339),
            resources_seen: r.resources_seen,
            added: r.added,
            changed: r.changed,
            removed: r.removed,
            errors: r.errors.0,
        })
        .collect())
}

/// A resource as answered.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ResourceView {
    /// Id.
    pub id: Uuid,
    /// Its account.
    pub account_id: Uuid,
    /// Provider.
    pub provider: String,
    /// `vm`, `container`, `database`, `load_balancer` or `bucket`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The provider's id (an EC2 instance id, a Hetzner server id).
    pub provider_id: String,
    /// Name (AWS: the `Name` tag).
    pub name: String,
    /// Region or location.
    pub region: String,
    /// The provider's state.
    pub state: String,
    /// Public addresses.
    pub public_ips: Vec<String>,
    /// Private addresses.
    pub private_ips: Vec<String>,
    /// Tags or labels.
    pub tags: BTreeMap<String, String>,
    /// It has a public address.
    pub is_public: bool,
    /// An agent's inventory matches it (instance id, an address, or its name).
    pub has_agent: bool,
    /// That agent.
    pub agent_id: Option<Uuid>,
    /// First seen.
    #[schema(value_type = String, format = DateTime)]
    pub first_seen_at: String,
    /// Last seen.
    #[schema(value_type = String, format = DateTime)]
    pub last_seen_at: String,
    /// When it was no longer seen, or seen terminated.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub removed_at: Option<String>,
}

fn view(r: Resource, m: &Matcher) -> ResourceView {
    let agent = m.agent_of(&r.provider_id, &r.private_ips.0, &r.public_ips.0, &r.name);
    ResourceView {
        id: r.id,
        account_id: r.account_id,
        provider: r.provider,
        kind: r.kind,
        provider_id: r.provider_id,
        name: r.name,
        region: r.region,
        state: r.state,
        is_public: !r.public_ips.0.is_empty(),
        public_ips: r.public_ips.0,
        private_ips: r.private_ips.0,
        tags: r.tags.0,
        has_agent: agent.is_some(),
        agent_id: agent,
        first_seen_at: rfc3339(r.first_seen_at),
        last_seen_at: rfc3339(r.last_seen_at),
        removed_at: r.removed_at.map(rfc3339),
    }
}

/// The resource filters.
#[derive(Debug, Default, Clone)]
pub struct ResourceFilter {
    /// One account.
    pub account_id: Option<Uuid>,
    /// One type.
    pub kind: Option<String>,
    /// Covered or not.
    pub has_agent: Option<bool>,
    /// Public or not.
    pub is_public: Option<bool>,
    /// Removed ones too.
    pub include_removed: bool,
}

/// A tenant's resources with their coverage, as of now.
pub async fn resources(
    state: &AppState,
    tenant: TenantId,
    f: &ResourceFilter,
) -> ApiResult<Vec<ResourceView>> {
    let mut c = state.db.conn().await?;
    let m = Matcher::new(&trusthub_fleet::host_keys(&mut c, tenant).await?);
    Ok(
        store::resources(&mut c, tenant, f.account_id, f.include_removed)
            .await?
            .into_iter()
            .map(|r| view(r, &m))
            .filter(|r| f.kind.as_ref().is_none_or(|k| &r.kind == k))
            .filter(|r| f.has_agent.is_none_or(|h| r.has_agent == h))
            .filter(|r| f.is_public.is_none_or(|p| r.is_public == p))
            .collect(),
    )
}

/// A tenant's resource.
pub async fn resource(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<ResourceView> {
    let mut c = state.db.conn().await?;
    let r = store::resource(&mut c, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("cloud resource"))?;
    let m = Matcher::new(&trusthub_fleet::host_keys(&mut c, tenant).await?);
    Ok(view(r, &m))
}

/// The install commands of a resource.
#[derive(Debug, Serialize, ToSchema)]
pub struct Install {
    /// A fresh single-use enrollment token (spent by the first host that registers).
    pub enrollment_token: String,
    /// When it expires.
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: String,
    /// The commands.
    pub commands: InstallCommands,
}

/// How to install the agent on the machine.
#[derive(Debug, Serialize, ToSchema)]
pub struct InstallCommands {
    /// A shell one-liner to run as root on the machine.
    pub shell: String,
    /// The same as cloud-init user data (`#cloud-config` with `runcmd`).
    pub cloud_init: String,
}

/// The agent install commands for a resource, with a fresh single-use enrollment token
/// (admin; the token's creation is audited).
pub async fn install(state: &AppState, meta: &Meta, p: &Principal, id: Uuid) -> ApiResult<Install> {
    resource(state, p.tenant(), id).await?;
    let (token, expires_at, shell) = trusthub_fleet::install_command(state, meta, p).await?;
    let cloud_init = format!(
        "#cloud-config\nruncmd:\n  - [sh, -c, {}]\n",
        serde_json::to_string(&shell).unwrap_or_default()
    );
    Ok(Install {
        enrollment_token: token,
        expires_at: rfc3339(expires_at),
        commands: InstallCommands { shell, cloud_init },
    })
}

/// A finding as answered.
#[derive(Debug, Serialize, ToSchema)]
pub struct FindingView {
    /// Id.
    pub id: Uuid,
    /// Its account.
    pub account_id: Uuid,
    /// Its resource.
    pub resource_id: Uuid,
    /// `no_agent`, `public_without_agent`, `ssh_open_to_world`, `rdp_open_to_world`,
    /// `unencrypted_disk`.
    pub rule: String,
    /// `CRITICAL`, `HIGH`, `MEDIUM` or `LOW`.
    pub severity: String,
    /// `open` or `resolved` (by itself, when a later run no longer sees it).
    pub status: String,
    /// What was seen.
    pub detail: String,
    /// When first seen.
    #[schema(value_type = String, format = DateTime)]
    pub first_seen_at: String,
    /// When it resolved.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub resolved_at: Option<String>,
}

/// A tenant's findings.
pub async fn findings(
    state: &AppState,
    tenant: TenantId,
    severity: Option<&str>,
    status: Option<&str>,
) -> ApiResult<Vec<FindingView>> {
    let mut c = state.db.conn().await?;
    Ok(store::findings(&mut c, tenant, None, severity, status)
        .await?
        .into_iter()
        .map(|f| FindingView {
            id: f.id,
            account_id: f.account_id,
            resource_id: f.resource_id,
            rule: f.rule,
            severity: f.severity,
            status: f.status,
            detail: f.detail,
            first_seen_at: rfc3339(f.first_seen_at),
            resolved_at: f.resolved_at.map(rfc3339),
        })
        .collect())
}

/// Counts of one provider.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct ProviderCounts {
    /// Live resources.
    pub resources: u64,
    /// Of which an agent watches.
    pub with_agent: u64,
}

/// Open findings by severity.
#[derive(Debug, Default, Serialize, ToSchema)]
#[allow(non_snake_case)]
pub struct SeverityCounts {
    /// CRITICAL.
    pub CRITICAL: u64,
    /// HIGH.
    pub HIGH: u64,
    /// MEDIUM.
    pub MEDIUM: u64,
    /// LOW.
    pub LOW: u64,
}

/// The tenant's cloud at a glance (live resources only).
#[derive(Debug, Serialize, ToSchema)]
pub struct Summary {
    /// Accounts.
    pub accounts: u64,
    /// Live resources.
    pub resources: u64,
    /// Of which an agent watches.
    pub with_agent: u64,
    /// Of which none does.
    pub without_agent: u64,
    /// With a public address.
    pub public: u64,
    /// `with_agent` of the machines (`vm`), in percent; null while there are no machines
    /// (CONTRACT 33: nothing is not full coverage).
    pub coverage_percent: Option<f64>,
    /// By provider.
    pub by_provider: BTreeMap<String, ProviderCounts>,
    /// Open findings by severity.
    pub open_findings: SeverityCounts,
}

/// The summary.
pub async fn summary(state: &AppState, tenant: TenantId) -> ApiResult<Summary> {
    let all = resources(state, tenant, &ResourceFilter::default()).await?;
    let accounts = accounts(state, tenant).await?.len() as u64;
    let mut by_provider: BTreeMap<String, ProviderCounts> = BTreeMap::new();
    let (mut with, mut public, mut vms, mut vms_with) = (0u64, 0u64, 0u64, 0u64);
    for r in &all {
        let e = by_provider.entry(r.provider.clone()).or_default();
        e.resources += 1;
        if r.has_agent {
            e.with_agent += 1;
            with += 1;
        }
        if r.is_public {
            public += 1;
        }
        if r.kind == "vm" {
            vms += 1;
            vms_with += u64::from(r.has_agent);
        }
    }
    let mut open = SeverityCounts::default();
    let counts = {
        let mut c = state.db.conn().await?;
        store::open_by_severity(&mut c, tenant).await?
    };
    for (severity, n) in counts {
        let n = n.max(0) as u64;
        match severity.as_str() {
            "CRITICAL" => open.CRITICAL += n,
            "HIGH" => open.HIGH += n,
            "MEDIUM" => open.MEDIUM += n,
            _ => open.LOW += n,
        }
    }
    let coverage = (vms > 0).then(|| (vms_with as f64 * 1000.0 / vms as f64).round() / 10.0);
    Ok(Summary {
        accounts,
        resources: all.len() as u64,
        with_agent: with,
        without_agent: all.len() as u64 - with,
        public,
        coverage_percent: coverage,
        by_provider,
        open_findings: open,
    })
}

/// The periodic job: every account whose last run is older than the interval runs now.
pub async fn tick(state: &AppState, now: OffsetDateTime) -> StoreResult<()> {
    let every = time::Duration::seconds(
        crate::settings::of(&state.settings).cloud_discover_interval_secs as i64,
    );
    let due: Vec<Account> = {
        let mut c = state.db.conn().await?;
        store::accounts(&mut c, None)
            .await?
            .into_iter()
            .filter(|a| a.last_run_at.is_none_or(|t| t + every <= now))
            .collect()
    };
    for a in due {
        let run_id = Uuid::now_v7();
        {
            let mut tx = state.db.begin().await?;
            if store::running(&mut tx, a.id, now).await?.is_some() {
                continue;
            }
            store::start_run(&mut tx, TenantId(a.tenant_id), a.id, run_id, now).await?;
            tx.commit().await?;
        }
        run(state, &a, run_id).await?;
    }
    Ok(())
}
