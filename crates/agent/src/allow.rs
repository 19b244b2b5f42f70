//! The host's own allowlist of action kinds (`actions.toml` in the state dir, or
//! `--allow-actions`): the host operator's veto over what any hub, even a compromised one,
//! may push. Default: every kind but `console_open`.

use serde::Deserialize;
use std::path::Path;

/// Every action kind (CONTRACT 5).
pub const KINDS: [&str; 5] = [
    "restart_app",
    "install_package",
    "update_packages",
    "console_open",
    "emergency",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    allow: Vec<String>,
}

/// The kinds this host accepts.
pub fn load(state_dir: &Path, flag: Option<&str>) -> Result<Vec<String>, String> {
    let list: Vec<String> = if let Some(flag) = flag {
        flag.split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    } else {
        let path = state_dir.join("actions.toml");
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                toml::from_str::<File>(&text)
                    .map_err(|e| format!("{}: {e}", path.display()))?
                    .allow
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => KINDS
                .iter()
                .filter(|k| **k != "console_open")
                .map(|k| (*k).to_owned())
                .collect(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    };
    if let Some(bad) = list.iter().find(|k| !KINDS.contains(&k.as_str())) {
        return Err(format!(
            "unknown action kind `{bad}` (known: {})",
            KINDS.join(", ")
        ));
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_everything_but_the_console_and_files_and_flags_override() {
        let dir =
            std::env::temp_dir().join(format!("allow-test-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        assert_eq!(
            load(&dir, None).expect("default"),
            vec![
                "restart_app",
                "install_package",
                "update_packages",
                "emergency"
            ]
        );
        std::fs::write(dir.join("actions.toml"), "allow = [\"restart_app\"]\n").expect("write");
        assert_eq!(load(&dir, None).expect("file"), vec!["restart_app"]);
        assert_eq!(
            load(&dir, Some("console_open, emergency")).expect("flag"),
            vec!["console_open", "emergency"]
        );
        assert!(load(&dir, Some("reboot")).is_err());
        std::fs::write(dir.join("actions.toml"), "allow = \"all\"\n").expect("write");
        assert!(load(&dir, None).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
