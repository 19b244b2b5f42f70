//! The badge against badge-maker, the library shields.io renders its badges with (installed
//! by `.ci/run`, run under node): for the same label, message and colour the two SVGs are
//! the same text, so every width and position agrees (CONTRACT 21).

use std::process::Command;

/// Where `.ci/run` installs the node validators.
const NODE_MODULES: &str = "/usr/local/share/trusthub-validators/node/node_modules";

fn badge_maker(message: &str, colour: &str) -> String {
    let script = format!(
        "const {{ makeBadge }} = require('badge-maker'); process.stdout.write(makeBadge({{label: 'trust', message: {}, color: '#{colour}', style: 'flat'}}));",
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
fn the_badge_is_what_badge_maker_draws_for_every_band_and_width() {
    for (message, colour) in [
        ("87.5", "44cc11"),
        ("85.0", "97ca00"),
        ("100.0", "44cc11"),
        ("69.9", "fe7d37"),
        ("0.0", "e05d44"),
        ("42.1", "e05d44"),
        ("71.1", "97ca00"),
    ] {
        let theirs = badge_maker(message, colour);
        let ours =
            trusthub_trust::badge::svg("trust", message, colour, &format!("trust: {message}"));
        assert_eq!(ours, theirs, "{message} on #{colour}");
    }
}
