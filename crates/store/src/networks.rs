//! The private networks a tenant's owner chose (CONTRACT 33): the ranges its outbound calls
//! may reach within the operator's; the policy itself is the platform's `outbound`.

use crate::{Exec, StoreResult, TenantId, on};

/// The tenant's ranges as saved (comma-separated CIDRs, `""` for none); `None` when its
/// owner never chose (then every range the operator allows).
pub async fn get(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Option<String>> {
    Ok(on!(ex, c => sqlx::query_scalar::<_, String>(
        "SELECT cidrs FROM tenant_networks WHERE tenant_id = $1")
        .bind(tenant.0).fetch_optional(&mut *c).await?))
}

/// Saves the tenant's ranges; `None` goes back to every range the operator allows.
pub async fn set(ex: &mut impl Exec, tenant: TenantId, cidrs: Option<&str>) -> StoreResult<()> {
    match cidrs {
        Some(cidrs) => on!(ex, c => sqlx::query(
            "INSERT INTO tenant_networks (tenant_id, cidrs) VALUES ($1, $2) \
             ON CONFLICT (tenant_id) DO UPDATE SET cidrs = $2")
            .bind(tenant.0).bind(cidrs).execute(&mut *c).await?.rows_affected()),
        None => on!(ex, c => sqlx::query("DELETE FROM tenant_networks WHERE tenant_id = $1")
            .bind(tenant.0).execute(&mut *c).await?.rows_affected()),
    };
    Ok(())
}
