//! App badges against badge-maker, the library shields.io renders its badges with
//! (installed by `.ci/run`, run under node): for the labels, messages and colours an app
//! badge shows, the two SVGs are the same text (CONTRACT 32).

use std::process::Command;

/// Where `.ci/run` installs the node validators.
const NODE_MODULES: &str = "/usr/local/share/trusthub-validators/node/node_modules";

fn badge_maker(label: &str, message: &str, colour: &str) -> String {
    let script = format!(
        "const {{ makeBadge }} = require('badge-maker'); process.stdout.write(makeBadge({{label: {}, message: {}, color: '#{colour}', style: 'flat'}}));",
        serde_json::to_string(label).expect("json"),
        serde_json::to_string(message).expect("json")
    );
    let out = Command::new("node")
        .arg("-e")
        .arg(&script)
        .env("NODE_PATH", NODE_MODULES)
        .output()
        .expect("node (installed by .ci/run)");
    assert!(
        out.status.success(),
        "badge-maker: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn app_badges_are_what_badge_maker_draws() {
    use trusthub_status::badge::{status_colour, uptime_colour, uptime_text};
    let mut cases: Vec<(String, String, &str)> =
        ["up", "degraded", "down", "maintenance", "unknown"]
            .into_iter()
            .map(|s| ("checkout".to_owned(), s.to_owned(), status_colour(s)))
            .collect();
    for p in [100.0, 99.95, 99.2, 97.5, 95.1, 91.0, 42.0] {
        cases.push(("api 30d".into(), uptime_text(p), uptime_colour(p)));
    }
    cases.push(("Search & Index 7d".into(), "123 ms".into(), "007ec6"));
    cases.push(("db 90d".into(), "no data".into(), "9f9f9f"));
    for (label, message, colour) in cases {
        let theirs = badge_maker(&label, &message, colour);
        let ours =
            trusthub_core::badge::svg(&label, &message, colour, &format!("{label}: {message}"));
        assert_eq!(ours, theirs, "{label} / {message} on #{colour}");
    }
}
