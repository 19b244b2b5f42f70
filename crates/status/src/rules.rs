//! The status rules, pure (CONTRACT 32): what a page's input must be, each app's state and
//! daily uptime, the page's overall status, and the Atom feed of its incidents.

use serde::Serialize;
use trusthub_slo::objective::{Span, Verdict, tally};
use utoipa::ToSchema;

/// Incident statuses, in their usual order.
pub const INCIDENT_STATUSES: [&str; 4] = ["investigating", "identified", "monitoring", "resolved"];
/// Incident impacts, least first.
pub const IMPACTS: [&str; 4] = ["none", "minor", "major", "critical"];
/// Most days of uptime a page shows.
pub const MAX_DAYS: i64 = 90;
/// Most groups on a page, and apps in a group.
pub const MAX_GROUPS: usize = 20;
/// Most apps in one group.
pub const MAX_APPS_PER_GROUP: usize = 100;

const DAY: i64 = 86_400;

/// Checks a slug: 3 to 64 lower-case letters, digits and `-`, not starting or ending with `-`.
pub fn slug(s: &str) -> Result<(), String> {
    let ok = (3..=64).contains(&s.len())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err("must be 3 to 64 lower-case letters, digits and `-` (not at either end)".into())
    }
}

/// Checks a text: trimmed, 1 to `max` characters, no control characters but new lines.
pub fn text(s: &str, max: usize) -> Result<String, String> {
    let t = s.trim();
    if t.is_empty() || t.chars().count() > max {
        return Err(format!("must be 1 to {max} characters"));
    }
    if t.chars().any(|c| c.is_control() && c != '\n') {
        return Err("must not contain control characters".into());
    }
    Ok(t.to_owned())
}

/// An app's state on a page: `up`, `degraded` (failing, not down yet), `down`,
/// `maintenance` or `unknown` (not checked yet).
pub fn app_status(
    observed: Option<&str>,
    expected: &str,
    failing: bool,
    in_maintenance: bool,
) -> &'static str {
    if in_maintenance {
        return "maintenance";
    }
    match observed {
        None | Some("unknown") => "unknown",
        Some(o) if o != expected => "down",
        Some(_) if failing => "degraded",
        Some(_) => "up",
    }
}

/// The page's status from its apps' states and its open incidents' impacts: the worst of
/// what the apps say (every app down: `major_outage`; some: `partial_outage`; some
/// degraded: `degraded`; some in maintenance and none worse: `maintenance`) and what the
/// incidents say (critical: `major_outage`, major: `partial_outage`, minor: `degraded`).
pub fn overall(apps: &[&str], open_impacts: &[&str]) -> &'static str {
    let known: Vec<&&str> = apps.iter().filter(|s| **s != "unknown").collect();
    let down = known.iter().filter(|s| ***s == "down").count();
    let from_apps = if down > 0 && down == known.len() {
        4
    } else if down > 0 {
        3
    } else if known.iter().any(|s| **s == "degraded") {
        2
    } else if known.iter().any(|s| **s == "maintenance") {
        1
    } else {
        0
    };
    let from_incidents = open_impacts
        .iter()
        .map(|i| match *i {
            "critical" => 4,
            "major" => 3,
            "minor" => 2,
            _ => 0,
        })
        .max()
        .unwrap_or(0);
    match from_apps.max(from_incidents) {
        4 => "major_outage",
        3 => "partial_outage",
        2 => "degraded",
        1 => "maintenance",
        _ => "operational",
    }
}

/// One day's uptime.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct DayUptime {
    /// The UTC day (`2026-12-01`).
    pub date: String,
    /// Up share of the day's observed time outside maintenance, percent, two decimals (null:
    /// nothing observed that day).
    pub uptime_percent: Option<f64>,
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// The last `days` UTC days up to `now`'s (oldest first) and the whole period's uptime,
/// from an app's timeline `spans` (sorted, disjoint) and maintenance windows.
pub fn daily(
    spans: &[Span],
    maintenance: &[(i64, i64)],
    now: i64,
    days: i64,
) -> (Vec<DayUptime>, Option<f64>) {
    let today = now.div_euclid(DAY) * DAY;
    let pct = |observed: i64, down: i64| {
        (observed > 0).then(|| round2(100.0 * (observed - down) as f64 / observed as f64))
    };
    let out = (0..days)
        .rev()
        .map(|back| {
            let start = today - back * DAY;
            let t = tally(spans, maintenance, start, (start + DAY).min(now));
            let date = time::OffsetDateTime::from_unix_timestamp(start)
                .map(|d| d.date().to_string())
                .unwrap_or_default();
            DayUptime {
                date,
                uptime_percent: pct(t.observed_secs, t.down_secs),
            }
        })
        .collect();
    let whole = tally(spans, maintenance, today - (days - 1) * DAY, now);
    (out, pct(whole.observed_secs, whole.down_secs))
}

/// A monitors timeline span as the SLO arithmetic reads it.
pub fn span(start: i64, end: i64, down: bool) -> Span {
    Span {
        start,
        end,
        verdict: if down {
            Verdict::Differs
        } else {
            Verdict::Matches
        },
    }
}

/// XML's five escapes.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

/// One incident as the feed tells it.
pub struct FeedEntry<'a> {
    /// Its id (the entry's `urn:uuid:`).
    pub id: uuid::Uuid,
    /// Title.
    pub title: &'a str,
    /// Status and impact, for the summary.
    pub status: &'a str,
    /// Impact.
    pub impact: &'a str,
    /// Its updates, newest first: `(status, message, RFC 3339 time)`.
    pub updates: Vec<(&'a str, &'a str, String)>,
    /// First published (RFC 3339).
    pub published: String,
    /// Last updated (RFC 3339).
    pub updated: String,
}

/// An Atom 1.0 feed (RFC 4287) of a page's incidents, newest first.
pub fn atom(
    title: &str,
    page_url: &str,
    feed_url: &str,
    updated: &str,
    entries: &[FeedEntry<'_>],
) -> String {
    let mut x = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n",
    );
    x.push_str(&format!("  <title>{} status</title>\n", xml_escape(title)));
    x.push_str(&format!("  <id>{}</id>\n", xml_escape(feed_url)));
    x.push_str(&format!(
        "  <link rel=\"self\" type=\"application/atom+xml\" href=\"{}\"/>\n",
        xml_escape(feed_url)
    ));
    x.push_str(&format!(
        "  <link rel=\"alternate\" type=\"text/html\" href=\"{}\"/>\n",
        xml_escape(page_url)
    ));
    x.push_str(&format!("  <updated>{updated}</updated>\n"));
    x.push_str(&format!(
        "  <author><name>{}</name></author>\n",
        xml_escape(title)
    ));
    x.push_str("  <generator>Trusthub</generator>\n");
    for e in entries {
        x.push_str("  <entry>\n");
        x.push_str(&format!("    <id>urn:uuid:{}</id>\n", e.id));
        x.push_str(&format!("    <title>{}</title>\n", xml_escape(e.title)));
        x.push_str(&format!(
            "    <link rel=\"alternate\" type=\"text/html\" href=\"{}#incident-{}\"/>\n",
            xml_escape(page_url),
            e.id
        ));
        x.push_str(&format!("    <published>{}</published>\n", e.published));
        x.push_str(&format!("    <updated>{}</updated>\n", e.updated));
        x.push_str(&format!(
            "    <summary>{} · impact {}</summary>\n",
            xml_escape(e.status),
            xml_escape(e.impact)
        ));
        let mut html = String::new();
        for (status, message, at) in &e.updates {
            html.push_str(&format!(
                "<p><strong>{}</strong> ({}): {}</p>",
                xml_escape(status),
                xml_escape(at),
                xml_escape(message)
            ));
        }
        x.push_str(&format!(
            "    <content type=\"html\">{}</content>\n",
            xml_escape(&html)
        ));
        x.push_str("  </entry>\n");
    }
    x.push_str("</feed>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overall_status_is_the_worst_of_the_apps_and_the_open_incidents() {
        assert_eq!(overall(&["up", "up"], &[]), "operational");
        assert_eq!(overall(&["up", "unknown"], &[]), "operational");
        assert_eq!(overall(&["up", "down"], &[]), "partial_outage");
        assert_eq!(overall(&["down", "down", "unknown"], &[]), "major_outage");
        assert_eq!(overall(&["up", "degraded"], &[]), "degraded");
        assert_eq!(overall(&["up", "maintenance"], &[]), "maintenance");
        assert_eq!(overall(&["up", "maintenance"], &["minor"]), "degraded");
        assert_eq!(overall(&["up"], &["critical"]), "major_outage");
        assert_eq!(overall(&[], &["none"]), "operational");
    }

    #[test]
    fn days_count_observed_time_outside_maintenance() {
        let day = 86_400;
        let now = 10 * day + 3_600; // an hour into day 10
        // Day 9: up all day but 6 h down; day 10: up for its first hour.
        let spans = [
            span(9 * day, 9 * day + 18 * 3_600, false),
            span(9 * day + 18 * 3_600, 10 * day, true),
            span(10 * day, now, false),
        ];
        let (days, whole) = daily(&spans, &[], now, 3);
        assert_eq!(days.len(), 3);
        assert_eq!(days[0].uptime_percent, None, "nothing observed on day 8");
        assert_eq!(days[1].uptime_percent, Some(75.0));
        assert_eq!(days[2].uptime_percent, Some(100.0));
        assert_eq!(days[2].date, "1970-01-11");
        assert_eq!(whole, Some(round2(100.0 * (18.0 + 1.0) / 25.0)));
        // The down hours in maintenance do not count.
        let (days, _) = daily(&spans, &[(9 * day + 18 * 3_600, 10 * day)], now, 3);
        assert_eq!(days[1].uptime_percent, Some(100.0));
    }

    #[test]
    fn slugs_and_escapes() {
        assert!(slug("acme-status").is_ok());
        for bad in ["ab", "-acme", "Acme", "acme status", "acme/x"] {
            assert!(slug(bad).is_err(), "{bad}");
        }
        assert_eq!(xml_escape("a<b & \"c\"\u{7}"), "a&lt;b &amp; &quot;c&quot;");
    }
}
