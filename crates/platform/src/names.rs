//! Names and pages for the records audit rows and events point at: `agent:<id>` reads as the
//! host's name linking to its page, `user:<id> token:<id>` as the user's email and the token's
//! name. Each capability names its own kinds ([`Namer`], declared on its
//! [`Capability`](crate::capability::Capability)); the composition root collects them into
//! [`Namers`], a part of the state, and pages and the API resolve through [`resolve`].

use crate::state::AppState;
use std::collections::HashMap;
use trusthub_store::{StoreResult, TenantId};
use uuid::Uuid;

/// Names of a tenant's records of one kind, by id (absent ids are simply not in the map).
pub type NamesFn = for<'a> fn(
    &'a AppState,
    TenantId,
    &'a [Uuid],
) -> crate::BoxFuture<'a, StoreResult<HashMap<Uuid, String>>>;

/// How one kind of record (`agent`, `app`, …) is named and where its page is.
#[derive(Debug, Clone, Copy)]
pub struct Namer {
    /// The prefix in references (`agent` in `agent:<id>`).
    pub kind: &'static str,
    /// What the record is called when it qualifies another (`token` in "… via token ci").
    pub label: &'static str,
    /// Its dashboard page, `{id}` replaced by the id; `None` when it has none.
    pub page: Option<&'static str>,
    /// Looks the names up.
    pub names: NamesFn,
}

/// Every capability's namers (a part of the state).
#[derive(Debug, Default)]
pub struct Namers(pub Vec<Namer>);

/// A reference read for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The name (`web-1`, `ops@example.com via token ci`).
    pub name: String,
    /// The page of the first record named, when it has one.
    pub link: Option<String>,
}

fn parts(reference: &str) -> impl Iterator<Item = (&str, Uuid)> {
    reference.split_whitespace().filter_map(|p| {
        let (kind, id) = p.split_once(':')?;
        Some((kind, Uuid::parse_str(id).ok()?))
    })
}

/// Names for `references` (`kind:<uuid>`, several separated by spaces) of `tenant`'s records.
/// A reference none of whose records is known (deleted since, or a kind nobody names) is not
/// in the answer. Names are decoration: a lookup that fails is logged, never an error.
pub async fn resolve<'r>(
    state: &AppState,
    tenant: TenantId,
    references: impl IntoIterator<Item = &'r str>,
) -> HashMap<String, Named> {
    let references: Vec<&str> = references.into_iter().collect();
    let Some(namers) = state.parts.get::<Namers>() else {
        return HashMap::new();
    };
    let mut wanted: HashMap<&str, Vec<Uuid>> = HashMap::new();
    for (kind, id) in references.iter().flat_map(|r| parts(r)) {
        let ids = wanted.entry(kind).or_default();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let mut found: HashMap<(&str, Uuid), (String, &Namer)> = HashMap::new();
    for namer in &namers.0 {
        let Some(ids) = wanted.get(namer.kind) else {
            continue;
        };
        match (namer.names)(state, tenant, ids).await {
            Ok(names) => {
                for (id, name) in names {
                    found.insert((namer.kind, id), (name, namer));
                }
            }
            Err(e) => tracing::warn!(kind = namer.kind, error = %e, "names: lookup failed"),
        }
    }
    let mut out = HashMap::new();
    for reference in references {
        let mut named: Option<Named> = None;
        for (kind, id) in parts(reference) {
            let Some((name, namer)) = found.get(&(kind, id)) else {
                continue;
            };
            match &mut named {
                None => {
                    named = Some(Named {
                        name: name.clone(),
                        link: namer.page.map(|p| p.replace("{id}", &id.to_string())),
                    });
                }
                Some(n) => n.name = format!("{} via {} {name}", n.name, namer.label),
            }
        }
        if let Some(n) = named {
            out.insert(reference.to_owned(), n);
        }
    }
    out
}

/// Keeps the entries of `all` whose id is in `ids` (for namers that read a tenant's list).
pub fn only(all: impl IntoIterator<Item = (Uuid, String)>, ids: &[Uuid]) -> HashMap<Uuid, String> {
    all.into_iter().filter(|(id, _)| ids.contains(id)).collect()
}
