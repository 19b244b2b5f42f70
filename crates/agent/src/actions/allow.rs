//! The host's own allowlist of action kinds (`actions.toml` in the state dir, or
//! `--allow-actions`): the host operator's veto over what any hub, even a compromised one,
//! may push. Default: every kind but `console_open`.

use serde::Deserialize;
use std::path::{Path, PathBuf};

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
    /// Package managers patches may use (default: every one).
    patch_managers: Option<Vec<String>>,
    /// Folders under which `update_packages` may change a project (default: any project this
    /// agent reports).
    project_paths: Option<Vec<PathBuf>>,
    /// Emergency actions any hub may ask for (default: every one).
    emergency_actions: Option<Vec<String>>,
}

/// Package managers the agent knows.
pub const MANAGERS: [&str; 9] = [
    "apt", "dnf", "apk", "zypper", "npm", "pip", "composer", "bundler", "go",
];

/// What this host lets any hub do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowlist {
    /// Action kinds.
    pub kinds: Vec<String>,
    /// Package managers patches may use; `None`: all.
    pub managers: Option<Vec<String>>,
    /// Folders projects must be under; `None`: anywhere.
    pub project_paths: Option<Vec<PathBuf>>,
    /// Emergency actions allowed; `None`: all.
    pub emergency_actions: Option<Vec<String>>,
}

impl Allowlist {
    /// Whether the action kind is allowed.
    pub fn kind(&self, kind: &str) -> bool {
        self.kinds.iter().any(|k| k == kind)
    }

    /// Whether patches may use `manager`.
    pub fn manager(&self, manager: &str) -> bool {
        MANAGERS.contains(&manager)
            && self
                .managers
                .as_ref()
                .is_none_or(|m| m.iter().any(|x| x == manager))
    }

    /// Whether an `emergency` token may run `action`.
    pub fn emergency(&self, action: &str) -> bool {
        self.kind("emergency")
            && trusthub_core::emergency::ACTIONS.contains(&action)
            && self
                .emergency_actions
                .as_ref()
                .is_none_or(|a| a.iter().any(|x| x == action))
    }

    /// Whether `update_packages` may change the project at `path` (absolute, no `..`).
    pub fn project(&self, path: &Path) -> bool {
        path.is_absolute()
            && !path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
            && self
                .project_paths
                .as_ref()
                .is_none_or(|roots| roots.iter().any(|r| path.starts_with(r)))
    }
}

/// The kinds this host accepts.
pub fn load(state_dir: &Path, flag: Option<&str>) -> Result<Vec<String>, String> {
    load_all(state_dir, flag).map(|a| a.kinds)
}

/// The host's whole allowlist: `--allow-actions` sets the kinds; `actions.toml` sets the
/// kinds (when no flag does) and the patch rules.
pub fn load_all(state_dir: &Path, flag: Option<&str>) -> Result<Allowlist, String> {
    let path = state_dir.join("actions.toml");
    let file = match std::fs::read_to_string(&path) {
        Ok(text) => {
            Some(toml::from_str::<File>(&text).map_err(|e| format!("{}: {e}", path.display()))?)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let list: Vec<String> = if let Some(flag) = flag {
        flag.split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    } else {
        match &file {
            Some(f) => f.allow.clone(),
            None => KINDS
                .iter()
                .filter(|k| **k != "console_open")
                .map(|k| (*k).to_owned())
                .collect(),
        }
    };
    if let Some(bad) = list.iter().find(|k| !KINDS.contains(&k.as_str())) {
        return Err(format!(
            "unknown action kind `{bad}` (known: {})",
            KINDS.join(", ")
        ));
    }
    let managers = file.as_ref().and_then(|f| f.patch_managers.clone());
    if let Some(bad) = managers
        .iter()
        .flatten()
        .find(|m| !MANAGERS.contains(&m.as_str()))
    {
        return Err(format!(
            "{}: unknown package manager `{bad}` (known: {})",
            path.display(),
            MANAGERS.join(", ")
        ));
    }
    let emergency_actions = file.as_ref().and_then(|f| f.emergency_actions.clone());
    if let Some(bad) = emergency_actions
        .iter()
        .flatten()
        .find(|a| !trusthub_core::emergency::ACTIONS.contains(&a.as_str()))
    {
        return Err(format!(
            "{}: unknown emergency action `{bad}` (known: {})",
            path.display(),
            trusthub_core::emergency::ACTIONS.join(", ")
        ));
    }
    let project_paths = file.and_then(|f| f.project_paths);
    if let Some(bad) = project_paths.iter().flatten().find(|p| !p.is_absolute()) {
        return Err(format!(
            "{}: project_paths must be absolute, not `{}`",
            path.display(),
            bad.display()
        ));
    }
    Ok(Allowlist {
        kinds: list,
        managers,
        project_paths,
        emergency_actions,
    })
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

    #[test]
    fn patch_rules_limit_managers_and_project_folders() {
        let dir =
            std::env::temp_dir().join(format!("allow-test-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let all = load_all(&dir, None).expect("default");
        assert!(all.manager("apt") && all.manager("npm") && !all.manager("curl"));
        assert!(all.project(Path::new("/srv/app")) && !all.project(Path::new("srv/app")));
        assert!(!all.project(Path::new("/srv/../etc")));
        std::fs::write(
            dir.join("actions.toml"),
            "allow = [\"install_package\"]\npatch_managers = [\"apt\"]\nproject_paths = [\"/srv\"]\n",
        )
        .expect("write");
        let some = load_all(&dir, None).expect("file");
        assert!(some.kind("install_package") && !some.kind("restart_app"));
        assert!(some.manager("apt") && !some.manager("npm"));
        assert!(some.project(Path::new("/srv/app")) && !some.project(Path::new("/opt/app")));
        std::fs::write(
            dir.join("actions.toml"),
            "allow = []\npatch_managers = [\"yum\"]\n",
        )
        .expect("write");
        assert!(load_all(&dir, None).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
