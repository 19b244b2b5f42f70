//! SLO burn alerts (CONTRACT 16), once per cluster every `TRUSTHUB_SLO_EVAL_INTERVAL_SECS`:
//! for each SLO with enough data, the two critical multi-window conditions (14.4 over 1 h and
//! 5 min; 6 over 6 h and 30 min) and the warning one (1 over 3 d and 6 h) each keep one open
//! alert (`source: slo`) while they hold and resolve it when they clear; each SLO's status is
//! kept for the overview and the apps page (`app_slos.last_*`). The pass also drops
//! timeline spans older than the retention (500 days).

use crate::objective as core;
use crate::state::AppState;
use time::OffsetDateTime;
use trusthub_alerts as alerts;
use trusthub_core::alerting::Severity;
use trusthub_store::{StoreResult, TenantId};

/// The lease and log name of this job.
pub const JOB: &str = "slo";

/// Days of timeline kept (at least 400, as the history reads up to 365 days back plus a
/// window).
pub const RETENTION_DAYS: i64 = 500;

/// Seconds between evaluations (`TRUSTHUB_SLO_EVAL_INTERVAL_SECS`, 60).
pub fn interval(s: &trusthub_platform::settings::Settings) -> u64 {
    crate::settings::of(s).slo_eval_interval_secs.max(1)
}

/// One scheduled run at `now`.
pub async fn tick(state: &AppState, now: OffsetDateTime) -> StoreResult<()> {
    evaluate(state, now).await.map(|_| ())
}

/// What one evaluation did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// SLOs evaluated.
    pub slos: usize,
    /// Alerts raised.
    pub raised: usize,
    /// Alerts resolved.
    pub resolved: usize,
}

/// Evaluates every SLO's burn conditions at `now`.
pub async fn evaluate(state: &AppState, now: OffsetDateTime) -> StoreResult<Report> {
    let slos = {
        let mut c = state.db.conn().await?;
        crate::store::slo::list(&mut c, None).await?
    };
    let mut report = Report {
        slos: slos.len(),
        ..Report::default()
    };
    let mut notifier = crate::alerting::Notifier::default();
    for s in &slos {
        let tenant = TenantId(s.tenant_id);
        let since = now - crate::service::slo::lookback(s);
        let (spans, maint, name) = {
            let mut c = state.db.conn().await?;
            let spans = trusthub_monitors::timeline::spans(&mut c, s.app_id, since).await?;
            let maint =
                trusthub_monitors::timeline::maintenance(&mut c, tenant, s.app_id, since).await?;
            let name = trusthub_monitors::app(&mut c, tenant, s.app_id)
                .await?
                .map(|a| a.name)
                .unwrap_or_default();
            (spans, maint, name)
        };
        let spans = crate::service::slo::core_spans(&spans);
        let maint: Vec<(i64, i64)> = maint
            .iter()
            .map(|m| (m.starts_at.unix_timestamp(), m.ends_at.unix_timestamp()))
            .collect();
        let status = core::status(
            &crate::service::slo::objective(s),
            &spans,
            &maint,
            now.unix_timestamp(),
        );
        // Too little data: no burn alert fires (and none stays open).
        let holds = if status.state == core::State::InsufficientData {
            core::BurnAlerts::default()
        } else {
            core::burn_alerts(s.target, &spans, &maint, now.unix_timestamp())
        };
        let mut tx = state.db.begin().await?;
        // The status the overview and the apps page show until the next evaluation.
        crate::store::slo::save_summary(
            &mut tx,
            s.app_id,
            status.state.as_str(),
            status.budget_remaining_minutes,
            status.budget_total_minutes,
            status.uptime_percent,
            now,
        )
        .await?;
        for (kind, on, severity, what) in [
            (
                "fast",
                holds.fast,
                Severity::Critical,
                "burn rate ≥ 14.4 over 1 h and 5 min",
            ),
            (
                "slow",
                holds.slow,
                Severity::Critical,
                "burn rate ≥ 6 over 6 h and 30 min",
            ),
            (
                "ticket",
                holds.ticket,
                Severity::Warning,
                "burn rate ≥ 1 over 3 days and 6 h",
            ),
        ] {
            let fingerprint = format!("slo:{}:{kind}", s.app_id);
            let open = alerts::open_by_fingerprint(&mut tx, tenant, &fingerprint).await?;
            match (on, open) {
                (true, None) => {
                    let title = format!("{name}: error budget burning ({what})");
                    let detail = format!(
                        "target {}, {} of {} budget minutes left; burn rate 1 h {:.1}, 6 h {:.1}, 24 h {:.1}, 7 d {:.1}",
                        s.target,
                        (status.budget_remaining_minutes * 10.0).round() / 10.0,
                        (status.budget_total_minutes * 10.0).round() / 10.0,
                        status.burn_rates[0],
                        status.burn_rates[1],
                        status.burn_rates[2],
                        status.burn_rates[3],
                    );
                    let raised = notifier
                        .raise(
                            &mut tx,
                            tenant,
                            &alerts::NewAlert {
                                severity: severity.as_str(),
                                severity_rank: severity.rank(),
                                category: "slo",
                                title: &title,
                                detail: Some(&detail),
                                source: trusthub_core::alerting::source::SLO,
                                fingerprint: &fingerprint,
                                agent_id: None,
                                app_id: Some(s.app_id),
                                rule_id: None,
                            },
                            now,
                        )
                        .await?;
                    report.raised += usize::from(raised.is_some());
                }
                (false, Some(open)) => {
                    let done = notifier
                        .resolve(
                            &mut tx,
                            tenant,
                            open.id,
                            "slo",
                            "the burn rate is back under the threshold",
                            now,
                        )
                        .await?;
                    report.resolved += usize::from(done.is_some());
                }
                _ => {}
            }
        }
        tx.commit().await?;
    }
    let mut tx = state.db.begin().await?;
    trusthub_monitors::timeline::purge(&mut tx, now - time::Duration::days(RETENTION_DAYS)).await?;
    tx.commit().await?;
    Ok(report)
}
