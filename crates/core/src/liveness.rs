//! The application liveness state machine of SPEC 3.1, as a pure function: the hub feeds it
//! what the latest inventory snapshot says and stores what it decides.
//!
//! Choices where SPEC 3.1 is silent: an unknown (no row for the app in the snapshot) that does
//! not count yet neither adds to nor resets the mismatch streak; from the fourth consecutive
//! unknown on, each further unknown counts as a mismatch; the alert is raised once per
//! incident (on the third consecutive mismatch) and resolves when the app matches again.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// What the snapshot shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Observed {
    /// Running.
    Running,
    /// Present but not running.
    Stopped,
    /// No row for the app in the latest snapshot.
    Unknown,
}

/// What the operator expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expected {
    /// Should run (the default).
    Running,
    /// Should not run.
    Stopped,
}

/// Consecutive mismatches that raise the warning alert.
pub const MISMATCHES_BEFORE_ALERT: u32 = 3;
/// Consecutive unknowns before unknowns count as mismatches.
pub const UNKNOWNS_BEFORE_COUNTING: u32 = 4;

/// The per-app state the hub stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct State {
    /// Consecutive observed-vs-expected differences.
    pub consecutive_mismatch: u32,
    /// Consecutive checks without a row for the app.
    pub consecutive_unknown: u32,
    /// When the observed state last changed.
    pub last_state_change: Option<OffsetDateTime>,
    /// What the previous check observed.
    pub last_observed: Option<Observed>,
    /// Whether a liveness alert is open for this app (the red marker).
    pub alerting: bool,
}

/// What one check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The new state.
    pub state: State,
    /// Emit the `app.state_mismatch` signal.
    pub mismatch_signal: bool,
    /// Raise the warning alert.
    pub raise_alert: bool,
    /// Resolve the open liveness alert (the app matches again).
    pub resolve_alert: bool,
}

/// One liveness check at `now`.
pub fn check(
    prev: &State,
    expected: Expected,
    observed: Observed,
    now: OffsetDateTime,
) -> Decision {
    let mut s = *prev;
    if s.last_observed != Some(observed) {
        s.last_state_change = Some(now);
    }
    s.last_observed = Some(observed);
    let counts_as_mismatch = match (observed, expected) {
        (Observed::Unknown, _) => {
            s.consecutive_unknown += 1;
            s.consecutive_unknown >= UNKNOWNS_BEFORE_COUNTING
        }
        (Observed::Running, Expected::Running) | (Observed::Stopped, Expected::Stopped) => {
            s.consecutive_unknown = 0;
            s.consecutive_mismatch = 0;
            let resolve = s.alerting;
            s.alerting = false;
            return Decision {
                state: s,
                mismatch_signal: false,
                raise_alert: false,
                resolve_alert: resolve,
            };
        }
        _ => {
            s.consecutive_unknown = 0;
            true
        }
    };
    if !counts_as_mismatch {
        return Decision {
            state: s,
            mismatch_signal: false,
            raise_alert: false,
            resolve_alert: false,
        };
    }
    s.consecutive_mismatch += 1;
    let raise = !s.alerting && s.consecutive_mismatch >= MISMATCHES_BEFORE_ALERT;
    s.alerting |= raise;
    Decision {
        state: s,
        mismatch_signal: true,
        raise_alert: raise,
        resolve_alert: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const T: OffsetDateTime = datetime!(2026-11-21 12:00 UTC);

    fn run(expected: Expected, seq: &[Observed]) -> Vec<Decision> {
        let mut s = State::default();
        seq.iter()
            .enumerate()
            .map(|(i, o)| {
                let d = check(&s, expected, *o, T + time::Duration::minutes(i as i64));
                s = d.state;
                d
            })
            .collect()
    }

    #[test]
    fn liveness_3_1_match_keeps_or_resets_the_counter() {
        let d = run(Expected::Running, &[Observed::Stopped, Observed::Running]);
        assert_eq!(d[0].state.consecutive_mismatch, 1);
        assert_eq!(d[1].state.consecutive_mismatch, 0);
        assert!(!d[1].mismatch_signal && !d[1].raise_alert);
    }

    #[test]
    fn liveness_3_1_mismatch_signals_counts_and_updates_last_state_change() {
        let d = run(Expected::Running, &[Observed::Running, Observed::Stopped]);
        assert!(d[1].mismatch_signal);
        assert_eq!(d[1].state.consecutive_mismatch, 1);
        assert_eq!(
            d[1].state.last_state_change,
            Some(T + time::Duration::minutes(1))
        );
    }

    #[test]
    fn liveness_3_1_third_consecutive_mismatch_raises_one_warning_alert() {
        let d = run(Expected::Running, &[Observed::Stopped; 5]);
        assert_eq!(
            d.iter().map(|d| d.raise_alert).collect::<Vec<_>>(),
            vec![false, false, true, false, false]
        );
        assert!(d[2].state.alerting && d[4].state.alerting);
        assert_eq!(d[4].state.consecutive_mismatch, 5);
    }

    #[test]
    fn liveness_3_1_unknown_counts_only_after_four_in_a_row() {
        let d = run(Expected::Running, &[Observed::Unknown; 6]);
        assert_eq!(
            d.iter().map(|d| d.mismatch_signal).collect::<Vec<_>>(),
            vec![false, false, false, true, true, true]
        );
        assert_eq!(d[5].state.consecutive_mismatch, 3);
        assert!(
            d[5].raise_alert,
            "three counted unknowns make the third mismatch"
        );
        let broken = run(
            Expected::Running,
            &[
                Observed::Unknown,
                Observed::Unknown,
                Observed::Unknown,
                Observed::Stopped,
                Observed::Unknown,
            ],
        );
        assert_eq!(
            broken[4].state.consecutive_unknown, 1,
            "a known observation breaks the unknown streak"
        );
    }

    #[test]
    fn liveness_3_1_expected_stopped_is_compared_as_well() {
        let d = run(
            Expected::Stopped,
            &[
                Observed::Stopped,
                Observed::Running,
                Observed::Running,
                Observed::Running,
            ],
        );
        assert!(!d[0].mismatch_signal);
        assert!(d[3].raise_alert);
    }

    #[test]
    fn liveness_alert_resolves_itself_when_the_app_matches_again() {
        let d = run(
            Expected::Running,
            &[
                Observed::Stopped,
                Observed::Stopped,
                Observed::Stopped,
                Observed::Running,
                Observed::Stopped,
            ],
        );
        assert!(d[3].resolve_alert && !d[3].state.alerting);
        assert_eq!(
            d[4].state.consecutive_mismatch, 1,
            "a new incident starts from zero"
        );
    }
}
