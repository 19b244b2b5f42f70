//! Checks that count at their own interval (CONTRACT 27): every result of an http, tcp or
//! tls check — run by the hub itself or by an agent — is counted when it arrives, so a
//! monitor is down after `retries + 1` failed checks in a row and alerts then, with the last
//! probe error in the alert; it is up again after `recoveries` successes and the alert
//! resolves. The SLO timeline gets a span per verdict. A tls check whose certificate
//! expires within `tls_min_days` raises a separate warning.

use crate::alerting::Notifier;
use crate::store::apps::{App, CheckResult, CheckUpdate};
use time::OffsetDateTime;
use trusthub_core::alerting::{Severity, source};
use trusthub_core::liveness::Observed;
use trusthub_core::probe::{self, Counts, Thresholds};
use trusthub_store::{StoreResult, TenantId, Tx};

/// What recording one result did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    /// The result was new (not a repeat of a stored one).
    pub stored: bool,
    /// An alert was raised.
    pub raised: bool,
    /// An alert was resolved.
    pub resolved: bool,
}

fn observed(s: Option<&str>) -> Observed {
    match s {
        Some("running") => Observed::Running,
        Some("stopped") => Observed::Stopped,
        _ => Observed::Unknown,
    }
}

fn name(o: Observed) -> &'static str {
    match o {
        Observed::Running => "running",
        Observed::Stopped => "stopped",
        Observed::Unknown => "unknown",
    }
}

/// The alert fingerprint of a certificate-expiry warning.
pub fn tls_fingerprint(app: &App) -> String {
    format!("tls_expiry:{}", app.id)
}

/// A warning about `app` (its liveness, its certificate), as every monitor alert is raised.
pub(crate) fn warning<'a>(
    app: &App,
    category: &'a str,
    title: &'a str,
    detail: &'a str,
    fingerprint: &'a str,
) -> trusthub_alerts::NewAlert<'a> {
    trusthub_alerts::NewAlert {
        severity: Severity::Warning.as_str(),
        severity_rank: Severity::Warning.rank(),
        category,
        title,
        detail: Some(detail),
        source: source::LIVENESS,
        fingerprint,
        agent_id: app.agent_id,
        app_id: Some(app.id),
        rule_id: None,
    }
}

/// What a failed check said, for people: the probe's error, else the status.
fn why(r: &CheckResult) -> String {
    match (&r.error, r.status_code) {
        (Some(e), _) => e.clone(),
        (None, Some(s)) => format!("HTTP {s}"),
        (None, None) => "failed".into(),
    }
}

/// What one result does to an app's counters and verdict, before anything is written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Verdict {
    /// The counters and verdict after the result.
    pub after: Counts,
    /// The state the app is expected in.
    pub expected: Observed,
    /// The verdict is known and is not the expected state.
    pub mismatch: bool,
    /// An alert opens now.
    pub raise: bool,
    /// The open alert resolves now.
    pub resolve: bool,
    /// The app's red marker after the result.
    pub alerting: bool,
    /// The verdict changed.
    pub changed: bool,
}

impl Verdict {
    /// Counts a result (`ok`) of `app`; `quiet` (a maintenance window) raises nothing.
    pub(crate) fn of(app: &App, ok: bool, quiet: bool) -> Self {
        let prev = Counts {
            failures: app.consecutive_failures,
            successes: app.consecutive_successes,
            observed: observed(app.observed_state.as_deref()),
        };
        let t = Thresholds {
            retries: app.retries,
            recoveries: app.recoveries,
        };
        let after = probe::count(prev, ok, t);
        let expected = if app.expected_state == "stopped" {
            Observed::Stopped
        } else {
            Observed::Running
        };
        let mismatch = after.observed != Observed::Unknown && after.observed != expected;
        let raise = mismatch && !app.alerting && !quiet;
        let resolve = !mismatch && after.observed != Observed::Unknown && app.alerting;
        Verdict {
            after,
            expected,
            mismatch,
            raise,
            resolve,
            alerting: (app.alerting || raise) && !resolve,
            changed: after.observed != prev.observed,
        }
    }

    /// The verdict's name as the app row keeps it.
    pub(crate) fn state(&self) -> &'static str {
        name(self.after.observed)
    }

    /// The timeline has a verdict to extend or start.
    pub(crate) fn known(&self) -> bool {
        self.after.observed != Observed::Unknown
    }
}

/// The SLO timeline's tolerance (CONTRACT 16): a verdict covers the time since the previous
/// check when that one was recent (two intervals and half a minute).
pub(crate) fn span_tolerance(app: &App) -> time::Duration {
    time::Duration::seconds(app.interval_seconds.unwrap_or(60) * 2 + 30)
}

/// Records one check result of `app` in `tx`: history, counters, verdict, timeline, alerts.
/// `next` is when a hub check is due again; `quiet` (a maintenance window) keeps alerts
/// from being raised.
#[allow(clippy::too_many_arguments)]
pub async fn record(
    tx: &mut Tx,
    notifier: &mut Notifier,
    app: &App,
    r: &CheckResult,
    next: Option<OffsetDateTime>,
    tls_expires_at: Option<OffsetDateTime>,
    quiet: bool,
    now: OffsetDateTime,
) -> StoreResult<Recorded> {
    let v = Verdict::of(app, r.ok, quiet);
    let stored = crate::store::apps::save_check(
        tx,
        &CheckUpdate {
            id: app.id,
            result: r,
            consecutive_failures: v.after.failures,
            consecutive_successes: v.after.successes,
            observed_state: v.state(),
            last_state_change: v.changed.then_some(r.checked_at),
            alerting: v.alerting,
            next_check_at: next,
            tls_expires_at,
        },
    )
    .await?;
    let mut out = Recorded {
        stored,
        ..Recorded::default()
    };
    if !stored {
        return Ok(out);
    }
    if v.known() {
        let down = v.mismatch;
        let tolerance = span_tolerance(app);
        let at = r.checked_at;
        match crate::store::timeline::last_span(tx, app.id).await? {
            Some(l) if at >= l.end_at && at - l.end_at <= tolerance => {
                if l.down == down {
                    crate::store::timeline::extend(tx, l.id, at).await?;
                } else {
                    crate::store::timeline::append(tx, app.id, l.end_at, at, down).await?;
                }
            }
            Some(l) if at < l.end_at => {}
            _ => crate::store::timeline::append(tx, app.id, at, at, down).await?,
        }
    }
    (out.raised, out.resolved) = alert(tx, notifier, app, r, &v, now).await?;
    let tenant = TenantId(app.tenant_id);
    if let Some(expires) = tls_expires_at {
        let min = app.tls_min_days.unwrap_or(probe::DEFAULT_TLS_MIN_DAYS);
        let left = probe::days_left(expires, r.checked_at);
        let fp = tls_fingerprint(app);
        if left < min && !quiet {
            let title = format!("The certificate of {} expires in {left} days", app.name);
            let detail = format!(
                "{} `{}`: the certificate is valid until {}; the warning starts {min} days before",
                app.app_type,
                app.identifier,
                trusthub_platform::state::rfc3339(expires)
            );
            notifier
                .raise(tx, tenant, &warning(app, "tls", &title, &detail, &fp), now)
                .await?;
        } else if left >= min
            && let Some(open) = trusthub_alerts::open_by_fingerprint(tx, tenant, &fp).await?
        {
            notifier
                .resolve(
                    tx,
                    tenant,
                    open.id,
                    "liveness",
                    "the certificate was renewed",
                    now,
                )
                .await?;
        }
    }
    Ok(out)
}

/// Opens or resolves `app`'s liveness alert as the verdict `v` of result `r` says: whether
/// one was raised and whether one was resolved.
pub(crate) async fn alert(
    tx: &mut Tx,
    notifier: &mut Notifier,
    app: &App,
    r: &CheckResult,
    v: &Verdict,
    now: OffsetDateTime,
) -> StoreResult<(bool, bool)> {
    let (mut raised_now, mut resolved_now) = (false, false);
    let tenant = TenantId(app.tenant_id);
    let fingerprint = trusthub_core::alerting::liveness_fingerprint(&app.id.to_string());
    if v.raise {
        let title = if v.expected == Observed::Running {
            format!("{} is down", app.name)
        } else {
            format!("{} is up, expected down", app.name)
        };
        let who = if app.agent_id.is_some() {
            "its agent"
        } else {
            "the hub"
        };
        let detail = format!(
            "{} `{}`: {} ({} failed check{} in a row by {who}, every {} s)",
            app.app_type,
            app.identifier,
            if r.ok { "answered".to_owned() } else { why(r) },
            v.after.failures,
            if v.after.failures == 1 { "" } else { "s" },
            app.interval_seconds.unwrap_or(60),
        );
        let alert = warning(app, "liveness", &title, &detail, &fingerprint);
        let raised = notifier.raise(tx, tenant, &alert, now).await?;
        raised_now = raised.is_some();
    }
    if v.resolve
        && let Some(open) = trusthub_alerts::open_by_fingerprint(tx, tenant, &fingerprint).await?
    {
        let why = format!("resolved itself: {} answers again", app.name);
        resolved_now = notifier
            .resolve(tx, tenant, open.id, "liveness", &why, now)
            .await?
            .is_some();
    }
    Ok((raised_now, resolved_now))
}
