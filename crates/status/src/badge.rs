//! Public app badges (CONTRACT 32): `GET /badge/app/<badge_token>.svg?type=status|uptime|
//! latency&days=30`, shields.io's flat style drawn as badge-maker draws it; the label is the
//! app's name, the message its state, its uptime over the days or its mean latency.

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use trusthub_platform::AppState;
use trusthub_platform::state::now;

/// What a badge shows.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BadgeQuery {
    /// `status` (the default), `uptime` or `latency`.
    #[serde(rename = "type")]
    kind: Option<String>,
    /// Days of uptime or latency, 1 to 90 (30).
    days: Option<String>,
}

/// shields.io's named colours, as hex.
const GREEN: &str = "44cc11";
const GREENISH: &str = "97ca00";
const YELLOWGREEN: &str = "a4a61d";
const YELLOW: &str = "dfb317";
const ORANGE: &str = "fe7d37";
const RED: &str = "e05d44";
const GREY: &str = "9f9f9f";
const BLUE: &str = "007ec6";

/// A state's colour.
pub fn status_colour(s: &str) -> &'static str {
    match s {
        "up" => GREEN,
        "degraded" => YELLOW,
        "down" => RED,
        _ => GREY,
    }
}

/// An uptime's colour (as uptime badges usually grade it).
pub fn uptime_colour(p: f64) -> &'static str {
    match p {
        p if p >= 99.9 => GREEN,
        p if p >= 99.0 => GREENISH,
        p if p >= 97.0 => YELLOWGREEN,
        p if p >= 95.0 => YELLOW,
        p if p >= 90.0 => ORANGE,
        _ => RED,
    }
}

/// An uptime as the message shows it: `99.95%`, `100%`.
pub fn uptime_text(p: f64) -> String {
    let s = format!("{p:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

fn refused(m: &str) -> Response {
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{m}\n"),
    )
        .into_response()
}

/// `GET /badge/app/{token}.svg` (public).
pub async fn app_badge(
    State(state): State<AppState>,
    Path(file): Path<String>,
    Query(q): Query<BadgeQuery>,
) -> Response {
    let Some(token) = file.strip_suffix(".svg") else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let kind = q.kind.as_deref().unwrap_or("status");
    if !["status", "uptime", "latency"].contains(&kind) {
        return refused("type must be status, uptime or latency");
    }
    let days = match q.days.as_deref().map(str::parse::<i64>) {
        None => 30,
        Some(Ok(d)) if (1..=90).contains(&d) => d,
        Some(_) => return refused("days must be 1 to 90"),
    };
    match draw(&state, token, kind, days).await {
        Ok(Some(svg)) => (
            [
                (header::CONTENT_TYPE, "image/svg+xml"),
                (header::CACHE_CONTROL, "max-age=60"),
            ],
            svg,
        )
            .into_response(),
        Ok(None) => StatusCode::NOT_FOUND.into_response(),
        Err(e) => e.into_response(),
    }
}

/// The badge's label, message and colour, or `None` for an unknown token.
pub async fn message(
    state: &AppState,
    token: &str,
    kind: &str,
    days: i64,
) -> trusthub_platform::error::ApiResult<Option<(String, String, &'static str)>> {
    let at = now();
    let mut c = state.db.conn().await?;
    let Some(app) = trusthub_monitors::app_by_badge(&mut c, token).await? else {
        return Ok(None);
    };
    let tenant = trusthub_store::TenantId(app.tenant_id);
    let since = at - time::Duration::days(days);
    Ok(Some(match kind {
        "uptime" => {
            let mut spans: Vec<_> = trusthub_monitors::timeline::spans(&mut c, app.id, since)
                .await?
                .into_iter()
                .map(|s| {
                    crate::rules::span(
                        s.start_at.unix_timestamp(),
                        s.end_at.unix_timestamp(),
                        s.down,
                    )
                })
                .collect();
            spans.sort_by_key(|s| (s.start, s.end));
            let windows: Vec<(i64, i64)> =
                trusthub_monitors::timeline::maintenance(&mut c, tenant, app.id, since)
                    .await?
                    .into_iter()
                    .map(|w| (w.starts_at.unix_timestamp(), w.ends_at.unix_timestamp()))
                    .collect();
            let t = trusthub_slo::objective::tally(
                &spans,
                &windows,
                since.unix_timestamp(),
                at.unix_timestamp(),
            );
            let label = format!("{} {days}d", app.name);
            match (t.observed_secs > 0)
                .then(|| 100.0 * (t.observed_secs - t.down_secs) as f64 / t.observed_secs as f64)
            {
                Some(p) => (label, uptime_text(p), uptime_colour(p)),
                None => (label, "no data".into(), GREY),
            }
        }
        "latency" => {
            let (mean, _) = trusthub_monitors::mean_latency(&mut c, app.id, since).await?;
            let label = format!("{} {days}d", app.name);
            match mean {
                Some(ms) => (label, format!("{} ms", ms.round() as i64), BLUE),
                None => (label, "no data".into(), GREY),
            }
        }
        _ => {
            let windows =
                trusthub_monitors::timeline::maintenance(&mut c, tenant, app.id, at).await?;
            let in_maint = windows.iter().any(|w| w.starts_at <= at && at < w.ends_at);
            let s = crate::rules::app_status(
                app.observed_state.as_deref(),
                &app.expected_state,
                app.consecutive_failures > 0,
                in_maint,
            );
            (app.name.clone(), s.to_owned(), status_colour(s))
        }
    }))
}

async fn draw(
    state: &AppState,
    token: &str,
    kind: &str,
    days: i64,
) -> trusthub_platform::error::ApiResult<Option<String>> {
    Ok(message(state, token, kind, days)
        .await?
        .map(|(label, msg, colour)| {
            trusthub_core::badge::svg(&label, &msg, colour, &format!("{label}: {msg}"))
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptimes_read_and_grade_as_uptime_badges_do() {
        assert_eq!(uptime_text(100.0), "100%");
        assert_eq!(uptime_text(99.951), "99.95%");
        assert_eq!(uptime_text(99.5), "99.5%");
        assert_eq!(uptime_colour(99.95), GREEN);
        assert_eq!(uptime_colour(96.0), YELLOW);
        assert_eq!(uptime_colour(12.0), RED);
        assert_eq!(status_colour("maintenance"), GREY);
    }
}
