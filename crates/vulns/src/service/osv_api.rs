//! The services behind [`crate::routes::osv_api`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::Viewer;
use crate::error::{ApiError, ApiResult, FieldError, all_valid};
use crate::rules::osv::{Record, Verdict};
use crate::state::AppState;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// The most queries in one batch (as api.osv.dev).
pub const MAX_BATCH: usize = 1000;

/// The package of a query: a purl, or a name and an ecosystem.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryPackage {
    /// Package name (with `ecosystem`).
    #[schema(max_length = 500)]
    pub name: Option<String>,
    /// OSV ecosystem (`npm`, `PyPI`, `Debian:12`, …).
    #[schema(max_length = 100)]
    pub ecosystem: Option<String>,
    /// A package URL instead of name and ecosystem (its version, if any, is the query's).
    #[schema(max_length = 1000)]
    pub purl: Option<String>,
}

/// One query (api.osv.dev `v1.Query`).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OsvQuery {
    /// The version to check; absent: every advisory naming the package.
    #[schema(max_length = 200)]
    pub version: Option<String>,
    /// The package (required: commit queries are not served).
    #[schema(value_type = QueryPackage, required = true)]
    pub package: Option<QueryPackage>,
    /// Git commit queries are not served (the imported data is matched by version): null
    /// or absent.
    #[schema(schema_with = no_commit)]
    pub commit: Option<String>,
    /// Accepted for compatibility; every answer here is complete in one page.
    pub page_token: Option<String>,
}

pub(crate) fn no_commit() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    serde_json::from_value(serde_json::json!({"type": "null"})).expect("a schema")
}

/// The answer to one query: full OSV records (empty object when none).
#[derive(Debug, Serialize, ToSchema)]
pub struct QueryResponse {
    /// The advisories affecting the version (or naming the package).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub vulns: Vec<Value>,
}

/// A batch (api.osv.dev `v1.BatchQuery`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchQuery {
    /// Up to 1000 queries.
    #[schema(max_items = 1000)]
    pub queries: Vec<OsvQuery>,
}

/// An advisory in a batch answer: id and last change only, as api.osv.dev.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchVuln {
    /// Advisory id.
    pub id: String,
    /// Its `modified`.
    pub modified: String,
}

/// The answer to one query of a batch.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchResult {
    /// Empty object when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub vulns: Vec<BatchVuln>,
}

/// The answer to a batch, in the order of the queries.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchResponse {
    /// One per query.
    pub results: Vec<BatchResult>,
}

/// Reads a query: `(ecosystem, name, version)`, or what is wrong with it (the field named
/// with `prefix`).
pub(crate) fn read(
    q: &OsvQuery,
    prefix: &str,
) -> Result<(String, String, Option<String>), FieldError> {
    let bad = |field: &str, message: &str| FieldError::new(format!("{prefix}{field}"), message);
    if q.commit.is_some() {
        return Err(bad(
            "commit",
            "commit queries are not served here; query a package and version",
        ));
    }
    let p = q
        .package
        .as_ref()
        .ok_or_else(|| bad("package", "required"))?;
    for (field, value, max) in [
        ("package.name", &p.name, 500),
        ("package.ecosystem", &p.ecosystem, 100),
        ("package.purl", &p.purl, 1000),
    ] {
        if value.as_ref().is_some_and(|v| v.chars().count() > max) {
            return Err(bad(field, &format!("at most {max} characters")));
        }
    }
    let (eco, name, purl_version) = match (&p.purl, &p.name, &p.ecosystem) {
        (Some(purl), None, None) => crate::rules::purl::parse(purl.trim()).ok_or_else(|| {
            bad(
                "package.purl",
                "not a package URL of npm, pypi, gem, golang, composer, deb, apk or rpm",
            )
        })?,
        (None, Some(n), Some(e)) if !n.trim().is_empty() && !e.trim().is_empty() => {
            let e = e.trim();
            let eco = crate::rules::scan::app_ecosystem(e)
                .map(str::to_owned)
                .unwrap_or_else(|| e.to_owned());
            (eco, n.trim().to_owned(), None)
        }
        (Some(_), _, _) => {
            return Err(bad(
                "package",
                "either purl, or name and ecosystem, not both",
            ));
        }
        _ => return Err(bad("package", "name and ecosystem, or purl")),
    };
    let version = match (purl_version, &q.version) {
        (Some(_), Some(_)) => {
            return Err(bad("version", "the purl already has a version"));
        }
        (Some(v), None) => Some(v),
        (None, Some(v)) if v.chars().count() > 200 => {
            return Err(bad("version", "at most 200 characters"));
        }
        (None, v) => v
            .as_ref()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty()),
    };
    Ok((eco, name, version))
}

/// The records visible to `scope` that affect `version` of the package (or name it).
pub(crate) async fn answer(
    c: &mut impl trusthub_store::Exec,
    scope: &str,
    eco: &str,
    name: &str,
    version: Option<&str>,
) -> ApiResult<Vec<(Record, Value)>> {
    let base = eco.split(':').next().unwrap_or_default();
    let lookup = crate::rules::scan::normalize_name(base, name);
    let rows = crate::store::osv::for_package(c, scope, eco, &lookup).await?;
    let mut out: Vec<(Record, Value)> = Vec::new();
    for r in rows {
        let Ok(record) = serde_json::from_str::<Record>(&r.record) else {
            continue;
        };
        if record.withdrawn.is_some() || out.iter().any(|o| o.0.id == record.id) {
            continue;
        }
        let mut hit = false;
        for entry in &record.affected {
            let Some(p) = &entry.package else { continue };
            let pe = crate::rules::scan::app_ecosystem(&p.ecosystem)
                .map(str::to_owned)
                .unwrap_or_else(|| p.ecosystem.clone());
            if !(pe == eco || pe.starts_with(&format!("{eco}:")))
                || crate::rules::scan::normalize_name(base, &p.name) != lookup
            {
                continue;
            }
            match version {
                None => hit = true,
                Some(v) => match entry.verdict(v) {
                    Verdict::Affected { .. } => hit = true,
                    Verdict::NotAffected => {}
                    // Not evaluable: answered as possibly affecting, never as clean.
                    Verdict::Unevaluable(_) => hit = true,
                    Verdict::Unreadable(e) => {
                        return Err(ApiError::invalid("version", e.to_string()));
                    }
                },
            }
        }
        if hit {
            // The record as imported, every field kept.
            let raw = serde_json::from_str(&r.record).unwrap_or(Value::Null);
            out.push((record, raw));
        }
    }
    Ok(out)
}

/// The service behind the `querybatch` handler, for the API and the dashboard alike.
pub async fn querybatch(state: &AppState, by: &Viewer, b: BatchQuery) -> ApiResult<BatchResponse> {
    let p = &by.0;
    if b.queries.len() > MAX_BATCH {
        return Err(ApiError::invalid("queries", "at most 1000 queries"));
    }
    let mut read_all = Vec::new();
    let mut errors = Vec::new();
    for (i, q) in b.queries.iter().enumerate() {
        match read(q, &format!("queries[{i}].")) {
            Ok(x) => read_all.push(x),
            Err(e) => errors.push(e),
        }
    }
    all_valid(errors)?;
    let mut c = state.db.conn().await?;
    let scope = p.tenant().0.to_string();
    let mut results = Vec::new();
    for (i, (eco, name, version)) in read_all.iter().enumerate() {
        let records = answer(&mut c, &scope, eco, name, version.as_deref())
            .await
            .map_err(|e| match e {
                ApiError::Validation(v) => ApiError::Validation(
                    v.into_iter()
                        .map(|f| FieldError::new(format!("queries[{i}].{}", f.field), f.message))
                        .collect(),
                ),
                other => other,
            })?;
        results.push(BatchResult {
            vulns: records
                .into_iter()
                .map(|(r, _)| BatchVuln {
                    id: r.id,
                    modified: r.modified,
                })
                .collect(),
        });
    }
    Ok(BatchResponse { results })
}
