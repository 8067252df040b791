//! Per-flowop statistics (HDR latency histograms, counts, bytes) and the results JSON.

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

impl OpStats {
    pub fn new() -> Self {
        let hist = match Histogram::new(SIGFIG) {
            Ok(h) => h,
            Err(e) => panic!("histogram with {SIGFIG} significant figures: {e:?}"),
        };
        OpStats {
            hist,
            skipped: 0,
            bytes_read: 0,
            bytes_written: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, latency: Duration, read: u64, written: u64) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
        // auto-resizing: grows to the value (fails only past u64 index math)
        if self.hist.record(ns).is_err() {
            self.hist.saturating_record(ns);
        }
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

#[derive(Debug, Clone, Serialize)]
pub struct TimeSeries {
    pub interval_s: f64,
    /// Total ops/s of each interval after the warm-up (the last may be partial: its
    /// rate is over its own length).
    pub ops_per_s: Vec<f64>,
}

impl TimeSeries {
    pub fn from_counts(counts: &[u64], duration_s: f64) -> Self {
        let n = counts.len();
        let ops_per_s = counts
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let len = if i + 1 == n {
                    (duration_s - i as f64).clamp(0.001, 1.0)
                } else {
                    1.0
                };
                round3(c as f64 / len)
            })
            .collect();
        TimeSeries {
            interval_s: 1.0,
            ops_per_s,
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

    #[test]
    fn series_rates() {
        let t = TimeSeries::from_counts(&[100, 100, 50], 2.5);
        assert_eq!(t.ops_per_s, vec![100.0, 100.0, 100.0]);
    }
}
