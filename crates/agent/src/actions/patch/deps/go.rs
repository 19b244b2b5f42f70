//! Go modules: `go get module@vX.Y.Z` for each target (direct or indirect alike), `go mod
//! vendor` again when the project vendors; the result must be at its targets (`go list -m`),
//! pass `go mod verify` and still build (`go build ./...`). Go's proxy and checksum settings
//! (`GOPROXY`, `GOSUMDB`, `GOPRIVATE`…) are the host's own.

use super::super::Log;
use super::Project;
use super::at_least;

/// What the snapshot keeps.
pub const ITEMS: [&str; 3] = ["go.mod", "go.sum", "vendor"];

/// Go modules: `go get` (and `go mod vendor` when vendored), checked by `go list`, `go mod verify` and `go build`.
pub(super) struct Go;

impl super::DependencyManager for Go {
    const PROGRAM: &'static str = "go";
    const TOOL: &'static str = "go";
    const MANIFESTS: &'static [&'static str] = &["go.mod"];
    const ITEMS: &'static [&'static str] = &ITEMS;

    async fn install(&self, log: &mut Log, p: &Project<'_>) -> Result<(), (i64, String)> {
        let (project, targets) = (p.dir, p.targets);
        let specs: Vec<String> = targets
            .iter()
            .map(|t| format!("{}@{}", t.name, tag(&t.version)))
            .collect();
        let mut args = vec!["get"];
        args.extend(specs.iter().map(String::as_str));
        log.step("go get", "go", &args, ENV, Some(project)).await?;
        if project.join("vendor").is_dir() {
            log.step(
                "go mod vendor",
                "go",
                &["mod", "vendor"],
                ENV,
                Some(project),
            )
            .await?;
        }
        Ok(())
    }

    async fn verify(&self, log: &mut Log, p: &Project<'_>) -> Result<(), String> {
        let (project, targets) = (p.dir, p.targets);
        for t in targets {
            let (code, out) = log
                .run(
                    "go",
                    &["list", "-m", "-f", "{{.Version}}", &t.name],
                    ENV,
                    Some(project),
                )
                .await;
            let have = out.trim();
            if code != 0 || have.is_empty() {
                return Err(format!("go list -m {} exited {code}", t.name));
            }
            if !at_least(have, &tag(&t.version)) {
                return Err(format!("{} is {have}, not {}", t.name, tag(&t.version)));
            }
        }
        log.step(
            "go mod verify",
            "go",
            &["mod", "verify"],
            ENV,
            Some(project),
        )
        .await
        .map_err(|(_, e)| e)?;
        let (code, _) = log.run("go", &["build", "./..."], ENV, Some(project)).await;
        if code != 0 {
            return Err(format!(
                "go build ./... exited {code}: the project no longer builds"
            ));
        }
        Ok(())
    }
}

/// Go versions carry their `v`; inventory reports them without it.
fn tag(v: &str) -> String {
    if v.starts_with('v') {
        v.to_owned()
    } else {
        format!("v{v}")
    }
}

const ENV: &[(&str, &str)] = &[("GOTOOLCHAIN", "local")];
