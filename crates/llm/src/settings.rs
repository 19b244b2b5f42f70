//! The LLM traces' (prices, evidence packs, `/ai/explain`) settings (CONTRACT 11): flags and environment variables of
//! `trusthub serve`, read with the rest of its command line.

/// What this capability reads from the command line and the environment.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "llm-settings")]
pub struct Settings {
    /// A JSON price file applied over the shipped LLM prices for every tenant (see
    /// `GET /ai/prices`); tenants' own overrides go on top.
    #[arg(long, env = "TRUSTHUB_AI_PRICES_FILE")]
    pub ai_prices_file: Option<std::path::PathBuf>,
    /// Where evidence packs are kept (default `<data-dir>/evidence`). Several hub processes
    /// on one PostgreSQL database must share it (a network file system), as they share the
    /// database.
    #[arg(long, env = "TRUSTHUB_EVIDENCE_DIR")]
    pub evidence_dir: Option<std::path::PathBuf>,
    /// Days an evidence pack is kept on disk (at least 12 months; lower values are
    /// refused at start).
    #[arg(long, env = "TRUSTHUB_EVIDENCE_RETENTION_DAYS", default_value_t = 400)]
    pub evidence_retention_days: i64,
    /// An OpenAI-compatible chat-completions API for `/ai/explain` (Ollama, llama.cpp, vLLM),
    /// as its base ending in `/v1` (e.g. `http://127.0.0.1:11434/v1`); the hub posts the
    /// redacted log line to `<url>/chat/completions`. Unset: the built-in rules explain.
    #[arg(long, env = "TRUSTHUB_LLM_URL", value_parser = trusthub_platform::settings::parse_llm_url)]
    pub llm_url: Option<String>,
    /// The model `/ai/explain` asks for.
    #[arg(long, env = "TRUSTHUB_LLM_MODEL", default_value = "llama3.2")]
    pub llm_model: String,
    /// `/ai/explain` calls per minute per user or token (429 with `Retry-After` past it).
    #[arg(long, env = "TRUSTHUB_EXPLAIN_RATE", default_value_t = 20,
        value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub explain_rate: u32,
    /// A bearer token for the LLM API, when it wants one.
    #[arg(long, env = "TRUSTHUB_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<String>,
}

/// This capability's settings within the hub's.
pub fn of(settings: &trusthub_platform::settings::Settings) -> std::sync::Arc<Settings> {
    settings.of::<Settings>()
}

impl Settings {
    /// Where evidence packs are kept: `TRUSTHUB_EVIDENCE_DIR`, else `<data dir>/evidence`.
    pub fn evidence_dir(&self, data_dir: &std::path::Path) -> std::path::PathBuf {
        self.evidence_dir
            .clone()
            .unwrap_or_else(|| data_dir.join("evidence"))
    }
}
