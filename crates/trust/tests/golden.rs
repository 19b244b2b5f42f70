//! Golden vectors of Trust Score v12 (CONTRACT 21) and v13 (CONTRACT 33): inputs → components → final score and
//! band, worked out by hand from the formula in `score.rs`; `inputs_sha256` checked against
//! Python's own SHA-256 of the canonical JSON (sorted keys, no spaces: RFC 8785 for these
//! integers and strings); and the final score recomputed from the components it shows.

use trusthub_trust::score::{
    Admin, Anomaly, App, Host, Inputs, InputsV13, RolledBack, Slo, Token, v12, v13,
};

fn troubled() -> Inputs {
    Inputs {
        hosts: vec![
            Host {
                id: "a1".into(),
                hostname: "web-1".into(),
                findings: [1, 2, 0, 3],
                client_certificate: true,
                reporting: true,
                reboot_required: true,
            },
            Host {
                id: "a2".into(),
                hostname: "db-1".into(),
                findings: [0, 0, 1, 0],
                client_certificate: false,
                reporting: false,
                reboot_required: false,
            },
        ],
        rolled_back: vec![RolledBack {
            eat_nonce: "n1".into(),
            agent_id: "a1".into(),
            packages: "openssl 3.0.11 -> 3.0.13".into(),
        }],
        drift: None,
        slos: vec![
            Slo {
                id: "s1".into(),
                name: "shop".into(),
                state: "ok".into(),
            },
            Slo {
                id: "s2".into(),
                name: "api".into(),
                state: "burning".into(),
            },
            Slo {
                id: "s3".into(),
                name: "mail".into(),
                state: "exhausted".into(),
            },
        ],
        anomalies: vec![Anomaly {
            id: "x1".into(),
            kind: "cn_mismatch".into(),
        }],
        admins: vec![
            Admin {
                id: "u1".into(),
                email: "owner@example.com".into(),
                totp: true,
            },
            Admin {
                id: "u2".into(),
                email: "admin@example.com".into(),
                totp: false,
            },
        ],
        old_tokens: vec![Token {
            id: "t1".into(),
            name: "ci".into(),
            age_days: 120,
        }],
    }
}

fn python_sha(inputs: &impl serde::Serialize) -> String {
    let json = serde_json::to_string(inputs).expect("json");
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg("import sys, json, hashlib; v = json.loads(sys.argv[1]); print(hashlib.sha256(json.dumps(v, sort_keys=True, separators=(',', ':'), ensure_ascii=False).encode()).hexdigest())")
        .arg(&json)
        .output()
        .expect("python3");
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

fn recomputed(s: &trusthub_trust::score::Score) -> f64 {
    let total: f64 = s
        .components
        .iter()
        .filter_map(|c| c.score.map(|score| c.weight * score / 100.0))
        .sum();
    (total * 10.0).round() / 10.0
}

#[test]
fn a_troubled_tenant_scores_as_worked_out_by_hand() {
    let i = troubled();
    let s = v12(&i);
    let by_id = |id: &str| {
        s.components
            .iter()
            .find(|c| c.id == id)
            .cloned()
            .expect("component")
    };
    // vulnerabilities: web-1 −10 −2×5 −3×1, db-1 −2 → 75; agent_health: db-1 no
    // certificate −5, silent −10 → 85; patching: a reboot −5, a rollback −5 → 90; drift: no
    // inputs; slo: burning −10, exhausted −25 → 65; integrity −20 → 80; access: an admin
    // without TOTP −25, an old token −10 → 65.
    let scores: Vec<(String, Option<f64>, f64)> = s
        .components
        .iter()
        .map(|c| (c.id.clone(), c.score, c.weight))
        .collect();
    assert_eq!(
        scores,
        vec![
            ("vulnerabilities".into(), Some(75.0), 33.3333),
            ("agent_health".into(), Some(85.0), 22.2222),
            ("patching".into(), Some(90.0), 16.6667),
            ("drift".into(), None, 0.0),
            ("slo".into(), Some(65.0), 11.1111),
            ("integrity".into(), Some(80.0), 11.1111),
            ("access".into(), Some(65.0), 5.5556),
        ]
    );
    assert_eq!(s.final_score, 78.6);
    assert_eq!(s.band, "green");
    assert_eq!(s.version, "v12");
    assert_eq!(recomputed(&s), s.final_score);
    // Every lost point has its reason and subject.
    let vulns = by_id("vulnerabilities");
    assert_eq!(vulns.reasons.len(), 4);
    assert_eq!(vulns.reasons[1].message, "2 open HIGH findings on web-1");
    assert_eq!(vulns.reasons[1].points, -10.0);
    assert_eq!(vulns.reasons[1].subject_ref.as_deref(), Some("agent:a1"));
    let access = by_id("access");
    assert_eq!(access.reasons[0].code, "admin_without_totp");
    assert_eq!(access.reasons[0].subject_ref.as_deref(), Some("user:u2"));
    // Reproducible: the same inputs, the same hash; Python's hash of the canonical JSON.
    assert_eq!(s.inputs_sha256, v12(&troubled()).inputs_sha256);
    assert_eq!(s.inputs_sha256, python_sha(&i));
    let mut other = troubled();
    other.hosts[0].findings[0] = 2;
    assert_ne!(v12(&other).inputs_sha256, s.inputs_sha256);
    assert_eq!(v12(&other).final_score, 75.3);
}

#[test]
fn an_empty_tenant_and_a_healthy_one_score_100_and_a_ruined_one_0() {
    let owner = Admin {
        id: "u1".into(),
        email: "owner@example.com".into(),
        totp: true,
    };
    let empty = Inputs {
        admins: vec![owner.clone()],
        ..Default::default()
    };
    let s = v12(&empty);
    assert_eq!(s.final_score, 100.0);
    assert_eq!(s.band, "darkgreen");
    let access = s
        .components
        .iter()
        .find(|c| c.id == "access")
        .expect("access");
    assert_eq!(
        access.weight, 100.0,
        "every other weight spread onto the one with inputs"
    );
    assert!(
        s.components
            .iter()
            .filter(|c| c.id != "access")
            .all(|c| c.score.is_none() && c.weight == 0.0)
    );
    assert_eq!(s.inputs_sha256, python_sha(&empty));

    let healthy = Inputs {
        hosts: vec![Host {
            id: "a1".into(),
            hostname: "web-1".into(),
            client_certificate: true,
            reporting: true,
            ..Default::default()
        }],
        slos: vec![Slo {
            id: "s1".into(),
            name: "shop".into(),
            state: "ok".into(),
        }],
        drift: Some(Vec::new()),
        admins: vec![owner],
        ..Default::default()
    };
    let s = v12(&healthy);
    assert_eq!(s.final_score, 100.0);
    assert!(
        s.components
            .iter()
            .all(|c| c.score == Some(100.0) && c.reasons.is_empty())
    );

    let mut ruined = troubled();
    ruined.hosts[0].findings = [50, 0, 0, 0];
    ruined.anomalies = (0..6)
        .map(|k| Anomaly {
            id: format!("x{k}"),
            kind: "cn_mismatch".into(),
        })
        .collect();
    ruined.admins.iter_mut().for_each(|a| a.totp = false);
    ruined.old_tokens = (0..5)
        .map(|k| Token {
            id: format!("t{k}"),
            name: "ci".into(),
            age_days: 400,
        })
        .collect();
    ruined.hosts[0].client_certificate = false;
    ruined.hosts[0].reporting = false;
    ruined.hosts.extend((0..20).map(|k| Host {
        id: format!("h{k}"),
        hostname: format!("h{k}"),
        reboot_required: true,
        ..Default::default()
    }));
    ruined
        .slos
        .iter_mut()
        .for_each(|s| s.state = "exhausted".into());
    ruined.slos.push(Slo {
        id: "s4".into(),
        name: "www".into(),
        state: "exhausted".into(),
    });
    let s = v12(&ruined);
    assert!(
        s.components
            .iter()
            .all(|c| c.score.is_none_or(|x| x == 0.0)),
        "{:?}",
        s.components.iter().map(|c| c.score).collect::<Vec<_>>()
    );
    assert_eq!(s.final_score, 0.0);
    assert_eq!(s.band, "red");
}

#[test]
fn bands_follow_the_contract_edges() {
    use trusthub_trust::score::band;
    assert_eq!(band(49.9), "red");
    assert_eq!(band(50.0), "orange");
    assert_eq!(band(69.9), "orange");
    assert_eq!(band(70.0), "green");
    assert_eq!(band(85.0), "green");
    assert_eq!(band(85.1), "darkgreen");
}

fn admin_with_totp() -> Vec<Admin> {
    vec![Admin {
        id: "u1".into(),
        email: "owner@example.com".into(),
        totp: true,
    }]
}

fn app(name: &str, availability: Option<f64>, down: Option<bool>) -> App {
    App {
        id: format!("app-{name}"),
        name: name.into(),
        has_slo: false,
        availability_30d: availability,
        down_since: down.map(|_| "2026-12-01T00:00:00Z".to_owned()),
        down_over_24h: down.unwrap_or(false),
    }
}

#[test]
fn v13_holds_a_high_score_with_a_critical_finding_at_orange() {
    let base = Inputs {
        hosts: vec![Host {
            id: "a1".into(),
            hostname: "web-1".into(),
            findings: [1, 0, 0, 0],
            client_certificate: true,
            reporting: true,
            reboot_required: false,
        }],
        admins: admin_with_totp(),
        ..Inputs::default()
    };
    // vulnerabilities 90 at 37.5 of 80 present; the rest 100: 33.75 + 62.5 = 96.25 → 96.3.
    let old = v12(&base);
    assert_eq!((old.final_score, old.band.as_str()), (96.3, "darkgreen"));
    assert!(old.caps.is_empty());
    let inputs = InputsV13 {
        base,
        apps: Vec::new(),
    };
    let s = v13(&inputs);
    assert_eq!(s.version, "v13");
    assert_eq!(s.final_score, 96.3, "the points are v12's");
    assert_eq!(s.band, "orange");
    assert_eq!(s.caps.len(), 1);
    assert_eq!(s.caps[0].code, "open_critical");
    assert_eq!(s.caps[0].band, "orange");
    assert_eq!(s.caps[0].subject_ref.as_deref(), Some("agent:a1"));
    assert!(
        s.caps[0]
            .message
            .starts_with("1 open CRITICAL finding on web-1"),
        "{}",
        s.caps[0].message
    );
    assert_eq!(s.inputs_sha256, python_sha(&inputs));
    assert_ne!(s.inputs_sha256, old.inputs_sha256);
}

#[test]
fn v13_counts_availability_without_an_slo_and_caps_apps_down() {
    let mut with_slo = app("api", Some(80.0), None);
    with_slo.has_slo = true;
    let inputs = InputsV13 {
        base: Inputs {
            admins: admin_with_totp(),
            ..Inputs::default()
        },
        apps: vec![
            app("shop", Some(99.5), None),
            app("blog", Some(100.0), None),
            with_slo,
            app("db", Some(50.0), Some(true)),
            app("cache", None, Some(false)),
        ],
    };
    let s = v13(&inputs);
    // slo: shop −5 (99 to 99.9 %), db −25 (below 95 %); api has an SLO (its state counts,
    // and it has none here), blog lost nothing, cache has no figure: 70 at 66.6667, access
    // 100 at 33.3333: 46.66669 + 33.3333 = 80.0, green by the points.
    let slo = s.components.iter().find(|c| c.id == "slo").expect("slo");
    assert_eq!(slo.score, Some(70.0));
    let lost: Vec<(&str, f64, Option<&str>)> = slo
        .reasons
        .iter()
        .map(|r| (r.code.as_str(), r.points, r.subject_ref.as_deref()))
        .collect();
    assert_eq!(
        lost,
        [
            ("low_availability", -5.0, Some("app:app-shop")),
            ("low_availability", -25.0, Some("app:app-db")),
        ]
    );
    assert_eq!(slo.weight, 66.6667);
    assert_eq!(s.final_score, 80.0);
    assert_eq!(s.final_score, recomputed(&s));
    // Capped: db down for over a day (red), cache down (orange): red.
    let caps: Vec<(&str, &str)> = s
        .caps
        .iter()
        .map(|c| (c.code.as_str(), c.band.as_str()))
        .collect();
    assert_eq!(caps, [("down_over_24h", "red"), ("down", "orange")]);
    assert_eq!(s.band, "red");
    assert!(
        s.caps[0]
            .message
            .starts_with("db has been down since 2026-12-01T00:00:00Z, over 24 hours")
    );
    // v12 of the same tenant knows no apps: its slo component has no inputs.
    let old = v12(&inputs.base);
    assert_eq!(
        old.components
            .iter()
            .find(|c| c.id == "slo")
            .map(|c| c.score),
        Some(None)
    );
}

#[test]
fn v13_without_apps_scores_as_v12_and_only_caps_the_band() {
    let base = troubled();
    let old = v12(&base);
    let s = v13(&InputsV13 {
        base,
        apps: Vec::new(),
    });
    assert_eq!(s.components, old.components);
    assert_eq!(s.final_score, old.final_score);
    // web-1 has an open CRITICAL finding: at most orange.
    assert!(["red", "orange"].contains(&s.band.as_str()), "{}", s.band);
    assert_eq!(s.caps.len(), 1);
}
