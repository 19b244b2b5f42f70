//! A local Microsoft Entra ID token endpoint and Azure Resource Manager for the tests,
//! written from Microsoft's REST API reference: the tenant's OpenID configuration and
//! `oauth2/v2.0/token` (client credentials; 401 `invalid_client` for a wrong secret), then
//! `GET /subscriptions/{id}` and the subscription's virtual machines (`statusOnly=true` with
//! their power state), network interfaces, public IP addresses and network security groups,
//! 50 a page with an absolute `nextLink`. Served over HTTPS (azure-identity and azure-core
//! send tokens over TLS only); the contract test drives `azure-identity`,
//! `azure-mgmt-compute` and `azure-mgmt-network` against it.

use super::serve::{Served, serve};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// What the fake holds.
pub struct Azure {
    /// `https://localhost:<port>` (both the authority host and the ARM endpoint).
    pub served: Served,
    /// Tenant id.
    pub tenant: String,
    /// Client id.
    pub client_id: String,
    /// Client secret.
    pub secret: String,
    /// Subscription id.
    pub subscription: String,
}

struct Inner {
    base: OnceLock<String>,
    tenant: String,
    client_id: String,
    secret: String,
    subscription: String,
    token: String,
}

impl Inner {
    fn base(&self) -> &str {
        self.base.get().map_or("", String::as_str)
    }
}

async fn openid(State(inner): State<Arc<Inner>>, Path(tenant): Path<String>) -> Response {
    let b = inner.base();
    axum::Json(json!({
        "token_endpoint": format!("{b}/{tenant}/oauth2/v2.0/token"),
        "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
        "jwks_uri": format!("{b}/{tenant}/discovery/v2.0/keys"),
        "response_modes_supported": ["query", "fragment", "form_post"],
        "subject_types_supported": ["pairwise"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
        "scopes_supported": ["openid", "profile", "email", "offline_access"],
        "issuer": format!("{b}/{tenant}/v2.0"),
        "request_uri_parameter_supported": false,
        "authorization_endpoint": format!("{b}/{tenant}/oauth2/v2.0/authorize"),
        "device_authorization_endpoint": format!("{b}/{tenant}/oauth2/v2.0/devicecode"),
        "end_session_endpoint": format!("{b}/{tenant}/oauth2/v2.0/logout"),
        "tenant_region_scope": "EU",
    }))
    .into_response()
}

async fn token(
    State(inner): State<Arc<Inner>>,
    Path(tenant): Path<String>,
    axum::Form(form): axum::Form<HashMap<String, String>>,
) -> Response {
    let get = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    if tenant != inner.tenant {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_request",
            "error_description": format!("AADSTS90002: Tenant '{tenant}' not found.")})),
        )
            .into_response();
    }
    if get("grant_type") != "client_credentials"
        || get("client_id") != inner.client_id
        || get("client_secret") != inner.secret
    {
        return (StatusCode::UNAUTHORIZED, axum::Json(json!({"error": "invalid_client",
            "error_description": format!("AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '{}'.", inner.client_id),
            "error_codes": [7000215]}))).into_response();
    }
    if !get("scope").split(' ').any(|s| s.ends_with("/.default")) {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_scope",
            "error_description": "AADSTS1002012: The provided value for scope is not valid."})),
        )
            .into_response();
    }
    axum::Json(json!({"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": inner.token})).into_response()
}

fn refuse(inner: &Inner, headers: &HeaderMap, sub: &str) -> Option<Response> {
    let ok = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {}", inner.token));
    if !ok {
        return Some(
            (
                StatusCode::UNAUTHORIZED,
                axum::Json(json!({"error": {"code": "InvalidAuthenticationToken",
            "message": "The access token is invalid."}})),
            )
                .into_response(),
        );
    }
    (sub != inner.subscription).then(|| {
        (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": {"code": "SubscriptionNotFound",
        "message": format!("The subscription '{sub}' could not be found.")}})),
        )
            .into_response()
    })
}

async fn subscription(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Path(sub): Path<String>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers, &sub) {
        return r;
    }
    axum::Json(json!({"id": format!("/subscriptions/{sub}"), "subscriptionId": sub, "tenantId": inner.tenant,
        "displayName": "Production", "state": "Enabled",
        "subscriptionPolicies": {"locationPlacementId": "Public_2014-09-01", "quotaId": "PayAsYouGo_2014-09-01", "spendingLimit": "Off"},
        "authorizationSource": "RoleBased"}))
    .into_response()
}

const VMS: u64 = 60;

fn rg(sub: &str) -> String {
    format!("/subscriptions/{sub}/resourceGroups/prod")
}

fn vm(sub: &str, i: u64) -> Value {
    json!({
        "id": format!("{}/providers/Microsoft.Compute/virtualMachines/vm-{i}", rg(sub)),
        "name": format!("vm-{i}"), "type": "Microsoft.Compute/virtualMachines", "location": "westeurope",
        "tags": {"env": "prod"},
        "properties": {
            "vmId": format!("6a3b5c2e-0000-4000-8000-{:012}", i),
            "hardwareProfile": {"vmSize": "Standard_B2s"},
            "storageProfile": {"osDisk": {"osType": "Linux", "name": format!("vm-{i}-os"), "createOption": "FromImage",
                "caching": "ReadWrite", "managedDisk": {"storageAccountType": "Premium_LRS",
                "id": format!("{}/providers/Microsoft.Compute/disks/vm-{i}-os", rg(sub))}, "deleteOption": "Delete", "diskSizeGB": 30},
                "dataDisks": []},
            "osProfile": {"computerName": format!("vm-{i}"), "adminUsername": "azureuser",
                "linuxConfiguration": {"disablePasswordAuthentication": true, "provisionVMAgent": true}},
            "networkProfile": {"networkInterfaces": [{"id": format!("{}/providers/Microsoft.Network/networkInterfaces/nic-{i}", rg(sub))}]},
            "provisioningState": "Succeeded",
            "instanceView": {"statuses": [
                {"code": "ProvisioningState/succeeded", "level": "Info", "displayStatus": "Provisioning succeeded"},
                {"code": if i.is_multiple_of(10) { "PowerState/deallocated" } else { "PowerState/running" }, "level": "Info",
                    "displayStatus": if i.is_multiple_of(10) { "VM deallocated" } else { "VM running" }}]},
            "timeCreated": "2026-01-05T10:00:00.0000000+00:00",
        },
    })
}

fn nic(sub: &str, i: u64) -> Value {
    let mut ip = json!({"privateIPAddress": format!("10.0.{}.{}", i / 250, i % 250 + 4), "privateIPAllocationMethod": "Dynamic",
        "subnet": {"id": format!("{}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default", rg(sub))},
        "primary": true, "privateIPAddressVersion": "IPv4", "provisioningState": "Succeeded"});
    if i.is_multiple_of(2) {
        ip["publicIPAddress"] = json!({"id": format!("{}/providers/Microsoft.Network/publicIPAddresses/pip-{i}", rg(sub))});
    }
    let mut props = json!({"provisioningState": "Succeeded", "ipConfigurations": [{"name": "ipconfig1",
        "id": format!("{}/providers/Microsoft.Network/networkInterfaces/nic-{i}/ipConfigurations/ipconfig1", rg(sub)),
        "properties": ip}],
        "virtualMachine": {"id": format!("{}/providers/Microsoft.Compute/virtualMachines/vm-{i}", rg(sub))},
        "enableAcceleratedNetworking": false, "enableIPForwarding": false, "primary": true, "nicType": "Standard"});
    let nsg = match i % 3 {
        0 => Some("ssh-open"),
        1 => Some("web-only"),
        _ => None,
    };
    if let Some(n) = nsg {
        props["networkSecurityGroup"] = json!({"id": format!("{}/providers/Microsoft.Network/networkSecurityGroups/{n}", rg(sub))});
    }
    json!({"id": format!("{}/providers/Microsoft.Network/networkInterfaces/nic-{i}", rg(sub)), "name": format!("nic-{i}"),
        "type": "Microsoft.Network/networkInterfaces", "location": "westeurope", "properties": props})
}

fn pip(sub: &str, i: u64) -> Value {
    json!({"id": format!("{}/providers/Microsoft.Network/publicIPAddresses/pip-{i}", rg(sub)), "name": format!("pip-{i}"),
        "type": "Microsoft.Network/publicIPAddresses", "location": "westeurope", "sku": {"name": "Standard", "tier": "Regional"},
        "properties": {"provisioningState": "Succeeded", "ipAddress": format!("20.71.{}.{}", i / 250, i % 250 + 1),
            "publicIPAddressVersion": "IPv4", "publicIPAllocationMethod": "Static", "idleTimeoutInMinutes": 4}})
}

fn nsg(sub: &str, name: &str, port: &str, source: &str) -> Value {
    json!({"id": format!("{}/providers/Microsoft.Network/networkSecurityGroups/{name}", rg(sub)), "name": name,
        "type": "Microsoft.Network/networkSecurityGroups", "location": "westeurope",
        "properties": {"provisioningState": "Succeeded", "securityRules": [{"name": format!("allow-{port}"),
            "id": format!("{}/providers/Microsoft.Network/networkSecurityGroups/{name}/securityRules/allow-{port}", rg(sub)),
            "type": "Microsoft.Network/networkSecurityGroups/securityRules",
            "properties": {"provisioningState": "Succeeded", "protocol": "Tcp", "sourcePortRange": "*",
                "destinationPortRange": port, "sourceAddressPrefix": source, "destinationAddressPrefix": "*",
                "access": "Allow", "priority": 100, "direction": "Inbound"}}]}})
}

fn page(inner: &Inner, path: &str, items: Vec<Value>, q: &HashMap<String, String>) -> Response {
    let start: usize = q
        .get("$skiptoken")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let slice: Vec<Value> = items.iter().skip(start).take(50).cloned().collect();
    let mut out = json!({"value": slice});
    if start + 50 < items.len() {
        let api = q.get("api-version").cloned().unwrap_or_default();
        let mut next = format!(
            "{}{path}?api-version={api}&$skiptoken={}",
            inner.base(),
            start + 50
        );
        if let Some(s) = q.get("statusOnly") {
            next.push_str(&format!("&statusOnly={s}"));
        }
        out["nextLink"] = json!(next);
    }
    axum::Json(out).into_response()
}

async fn list(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Path((sub, ns, kind)): Path<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = refuse(&inner, &headers, &sub) {
        return r;
    }
    let items: Vec<Value> = match (ns.as_str(), kind.as_str()) {
        ("Microsoft.Compute", "virtualMachines") => (1..=VMS).map(|i| vm(&sub, i)).collect(),
        ("Microsoft.Network", "networkInterfaces") => (1..=VMS).map(|i| nic(&sub, i)).collect(),
        ("Microsoft.Network", "publicIPAddresses") => (1..=VMS)
            .filter(|i| i.is_multiple_of(2))
            .map(|i| pip(&sub, i))
            .collect(),
        ("Microsoft.Network", "networkSecurityGroups") => vec![
            nsg(&sub, "ssh-open", "22", "Internet"),
            nsg(&sub, "web-only", "443", "*"),
        ],
        _ => {
            return (
                StatusCode::NOT_FOUND,
                axum::Json(
                    json!({"error": {"code": "InvalidResourceType", "message": "not here"}}),
                ),
            )
                .into_response();
        }
    };
    page(
        &inner,
        &format!("/subscriptions/{sub}/providers/{ns}/{kind}"),
        items,
        &q,
    )
}

impl Azure {
    /// Starts the fake: 60 VMs (every tenth deallocated), public addresses on even ones, an
    /// SSH-from-the-internet security group on every third NIC.
    pub async fn start() -> Azure {
        let id = || uuid::Uuid::new_v4().to_string();
        let inner = Arc::new(Inner {
            base: OnceLock::new(),
            tenant: id(),
            client_id: id(),
            secret: format!("Xy8Q~{}", uuid::Uuid::new_v4().simple()),
            subscription: id(),
            token: format!(
                "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.{}",
                uuid::Uuid::new_v4().simple()
            ),
        });
        let app = axum::Router::new()
            .route(
                "/{tenant}/v2.0/.well-known/openid-configuration",
                axum::routing::get(openid),
            )
            .route("/{tenant}/oauth2/v2.0/token", axum::routing::post(token))
            .route("/subscriptions/{sub}", axum::routing::get(subscription))
            .route(
                "/subscriptions/{sub}/providers/{ns}/{kind}",
                axum::routing::get(list),
            )
            .with_state(inner.clone());
        let served = serve(app, true).await;
        let _ = inner.base.set(served.base.clone());
        Azure {
            served,
            tenant: inner.tenant.clone(),
            client_id: inner.client_id.clone(),
            secret: inner.secret.clone(),
            subscription: inner.subscription.clone(),
        }
    }
}
