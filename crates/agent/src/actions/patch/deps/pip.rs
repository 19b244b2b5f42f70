//! pip: the project's `.venv` or `venv`, pip's own index configuration, `requirements.txt`
//! pins rewritten; the result must pass `pip check`.

use super::super::{Log, Target};
use super::Project;
use super::at_least;
use std::path::{Path, PathBuf};

const ITEMS: [&str; 1] = ["requirements.txt"];

/// PEP 503 normalised name: lower case, runs of `-`, `_`, `.` as one `-`.
pub fn pep503(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// `requirements.txt` with each target's `==` pin moved to its version (extras, markers and
/// comments kept); a target the file does not pin is appended.
pub fn rewrite_requirements(text: &str, targets: &[Target]) -> String {
    let mut seen = vec![false; targets.len()];
    let mut out: Vec<String> = text
        .lines()
        .map(|line| {
            let Some((head, tail)) = line.split_once("==") else {
                return line.to_owned();
            };
            let name = head.split('[').next().unwrap_or(head).trim();
            let Some(i) = targets.iter().position(|t| pep503(&t.name) == pep503(name)) else {
                return line.to_owned();
            };
            seen[i] = true;
            let end = tail
                .find(|c: char| c.is_whitespace() || c == ';' || c == '#')
                .unwrap_or(tail.len());
            format!("{head}=={}{}", targets[i].version, &tail[end..])
        })
        .collect();
    for (t, seen) in targets.iter().zip(seen) {
        if !seen {
            out.push(format!("{}=={}", t.name, t.version));
        }
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// The project's virtualenv: `.venv` or `venv` with its own Python.
fn venv(project: &Path) -> Option<PathBuf> {
    [".venv", "venv"]
        .iter()
        .map(|v| project.join(v))
        .find(|v| v.join("bin/python").exists())
}

/// pip: `pip install` into the project's virtualenv, checked by `pip check`.
pub(super) struct Pip;

impl super::DependencyManager for Pip {
    const PROGRAM: &'static str = "python3";
    const TOOL: &'static str = "pip";
    const MANIFESTS: &'static [&'static str] = &["requirements.txt"];
    const ITEMS: &'static [&'static str] = &ITEMS;

    fn program(&self, project: &Path) -> String {
        python(project)
    }

    fn prepare(&self, project: &Path) -> Result<Vec<&'static str>, String> {
        if !project.join("requirements.txt").is_file() {
            return Err(format!(
                "{} has no requirements.txt (poetry projects are not updated by this agent)",
                project.display()
            ));
        }
        let env = venv(project).ok_or(format!(
            "{} has no virtualenv at .venv or venv",
            project.display()
        ))?;
        Ok(match env.file_name().and_then(|n| n.to_str()) {
            Some(".venv") => vec![ITEMS[0], ".venv"],
            _ => vec![ITEMS[0], "venv"],
        })
    }

    async fn install(&self, log: &mut Log, p: &Project<'_>) -> Result<(), (i64, String)> {
        let (project, targets) = (p.dir, p.targets);
        let python = python(project);
        let pins: Vec<String> = targets
            .iter()
            .map(|t| format!("{}=={}", t.name, t.version))
            .collect();
        let mut args = vec!["-m", "pip", "install"];
        args.extend(pins.iter().map(String::as_str));
        log.step("pip install", &python, &args, ENV, Some(project))
            .await?;
        let file = project.join("requirements.txt");
        let text =
            std::fs::read_to_string(&file).map_err(|e| (1, format!("requirements.txt: {e}")))?;
        crate::host::owner::write_no_follow(&file, rewrite_requirements(&text, targets).as_bytes())
            .map_err(|e| (1, format!("requirements.txt: {e}")))?;
        Ok(())
    }

    async fn verify(&self, log: &mut Log, p: &Project<'_>) -> Result<(), String> {
        let (project, targets) = (p.dir, p.targets);
        let python = python(project);
        let out = log
            .step(
                "pip list",
                &python,
                &["-m", "pip", "list", "--format=json"],
                ENV,
                Some(project),
            )
            .await
            .map_err(|(_, e)| e)?;
        let list: Vec<serde_json::Value> =
            serde_json::from_str(&out).map_err(|e| format!("pip list: {e}"))?;
        for t in targets {
            let have = list
                .iter()
                .find(|p| {
                    p["name"]
                        .as_str()
                        .is_some_and(|n| pep503(n) == pep503(&t.name))
                })
                .and_then(|p| p["version"].as_str());
            match have {
                Some(v) if at_least(v, &t.version) => {}
                Some(v) => return Err(format!("{} is {v}, not {}", t.name, t.version)),
                None => return Err(format!("{} is not installed", t.name)),
            }
        }
        let (code, _) = log
            .run(&python, &["-m", "pip", "check"], ENV, Some(project))
            .await;
        if code != 0 {
            return Err(format!(
                "pip check exited {code}: the environment has broken requirements"
            ));
        }
        Ok(())
    }
}

const ENV: &[(&str, &str)] = &[
    ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
    ("PIP_NO_INPUT", "1"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
];

pub(super) fn python(project: &Path) -> String {
    venv(project)
        .map(|v| v.join("bin/python").display().to_string())
        .unwrap_or_default()
}
