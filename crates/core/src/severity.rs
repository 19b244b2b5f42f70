//! Advisory severity ratings (OSV, CVSS qualitative ratings, distribution labels).

/// Severity labels in CONTRACT 15's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// No usable severity.
    Unknown,
    /// CVSS 0.1–3.9.
    Low,
    /// CVSS 4.0–6.9.
    Medium,
    /// CVSS 7.0–8.9.
    High,
    /// CVSS 9.0–10.0.
    Critical,
}

impl Severity {
    /// `CRITICAL`, `HIGH`, `MEDIUM`, `LOW`, `UNKNOWN`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Unknown => "UNKNOWN",
            Severity::Low => "LOW",
            Severity::Medium => "MEDIUM",
            Severity::High => "HIGH",
            Severity::Critical => "CRITICAL",
        }
    }

    /// 0 (unknown) to 4 (critical), for sorting and thresholds.
    pub fn rank(self) -> i64 {
        self as i64
    }

    /// Reads a label (`HIGH`, `moderate`, `important`, …, case-insensitive).
    pub fn parse(label: &str) -> Option<Severity> {
        Some(match label.trim().to_ascii_lowercase().as_str() {
            "critical" => Severity::Critical,
            "high" | "important" => Severity::High,
            "medium" | "moderate" => Severity::Medium,
            "low" | "negligible" | "unimportant" => Severity::Low,
            "unknown" => Severity::Unknown,
            _ => return None,
        })
    }

    /// The qualitative rating of a CVSS base score.
    pub fn of_score(score: f64) -> Severity {
        match score {
            s if s >= 9.0 => Severity::Critical,
            s if s >= 7.0 => Severity::High,
            s if s >= 4.0 => Severity::Medium,
            s if s > 0.0 => Severity::Low,
            _ => Severity::Unknown,
        }
    }
}
