//! The pure evaluation of a scan against what the hub holds: which rows are new, which
//! changed, which went away, and which alerts to raise or resolve. No I/O: the service
//! applies the result, the benchmark measures it.

use crate::store::FileRow;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use time::OffsetDateTime;
use trusthub_core::drift::{self, ConfigHash, Status};
use uuid::Uuid;

/// What a scan changes.
#[derive(Debug, Default)]
pub struct Changes {
    /// Paths seen for the first time.
    pub inserts: Vec<FileRow>,
    /// Rows whose report or state changed.
    pub updates: Vec<FileRow>,
    /// Paths no longer watched (or a `new` file gone again): forgotten.
    pub deletes: Vec<String>,
    /// Paths whose unexplained drift should have an open alert.
    pub raise: Vec<String>,
    /// Paths back to normal (as in the baseline, or explained): their alert resolves.
    pub resolve: Vec<String>,
    /// Paths that changed into an unexplained drift now (a ticket, if a human rebased the
    /// host within 7 days).
    pub fresh_drift: Vec<String>,
    /// Patterns reported for the first time.
    pub first_patterns: Vec<String>,
}

/// Whether a row's drift needs a human: not ok, not explained, and not waiting for the
/// package version that may explain it.
pub fn unexplained(r: &FileRow) -> bool {
    let waiting = r
        .current
        .as_ref()
        .is_some_and(|c| c.package.is_some() && c.package_version.is_none());
    r.status != Status::Ok && r.explained.is_none() && !waiting
}

fn explanation(
    status: Status,
    baseline: Option<&ConfigHash>,
    current: Option<&ConfigHash>,
    now: OffsetDateTime,
) -> Option<serde_json::Value> {
    let c = current?;
    let at = trusthub_platform::state::rfc3339(now);
    match (status, baseline) {
        (Status::Drifted, Some(b)) => drift::explain(b, c).map(|e| {
            json!({"package": e.package, "from_version": e.from_version, "to_version": e.to_version, "changed_at": at})
        }),
        // A file a package put there, and the package database vouches for.
        (Status::New, None)
            if c.package.is_some()
                && c.package_version.is_some()
                && c.package_verified == Some(true) =>
        {
            Some(json!({"package": c.package, "from_version": null, "to_version": c.package_version, "changed_at": at}))
        }
        _ => None,
    }
}

/// Evaluates a full scan of `agent` (its `patterns` in force) against the rows held.
/// `known_patterns` are the patterns reported before this scan: a file appearing under one
/// of them is `new`; under a pattern reported for the first time it is the baseline.
pub fn evaluate(
    agent: Uuid,
    held: &[FileRow],
    known_patterns: &HashSet<String>,
    patterns: &[String],
    scan: &[ConfigHash],
    now: OffsetDateTime,
) -> Changes {
    let mut out = Changes {
        first_patterns: patterns
            .iter()
            .filter(|p| !known_patterns.contains(*p))
            .cloned()
            .collect(),
        ..Changes::default()
    };
    let by_path: HashMap<&str, &FileRow> = held.iter().map(|r| (r.path.as_str(), r)).collect();
    let mut reported = HashSet::with_capacity(scan.len());
    for h in scan {
        reported.insert(h.path.as_str());
        match by_path.get(h.path.as_str()) {
            None => {
                let under_known = patterns.iter().any(|p| {
                    known_patterns.contains(p) && drift::is_glob(p) && drift::matches(p, &h.path)
                });
                let baseline = (!under_known).then(|| h.clone());
                let status = drift::status(baseline.as_ref(), Some(h));
                let row = FileRow {
                    agent_id: agent,
                    path: h.path.clone(),
                    status,
                    explained: explanation(status, baseline.as_ref(), Some(h), now),
                    baseline_at: baseline.as_ref().map(|_| now),
                    baseline,
                    current: Some(h.clone()),
                    reported_at: now,
                    changed_at: now,
                };
                if unexplained(&row) {
                    out.raise.push(row.path.clone());
                    out.fresh_drift.push(row.path.clone());
                }
                out.inserts.push(row);
            }
            Some(old) => {
                if old.current.as_ref() == Some(h) {
                    continue;
                }
                let status = drift::status(old.baseline.as_ref(), Some(h));
                let explained = match (&old.explained, status == old.status) {
                    // Keep when the explanation was first given, as long as it still holds.
                    (Some(e), true)
                        if explanation(status, old.baseline.as_ref(), Some(h), now)
                            .is_some_and(|n| n["to_version"] == e["to_version"]) =>
                    {
                        Some(e.clone())
                    }
                    _ => explanation(status, old.baseline.as_ref(), Some(h), now),
                };
                let file_changed = !old.current.as_ref().is_some_and(|c| c.same_as(h));
                let row = FileRow {
                    status,
                    explained,
                    current: Some(h.clone()),
                    reported_at: now,
                    changed_at: if file_changed || status != old.status {
                        now
                    } else {
                        old.changed_at
                    },
                    ..(*old).clone()
                };
                if unexplained(&row) {
                    out.raise.push(row.path.clone());
                    if file_changed {
                        out.fresh_drift.push(row.path.clone());
                    }
                } else if unexplained(old) || old.status != Status::Ok {
                    out.resolve.push(row.path.clone());
                }
                out.updates.push(row);
            }
        }
    }
    for old in held {
        if reported.contains(old.path.as_str()) {
            continue;
        }
        let watched = patterns.iter().any(|p| drift::matches(p, &old.path));
        if !watched || old.baseline.is_none() {
            // No longer watched, or a `new` file gone again: nothing to compare any more.
            out.deletes.push(old.path.clone());
            out.resolve.push(old.path.clone());
            continue;
        }
        if old.current.is_none() {
            continue;
        }
        let status = drift::status(old.baseline.as_ref(), None);
        let row = FileRow {
            status,
            explained: None,
            current: None,
            reported_at: now,
            changed_at: now,
            ..old.clone()
        };
        if unexplained(&row) {
            out.raise.push(row.path.clone());
            out.fresh_drift.push(row.path.clone());
        } else {
            out.resolve.push(row.path.clone());
        }
        out.updates.push(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use trusthub_core::drift::Kind;

    fn h(path: &str, sha: char) -> ConfigHash {
        ConfigHash {
            path: path.into(),
            sha256: Some(sha.to_string().repeat(64)),
            size: Some(1),
            mode: Some("0644".into()),
            uid: Some(0),
            gid: Some(0),
            mtime: None,
            kind: Kind::File,
            link_target: None,
            package: None,
            package_version: None,
            package_verified: None,
        }
    }

    /// `evaluate` for the tests' one agent, at the epoch.
    fn scan(
        held: &[FileRow],
        known: &HashSet<String>,
        patterns: &[String],
        files: &[ConfigHash],
    ) -> Changes {
        evaluate(
            Uuid::nil(),
            held,
            known,
            patterns,
            files,
            OffsetDateTime::UNIX_EPOCH,
        )
    }

    fn apply(held: &mut Vec<FileRow>, c: Changes) {
        held.retain(|r| !c.deletes.contains(&r.path));
        for u in c.updates {
            if let Some(r) = held.iter_mut().find(|r| r.path == u.path) {
                *r = u;
            }
        }
        held.extend(c.inserts);
    }

    #[test]
    fn first_scan_is_the_baseline_and_later_files_under_a_glob_are_new() {
        let patterns = vec!["/etc/a".to_owned(), "/etc/d/*".to_owned()];
        let mut held = Vec::new();
        let mut known = HashSet::new();
        let c = scan(
            &held,
            &known,
            &patterns,
            &[h("/etc/a", 'a'), h("/etc/d/x", 'b')],
        );
        assert_eq!(c.inserts.len(), 2);
        assert!(c.raise.is_empty());
        assert_eq!(c.first_patterns, patterns);
        known.extend(c.first_patterns.clone());
        apply(&mut held, c);
        // Unchanged: nothing written.
        let c = scan(
            &held,
            &known,
            &patterns,
            &[h("/etc/a", 'a'), h("/etc/d/x", 'b')],
        );
        assert!(c.inserts.is_empty() && c.updates.is_empty() && c.deletes.is_empty());
        // Changed, a new file under the glob, and one gone.
        let c = scan(
            &held,
            &known,
            &patterns,
            &[h("/etc/a", 'z'), h("/etc/d/y", 'c')],
        );
        assert_eq!(c.inserts[0].status, Status::New);
        assert!(c.inserts[0].baseline.is_none());
        let mut raised = c.raise.clone();
        raised.sort();
        assert_eq!(raised, ["/etc/a", "/etc/d/x", "/etc/d/y"]);
        apply(&mut held, c);
        let status = |p: &str| held.iter().find(|r| r.path == p).map(|r| r.status);
        assert_eq!(status("/etc/a"), Some(Status::Drifted));
        assert_eq!(status("/etc/d/x"), Some(Status::Missing));
        // Back as it was: resolved; the new file gone again: forgotten.
        let c = scan(
            &held,
            &known,
            &patterns,
            &[h("/etc/a", 'a'), h("/etc/d/x", 'b')],
        );
        assert_eq!(c.deletes, ["/etc/d/y"]);
        let mut resolved = c.resolve.clone();
        resolved.sort();
        assert_eq!(resolved, ["/etc/a", "/etc/d/x", "/etc/d/y"]);
    }

    #[test]
    fn a_package_update_explains_and_raises_nothing_until_the_version_is_known() {
        let patterns = vec!["/etc/app.conf".to_owned()];
        let known: HashSet<String> = patterns.iter().cloned().collect();
        let mut v1 = h("/etc/app.conf", 'a');
        v1.package = Some("app".into());
        v1.package_version = Some("1.0".into());
        v1.package_verified = Some(true);
        let c = scan(&[], &known, &patterns, std::slice::from_ref(&v1));
        let held = c.inserts;
        let mut pending = h("/etc/app.conf", 'b');
        pending.package = Some("app".into());
        let c = scan(&held, &known, &patterns, &[pending]);
        assert!(c.raise.is_empty(), "no alert before the version is known");
        let mut v2 = h("/etc/app.conf", 'b');
        v2.package = Some("app".into());
        v2.package_version = Some("2.0".into());
        v2.package_verified = Some(true);
        let c = scan(&held, &known, &patterns, std::slice::from_ref(&v2));
        assert!(c.raise.is_empty());
        assert_eq!(
            c.updates[0].explained.as_ref().expect("explained")["from_version"],
            "1.0"
        );
        let mut hand = v2;
        hand.sha256 = Some("c".repeat(64));
        hand.package_verified = Some(false);
        let c = scan(&held, &known, &patterns, &[hand]);
        assert_eq!(c.raise, ["/etc/app.conf"]);
        assert!(c.updates[0].explained.is_none());
    }
}
