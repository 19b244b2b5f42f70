//! What an npm packument says about who publishes a package (SPEC 2.7, CONTRACT 15): the
//! maintainer set — the packument's `maintainers` and the latest version's `_npmUser` — the
//! latest version's deprecation, and when the registry last changed it.

use serde_json::Value;

/// The facts of one packument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// Maintainer names, sorted, each once.
    pub maintainers: Vec<String>,
    /// `dist-tags.latest`.
    pub latest: Option<String>,
    /// That version's `deprecated` message.
    pub deprecated: Option<String>,
    /// `time.modified`.
    pub modified: Option<String>,
}

/// A person as the registry writes one: `{"name": …}` or `"name <email> (url)"`.
fn person(v: &Value) -> Option<String> {
    let name = match v {
        Value::Object(o) => o.get("name")?.as_str()?.to_owned(),
        Value::String(s) => s
            .split(['<', '('])
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned(),
        _ => return None,
    };
    Some(name).filter(|n| !n.is_empty())
}

/// Reads a full packument (`Accept: application/json`); `None` when it is not one.
pub fn facts(packument: &Value) -> Option<Facts> {
    packument.get("name")?.as_str()?;
    let mut maintainers: Vec<String> = packument["maintainers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(person)
        .collect();
    let latest = packument["dist-tags"]["latest"].as_str().map(str::to_owned);
    let version = latest
        .as_deref()
        .map(|l| &packument["versions"][l])
        .unwrap_or(&Value::Null);
    if let Some(u) = person(&version["_npmUser"]) {
        maintainers.push(u);
    }
    maintainers.sort();
    maintainers.dedup();
    let deprecated = version["deprecated"]
        .as_str()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(str::to_owned);
    Some(Facts {
        maintainers,
        latest,
        deprecated,
        modified: packument["time"]["modified"].as_str().map(str::to_owned),
    })
}

/// The registry path of a package: scoped names keep their `@` and encode the `/`.
pub fn registry_path(name: &str) -> String {
    match name.strip_prefix('@').and_then(|n| n.split_once('/')) {
        Some((scope, n)) => format!("@{scope}%2F{n}"),
        None => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn maintainers_are_the_list_and_the_latest_publisher() {
        let p = json!({"name": "left-pad", "dist-tags": {"latest": "1.3.0"},
            "maintainers": [{"name": "stevemao", "email": "a@b"}, "camwest <c@d> (https://x)"],
            "versions": {"1.3.0": {"_npmUser": {"name": "newcomer"}, "deprecated": "use String.prototype.padStart()"}},
            "time": {"modified": "2024-01-02T03:04:05.678Z"}});
        let f = facts(&p).expect("a packument");
        assert_eq!(f.maintainers, ["camwest", "newcomer", "stevemao"]);
        assert_eq!(f.latest.as_deref(), Some("1.3.0"));
        assert_eq!(
            f.deprecated.as_deref(),
            Some("use String.prototype.padStart()")
        );
        assert_eq!(f.modified.as_deref(), Some("2024-01-02T03:04:05.678Z"));
        assert_eq!(facts(&json!({"error": "not found"})), None);
        assert_eq!(registry_path("@babel/core"), "@babel%2Fcore");
        assert_eq!(registry_path("lodash"), "lodash");
    }
}
