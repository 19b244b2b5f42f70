//! The services behind [`crate::routes::suppressions`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::Viewer;
use crate::cve::Suppressions;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::Meta;
use crate::state::{AppState, now};
use crate::store::cve::Suppression;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;
use trusthub_core::audit as ev;
use utoipa::ToSchema;
use uuid::Uuid;

/// A new suppression (SPEC 2.5).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSuppression {
    /// The package as installed (npm names with their scope; PyPI names are compared by PEP
    /// 503, so `Django_Rest` and `django-rest` are the same).
    #[schema(min_length = 1, max_length = 214)]
    pub package_name: String,
    /// `npm`, `PyPI` (or SPEC's `pip`), `RubyGems`, `Go`, or a distribution (`Debian`,
    /// `Debian:12`, `Ubuntu:22.04`, `Alpine:v3.19`, `AlmaLinux:9`, `Rocky Linux:9`, `Red Hat`);
    /// a distribution without a release covers all of them. `Packagist` (SPEC's `composer`)
    /// takes Composer's constraints.
    #[schema(
        pattern = "^(npm|PyPI|pip|RubyGems|Go|(Debian|Ubuntu|Alpine|AlmaLinux|Rocky Linux|Red Hat)(:[A-Za-z0-9._-]{1,40})?)$"
    )]
    pub ecosystem: String,
    /// Versions in the ecosystem's own syntax: node-semver ranges for npm (`^1.2.3`, `>=1.0.0
    /// <1.4.2 || 2.x`), PEP 440 specifiers for PyPI (`>=2.0,<2.31`, `~=1.4`, `==1.1.*`),
    /// `Gem::Requirement` for RubyGems (`~> 6.1, >= 6.1.7`), Composer constraints for Packagist
    /// (`^3.0`, `~2.1.0`, `>=1.0 <1.4.2 || 2.*`), comparators for Go and the
    /// distributions (`>= 1.2.3-1, << 1.2.3-4`; `||` between alternatives); `*` for every
    /// version. Checked at creation.
    #[schema(min_length = 1, max_length = 1000)]
    pub version_range: String,
    /// Why (1 to 500 characters); recorded in evidence when an upgrade is skipped.
    #[schema(min_length = 1, max_length = 500)]
    pub reason: String,
    /// When it stops applying: an RFC 3339 instant, or an ISO 8601 date meaning 00:00 UTC
    /// that day. In the future and at most one year ahead.
    #[schema(schema_with = expiry_schema)]
    pub expires_at: String,
    /// One vulnerability (its id or an alias: `GHSA-…`, `CVE-…`); absent: every vulnerability
    /// of the package in the range.
    #[schema(min_length = 1, max_length = 100)]
    pub vuln_id: Option<String>,
}

/// An RFC 3339 instant or a date (the two forms [`expiry`] reads).
pub(crate) fn expiry_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    serde_json::from_value(serde_json::json!({"anyOf": [
        {"type": "string", "format": "date-time"},
        {"type": "string", "format": "date"},
    ]}))
    .expect("a schema")
}

/// A suppression.
#[derive(Debug, Serialize, ToSchema)]
pub struct SuppressionView {
    /// Id.
    pub id: Uuid,
    /// As given.
    pub package_name: String,
    /// OSV ecosystem (SPEC's `pip` is stored as `PyPI`).
    pub ecosystem: String,
    /// As given.
    pub version_range: String,
    /// One vulnerability, or absent for all of the package's in the range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vuln_id: Option<String>,
    /// Why.
    pub reason: String,
    /// When it stops applying.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// `user:<id>` or `token:<id>`.
    pub created_by: String,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Whether it has not expired.
    pub active: bool,
    /// Unfixed findings it suppresses now.
    pub findings: i64,
}

pub(crate) fn view(s: Suppression, findings: i64, now: OffsetDateTime) -> SuppressionView {
    SuppressionView {
        active: s.expires_at > now,
        id: s.id,
        package_name: s.package_name,
        ecosystem: s.ecosystem,
        version_range: s.version_range,
        vuln_id: s.vuln_id,
        reason: s.reason,
        expires_at: s.expires_at,
        created_by: s.created_by,
        created_at: s.created_at,
        findings,
    }
}

/// The ecosystem as stored (its OSV spelling), or why it is refused.
pub(crate) fn ecosystem(e: &str) -> Result<String, String> {
    let e = e.trim();
    let (base, release) = match e.split_once(':') {
        Some((b, r)) => (b, Some(r)),
        None => (e, None),
    };
    let canonical = match base.to_ascii_lowercase().as_str() {
        "npm" => "npm",
        "pypi" | "pip" => "PyPI",
        "rubygems" => "RubyGems",
        "go" => "Go",
        "packagist" | "composer" => "Packagist",
        "debian" => "Debian",
        "ubuntu" => "Ubuntu",
        "alpine" => "Alpine",
        "almalinux" => "AlmaLinux",
        "rocky linux" => "Rocky Linux",
        "red hat" => "Red Hat",
        _ => {
            return Err(format!(
                "unknown ecosystem `{e}`: use npm, PyPI (pip), Packagist (composer), RubyGems, Go, Debian, Ubuntu, Alpine, AlmaLinux, Rocky Linux or Red Hat, with :<release> for a distribution's release"
            ));
        }
    };
    match release {
        None => Ok(canonical.to_owned()),
        Some(r)
            if crate::rules::version::Scheme::of_ecosystem(canonical).is_some_and(|s| {
                !matches!(
                    s,
                    crate::rules::version::Scheme::Npm
                        | crate::rules::version::Scheme::Pep440
                        | crate::rules::version::Scheme::Gem
                        | crate::rules::version::Scheme::Go
                )
            }) && !r.is_empty()
                && r.len() <= 40
                && r.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".:-_ ".contains(c)) =>
        {
            Ok(format!("{canonical}:{r}"))
        }
        Some(_) => Err(format!(
            "`{e}`: only a distribution takes a release after the colon (Debian:12)"
        )),
    }
}

/// The instant `expires_at` names: RFC 3339, or a date (00:00 UTC).
pub(crate) fn expiry(s: &str) -> Option<OffsetDateTime> {
    if let Ok(t) = OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339) {
        return Some(t.replace_nanosecond(0).unwrap_or(t));
    }
    let d = time::Date::parse(s, time::macros::format_description!("[year]-[month]-[day]")).ok()?;
    Some(d.midnight().assume_utc())
}

/// Checks a new suppression: every problem at once, each naming its field.
pub(crate) fn check(
    req: &NewSuppression,
    now: OffsetDateTime,
) -> Result<(String, String, OffsetDateTime), ApiError> {
    let mut errors = Vec::new();
    let mut err = |field: &str, message: String| errors.push(FieldError::new(field, message));
    let name = req.package_name.trim();
    if name.is_empty() || name.chars().count() > 214 {
        err("package_name", "1 to 214 characters".into());
    } else if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        err("package_name", "no spaces or control characters".into());
    }
    let eco = match ecosystem(&req.ecosystem) {
        Ok(e) => Some(e),
        Err(m) => {
            err("ecosystem", m);
            None
        }
    };
    if let Some(e) = &eco
        && let Some(scheme) = crate::rules::version::Scheme::of_ecosystem(e)
        && let Err(why) = crate::rules::version::range::Range::parse(scheme, &req.version_range)
    {
        err(
            "version_range",
            format!("not a {} range: {why}", scheme.name()),
        );
    }
    let reason = req.reason.trim();
    if reason.is_empty() || reason.chars().count() > 500 {
        err("reason", "1 to 500 characters".into());
    }
    if let Some(v) = &req.vuln_id {
        let v = v.trim();
        if v.is_empty()
            || v.len() > 100
            || !v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
        {
            err(
                "vuln_id",
                "an advisory id or alias such as GHSA-xxxx-xxxx-xxxx or CVE-2024-1234".into(),
            );
        }
    }
    let latest = now
        .replace_year(now.year() + 1)
        .unwrap_or(now + time::Duration::days(365));
    let expires = match expiry(&req.expires_at) {
        None => {
            err(
                "expires_at",
                "an RFC 3339 instant (2027-01-31T00:00:00Z) or a date (2027-01-31)".into(),
            );
            None
        }
        Some(t) if t <= now => {
            err("expires_at", "must be in the future".into());
            None
        }
        Some(t) if t > latest => {
            err(
                "expires_at",
                format!("at most one year ahead (until {latest})"),
            );
            None
        }
        Some(t) => Some(t),
    };
    match (eco, expires) {
        (Some(e), Some(t)) if errors.is_empty() => {
            let base = e.split(':').next().unwrap_or_default().to_owned();
            Ok((e, crate::rules::scan::normalize_name(&base, name), t))
        }
        _ => Err(ApiError::Validation(errors)),
    }
}

/// Creates a suppression for `p`'s tenant (the API and the dashboard), applies it to the
/// tenant's findings, audited.
pub(crate) async fn create(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    req: &NewSuppression,
) -> ApiResult<SuppressionView> {
    let now = now();
    let (eco, key, expires_at) = check(req, now)?;
    let s = Suppression {
        id: Uuid::now_v7(),
        tenant_id: p.tenant().0,
        ecosystem: eco,
        package_name: req.package_name.trim().to_owned(),
        package_key: key,
        version_range: req.version_range.trim().to_owned(),
        vuln_id: req.vuln_id.as_deref().map(|v| v.trim().to_owned()),
        reason: req.reason.trim().to_owned(),
        expires_at,
        created_by: p.actor(),
        created_at: now,
    };
    let mut tx = state.db.begin().await?;
    crate::store::cve::insert_suppression(&mut tx, &s).await?;
    Suppressions::load(&mut tx, p.tenant(), now)
        .await?
        .apply(&mut tx, p.tenant(), None)
        .await?;
    meta.record(
        &mut tx,
        p,
        ev::CVE_SUPPRESSION_CREATED,
        format!("cve_suppression:{}", s.id),
        json!({"package_name": s.package_name, "ecosystem": s.ecosystem, "version_range": s.version_range,
            "vuln_id": s.vuln_id, "reason": s.reason, "expires_at": s.expires_at.to_string()}),
    )
    .await?;
    let n = count(&mut tx, p.tenant(), s.id, now).await?;
    tx.commit().await?;
    Ok(view(s, n, now))
}

pub(crate) async fn count(
    tx: &mut trusthub_store::Tx,
    tenant: trusthub_store::TenantId,
    id: Uuid,
    now: OffsetDateTime,
) -> ApiResult<i64> {
    Ok(crate::store::cve::suppressions(tx, tenant, now)
        .await?
        .into_iter()
        .find(|(s, _)| s.id == id)
        .map_or(0, |(_, n)| n))
}

/// The service behind `list`, for the API and the dashboard alike.
pub async fn list(state: &AppState, by: &Viewer) -> ApiResult<Vec<SuppressionView>> {
    let p = &by.0;
    let now = now();
    let mut c = state.db.conn().await?;
    let rows = crate::store::cve::suppressions(&mut c, p.tenant(), now).await?;
    Ok(rows.into_iter().map(|(s, n)| view(s, n, now)).collect())
}

/// Deletes a suppression of `p`'s tenant (the API and the dashboard): its findings are
/// matched again against the others. Audited.
pub(crate) async fn delete(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    id: Uuid,
) -> ApiResult<StatusCode> {
    let now = now();
    let mut tx = state.db.begin().await?;
    let Some(s) = crate::store::cve::suppression(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("suppression"));
    };
    crate::store::cve::delete_suppression(&mut tx, p.tenant(), id).await?;
    Suppressions::load(&mut tx, p.tenant(), now)
        .await?
        .apply(&mut tx, p.tenant(), None)
        .await?;
    meta.record(
        &mut tx,
        p,
        ev::CVE_SUPPRESSION_DELETED,
        format!("cve_suppression:{id}"),
        json!({"package_name": s.package_name, "ecosystem": s.ecosystem, "version_range": s.version_range,
            "vuln_id": s.vuln_id, "reason": s.reason}),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The OpenVEX 0.2.0 document of the tenant's suppressions in force.
pub(crate) async fn openvex(
    state: &AppState,
    tenant: trusthub_store::TenantId,
) -> ApiResult<serde_json::Value> {
    let now = now();
    let mut c = state.db.conn().await?;
    let sups = crate::store::cve::suppressions(&mut c, tenant, now).await?;
    let filter = crate::store::cve::Filter {
        status: Some("suppressed".into()),
        ..Default::default()
    };
    let findings = crate::store::cve::list(&mut c, tenant, &filter, None, i64::MAX, now).await?;
    let tenant_name = trusthub_identity::tenant(&mut c, tenant)
        .await?
        .map(|t| t.name)
        .unwrap_or_default();
    let rfc = |t: OffsetDateTime| {
        t.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    };
    let mut statements = Vec::new();
    for (s, _) in sups.iter().filter(|(s, _)| s.expires_at > now) {
        // Per vulnerability: the installed versions it suppresses.
        let mut by_vuln: std::collections::BTreeMap<
            String,
            (Vec<String>, std::collections::BTreeSet<String>),
        > = Default::default();
        for f in findings.iter().filter(|f| f.suppression_id == Some(s.id)) {
            let entry = by_vuln.entry(f.seen.vuln_id.clone()).or_default();
            entry.0 = serde_json::from_str(&f.seen.aliases).unwrap_or_default();
            // The products are what is installed: an OS finding's binary packages.
            let binaries = crate::store::cve::binaries(&f.seen.binaries);
            let installed: Vec<(&str, &str)> = if binaries.is_empty() {
                vec![(&f.seen.package, &f.seen.installed_version)]
            } else {
                binaries
                    .iter()
                    .map(|b| (b.name.as_str(), b.version.as_str()))
                    .collect()
            };
            for (name, version) in installed {
                if let Some(purl) = crate::rules::purl::of(&f.seen.ecosystem, name, Some(version)) {
                    entry.1.insert(purl);
                }
            }
        }
        let mut notes = format!(
            "Trusthub suppression {} of {} {} versions {}, until {}",
            s.id,
            s.ecosystem,
            s.package_name,
            s.version_range,
            rfc(s.expires_at)
        );
        if by_vuln.is_empty() {
            // A suppression of one vulnerability that matches no installed version yet: a
            // statement about the package, its range in the notes.
            let (Some(v), Some(purl)) = (
                &s.vuln_id,
                crate::rules::purl::of(&s.ecosystem, &s.package_name, None),
            ) else {
                continue;
            };
            notes.push_str("; no installed version matches it yet");
            by_vuln.insert(v.clone(), (Vec::new(), [purl].into_iter().collect()));
        }
        for (vuln, (aliases, purls)) in by_vuln {
            let mut vulnerability = json!({"name": vuln});
            if !aliases.is_empty() {
                vulnerability["aliases"] = json!(aliases);
            }
            statements.push(json!({
                "vulnerability": vulnerability,
                "timestamp": rfc(s.created_at),
                "products": purls.iter().map(|p| json!({"@id": p, "identifiers": {"purl": p}})).collect::<Vec<_>>(),
                "status": "not_affected",
                "impact_statement": s.reason,
                "status_notes": notes,
            }));
        }
    }
    let last = sups.iter().map(|(s, _)| s.created_at).max().unwrap_or(now);
    Ok(json!({
        "@context": "https://openvex.dev/ns/v0.2.0",
        "@id": format!("urn:uuid:{}", Uuid::now_v7()),
        "author": format!("Trusthub ({tenant_name})"),
        "role": "Document Creator",
        "timestamp": rfc(now),
        "last_updated": rfc(last.max(now)),
        "version": 1,
        "tooling": "Trusthub",
        "statements": statements,
    }))
}
