//! Alerts and alert rules (SPEC 2.3, 2.4; CONTRACT 7, 10): severities, rule operators and
//! windows, and the grouping of a rule's series.

use std::collections::BTreeMap;

/// Alert severities, ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Information.
    Info,
    /// Needs attention.
    Warning,
    /// Needs action now.
    Critical,
}

impl Severity {
    /// Every severity, lowest first.
    pub const ALL: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Critical];

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }

    /// Parses a wire value.
    pub fn parse(s: &str) -> Option<Severity> {
        Severity::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// 0, 1, 2: stored beside the name so filters can compare.
    pub fn rank(self) -> i64 {
        self as i64
    }
}

/// Where an alert came from (CONTRACT 7 `source`).
pub mod source {
    /// An alert rule over metrics.
    pub const RULE: &str = "rule";
    /// The application liveness check.
    pub const LIVENESS: &str = "liveness";
    /// An agent's integrity anomaly (CONTRACT 14).
    pub const AGENT: &str = "agent";
    /// New vulnerabilities found on a host (CONTRACT 15).
    pub const CVE: &str = "cve";
    /// A dependency's maintainers changed (CONTRACT 15).
    pub const SUPPLY_CHAIN: &str = "supply_chain";
    /// An SLO's error budget burns too fast (CONTRACT 16).
    pub const SLO: &str = "slo";
    /// Auto-patch dispatched or rolled back a patch (CONTRACT 19).
    pub const AUTO_PATCH: &str = "auto_patch";
    /// A honeypot was touched (CONTRACT 25).
    pub const HONEYPOT: &str = "honeypot";
}

/// A rule's comparison (CONTRACT 10: `> >= < <= == !=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    /// Parses an operator.
    pub fn parse(s: &str) -> Option<Op> {
        Some(match s {
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "<" => Op::Lt,
            "<=" => Op::Le,
            "==" => Op::Eq,
            "!=" => Op::Ne,
            _ => return None,
        })
    }

    /// Whether `value op threshold` holds. `==` and `!=` compare with a relative tolerance
    /// of 1e-9, because the value is an average.
    pub fn holds(self, value: f64, threshold: f64) -> bool {
        let eq = (value - threshold).abs() <= 1e-9 * value.abs().max(threshold.abs()).max(1.0);
        match self {
            Op::Gt => value > threshold,
            Op::Ge => value >= threshold || eq,
            Op::Lt => value < threshold,
            Op::Le => value <= threshold || eq,
            Op::Eq => eq,
            Op::Ne => !eq,
        }
    }
}

/// Shortest rule window.
pub const MIN_WINDOW_SECS: i64 = 60;
/// Longest rule window.
pub const MAX_WINDOW_SECS: i64 = 30 * 86_400;

/// Parses a rule window like `5m`, `1h`, `1d` (also `90s`), 1 minute to 30 days.
pub fn parse_window(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let err = || "must be a duration like 5m, 1h or 1d (1 minute to 30 days)".to_owned();
    let at = s.find(|c: char| !c.is_ascii_digit()).ok_or_else(err)?;
    let (num, unit) = s.split_at(at);
    let n: i64 = num.parse().map_err(|_| err())?;
    let secs = match unit {
        "s" => n,
        "m" => n.checked_mul(60).ok_or_else(err)?,
        "h" => n.checked_mul(3600).ok_or_else(err)?,
        "d" => n.checked_mul(86_400).ok_or_else(err)?,
        _ => return Err(err()),
    };
    if (MIN_WINDOW_SECS..=MAX_WINDOW_SECS).contains(&secs) {
        Ok(secs)
    } else {
        Err(err())
    }
}

/// The `group_by` key that means the agent itself; any other key is a label.
pub const GROUP_AGENT: &str = "agent_id";

/// The group of one series: for each `group_by` key, the agent id or the label's value
/// (empty when the series lacks that label).
pub fn group_of(
    group_by: &[String],
    agent_id: &str,
    labels: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    group_by
        .iter()
        .map(|k| {
            let v = if k == GROUP_AGENT {
                agent_id.to_owned()
            } else {
                labels.get(k).cloned().unwrap_or_default()
            };
            (k.clone(), v)
        })
        .collect()
}

/// The open-alert fingerprint of a rule's group.
pub fn rule_fingerprint(rule_id: &str, group: &BTreeMap<String, String>) -> String {
    let g: Vec<String> = group.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("rule:{rule_id}:{}", g.join(","))
}

/// The open-alert fingerprint of an app's liveness incident.
pub fn liveness_fingerprint(app_id: &str) -> String {
    format!("liveness:{app_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities_order_and_parse() {
        assert!(Severity::Critical > Severity::Warning && Severity::Warning > Severity::Info);
        assert_eq!(Severity::parse("warning"), Some(Severity::Warning));
        assert_eq!(Severity::parse("WARNING"), None);
        assert_eq!(Severity::Critical.rank(), 2);
    }

    #[test]
    fn operators_compare_averages() {
        assert!(Op::parse(">").is_some_and(|o| o.holds(2.0, 1.0)));
        assert!(!Op::Gt.holds(1.0, 1.0));
        assert!(Op::Ge.holds(1.0, 1.0));
        assert!(Op::Lt.holds(0.5, 1.0));
        assert!(Op::Le.holds(1.0, 1.0));
        assert!(Op::Eq.holds(0.1 + 0.2, 0.3));
        assert!(Op::Ne.holds(0.31, 0.3));
        assert!(Op::parse("=>").is_none());
    }

    #[test]
    fn windows_parse_within_bounds() {
        assert_eq!(parse_window("5m"), Ok(300));
        assert_eq!(parse_window("1h"), Ok(3600));
        assert_eq!(parse_window("1d"), Ok(86_400));
        assert_eq!(parse_window("90s"), Ok(90));
        assert!(parse_window("30s").is_err());
        assert!(parse_window("31d").is_err());
        assert!(parse_window("1w").is_err());
        assert!(parse_window("h").is_err());
        assert!(parse_window("99999999999999999999d").is_err());
    }

    #[test]
    fn groups_use_the_agent_or_labels() {
        let labels = BTreeMap::from([("container_name".to_owned(), "db".to_owned())]);
        let g = group_of(
            &["agent_id".into(), "container_name".into(), "mount".into()],
            "a1",
            &labels,
        );
        assert_eq!(
            rule_fingerprint("r1", &g),
            "rule:r1:agent_id=a1,container_name=db,mount="
        );
        assert_eq!(rule_fingerprint("r1", &BTreeMap::new()), "rule:r1:");
    }
}
