//! The console's settings (CONTRACT 11): flags and environment variables of
//! `trusthub serve`, read with the rest of its command line.

/// What this capability reads from the command line and the environment.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "console-settings")]
pub struct Settings {
    /// A console session without input this long ends (900).
    #[arg(long, env = "TRUSTHUB_CONSOLE_IDLE_SECS", default_value_t = 900)]
    pub console_idle_secs: u64,
    /// A console session ends after this long whatever happens (3600).
    #[arg(long, env = "TRUSTHUB_CONSOLE_MAX_SECS", default_value_t = 3600)]
    pub console_max_secs: u64,
    /// Record what the operator types too (`"i"` events), not only what the host shows.
    #[arg(long, env = "TRUSTHUB_CONSOLE_RECORD_INPUT",
        value_parser = clap::builder::BoolishValueParser::new(),
        action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true,
        default_value = "false", default_missing_value = "true")]
    pub console_record_input: bool,
    /// Where console recordings are written (default `<data dir>/console`).
    #[arg(long, env = "TRUSTHUB_CONSOLE_RECORDING_DIR")]
    pub console_recording_dir: Option<std::path::PathBuf>,
}

/// This capability's settings within the hub's.
pub fn of(settings: &trusthub_platform::settings::Settings) -> std::sync::Arc<Settings> {
    settings.of::<Settings>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        settings: Settings,
    }

    /// CONTRACT 30: `--console-record-input` takes every usual spelling of a switch, and a
    /// bare flag means on; anything else is refused.
    #[test]
    fn the_record_switch_takes_every_usual_spelling() {
        for (word, on) in [
            ("1", true),
            ("0", false),
            ("true", true),
            ("false", false),
            ("yes", true),
            ("no", false),
            ("on", true),
            ("off", false),
            ("ON", true),
        ] {
            let c = Command::try_parse_from([
                "hub".to_owned(),
                format!("--console-record-input={word}"),
            ])
            .unwrap_or_else(|e| panic!("{word}: {e}"));
            assert_eq!(c.settings.console_record_input, on, "{word}");
        }
        assert!(Command::try_parse_from(["hub", "--console-record-input=maybe"]).is_err());
        let bare = Command::try_parse_from(["hub", "--console-record-input"]).expect("a bare flag");
        assert!(bare.settings.console_record_input);
        let defaults = trusthub_platform::settings::defaults::<Settings>();
        assert!(!defaults.console_record_input);
        assert_eq!(defaults.console_idle_secs, 900);
    }
}
