//! The replayer's per-call clock. Each replayed call is timed (its latency) and its end
//! kept (the next call's think time counts from it): two clock reads a call, which for a
//! cheap call (an fstat of a cached file, about a quarter of a microsecond) were a sixth
//! of a replay thread's time through the vDSO. Where the kernel's own clocksource is the
//! TSC (it found it constant, and in step on every CPU), the TSC is read directly and
//! scaled by a rate measured against the monotonic clock; elsewhere, the monotonic clock.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

/// How long the TSC's rate is measured against the monotonic clock.
const CALIBRATION: Duration = Duration::from_millis(20);
const CLOCKSOURCE: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";

/// Ticks of a clock that starts at `base`, and how long one lasts.
#[derive(Clone, Copy)]
pub struct CallClock {
    base: Instant,
    base_ticks: u64,
    ns_per_tick: f64,
    tsc: bool,
}

impl CallClock {
    /// The TSC where the kernel keeps time with it (x86-64), else the monotonic clock.
    pub fn new() -> Self {
        let tsc = cfg!(target_arch = "x86_64")
            && std::fs::read_to_string(CLOCKSOURCE).is_ok_and(|s| s.trim() == "tsc");
        Self::of(tsc)
    }

    /// `tsc`: read the TSC (x86-64 only; elsewhere the monotonic clock all the same).
    pub fn of(tsc: bool) -> Self {
        let tsc = tsc && cfg!(target_arch = "x86_64");
        let mut clock = CallClock {
            base: Instant::now(),
            base_ticks: 0,
            ns_per_tick: 1.0,
            tsc,
        };
        if tsc {
            let (t0, c0) = (Instant::now(), read_tsc());
            while t0.elapsed() < CALIBRATION {
                std::hint::spin_loop();
            }
            let (t1, c1) = (Instant::now(), read_tsc());
            let ticks = c1.saturating_sub(c0).max(1);
            clock.ns_per_tick = (t1 - t0).as_nanos() as f64 / ticks as f64;
            clock.base = t1;
            clock.base_ticks = c1;
        }
        clock
    }

    pub fn is_tsc(&self) -> bool {
        self.tsc
    }

    #[inline]
    pub fn ticks(&self) -> u64 {
        if self.tsc {
            read_tsc()
        } else {
            u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
        }
    }

    /// The time between two readings (0 if `to` is not after `from`).
    #[inline]
    pub fn between(&self, from: u64, to: u64) -> Duration {
        Duration::from_nanos((to.saturating_sub(from) as f64 * self.ns_per_tick) as u64)
    }

    /// A histogram of tick counts as one of nanoseconds (each recorded value scaled,
    /// within the histogram's precision).
    pub fn ticks_to_ns(&self, ticks: &Histogram<u64>) -> Histogram<u64> {
        let mut ns = crate::stats::histogram();
        for v in ticks.iter_recorded() {
            let at = self.between(0, ticks.median_equivalent(v.value_iterated_to()));
            let at = u64::try_from(at.as_nanos()).unwrap_or(u64::MAX).max(1);
            if ns.record_n(at, v.count_at_value()).is_err() {
                ns.saturating_record_n(at, v.count_at_value());
            }
        }
        ns
    }

    /// The ticks in `d`.
    pub fn ticks_in(&self, d: Duration) -> u64 {
        (d.as_nanos() as f64 / self.ns_per_tick) as u64
    }

    /// A reading as an instant of the monotonic clock.
    pub fn instant(&self, ticks: u64) -> Instant {
        if ticks >= self.base_ticks {
            self.base + self.between(self.base_ticks, ticks)
        } else {
            self.base - self.between(ticks, self.base_ticks)
        }
    }
}

impl Default for CallClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn read_tsc() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86-64 (user mode may read it unless the OS
    // forbids, which Linux does not where its clocksource is the TSC).
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn read_tsc() -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both clocks measure a sleep as the monotonic clock does, within a millisecond.
    #[test]
    fn a_sleep_measures_the_same_on_either_clock() {
        for clock in [CallClock::of(false), CallClock::new()] {
            let tsc = clock.is_tsc();
            let (t0, c0) = (Instant::now(), clock.ticks());
            std::thread::sleep(Duration::from_millis(30));
            let (c1, t1) = (clock.ticks(), Instant::now());
            let measured = clock.between(c0, c1).as_secs_f64();
            let truth = (t1 - t0).as_secs_f64();
            assert!(
                (measured - truth).abs() < 0.001,
                "tsc {tsc}: {measured} vs {truth}"
            );
            let at = clock.instant(c1);
            assert!(at.max(t1) - at.min(t1) < Duration::from_millis(1));
            let d = Duration::from_micros(250);
            assert!(clock.between(0, clock.ticks_in(d)).abs_diff(d) < Duration::from_micros(1));
        }
    }

    /// Latencies kept in ticks read as nanoseconds: each value scaled, counts kept.
    #[test]
    fn a_histogram_of_ticks_reads_in_nanoseconds() {
        let clock = CallClock::new();
        let mut ticks = crate::stats::histogram();
        let (short, long) = (Duration::from_nanos(300), Duration::from_millis(2));
        ticks.record_n(clock.ticks_in(short), 99).unwrap();
        ticks.record(clock.ticks_in(long)).unwrap();
        let ns = clock.ticks_to_ns(&ticks);
        assert_eq!(ns.len(), 100);
        // within the histogram's two significant figures (and a tick's rounding)
        let near = |got: u64, want: Duration| {
            let want = want.as_nanos() as f64;
            (got as f64 - want).abs() <= want * 0.02 + 1.0
        };
        assert!(
            near(ns.value_at_quantile(0.5), short),
            "{}",
            ns.value_at_quantile(0.5)
        );
        assert!(near(ns.max(), long), "{}", ns.max());
    }
}
