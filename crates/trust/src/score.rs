//! The v12 formula. Components and weights (sum 100): `vulnerabilities` 30, `agent_health`
//! 20, `patching` 15, `drift` 10, `slo` 10, `integrity` 10, `access` 5. A component without
//! inputs is `null` and its weight is spread over the others in proportion; the final score
//! is the weighted mean of the rest, with one decimal. A component's score is `max(0, 100 +
//! the sum of its reasons' points)`; every point lost is a reason naming what lost it.
//!
//! Points (v12): an open finding CRITICAL −10, HIGH −5, MEDIUM −2, LOW −1 (per host and
//! severity); a host without an active client certificate −5 (SPEC 5.8); a host silent for
//! longer than three ingest intervals (at least 15 minutes) −10; a host waiting for a reboot
//! −5; an auto-patch attempt rolled back in the last 7 days −5; a drifted file not explained
//! by a package update −10; an SLO burning −10, exhausted −25; an open integrity anomaly −20;
//! an admin or owner without TOTP −25; an API token older than 90 days without expiry −10.
//!
//! v13 (CONTRACT 33) reads v12's inputs and the tenant's apps and checks: those without an
//! SLO lose `slo` points by their 30-day availability (below 99.9 % −5, below 99 % −10,
//! below 95 % −25), and caps hold the band down whatever the points: at most `orange` while
//! an open CRITICAL finding exists or an app or check is down, at most `red` while one has
//! been down for over 24 hours. v12 is unchanged.

use serde::{Deserialize, Serialize};
use sha2::Digest;

/// The formula's version, in the path and in every answer.
pub const VERSION: &str = "v12";

/// The newest formula's version (the badge and the Trust page show it).
pub const NEWEST: &str = "v13";

/// What the formula reads, as the capabilities report it. Serialised canonically (RFC 8785)
/// it is what `inputs_sha256` hashes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inputs {
    /// The tenant's hosts.
    pub hosts: Vec<Host>,
    /// Auto-patch attempts rolled back in the last 7 days.
    pub rolled_back: Vec<RolledBack>,
    /// Drifted files not explained by a package update; `None` while the tenant watches no
    /// configuration.
    pub drift: Option<Vec<Drift>>,
    /// The tenant's SLOs.
    pub slos: Vec<Slo>,
    /// Open integrity anomalies.
    pub anomalies: Vec<Anomaly>,
    /// Users with the admin or owner role.
    pub admins: Vec<Admin>,
    /// API tokens older than 90 days without an expiry.
    pub old_tokens: Vec<Token>,
}

/// A host's facts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// Agent id.
    pub id: String,
    /// Host name.
    pub hostname: String,
    /// Open findings (not acknowledged, not suppressed): CRITICAL, HIGH, MEDIUM, LOW.
    pub findings: [u32; 4],
    /// An active client certificate.
    pub client_certificate: bool,
    /// Heard from within three ingest intervals (at least 15 minutes).
    pub reporting: bool,
    /// Waiting for a reboot.
    pub reboot_required: bool,
}

/// A rolled-back attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolledBack {
    /// The action's nonce.
    pub eat_nonce: String,
    /// Agent id.
    pub agent_id: String,
    /// What it tried.
    pub packages: String,
}

/// An unexplained drift.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Drift {
    /// Agent id.
    pub agent_id: String,
    /// The file.
    pub path: String,
}

/// An SLO and its state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// Its id.
    pub id: String,
    /// What it is about (the app's name).
    pub name: String,
    /// `ok`, `burning`, `exhausted` or `unknown`.
    pub state: String,
}

/// An open integrity anomaly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Anomaly {
    /// Its id.
    pub id: String,
    /// Its kind.
    pub kind: String,
}

/// An admin or owner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Admin {
    /// User id.
    pub id: String,
    /// Email.
    pub email: String,
    /// TOTP enrolled.
    pub totp: bool,
}

/// An old API token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Token {
    /// Token id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its age in days.
    pub age_days: i64,
}

/// Why points were lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Reason {
    /// A stable code (`open_critical`, `no_client_certificate`, …).
    pub code: String,
    /// Points lost (negative).
    pub points: f64,
    /// What a person reads.
    pub message: String,
    /// What lost them (`agent:<id>`, `slo:<id>`, `user:<id>`, `token:<id>`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject_ref: Option<String>,
}

/// One component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Component {
    /// `vulnerabilities`, `agent_health`, …
    pub id: String,
    /// Its effective weight after spreading (0 when null).
    pub weight: f64,
    /// 0..100, `None` when it has no inputs.
    pub score: Option<f64>,
    /// Every point it lost.
    pub reasons: Vec<Reason>,
}

/// The score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// `v12`.
    pub version: String,
    /// 0..100, one decimal.
    pub final_score: f64,
    /// `red`, `orange`, `green`, `darkgreen`.
    pub band: String,
    /// SHA-256 (hex) of the canonical JSON of the inputs.
    pub inputs_sha256: String,
    /// The components in their fixed order.
    pub components: Vec<Component>,
    /// What holds the band down (v13 on; always empty in v12).
    pub caps: Vec<Cap>,
}

/// A limit on the band, whatever the points say (v13): an open CRITICAL finding or a
/// monitored app or check down holds it at `orange`, one down for over 24 hours at `red`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Cap {
    /// `open_critical`, `down` or `down_over_24h`.
    pub code: String,
    /// The highest band it allows (`orange` or `red`).
    pub band: String,
    /// What a person reads.
    pub message: String,
    /// What caps it (`agent:<id>`, `app:<id>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject_ref: Option<String>,
}

/// v13's inputs: v12's, and the tenant's monitored apps and checks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputsV13 {
    /// What v12 reads.
    pub base: Inputs,
    /// The apps and checks.
    pub apps: Vec<App>,
}

/// A monitored app or check.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct App {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Whether it has an SLO (then the SLO's state counts, not its availability).
    pub has_slo: bool,
    /// Percent of the last 30 days it was up, two decimals; `None` without observed time.
    pub availability_30d: Option<f64>,
    /// Since when it is down (RFC 3339), `None` while it is not.
    pub down_since: Option<String>,
    /// Down for over 24 hours.
    pub down_over_24h: bool,
}

/// The components and their weights (sum 100).
pub const WEIGHTS: [(&str, f64); 7] = [
    ("vulnerabilities", 30.0),
    ("agent_health", 20.0),
    ("patching", 15.0),
    ("drift", 10.0),
    ("slo", 10.0),
    ("integrity", 10.0),
    ("access", 5.0),
];

/// The band of a score (CONTRACT 21): below 50 red, 50 up to 70 orange, 70 up to and
/// including 85 green, above 85 dark green.
pub fn band(score: f64) -> &'static str {
    if score < 50.0 {
        "red"
    } else if score < 70.0 {
        "orange"
    } else if score <= 85.0 {
        "green"
    } else {
        "darkgreen"
    }
}

/// The hex colour of a band (shields.io's palette).
pub fn colour(band: &str) -> &'static str {
    match band {
        "red" => "e05d44",
        "orange" => "fe7d37",
        "green" => "97ca00",
        _ => "44cc11",
    }
}

fn reason(code: &str, points: f64, message: String, subject: Option<String>) -> Reason {
    Reason {
        code: code.to_owned(),
        points,
        message,
        subject_ref: subject,
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Each component's reasons, `None` for a component without inputs.
fn reasons(i: &Inputs) -> Vec<(&'static str, Option<Vec<Reason>>)> {
    let hosts = !i.hosts.is_empty();
    let agent = |id: &str| Some(format!("agent:{id}"));
    let vulnerabilities = hosts.then(|| {
        let mut out = Vec::new();
        for h in &i.hosts {
            for (k, (code, name, points)) in [
                ("open_critical", "CRITICAL", -10.0),
                ("open_high", "HIGH", -5.0),
                ("open_medium", "MEDIUM", -2.0),
                ("open_low", "LOW", -1.0),
            ]
            .into_iter()
            .enumerate()
            {
                let n = h.findings[k];
                if n > 0 {
                    out.push(reason(
                        code,
                        points * f64::from(n),
                        format!(
                            "{} on {}",
                            plural(
                                u64::from(n),
                                &format!("open {name} finding"),
                                &format!("open {name} findings")
                            ),
                            h.hostname
                        ),
                        agent(&h.id),
                    ));
                }
            }
        }
        out
    });
    let agent_health = hosts.then(|| {
        let mut out = Vec::new();
        for h in &i.hosts {
            if !h.client_certificate {
                out.push(reason(
                    "no_client_certificate",
                    -5.0,
                    format!("{} has no active client certificate", h.hostname),
                    agent(&h.id),
                ));
            }
            if !h.reporting {
                out.push(reason(
                    "agent_silent",
                    -10.0,
                    format!(
                        "{} has not reported for more than three intervals",
                        h.hostname
                    ),
                    agent(&h.id),
                ));
            }
        }
        out
    });
    let patching = hosts.then(|| {
        let mut out = Vec::new();
        for h in i.hosts.iter().filter(|h| h.reboot_required) {
            out.push(reason(
                "reboot_required",
                -5.0,
                format!("{} waits for a reboot", h.hostname),
                agent(&h.id),
            ));
        }
        for r in &i.rolled_back {
            out.push(reason(
                "patch_rolled_back",
                -5.0,
                format!("an auto-patch was rolled back: {}", r.packages),
                Some(format!("action:{}", r.eat_nonce)),
            ));
        }
        out
    });
    let drift = i.drift.as_ref().map(|d| {
        d.iter()
            .map(|x| {
                reason(
                    "unexplained_drift",
                    -10.0,
                    format!("{} changed without a package update or a rebase", x.path),
                    agent(&x.agent_id),
                )
            })
            .collect()
    });
    let slo = (!i.slos.is_empty()).then(|| {
        i.slos
            .iter()
            .filter_map(|s| {
                let (code, points) = match s.state.as_str() {
                    "burning" => ("slo_burning", -10.0),
                    "exhausted" => ("slo_exhausted", -25.0),
                    _ => return None,
                };
                Some(reason(
                    code,
                    points,
                    format!("the SLO of {} is {}", s.name, s.state),
                    Some(format!("slo:{}", s.id)),
                ))
            })
            .collect()
    });
    let integrity = hosts.then(|| {
        i.anomalies
            .iter()
            .map(|a| {
                reason(
                    "integrity_anomaly",
                    -20.0,
                    format!("open integrity anomaly: {}", a.kind),
                    Some(format!("anomaly:{}", a.id)),
                )
            })
            .collect()
    });
    let mut access = Vec::new();
    for a in i.admins.iter().filter(|a| !a.totp) {
        access.push(reason(
            "admin_without_totp",
            -25.0,
            format!("{} can administer the tenant without TOTP", a.email),
            Some(format!("user:{}", a.id)),
        ));
    }
    for t in &i.old_tokens {
        access.push(reason(
            "old_api_token",
            -10.0,
            format!(
                "API token {} is {} days old and never expires",
                t.name, t.age_days
            ),
            Some(format!("token:{}", t.id)),
        ));
    }
    vec![
        ("vulnerabilities", vulnerabilities),
        ("agent_health", agent_health),
        ("patching", patching),
        ("drift", drift),
        ("slo", slo),
        ("integrity", integrity),
        ("access", Some(access)),
    ]
}

/// Points an app without an SLO loses for its 30-day availability (v13): below 99.9 % −5,
/// below 99 % −10, below 95 % −25.
fn availability_points(percent: f64) -> f64 {
    if percent >= 99.9 {
        0.0
    } else if percent >= 99.0 {
        -5.0
    } else if percent >= 95.0 {
        -10.0
    } else {
        -25.0
    }
}

/// The v13 reasons of apps and checks without an SLO, and whether any has a figure.
fn availability_reasons(apps: &[App]) -> (bool, Vec<Reason>) {
    let counted: Vec<(&App, f64)> = apps
        .iter()
        .filter(|a| !a.has_slo)
        .filter_map(|a| Some((a, a.availability_30d?)))
        .collect();
    let reasons = counted
        .iter()
        .filter(|(_, p)| availability_points(*p) < 0.0)
        .map(|(a, p)| {
            reason(
                "low_availability",
                availability_points(*p),
                format!(
                    "{} was up {p:.2} % of the last 30 days (it has no SLO)",
                    a.name
                ),
                Some(format!("app:{}", a.id)),
            )
        })
        .collect();
    (!counted.is_empty(), reasons)
}

/// What holds the band down (v13).
fn caps(i: &InputsV13) -> Vec<Cap> {
    let cap = |code: &str, band: &str, message: String, subject: String| Cap {
        code: code.to_owned(),
        band: band.to_owned(),
        message,
        subject_ref: Some(subject),
    };
    let mut out = Vec::new();
    for h in i.base.hosts.iter().filter(|h| h.findings[0] > 0) {
        out.push(cap(
            "open_critical",
            "orange",
            format!(
                "{} on {}: at most orange until it is fixed, acknowledged or suppressed",
                plural(
                    u64::from(h.findings[0]),
                    "open CRITICAL finding",
                    "open CRITICAL findings"
                ),
                h.hostname
            ),
            format!("agent:{}", h.id),
        ));
    }
    for a in &i.apps {
        let Some(since) = &a.down_since else { continue };
        let (code, band, message) = if a.down_over_24h {
            let m = format!(
                "{} has been down since {since}, over 24 hours: at most red until it is up",
                a.name
            );
            ("down_over_24h", "red", m)
        } else {
            let m = format!(
                "{} is down (since {since}): at most orange until it is up",
                a.name
            );
            ("down", "orange", m)
        };
        out.push(cap(code, band, message, format!("app:{}", a.id)));
    }
    out
}

/// The lower of two bands.
fn lower(a: &str, b: &str) -> &'static str {
    const ORDER: [&str; 4] = ["red", "orange", "green", "darkgreen"];
    let rank = |x: &str| ORDER.iter().position(|o| *o == x).unwrap_or(3);
    ORDER[rank(a).min(rank(b))]
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// SHA-256 (hex) of the canonical JSON of `inputs`.
pub fn inputs_sha256(inputs: &impl Serialize) -> String {
    let v = serde_json::to_value(inputs).unwrap_or(serde_json::Value::Null);
    let canonical = trusthub_core::canonical::canonical_json(&v);
    data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(canonical.as_bytes()))
}

/// The v12 score of `inputs`.
pub fn v12(inputs: &Inputs) -> Score {
    weighed(VERSION, reasons(inputs), inputs_sha256(inputs))
}

/// The v13 score of `inputs`: v12's components, apps and checks without an SLO counted in
/// `slo` by their 30-day availability, and the band capped (CONTRACT 33).
pub fn v13(inputs: &InputsV13) -> Score {
    let mut parts = reasons(&inputs.base);
    let (any, availability) = availability_reasons(&inputs.apps);
    if let Some((_, slo)) = parts.iter_mut().find(|(id, _)| *id == "slo")
        && any
    {
        slo.get_or_insert_with(Vec::new).extend(availability);
    }
    let mut s = weighed(NEWEST, parts, inputs_sha256(inputs));
    s.caps = caps(inputs);
    s.band = s
        .caps
        .iter()
        .fold(s.band.clone(), |b, c| lower(&b, &c.band).to_owned());
    s
}

/// The weighted mean of the components' reasons.
fn weighed(
    version: &str,
    parts: Vec<(&'static str, Option<Vec<Reason>>)>,
    inputs_sha256: String,
) -> Score {
    let present: f64 = parts
        .iter()
        .zip(WEIGHTS)
        .filter(|((_, r), _)| r.is_some())
        .map(|(_, (_, w))| w)
        .sum();
    let mut components = Vec::new();
    let mut total = 0.0;
    for ((id, r), (_, w)) in parts.into_iter().zip(WEIGHTS) {
        let (weight, score, reasons) = match r {
            Some(reasons) => {
                let lost: f64 = reasons.iter().map(|x| x.points).sum();
                let score = (100.0 + lost).max(0.0);
                // Four decimals, and the total computed from exactly what is shown.
                let weight = (w * 100.0 / present * 10_000.0).round() / 10_000.0;
                total += weight * score / 100.0;
                (weight, Some(round1(score)), reasons)
            }
            None => (0.0, None, Vec::new()),
        };
        components.push(Component {
            id: id.to_owned(),
            weight,
            score,
            reasons,
        });
    }
    let final_score = round1(total);
    Score {
        version: version.to_owned(),
        final_score,
        band: band(final_score).to_owned(),
        inputs_sha256,
        components,
        caps: Vec::new(),
    }
}
