//! Per-flowop statistics (HDR latency histograms, counts, bytes) and the results JSON.

use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::fileset::PrepareStats;
use crate::spec::Spec;

/// Significant figures of the latency histograms: 2 keeps every value within 1% and a
/// histogram small (~16 KiB), which matters with 100 threads x 31 flowops.
pub const SIGFIG: u8 = 2;

/// Statistics of one flowop in one thread (or merged).
#[derive(Debug, Clone)]
pub struct OpStats {
    /// Latency in nanoseconds.
    pub hist: Histogram<u64>,
    pub skipped: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

impl Default for OpStats {
    fn default() -> Self {
        Self::new()
    }
}

/// An empty, auto-resizing latency histogram (nanoseconds) of [`SIGFIG`] figures.
pub fn histogram() -> Histogram<u64> {
    match Histogram::new(SIGFIG) {
        Ok(h) => h,
        Err(e) => panic!("histogram with {SIGFIG} significant figures: {e:?}"),
    }
}

/// Record one latency (at least 1 ns) into `h`.
#[inline]
pub fn record_latency(h: &mut Histogram<u64>, latency: Duration) {
    record_value(h, u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
}

/// Record one value (at least 1) into `h`, in whatever unit `h` counts.
#[inline]
pub fn record_value(h: &mut Histogram<u64>, v: u64) {
    let v = v.max(1);
    // auto-resizing: grows to the value (fails only past u64 index math)
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

impl OpStats {
    pub fn new() -> Self {
        OpStats {
            hist: histogram(),
            skipped: 0,
            bytes_read: 0,
            bytes_written: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, latency: Duration, read: u64, written: u64) {
        record_latency(&mut self.hist, latency);
        self.bytes_read += read;
        self.bytes_written += written;
    }

    pub fn ops(&self) -> u64 {
        self.hist.len()
    }

    pub fn merge(&mut self, other: &OpStats) {
        // auto-resizing histograms of equal precision always add
        let _ = self.hist.add(&other.hist);
        self.skipped += other.skipped;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
    }

    pub fn summary(&self, seconds: f64) -> Summary {
        let ops = self.ops();
        let rate = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
        let bytes = self.bytes_read + self.bytes_written;
        Summary {
            ops,
            skipped: self.skipped,
            ops_per_s: round3(rate(ops as f64)),
            mb_per_s: round3(rate(bytes as f64) / 1e6),
            bytes_read: self.bytes_read,
            bytes_written: self.bytes_written,
            latency_us: Latency::of(&self.hist),
        }
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub max: f64,
}

impl Latency {
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Latency {
                mean: 0.0,
                p50: 0.0,
                p95: 0.0,
                p99: 0.0,
                p99_9: 0.0,
                max: 0.0,
            };
        }
        let us = |ns: u64| round3(ns as f64 / 1000.0);
        Latency {
            mean: round3(h.mean() / 1000.0),
            p50: us(h.value_at_quantile(0.50)),
            p95: us(h.value_at_quantile(0.95)),
            p99: us(h.value_at_quantile(0.99)),
            p99_9: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
        }
    }
}

/// The figures of one flowop, or of all of them.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Operations completed in the measured phase.
    pub ops: u64,
    /// Times the flowop found no file to work on (chain restarted).
    pub skipped: u64,
    pub ops_per_s: f64,
    /// (bytes read + bytes written) / 10^6 per second.
    pub mb_per_s: f64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub latency_us: Latency,
}

#[derive(Debug, Clone, Serialize)]
pub struct FlowopResult {
    pub name: String,
    pub op: &'static str,
    #[serde(flatten)]
    pub summary: Summary,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupResult {
    pub name: String,
    pub threads: u32,
    pub flowops: Vec<FlowopResult>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EngineInfo {
    pub name: &'static str,
    pub version: &'static str,
}

pub const ENGINE: EngineInfo = EngineInfo {
    name: "fsbench-engine",
    version: env!("CARGO_PKG_VERSION"),
};

/// The untimed prepare phase.
#[derive(Debug, Clone, Serialize)]
pub struct PrepareReport {
    /// Files present at the start of the measured phase, all filesets.
    pub files: u64,
    pub bytes: u64,
    pub dirs: u64,
    /// Time to make the filesets.
    pub seconds: f64,
    /// Time of the syncfs after it.
    pub sync_seconds: f64,
    pub drop_caches: bool,
    pub filesets: Vec<PrepareStats>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    pub warmup_s: f64,
    /// From the end of the warm-up to the end of the last counted operation.
    pub duration_s: f64,
    /// "duration" or "ops".
    pub stopped_by: &'static str,
    pub threads: u64,
}

/// The CPU the engine's process used over the measured phase (getrusage, all threads):
/// user time is the engine's own work (picking files, timing, histograms), system time
/// is the kernel's, mostly the filesystem's.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CpuUse {
    pub user_s: f64,
    pub system_s: f64,
    /// Per counted operation, in microseconds.
    pub user_us_per_op: f64,
    pub system_us_per_op: f64,
    /// user / (user + system).
    pub user_share: f64,
}

impl CpuUse {
    pub fn new(user_s: f64, system_s: f64, ops: u64) -> Self {
        let per = |x: f64| {
            if ops > 0 {
                round3(x * 1e6 / ops as f64)
            } else {
                0.0
            }
        };
        let total = user_s + system_s;
        CpuUse {
            user_s: round3(user_s),
            system_s: round3(system_s),
            user_us_per_op: per(user_s),
            system_us_per_op: per(system_s),
            user_share: if total > 0.0 {
                round3(user_s / total)
            } else {
                0.0
            },
        }
    }
}

/// Operations and bytes (read + written) that ended in one second of the measured phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub ops: u64,
    pub bytes: u64,
}

/// The latency histogram of each second of the measured phase, every thread's merged. A
/// worker records the second it is in into a histogram of its own and adds it here when
/// the second is over (one lock per thread and second): memory is one histogram per
/// second, not one per thread and second.
#[derive(Debug, Default)]
pub struct SecondHists(Mutex<Vec<Histogram<u64>>>);

impl SecondHists {
    pub fn add(&self, second: usize, h: &Histogram<u64>) {
        if h.is_empty() {
            return;
        }
        let mut v = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if v.len() <= second {
            v.resize_with(second + 1, histogram);
        }
        // auto-resizing histograms of equal precision always add
        let _ = v[second].add(h);
    }

    pub fn take(&self) -> Vec<Histogram<u64>> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Latency percentiles of the operations that ended in each second, in microseconds;
/// `None` (null) for a second in which none did.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SeriesLatency {
    pub p50: Vec<Option<f64>>,
    pub p99: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimeSeries {
    pub interval_s: f64,
    /// Total ops/s of each interval after the warm-up (the last may be partial: its
    /// rate is over its own length).
    pub ops_per_s: Vec<f64>,
    /// (bytes read + bytes written) / 10^6 per second of each interval, likewise.
    pub mb_per_s: Vec<f64>,
    pub latency_us: SeriesLatency,
}

impl TimeSeries {
    /// The series of `tallies` (one a second) and of `hists`, the latencies of each
    /// second (as many or fewer: a second without operations may have none).
    pub fn from_seconds(tallies: &[Tally], hists: &[Histogram<u64>], duration_s: f64) -> Self {
        let n = tallies.len();
        let len = |i: usize| {
            if i + 1 == n {
                (duration_s - i as f64).clamp(0.001, 1.0)
            } else {
                1.0
            }
        };
        let quantile = |i: usize, q: f64| {
            hists
                .get(i)
                .filter(|h| !h.is_empty())
                .map(|h| round3(h.value_at_quantile(q) as f64 / 1000.0))
        };
        TimeSeries {
            interval_s: 1.0,
            ops_per_s: (0..n)
                .map(|i| round3(tallies[i].ops as f64 / len(i)))
                .collect(),
            mb_per_s: (0..n)
                .map(|i| round3(tallies[i].bytes as f64 / len(i) / 1e6))
                .collect(),
            latency_us: SeriesLatency {
                p50: (0..n).map(|i| quantile(i, 0.50)).collect(),
                p99: (0..n).map(|i| quantile(i, 0.99)).collect(),
            },
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub schema: u32,
    pub engine: EngineInfo,
    pub seed: u64,
    /// The effective spec: every default filled in.
    pub spec: Spec,
    pub prepare: PrepareReport,
    pub measured: Measured,
    pub total: Summary,
    /// CPU of the measured phase (from the end of the warm-up to the deadline, or to the
    /// last thread's end when the op count stopped the run).
    pub cpu: CpuUse,
    pub groups: Vec<GroupResult>,
    pub timeseries: TimeSeries,
}

/// Output of `fsbench-engine prepare`.
#[derive(Debug, Clone, Serialize)]
pub struct PrepareResult {
    pub schema: u32,
    pub engine: EngineInfo,
    pub seed: u64,
    pub spec: Spec,
    pub prepare: PrepareReport,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_and_percentiles() {
        let mut a = OpStats::new();
        for us in 1..=1000u64 {
            a.record(Duration::from_micros(us), 4096, 0);
        }
        let mut b = OpStats::new();
        b.record(Duration::from_millis(50), 0, 100);
        b.skipped = 2;
        a.merge(&b);
        let s = a.summary(2.0);
        assert_eq!(s.ops, 1001);
        assert_eq!(s.skipped, 2);
        assert_eq!(s.bytes_read, 4096 * 1000);
        assert_eq!(s.bytes_written, 100);
        assert!((s.ops_per_s - 500.5).abs() < 1e-9);
        assert!((s.mb_per_s - (4096.0 * 1000.0 + 100.0) / 2e6).abs() < 1e-3);
        let l = s.latency_us;
        assert!((l.p50 / 500.0 - 1.0).abs() < 0.01, "{l:?}");
        assert!((l.p99 / 990.0 - 1.0).abs() < 0.01, "{l:?}");
        assert!((l.max / 50_000.0 - 1.0).abs() < 0.01, "{l:?}");
        assert!(l.p50 <= l.p95 && l.p95 <= l.p99 && l.p99 <= l.p99_9 && l.p99_9 <= l.max);
    }

    #[test]
    fn empty_summary_is_zero() {
        let s = OpStats::new().summary(0.0);
        assert_eq!(s.ops, 0);
        assert_eq!(s.ops_per_s, 0.0);
        assert_eq!(s.latency_us.max, 0.0);
    }

    fn tally(ops: u64, bytes: u64) -> Tally {
        Tally { ops, bytes }
    }

    #[test]
    fn series_rates() {
        let t = TimeSeries::from_seconds(
            &[tally(100, 2_000_000), tally(100, 0), tally(50, 500_000)],
            &[],
            2.5,
        );
        assert_eq!(t.ops_per_s, vec![100.0, 100.0, 100.0]);
        // the last, half second: its rate is over its own length
        assert_eq!(t.mb_per_s, vec![2.0, 0.0, 1.0]);
        assert_eq!(t.latency_us.p99, vec![None, None, None]);
    }

    #[test]
    fn per_second_percentiles_merge_threads() {
        let seconds = SecondHists::default();
        // second 0: one thread at 100 us, another at 1 ms (1 op in 100)
        let mut a = histogram();
        for _ in 0..99 {
            record_latency(&mut a, Duration::from_micros(100));
        }
        let mut b = histogram();
        record_latency(&mut b, Duration::from_millis(1));
        record_latency(&mut b, Duration::from_millis(1));
        seconds.add(0, &a);
        seconds.add(0, &b);
        // second 1: nothing ended; second 2: 10 ms
        let mut c = histogram();
        record_latency(&mut c, Duration::from_millis(10));
        seconds.add(2, &c);
        seconds.add(1, &histogram()); // an empty one adds nothing
        let hists = seconds.take();
        assert_eq!(hists.len(), 3);
        let t =
            TimeSeries::from_seconds(&[tally(101, 0), tally(0, 0), tally(1, 4096)], &hists, 3.0);
        let near = |x: Option<f64>, want: f64| x.is_some_and(|v| (v / want - 1.0).abs() < 0.01);
        assert!(near(t.latency_us.p50[0], 100.0), "{:?}", t.latency_us);
        assert!(near(t.latency_us.p99[0], 1000.0), "{:?}", t.latency_us);
        assert_eq!(t.latency_us.p50[1], None);
        assert!(near(t.latency_us.p99[2], 10_000.0), "{:?}", t.latency_us);
        assert!(seconds.take().is_empty(), "taken once");
    }
}
