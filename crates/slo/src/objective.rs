//! SLOs from an app's verdict timeline (SPEC 2.2, CONTRACT 16), as pure functions: the app's
//! history is a list of spans in which the observed state matched the expected one or
//! differed from it; time in no span had no verdict. Maintenance windows are neither observed
//! nor down. Every figure of a window — minutes observed and down, uptime, data coverage,
//! error budget, burn rate — and the multi-window burn conditions come from here; times are
//! Unix seconds, windows half-open `[from, to)`.

/// What liveness (or an http check) concluded for a span of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The observed state was the expected one.
    Matches,
    /// It differed: the minutes count as down.
    Differs,
}

/// A span of the timeline, `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Start (Unix seconds).
    pub start: i64,
    /// End, exclusive.
    pub end: i64,
    /// The verdict throughout.
    pub verdict: Verdict,
}

/// Seconds observed and down in a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// With a verdict, outside maintenance.
    pub observed_secs: i64,
    /// Of them, differing from the expected state.
    pub down_secs: i64,
    /// In maintenance windows.
    pub maintenance_secs: i64,
}

/// The length of `[a, b)` ∩ `[c, d)`.
fn overlap(a: i64, b: i64, c: i64, d: i64) -> i64 {
    (b.min(d) - a.max(c)).max(0)
}

/// Merges intervals into sorted disjoint ones.
fn merged(mut v: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    v.retain(|(a, b)| b > a);
    v.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// What `[from, to)` holds: `spans` sorted by start and disjoint (as the store keeps them),
/// `maintenance` any windows (overlaps allowed).
pub fn tally(spans: &[Span], maintenance: &[(i64, i64)], from: i64, to: i64) -> Tally {
    if to <= from {
        return Tally::default();
    }
    let maint = merged(
        maintenance
            .iter()
            .map(|&(a, b)| (a.max(from), b.min(to)))
            .collect(),
    );
    let maintenance_secs: i64 = maint.iter().map(|(a, b)| b - a).sum();
    let mut t = Tally {
        maintenance_secs,
        ..Tally::default()
    };
    // Spans ending after `from`: binary search on the end (spans are sorted and disjoint).
    let first = spans.partition_point(|s| s.end <= from);
    for s in &spans[first..] {
        if s.start >= to {
            break;
        }
        let inside = overlap(s.start, s.end, from, to);
        if inside == 0 {
            continue;
        }
        let in_maint: i64 = maint
            .iter()
            .map(|&(a, b)| overlap(s.start, s.end, a, b))
            .sum();
        let secs = inside - in_maint;
        t.observed_secs += secs;
        if s.verdict == Verdict::Differs {
            t.down_secs += secs;
        }
    }
    t
}

/// How fast a window spends the budget: the down share of its observed time over the
/// allowed share `1 - target` (0 without observed time).
pub fn burn_rate(t: Tally, target: f64) -> f64 {
    if t.observed_secs <= 0 || target >= 1.0 {
        return 0.0;
    }
    (t.down_secs as f64 / t.observed_secs as f64) / (1.0 - target)
}

/// The error budget of a window, in minutes: `(1 - target) * window_days * 1440`.
pub fn budget_total_minutes(target: f64, window_days: u32) -> f64 {
    (1.0 - target) * f64::from(window_days) * 1440.0
}

/// An SLO's definition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objective {
    /// Availability target in (0, 1).
    pub target: f64,
    /// Rolling window, days.
    pub window_days: u32,
    /// Below this data coverage the state is `insufficient_data`.
    pub minimum_data: f64,
}

/// `ok | burning | exhausted | insufficient_data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Within budget, not spending it this week.
    Ok,
    /// Spending budget (the week's burn rate is above 0).
    Burning,
    /// No budget left.
    Exhausted,
    /// Too little of the window observed to say.
    InsufficientData,
}

impl State {
    /// Its name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Ok => "ok",
            State::Burning => "burning",
            State::Exhausted => "exhausted",
            State::InsufficientData => "insufficient_data",
        }
    }
}

/// The status of an SLO at an instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// The state.
    pub state: State,
    /// Up share of the observed time, percent (`None` while nothing was observed).
    pub uptime_percent: Option<f64>,
    /// Minutes down in the window.
    pub minutes_down: f64,
    /// Minutes with a verdict in the window, outside maintenance.
    pub minutes_observed: f64,
    /// Minutes of the window outside maintenance.
    pub minutes_in_window: f64,
    /// `minutes_observed / minutes_in_window`.
    pub data_coverage: f64,
    /// `(1 - target) * window_days * 1440`.
    pub budget_total_minutes: f64,
    /// Total minus the minutes down (negative once overspent).
    pub budget_remaining_minutes: f64,
    /// Burn rates over the last 1 h, 6 h, 24 h and 7 d.
    pub burn_rates: [f64; 4],
    /// Days until the budget is gone at the week's burn rate (`None` when not burning).
    pub days_to_exhaustion: Option<f64>,
    /// Burn rate per hour over the last 7 days: `(hour start, rate)`, oldest first.
    pub burn_series: Vec<(i64, f64)>,
}

const HOUR: i64 = 3600;
const DAY: i64 = 86_400;

/// The status of `o` at `now` from the app's timeline.
pub fn status(o: &Objective, spans: &[Span], maintenance: &[(i64, i64)], now: i64) -> Status {
    let window = i64::from(o.window_days) * DAY;
    let t = tally(spans, maintenance, now - window, now);
    let minutes_in_window = (window - t.maintenance_secs) as f64 / 60.0;
    let minutes_observed = t.observed_secs as f64 / 60.0;
    let minutes_down = t.down_secs as f64 / 60.0;
    let data_coverage = if minutes_in_window > 0.0 {
        (minutes_observed / minutes_in_window).min(1.0)
    } else {
        0.0
    };
    let total = budget_total_minutes(o.target, o.window_days);
    let remaining = total - minutes_down;
    let rate = |secs: i64| burn_rate(tally(spans, maintenance, now - secs, now), o.target);
    let burn_rates = [rate(HOUR), rate(6 * HOUR), rate(DAY), rate(7 * DAY)];
    let week = burn_rates[3];
    // Minutes of budget a day spends at the week's rate, the whole day observed.
    let per_day = week * (1.0 - o.target) * 1440.0;
    let days_to_exhaustion = (per_day > 0.0).then(|| (remaining / per_day).max(0.0));
    let state = if data_coverage < o.minimum_data {
        State::InsufficientData
    } else if remaining <= 0.0 {
        State::Exhausted
    } else if week > 0.0 {
        State::Burning
    } else {
        State::Ok
    };
    let first_hour = (now - 7 * DAY).div_euclid(HOUR) * HOUR + HOUR;
    let burn_series = (0..168)
        .map(|i| {
            let start = first_hour + i * HOUR - HOUR;
            let end = (start + HOUR).min(now);
            (
                start,
                burn_rate(tally(spans, maintenance, start, end), o.target),
            )
        })
        .filter(|(start, _)| *start < now)
        .collect();
    Status {
        state,
        uptime_percent: (t.observed_secs > 0)
            .then(|| 100.0 * (t.observed_secs - t.down_secs) as f64 / t.observed_secs as f64),
        minutes_down,
        minutes_observed,
        minutes_in_window,
        data_coverage,
        budget_total_minutes: total,
        budget_remaining_minutes: remaining,
        burn_rates,
        days_to_exhaustion,
        burn_series,
    }
}

/// One UTC day of the history.
#[derive(Debug, Clone, PartialEq)]
pub struct Day {
    /// Its midnight (Unix seconds).
    pub start: i64,
    /// Minutes observed that day.
    pub minutes_observed: f64,
    /// Minutes down that day.
    pub minutes_down: f64,
    /// Minutes in maintenance windows that day.
    pub minutes_maintenance: f64,
    /// Up share of the day's observed time, percent (`None` with nothing observed).
    pub uptime_percent: Option<f64>,
    /// The budget left at the day's end (the window ending then).
    pub budget_remaining_minutes: f64,
    /// The day's burn rate.
    pub burn_rate: f64,
}

/// The last `days` UTC days up to the one holding `now` (that one up to `now`), oldest first.
pub fn history(
    o: &Objective,
    spans: &[Span],
    maintenance: &[(i64, i64)],
    now: i64,
    days: u32,
) -> Vec<Day> {
    let today = now.div_euclid(DAY) * DAY;
    let window = i64::from(o.window_days) * DAY;
    let total = budget_total_minutes(o.target, o.window_days);
    (0..i64::from(days))
        .rev()
        .map(|back| {
            let start = today - back * DAY;
            let end = (start + DAY).min(now);
            let t = tally(spans, maintenance, start, end);
            let w = tally(spans, maintenance, end - window, end);
            Day {
                start,
                minutes_observed: t.observed_secs as f64 / 60.0,
                minutes_down: t.down_secs as f64 / 60.0,
                minutes_maintenance: t.maintenance_secs as f64 / 60.0,
                uptime_percent: (t.observed_secs > 0).then(|| {
                    100.0 * (t.observed_secs - t.down_secs) as f64 / t.observed_secs as f64
                }),
                budget_remaining_minutes: total - w.down_secs as f64 / 60.0,
                burn_rate: burn_rate(t, o.target),
            }
        })
        .collect()
}

/// The burn-rate alert conditions (CONTRACT 16, the SRE Workbook's multi-window alerts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BurnAlerts {
    /// Critical: at least 14.4 over both 1 h and 5 min.
    pub fast: bool,
    /// Critical: at least 6 over both 6 h and 30 min.
    pub slow: bool,
    /// Warning: at least 1 over both 3 d and 6 h.
    pub ticket: bool,
}

/// Which burn conditions hold at `now`.
pub fn burn_alerts(
    target: f64,
    spans: &[Span],
    maintenance: &[(i64, i64)],
    now: i64,
) -> BurnAlerts {
    let rate = |secs: i64| burn_rate(tally(spans, maintenance, now - secs, now), target);
    let both =
        |long: i64, short: i64, at_least: f64| rate(long) >= at_least && rate(short) >= at_least;
    BurnAlerts {
        fast: both(HOUR, 5 * 60, 14.4),
        slow: both(6 * HOUR, 30 * 60, 6.0),
        ticket: both(3 * DAY, 6 * HOUR, 1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_790_000_000 / DAY * DAY + 12 * HOUR;

    fn up(start: i64, end: i64) -> Span {
        Span {
            start,
            end,
            verdict: Verdict::Matches,
        }
    }
    fn down(start: i64, end: i64) -> Span {
        Span {
            start,
            end,
            verdict: Verdict::Differs,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn thirty_days_at_three_nines_is_43_2_minutes_and_ten_down_leave_33_2() {
        let o = Objective {
            target: 0.999,
            window_days: 30,
            minimum_data: 0.95,
        };
        let start = NOW - 30 * DAY;
        let spans = [
            up(start, NOW - 2 * DAY),
            down(NOW - 2 * DAY, NOW - 2 * DAY + 600),
            up(NOW - 2 * DAY + 600, NOW),
        ];
        let s = status(&o, &spans, &[], NOW);
        assert!(
            close(s.budget_total_minutes, 43.2),
            "{}",
            s.budget_total_minutes
        );
        assert!(close(s.minutes_down, 10.0));
        assert!(
            close(s.budget_remaining_minutes, 33.2),
            "{}",
            s.budget_remaining_minutes
        );
        assert!(close(s.minutes_observed, 43_200.0));
        assert!(close(s.data_coverage, 1.0));
        assert_eq!(s.state, State::Burning);
        // The week: 10 of 10,080 minutes down at 0.1 % allowed.
        assert!(close(s.burn_rates[3], 10.0 / 10_080.0 / 0.001));
        // 33.2 minutes left at 10 minutes a week.
        let days = s.days_to_exhaustion.expect("burning");
        assert!(close(days, 33.2 / (10.0 / 7.0)), "{days}");
        assert!(close(
            s.uptime_percent.expect("observed"),
            100.0 * (43_190.0 / 43_200.0)
        ));
        assert_eq!(s.burn_series.len(), 168);
        assert!(s.burn_series.iter().any(|(_, r)| *r > 0.0));
    }

    #[test]
    fn nothing_observed_has_no_uptime_rather_than_a_perfect_one() {
        let o = Objective {
            target: 0.999,
            window_days: 30,
            minimum_data: 0.95,
        };
        let s = status(&o, &[], &[], NOW);
        assert_eq!(s.uptime_percent, None);
        assert_eq!(s.state, State::InsufficientData);
        let days = history(&o, &[], &[], NOW, 3);
        assert!(days.iter().all(|d| d.uptime_percent.is_none()), "{days:?}");
    }

    #[test]
    fn gaps_and_maintenance_are_not_observed() {
        let o = Objective {
            target: 0.99,
            window_days: 1,
            minimum_data: 0.95,
        };
        // Half the day without a verdict: insufficient data, however good.
        let s = status(&o, &[up(NOW - 12 * HOUR, NOW)], &[], NOW);
        assert_eq!(s.state, State::InsufficientData);
        assert!(close(s.data_coverage, 0.5));
        // An outage inside maintenance counts for nothing, and the window shrinks with it.
        let spans = [up(NOW - DAY, NOW - HOUR), down(NOW - HOUR, NOW)];
        let s = status(&o, &spans, &[(NOW - HOUR, NOW)], NOW);
        assert!(close(s.minutes_down, 0.0));
        assert!(close(s.minutes_in_window, 1380.0));
        assert!(close(s.data_coverage, 1.0));
        assert_eq!(s.state, State::Ok);
        assert_eq!(s.days_to_exhaustion, None);
    }

    #[test]
    fn a_window_with_three_observed_minutes_all_down_burns_at_one_over_the_allowance() {
        let t = tally(&[down(NOW - 180, NOW)], &[], NOW - HOUR, NOW);
        assert_eq!(t.observed_secs, 180);
        assert!(close(burn_rate(t, 0.999), 1000.0));
    }

    #[test]
    fn the_multi_window_conditions() {
        // Down for the last 10 minutes after a good day: 1 h rate 10/60/0.001 = 166 ≥ 14.4.
        let spans = [up(NOW - 4 * DAY, NOW - 600), down(NOW - 600, NOW)];
        let a = burn_alerts(0.999, &spans, &[], NOW);
        assert!(a.fast && a.slow && a.ticket, "{a:?}");
        // Recovered for 10 minutes: the 5-minute and 30-minute windows clear the criticals.
        let spans = [
            up(NOW - 4 * DAY, NOW - 1200),
            down(NOW - 1200, NOW - 600),
            up(NOW - 600, NOW),
        ];
        let a = burn_alerts(0.999, &spans, &[], NOW);
        assert!(!a.fast, "{a:?}");
        assert!(a.slow, "30 min: 10 of 30 down is still ≥ 6: {a:?}");
        // Nothing down: nothing holds.
        assert_eq!(
            burn_alerts(0.999, &[up(NOW - 4 * DAY, NOW)], &[], NOW),
            BurnAlerts::default()
        );
    }

    #[test]
    fn history_rows_are_utc_days_oldest_first() {
        let o = Objective {
            target: 0.999,
            window_days: 30,
            minimum_data: 0.0,
        };
        let today = NOW / DAY * DAY;
        let spans = [
            up(today - 3 * DAY, today - DAY),
            down(today - DAY, today - DAY + 60),
            up(today - DAY + 60, NOW),
        ];
        let h = history(
            &o,
            &spans,
            &[(today - DAY + 3600, today - DAY + 7200)],
            NOW,
            3,
        );
        assert_eq!(h.len(), 3);
        assert_eq!(h[0].start, today - 2 * DAY);
        assert!(close(h[1].minutes_down, 1.0));
        assert!(close(h[1].minutes_observed, 1380.0));
        assert!(close(h[1].minutes_maintenance, 60.0));
        assert!(close(h[2].minutes_observed, 720.0));
        assert!(close(h[2].budget_remaining_minutes, 42.2));
        assert!(close(h[0].budget_remaining_minutes, 43.2));
    }

    /// The shared generator, in these tests' `i64` arithmetic.
    struct Rng(trusthub_core::rng::Xorshift);
    impl Rng {
        fn below(&mut self, n: u64) -> i64 {
            self.0.below(n) as i64
        }
    }

    #[test]
    fn laws_hold_on_random_timelines() {
        let mut r = Rng(trusthub_core::rng::Xorshift(0x510));
        for _ in 0..300 {
            let mut spans = Vec::new();
            let mut t = NOW - 40 * DAY + r.below(DAY as u64);
            while t < NOW + HOUR {
                let len = 60 + r.below(3 * DAY as u64);
                let gap = if r.below(4) == 0 {
                    r.below(DAY as u64)
                } else {
                    0
                };
                let verdict = if r.below(5) == 0 {
                    Verdict::Differs
                } else {
                    Verdict::Matches
                };
                spans.push(Span {
                    start: t + gap,
                    end: t + gap + len,
                    verdict,
                });
                t += gap + len;
            }
            let maint: Vec<(i64, i64)> = (0..r.below(4))
                .map(|_| {
                    let a = NOW - r.below(40 * DAY as u64);
                    (a, a + r.below(2 * DAY as u64))
                })
                .collect();
            let o = Objective {
                target: [0.9, 0.99, 0.999, 0.9999][r.below(4) as usize],
                window_days: 1 + r.below(90) as u32,
                minimum_data: 0.5,
            };
            let s = status(&o, &spans, &maint, NOW);
            assert!(s.burn_rates.iter().all(|b| *b >= 0.0), "{s:?}");
            assert!(s.budget_remaining_minutes <= s.budget_total_minutes);
            assert!((0.0..=1.0).contains(&s.data_coverage), "{s:?}");
            assert!(s.minutes_down <= s.minutes_observed + 1e-9);
            assert!(s.minutes_observed <= s.minutes_in_window + 1e-9);
            match s.uptime_percent {
                Some(u) => assert!((0.0..=100.0).contains(&u) && s.minutes_observed > 0.0),
                None => assert!(s.minutes_observed == 0.0, "{s:?}"),
            }
            assert!(s.burn_series.iter().all(|(_, b)| *b >= 0.0));
            // Tallies add up over a split window.
            let mid = NOW - r.below(10 * DAY as u64);
            let (a, b) = (
                tally(&spans, &maint, NOW - 10 * DAY, mid),
                tally(&spans, &maint, mid, NOW),
            );
            let whole = tally(&spans, &maint, NOW - 10 * DAY, NOW);
            assert_eq!(a.observed_secs + b.observed_secs, whole.observed_secs);
            assert_eq!(a.down_secs + b.down_secs, whole.down_secs);
        }
    }
}
