//! The trust tables: the score's history and the badge switch.

use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// A history point.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Point {
    /// When.
    pub computed_at: OffsetDateTime,
    /// The score.
    pub final_score: f64,
    /// Its band.
    pub band: String,
    /// Its inputs' hash.
    pub inputs_sha256: String,
}

const COLUMNS: &str = "computed_at, final_score, band, inputs_sha256";

/// The tenant's points of `version` since `since` (newest first and only the first when
/// `newest`, else oldest first). v12's points keep their own table; each later version's
/// are in `trust_score_points`.
async fn points(
    ex: &mut impl Exec,
    tenant: TenantId,
    version: &str,
    since: OffsetDateTime,
    newest: bool,
) -> StoreResult<Vec<Point>> {
    let order = if newest { "DESC LIMIT 1" } else { "" };
    if version == crate::score::VERSION {
        let sql = format!(
            "SELECT {COLUMNS} FROM trust_score_history WHERE tenant_id = $1 AND computed_at >= $2 \
             ORDER BY computed_at {order}"
        );
        return Ok(
            on!(ex, c => sqlx::query_as::<_, Point>(sqlx::AssertSqlSafe(sql))
            .bind(tenant.0).bind(since).fetch_all(&mut *c).await?),
        );
    }
    let sql = format!(
        "SELECT {COLUMNS} FROM trust_score_points WHERE tenant_id = $1 AND computed_at >= $2 \
         AND version = $3 ORDER BY computed_at {order}"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Point>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(since).bind(version).fetch_all(&mut *c).await?),
    )
}

/// The tenant's newest point of `version`.
pub async fn last(
    ex: &mut impl Exec,
    tenant: TenantId,
    version: &str,
) -> StoreResult<Option<Point>> {
    let all = OffsetDateTime::UNIX_EPOCH;
    Ok(points(ex, tenant, version, all, true).await?.pop())
}

/// The tenant's points of `version` since `since`, oldest first.
pub async fn since(
    ex: &mut impl Exec,
    tenant: TenantId,
    version: &str,
    since: OffsetDateTime,
) -> StoreResult<Vec<Point>> {
    points(ex, tenant, version, since, false).await
}

/// Records a point of `version`; a second one in the same second replaces it (the newest
/// inputs win).
pub async fn record(
    ex: &mut impl Exec,
    tenant: TenantId,
    version: &str,
    p: &Point,
) -> StoreResult<()> {
    if version == crate::score::VERSION {
        on!(ex, c => sqlx::query(
            "INSERT INTO trust_score_history (tenant_id, computed_at, final_score, band, inputs_sha256) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant_id, computed_at) DO UPDATE \
             SET final_score = $3, band = $4, inputs_sha256 = $5")
            .bind(tenant.0).bind(p.computed_at).bind(p.final_score).bind(&p.band)
            .bind(&p.inputs_sha256).execute(&mut *c).await?.rows_affected());
    } else {
        on!(ex, c => sqlx::query(
            "INSERT INTO trust_score_points (tenant_id, computed_at, final_score, band, inputs_sha256, version) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, version, computed_at) DO UPDATE \
             SET final_score = $3, band = $4, inputs_sha256 = $5")
            .bind(tenant.0).bind(p.computed_at).bind(p.final_score).bind(&p.band)
            .bind(&p.inputs_sha256).bind(version).execute(&mut *c).await?.rows_affected());
    }
    Ok(())
}

/// Whether the tenant's badge is public (the default).
pub async fn badge_public(ex: &mut impl Exec, tenant: Uuid) -> StoreResult<bool> {
    let v: Option<bool> = on!(ex, c => sqlx::query_scalar(
        "SELECT badge_public FROM trust_settings WHERE tenant_id = $1")
        .bind(tenant).fetch_optional(&mut *c).await?);
    Ok(v.unwrap_or(true))
}

/// Sets the switch.
pub async fn set_badge_public(ex: &mut impl Exec, tenant: TenantId, on: bool) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO trust_settings (tenant_id, badge_public) VALUES ($1, $2) \
         ON CONFLICT (tenant_id) DO UPDATE SET badge_public = $2")
        .bind(tenant.0).bind(on).execute(&mut *c).await?.rows_affected());
    Ok(())
}
