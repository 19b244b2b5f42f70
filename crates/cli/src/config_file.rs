//! The hub's configuration file (CONTRACT 31): `trusthub serve --config <file>` (or
//! `TRUSTHUB_CONFIG`) reads TOML whose keys are the settings' environment names without
//! `TRUSTHUB_`, lowercased (`listen`, `data_dir`, `database_url`, ...). The file's values
//! become the settings' defaults, so the environment overrides the file and flags override
//! both — clap's own order. An unknown key, a value of the wrong kind or one its setting
//! refuses is an error naming the key and its line. `trusthub config check` and `trusthub
//! config show` read files the same way.

use clap::Command;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// One setting the file gives.
#[derive(Debug, Clone)]
pub struct FileValue {
    /// The key as written (`data_dir`).
    pub key: String,
    /// The setting's argument id in the command.
    pub id: String,
    /// The value as the setting reads it (arrays joined with commas).
    pub value: String,
}

/// A file read and checked against a command's settings.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The file.
    pub path: PathBuf,
    /// Its settings, in the file's order.
    pub values: Vec<FileValue>,
}

/// The setting whose environment variable is `TRUSTHUB_<KEY>` (or `<KEY>` for the few
/// without the prefix, such as `CLOUD_ENCRYPTION_KEY`), in `cmd`.
fn setting<'a>(cmd: &'a Command, key: &str) -> Option<&'a clap::Arg> {
    let bare = key.to_ascii_uppercase();
    let env = format!("TRUSTHUB_{bare}");
    cmd.get_arguments().find(|a| {
        a.get_env()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e == env || (e == bare && !e.starts_with("TRUSTHUB_")))
    })
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// A TOML value as a setting's text: strings, numbers and booleans as written, an array of
/// them joined with commas (for settings that take a list).
fn as_setting(v: &toml::de::DeValue<'_>) -> Result<String, &'static str> {
    use toml::de::DeValue;
    match v {
        DeValue::String(s) => Ok(s.to_string()),
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
            .map(|n| n.to_string())
            .map_err(|_| "an integer out of range"),
        DeValue::Float(f) => Ok(f.as_str().to_owned()),
        DeValue::Boolean(b) => Ok(b.to_string()),
        DeValue::Array(items) => items
            .iter()
            .map(|x| match x.get_ref() {
                DeValue::Array(_) | DeValue::Table(_) => Err("a nested array or table"),
                other => as_setting(other),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|v| v.join(",")),
        DeValue::Datetime(_) => Err("a date (write it as a string)"),
        DeValue::Table(_) => Err("a table (settings are top-level keys)"),
    }
}

/// Reads `path` against the settings of `cmd` (the `serve` or `up` command): every error
/// found, each naming the key and its line.
pub fn load(path: &Path, cmd: &Command) -> Result<Loaded, Vec<String>> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| vec![format!("{shown}: {e}")])?;
    let table = toml::de::DeTable::parse(&text).map_err(|e| {
        let line = e.span().map_or(0, |s| line_of(&text, s.start));
        vec![format!("{shown}:{line}: not TOML: {}", e.message())]
    })?;
    let mut errors = Vec::new();
    let mut values = Vec::new();
    for (key, value) in table.get_ref() {
        let name = key.get_ref().to_string();
        let line = line_of(&text, key.span().start);
        let at = format!("{shown}:{line}: `{name}`");
        if matches!(value.get_ref(), toml::de::DeValue::Table(_)) {
            errors.push(format!("{at} is a table (settings are top-level keys)"));
            continue;
        }
        let Some(arg) = setting(cmd, &name).filter(|_| name == name.to_ascii_lowercase()) else {
            errors.push(format!(
                "{at} is not a setting (keys are the TRUSTHUB_ variables' names, lowercased: `data_dir`, `listen`, ...)"
            ));
            continue;
        };
        if name == "config" {
            errors.push(format!("{at}: a configuration file cannot name another"));
            continue;
        }
        let text_value = match as_setting(value.get_ref()) {
            Ok(v) => v,
            Err(kind) => {
                errors.push(format!("{at} is {kind}"));
                continue;
            }
        };
        // The setting's own check (its value parser), as clap makes it for a flag.
        let probe = Command::new("trusthub").no_binary_name(true).arg(
            clap::Arg::new("value")
                .long("value")
                .action(clap::ArgAction::Set)
                .value_parser(arg.get_value_parser().clone()),
        );
        if let Err(e) = probe.try_get_matches_from(["--value", text_value.as_str()]) {
            let why = e.to_string();
            let why = why
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ")
                .replace(" for '--value <value>'", "");
            errors.push(format!("{at}: {why}"));
            continue;
        }
        values.push(FileValue {
            key: name,
            id: arg.get_id().to_string(),
            value: text_value,
        });
    }
    if errors.is_empty() {
        Ok(Loaded {
            path: path.to_owned(),
            values,
        })
    } else {
        Err(errors)
    }
}

/// The matches of a command line, with the configuration file's values as the defaults of
/// `serve` or `up`: a file with errors stops here, each error with its key and line (exit 2).
pub fn matches(mut root: Command, args: Vec<OsString>) -> clap::ArgMatches {
    if let Some((verb, path)) = named(&args) {
        let sub = root.find_subcommand(verb).cloned().unwrap_or_default();
        match load(&path, &sub) {
            Ok(loaded) => root = with_defaults(root, verb, &loaded),
            Err(errors) => {
                for e in errors {
                    eprintln!("trusthub: {e}");
                }
                std::process::exit(2);
            }
        }
    }
    root.get_matches_from(args)
}

/// The verbs that read a configuration file.
pub const VERBS: [&str; 2] = ["serve", "up"];

/// The verb of a command line and the file it names: `--config <file>` or `--config=<file>`
/// after `serve` or `up`, else `TRUSTHUB_CONFIG`.
pub fn named(args: &[OsString]) -> Option<(&'static str, PathBuf)> {
    let verb = VERBS
        .into_iter()
        .find(|v| args.get(1).is_some_and(|a| a == *v))?;
    let mut rest = args
        .iter()
        .skip(2)
        .map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = rest.next() {
        if a == "--config" {
            return rest.next().map(|p| (verb, PathBuf::from(p)));
        }
        if let Some(p) = a.strip_prefix("--config=") {
            return Some((verb, PathBuf::from(p)));
        }
    }
    std::env::var_os("TRUSTHUB_CONFIG")
        .filter(|p| !p.is_empty())
        .map(|p| (verb, PathBuf::from(p)))
}

/// `root` with the file's values as the defaults of `verb`'s settings.
pub fn with_defaults(root: Command, verb: &str, loaded: &Loaded) -> Command {
    let values = loaded.values.clone();
    root.mut_subcommand(verb, move |mut sub| {
        for v in values {
            let value: &'static str = Box::leak(v.value.into_boxed_str());
            sub = sub.mut_arg(v.id, |a| a.default_value(value));
        }
        sub
    })
}

/// Where a setting's value came from, for `trusthub config show`.
pub fn origin(matches: &clap::ArgMatches, id: &str, loaded: &Loaded) -> &'static str {
    match matches.value_source(id) {
        Some(clap::parser::ValueSource::CommandLine) => "flag",
        Some(clap::parser::ValueSource::EnvVariable) => "env",
        Some(clap::parser::ValueSource::DefaultValue)
            if loaded.values.iter().any(|v| v.id == id) =>
        {
            "file"
        }
        _ => "default",
    }
}

/// The settings table README carries (CONTRACT 31: one source of truth), from `serve`'s
/// definitions: every setting with a variable, hidden ones left out.
pub fn markdown_table(serve: &Command) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = String::from(
        "| key (file) | flag | environment | default | what it does |\n|---|---|---|---|---|\n",
    );
    for arg in serve.get_arguments() {
        let Some(env) = arg.get_env().and_then(|e| e.to_str()) else {
            continue;
        };
        if arg.is_hide_set() || env == "TRUSTHUB_CONFIG" {
            continue;
        }
        let key = env.trim_start_matches("TRUSTHUB_").to_ascii_lowercase();
        let flag = arg
            .get_long()
            .map(|l| format!("`--{l}`"))
            .unwrap_or_default();
        let default: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .filter(|v| !v.is_empty())
            .collect();
        let default = if default.is_empty() {
            "unset".to_owned()
        } else {
            format!("`{}`", default.join(","))
        };
        let help = arg
            .get_long_help()
            .or_else(|| arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        out.push_str(&format!(
            "| `{key}` | {flag} | `{env}` | {} | {} |\n",
            cell(&default),
            cell(&help)
        ));
    }
    out
}

/// `trusthub config …`.
#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Check a configuration file against `trusthub serve`'s settings: exits 1 listing every
    /// error with its key and line.
    Check {
        /// The TOML file.
        file: std::path::PathBuf,
    },
    /// The settings `trusthub serve` would run with: from the file (`--config` or
    /// `TRUSTHUB_CONFIG`), the environment and the defaults, secrets masked, each with where
    /// it came from.
    Show {
        /// The TOML file.
        #[arg(long, env = "TRUSTHUB_CONFIG")]
        config: Option<std::path::PathBuf>,
        /// Print a configuration file instead: every setting commented out with its help and
        /// its value (what the Debian package installs).
        #[arg(long)]
        template: bool,
        /// Print README's settings table instead (every setting: key, flag, variable, default
        /// and what it does), generated from the same definitions.
        #[arg(long, conflicts_with = "template")]
        markdown: bool,
    },
}

/// `trusthub config check|show`.
pub fn command(cmd: ConfigCommand, root: Command) -> Result<(), crate::remote::client::Failure> {
    let serve = root.find_subcommand("serve").cloned().unwrap_or_default();
    let failed = |errors: Vec<String>| crate::remote::client::Failure {
        code: 1,
        message: errors.join("\n"),
    };
    match cmd {
        ConfigCommand::Check { file } => {
            let loaded = load(&file, &serve).map_err(failed)?;
            let keys: Vec<&str> = loaded.values.iter().map(|v| v.key.as_str()).collect();
            println!(
                "{}: {} settings, all valid ({})",
                loaded.path.display(),
                keys.len(),
                keys.join(", ")
            );
            Ok(())
        }
        ConfigCommand::Show { markdown: true, .. } => {
            print!("{}", markdown_table(&serve));
            Ok(())
        }
        ConfigCommand::Show {
            config, template, ..
        } => {
            let loaded = match &config {
                Some(f) => load(f, &serve).map_err(failed)?,
                None => Loaded::default(),
            };
            let root = with_defaults(root, "serve", &loaded);
            let matches = root
                .try_get_matches_from(["trusthub", "serve"])
                .map_err(|e| failed(vec![e.to_string()]))?;
            let Some(("serve", m)) = matches.subcommand() else {
                return Err(failed(vec!["no serve settings".into()]));
            };
            let mut rows = Vec::new();
            let mut file = String::from(
                "# Trusthub hub settings (CONTRACT 31): a key is a TRUSTHUB_ variable's name without\n\
                 # the prefix, lowercased. The environment overrides this file and flags override both.\n\
                 # Check a change with `trusthub config check <file>`; see what the hub runs with\n\
                 # `trusthub config show --config <file>`.\n",
            );
            for arg in serve.get_arguments() {
                let Some(env) = arg.get_env().and_then(|e| e.to_str()) else {
                    continue;
                };
                if env == "TRUSTHUB_CONFIG" {
                    continue;
                }
                let id = arg.get_id().as_str();
                let value = m
                    .get_raw(id)
                    .map(|v| {
                        v.map(|x| x.to_string_lossy().into_owned())
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .unwrap_or_default();
                let shown = if value.is_empty() {
                    value
                } else if arg.is_hide_env_values_set() {
                    "********".to_owned()
                } else {
                    trusthub_hub::outbound::redact(&value)
                };
                let key = env.trim_start_matches("TRUSTHUB_").to_ascii_lowercase();
                if template && !arg.is_hide_set() {
                    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                    file.push('\n');
                    for line in help.lines() {
                        file.push_str(&format!("# {line}\n"));
                    }
                    let quoted = serde_json::Value::String(shown.clone()).to_string();
                    file.push_str(&format!("# {key} = {quoted}\n"));
                }
                rows.push((key, shown, origin(m, id, &loaded)));
            }
            if template {
                print!("{file}");
                return Ok(());
            }
            rows.sort();
            let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
            for (key, value, from) in rows {
                println!("{key:width$}  {from:7}  {value}");
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd() -> Command {
        Command::new("serve")
            .arg(
                clap::Arg::new("listen")
                    .long("listen")
                    .env("TRUSTHUB_LISTEN"),
            )
            .arg(
                clap::Arg::new("max")
                    .long("max")
                    .env("TRUSTHUB_MAX_CONNECTIONS")
                    .value_parser(clap::value_parser!(u32)),
            )
            .arg(
                clap::Arg::new("cidrs")
                    .long("cidrs")
                    .env("TRUSTHUB_OUTBOUND_ALLOW_CIDRS"),
            )
    }

    fn file(text: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("th-conf-{}.toml", uuid::Uuid::new_v4()));
        std::fs::write(&p, text).expect("write");
        p
    }

    #[test]
    fn keys_are_the_variables_names_and_errors_name_key_and_line() {
        let p = file(
            "# the hub\nlisten = \"0.0.0.0:8080\"\nmax_connections = 0x10\noutbound_allow_cidrs = [\"10.0.0.0/8\", \"fd00::/8\"]\n",
        );
        let l = load(&p, &cmd()).expect("loads");
        let got: Vec<(&str, &str)> = l
            .values
            .iter()
            .map(|v| (v.key.as_str(), v.value.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("listen", "0.0.0.0:8080"),
                ("max_connections", "16"),
                ("outbound_allow_cidrs", "10.0.0.0/8,fd00::/8")
            ]
        );
        let bad = file(
            "listen = \"x\"\n\nlistn = \"y\"\nmax_connections = \"many\"\n[section]\nLISTEN = 1\n",
        );
        let errors = load(&bad, &cmd()).expect_err("refused");
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(
            errors[0].contains(":3: `listn` is not a setting"),
            "{errors:?}"
        );
        assert!(errors[1].contains(":4: `max_connections`"), "{errors:?}");
        assert!(errors[2].contains(":5: `section` is a table"), "{errors:?}");
        let broken = file("listen = \n");
        let errors = load(&broken, &cmd()).expect_err("refused");
        assert!(errors[0].contains(":1: not TOML"), "{errors:?}");
        for f in [p, bad, broken] {
            let _ = std::fs::remove_file(f);
        }
    }

    #[test]
    fn the_file_is_below_the_environment_and_flags() {
        let p = file("listen = \"127.0.0.1:1\"\nmax_connections = 5\n");
        let root = Command::new("trusthub").subcommand(cmd());
        let l = load(&p, &cmd()).expect("loads");
        let root = with_defaults(root, "serve", &l);
        let m = root
            .try_get_matches_from(["trusthub", "serve", "--max", "7"])
            .expect("matches");
        let (_, sub) = m.subcommand().expect("serve");
        assert_eq!(
            sub.get_one::<String>("listen").map(String::as_str),
            Some("127.0.0.1:1")
        );
        assert_eq!(sub.get_one::<u32>("max"), Some(&7));
        assert_eq!(origin(sub, "listen", &l), "file");
        assert_eq!(origin(sub, "max", &l), "flag");
        assert_eq!(origin(sub, "cidrs", &l), "default");
        let _ = std::fs::remove_file(p);
    }

    #[test]
    fn the_file_is_named_after_the_verb() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            named(&args(&["trusthub", "serve", "--config", "/etc/t.toml"])),
            Some(("serve", PathBuf::from("/etc/t.toml")))
        );
        assert_eq!(
            named(&args(&[
                "trusthub",
                "up",
                "--listen",
                "x",
                "--config=a.toml"
            ])),
            Some(("up", PathBuf::from("a.toml")))
        );
        assert_eq!(named(&args(&["trusthub", "agents", "--config", "x"])), None);
    }
}
