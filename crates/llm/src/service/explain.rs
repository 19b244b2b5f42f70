//! The services behind [`crate::routes::explain`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::explain;
use crate::state::AppState;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// The line to explain.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExplainQuery {
    /// The log line, 1 to 4000 characters, not only spaces.
    #[param(min_length = 1, max_length = 4000, pattern = r"\S")]
    pub log: String,
    /// The host it comes from: its OS and architecture are given to the model as context
    /// (never its name).
    pub agent_id: Option<Uuid>,
    /// The reader's language (`en` default; the built-in rules speak `en` and `de`, a model
    /// any it knows), a BCP 47 tag such as `de` or `pt-BR`.
    #[param(pattern = "^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")]
    pub lang: Option<String>,
}

/// An explanation.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Explained {
    /// What the line means and what to do.
    pub explanation: String,
    /// Its language.
    pub lang: String,
    /// `llm` (the configured model) or `rules` (the built-in rules).
    pub source: String,
    /// The model that answered (with `source: llm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The built-in rule that matched (with `source: rules`; absent when none knows the
    /// line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Why the model's answer is not here (it failed or timed out; the rules answered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

pub(crate) fn valid_lang(l: &str) -> bool {
    let (main, region) = match l.split_once('-') {
        Some((m, r)) => (m, Some(r)),
        None => (l, None),
    };
    (2..=3).contains(&main.len())
        && main.bytes().all(|b| b.is_ascii_lowercase())
        && region.is_none_or(|r| {
            (2..=8).contains(&r.len()) && r.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

/// The service behind the `explain_line` handler, for the API and the dashboard alike.
pub async fn explain(
    state: &AppState,
    by: &Principal,
    log: &str,
    agent_id: Option<Uuid>,
    lang: Option<&str>,
) -> ApiResult<Explained> {
    let lang = lang.unwrap_or("en");
    if !valid_lang(lang) {
        return Err(ApiError::invalid(
            "lang",
            "must be a language code such as en, de or pt-BR",
        ));
    }
    let chars = log.chars().count();
    if chars == 0 || chars > 4000 || log.trim().is_empty() {
        return Err(ApiError::invalid("log", "must be 1 to 4000 characters"));
    }
    let tenant = by.tenant();
    // CONTRACT 30: every user or token has its own budget of explanations a minute.
    state
        .limiter
        .hit(
            trusthub_platform::ratelimit::Limit {
                name: "explain",
                max: crate::settings::of(&state.settings).explain_rate,
                window_secs: 60,
            },
            &by.actor(),
            trusthub_platform::state::now().unix_timestamp(),
        )
        .await?;
    let host = match agent_id {
        None => None,
        Some(id) => {
            let mut c = state.db.conn().await?;
            Some(
                trusthub_fleet::agent(&mut c, tenant, id)
                    .await?
                    .ok_or(ApiError::NotFound("agent"))?,
            )
        }
    };
    let rules = |note: Option<String>| -> ApiResult<Explained> {
        let base = lang.split('-').next().unwrap_or("en");
        if !explain::LANGS.contains(&base) {
            return Err(ApiError::invalid(
                "lang",
                "the built-in rules speak en and de; other languages need a language model (TRUSTHUB_LLM_URL)",
            ));
        }
        let found = explain::explain(log, base);
        Ok(Explained {
            explanation: match &found {
                Some(e) => e.text.clone(),
                None if base == "de" => "Keine eingebaute Regel kennt diese Zeile. Mit einem Sprachmodell (TRUSTHUB_LLM_URL) erklärt der Hub jede Zeile.".into(),
                None => "No built-in rule knows this line. With a language model configured (TRUSTHUB_LLM_URL) the hub explains any line.".into(),
            },
            lang: base.to_owned(),
            source: "rules".into(),
            model: None,
            rule: found.map(|e| e.rule.to_owned()),
            note,
        })
    };
    let Some(url) = &crate::settings::of(&state.settings).llm_url else {
        return rules(None);
    };
    let context = host
        .as_ref()
        .map(|a| format!("The host runs {} on {}.", a.os, a.arch))
        .unwrap_or_else(|| "The host is a Linux server.".into());
    let mut line = explain::redact_line(log);
    if let Some(a) = &host
        && a.hostname.len() >= 3
    {
        line = line.replace(&a.hostname, "[HOST]");
    }
    match ask_model(state, url, lang, &context, &line).await {
        Ok(text) => Ok(Explained {
            explanation: text,
            lang: lang.to_owned(),
            source: "llm".into(),
            model: Some(crate::settings::of(&state.settings).llm_model.clone()),
            rule: None,
            note: None,
        }),
        Err(why) => {
            tracing::warn!(error = %why, "the language model did not explain a line; the built-in rules answer");
            rules(Some(format!(
                "the language model did not answer ({why}); the built-in rules answered"
            )))
        }
    }
}

/// One chat completion: the system prompt, the host context and the redacted line.
pub(crate) async fn ask_model(
    state: &AppState,
    base: &str,
    lang: &str,
    context: &str,
    line: &str,
) -> Result<String, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let body = json!({
        "model": crate::settings::of(&state.settings).llm_model,
        "messages": [
            {"role": "system", "content": format!(
                "You explain Linux server log lines to the operators of the server. Answer in the language `{lang}`, \
                 in at most four sentences: what happened, whether it is dangerous, and what to do. \
                 Placeholders in square brackets such as [EMAIL], [IP], [USER] or [HOST] stand for redacted values.")},
            {"role": "user", "content": format!("{context}\nLog line: {line}")},
        ],
        "temperature": 0.2,
        "stream": false,
    });
    let mut req = client.post(format!("{base}/chat/completions")).json(&body);
    if let Some(key) = &crate::settings::of(&state.settings).llm_api_key {
        req = req.bearer_auth(key);
    }
    let resp = req
        .send()
        .await
        // Without the URL: it may hold userinfo (CONTRACT 30).
        .map_err(|e| format!("cannot reach it: {}", e.without_url()))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("it answered {status}"));
    }
    let v: Value = resp
        .json()
        .await
        .map_err(|e| format!("its answer is not JSON: {}", e.without_url()))?;
    v["choices"][0]["message"]["content"]
        .as_str()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| t.chars().take(4000).collect())
        .ok_or_else(|| "its answer has no choices[0].message.content".into())
}
