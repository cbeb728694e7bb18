//! Time as the link sees it: an instant handed in by the caller, in nanoseconds.
//!
//! The link reads no clock. Every entry point takes the current [`Instant`]; the caller may use
//! simulated time (the fabric does) or a hardware counter (a co-simulation does), as long as it
//! never goes backwards and stays at or before [`Instant::HORIZON`] (link.md LINK-1-2): a later
//! time is taken as the horizon (LINK-1-3).

use core::fmt;
pub use core::time::Duration;

/// A point in time, in nanoseconds since an origin the caller chooses.
///
/// The reference's timers run on this 1 ns clock: each deadline is an `Instant`, and the link
/// acts on it at the first call at or after it, so at the expiry itself when the caller polls at
/// [`crate::Link::poll_timeout`]'s answer.
//= docs/spec/link.md#12-timers
//# LINK-1-5 An end whose timers run on a clock coarser than 1 ns MUST act on each expiry at the
//# first tick of that clock at or after it, never before it, and that clock's tick MUST NOT
//# exceed 256 ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The origin.
    pub const ZERO: Instant = Instant(0);

    /// The horizon: the latest time a link end, an endpoint or a switch takes as the current
    /// time, 2^63 - 1 ns after the origin (about 292 years; the largest signed 64-bit count of
    /// nanoseconds, as a SystemVerilog `longint` holds it) (link.md LINK-1-2). A deadline
    /// computed from a time at or before it by adding any duration of at least 1 ns lies
    /// strictly after it (the sum saturates at 2^64 - 1, far beyond), so a timer never falls
    /// due again at the time it fired.
    //= docs/spec/link.md#1-model
    //# LINK-1-2 An end MUST run every timer of Table LINK-T2 at every time up to and including the
    //# horizon as it does near the origin: an expiry is acted on once, and a timer restarted is
    //# restarted for its whole period, even when that period ends beyond the horizon (such a
    //# deadline is never reached).
    pub const HORIZON: Instant = Instant(i64::MAX as u64);

    /// `self`, or [`Instant::HORIZON`] if `self` is later: the time a model takes for an input
    /// given at `self` (link.md LINK-1-3).
    #[inline]
    pub const fn within_horizon(self) -> Instant {
        if self.0 > Self::HORIZON.0 {
            Self::HORIZON
        } else {
            self
        }
    }

    /// The instant `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// `self + d`, saturating at the largest instant.
    pub fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(nanos(d)))
    }

    /// `self + nanos` nanoseconds, saturating at the largest instant.
    #[inline]
    pub(crate) fn saturating_add_nanos(self, nanos: u64) -> Instant {
        Instant(self.0.saturating_add(nanos))
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    pub fn since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ns", self.0)
    }
}

/// A duration in whole nanoseconds, saturating.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    //= type=test
    //# LINK-1-3 An end MUST NOT take a time later than the horizon as its current time.
    #[test]
    fn the_horizon_is_2_to_the_63_less_1_and_later_times_are_taken_as_it() {
        assert_eq!(Instant::HORIZON.as_nanos(), (1 << 63) - 1);
        assert_eq!(
            Instant::from_nanos(u64::MAX).within_horizon(),
            Instant::HORIZON
        );
        assert_eq!(
            Instant::from_nanos(1 << 63).within_horizon(),
            Instant::HORIZON
        );
        assert_eq!(Instant::HORIZON.within_horizon(), Instant::HORIZON);
        assert_eq!(
            Instant::from_nanos(7).within_horizon(),
            Instant::from_nanos(7)
        );
        // The longest timer of a configuration, 10 s, still ends after the horizon.
        let d = Instant::HORIZON.saturating_add(Duration::from_secs(10));
        assert!(d > Instant::HORIZON && d.as_nanos() < u64::MAX);
        assert!(Instant::HORIZON.saturating_add_nanos(1) > Instant::HORIZON);
    }
}
