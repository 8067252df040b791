//! The two phases: prepare (untimed: filesets, syncfs, optional drop_caches) and the
//! measured run (threads started together, warm-up excluded, results merged).

use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::dist::derive_seed;
use crate::error::{Error, Result};
use crate::fileset::{self, Fileset};
use crate::flowops::{Op, Shared, ThreadOutput, Timing, Worker, compile_group};
use crate::spec::Spec;
use crate::stats::{
    CpuUse, ENGINE, FlowopResult, GroupResult, Measured, OpStats, PrepareReport, PrepareResult,
    RunResult, SecondHists, Tally, TimeSeries,
};
use crate::sys::{self, AlignedBuf, CPath};

const SEED_DOMAIN_THREAD: u64 = 0x7E4D_0000;
const SEED_DOMAIN_CONTENT: u64 = 0xC0_47E7;
const WORKER_STACK: usize = 256 << 10;

/// Filesets ready for the measured phase.
pub struct Prepared {
    pub filesets: Vec<Fileset>,
    pub report: PrepareReport,
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e6
}

/// Make (or reuse) every fileset, syncfs the directory, drop caches if asked.
pub fn prepare(spec: &Spec) -> Result<Prepared> {
    let seed = spec.seed_or_zero();
    let dir = Path::new(&spec.dir);
    fs::create_dir_all(dir)
        .map_err(|e| Error::runtime(format!("create directory {}: {e}", dir.display())))?;
    let dir_fd = OwnedFd::from(
        fs::File::open(dir)
            .map_err(|e| Error::runtime(format!("open directory {}: {e}", dir.display())))?,
    );

    let mut content = vec![0u8; 1 << 20];
    fileset::fill_random(&mut content, derive_seed(seed, SEED_DOMAIN_CONTENT, 0));
    let threads = thread::available_parallelism().map_or(2, |n| n.get().min(4));

    let t0 = Instant::now();
    let mut filesets = Vec::with_capacity(spec.filesets.len());
    let mut stats = Vec::with_capacity(spec.filesets.len());
    for (i, f) in spec.filesets.iter().enumerate() {
        let (set, st) = fileset::prepare(dir, f, i, seed, &content, threads)?;
        filesets.push(set);
        stats.push(st);
    }
    let seconds = secs(t0.elapsed());

    if spec.uses_direct() {
        probe_direct(dir, &dir_fd)?;
    }

    let t1 = Instant::now();
    sys::syncfs(dir_fd.as_raw_fd())
        .map_err(|e| Error::runtime(format!("syncfs {}: {e}", dir.display())))?;
    let sync_seconds = secs(t1.elapsed());
    if spec.drop_caches {
        sys::drop_caches().map_err(|e| {
            Error::runtime(format!(
                "drop caches (write 3 to /proc/sys/vm/drop_caches, needs root): {e}"
            ))
        })?;
    }

    let report = PrepareReport {
        files: stats.iter().map(|s| s.files).sum(),
        bytes: stats.iter().map(|s| s.bytes).sum(),
        dirs: stats.iter().map(|s| s.dirs).sum(),
        seconds,
        sync_seconds,
        drop_caches: spec.drop_caches,
        filesets: stats,
    };
    Ok(Prepared { filesets, report })
}

/// Refuse now, with a clear message, if the filesystem won't do O_DIRECT.
fn probe_direct(dir: &Path, dir_fd: &OwnedFd) -> Result<()> {
    let mut p = CPath::default();
    p.push(b".fsbench-engine-direct-probe");
    p.terminate();
    let refuse = |e: std::io::Error| {
        Error::runtime(format!(
            "the filesystem at {} refuses O_DIRECT ({e}); set \"direct\": false in the spec",
            dir.display()
        ))
    };
    let fd = sys::openat(
        dir_fd.as_raw_fd(),
        &p,
        libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_DIRECT,
        0o644,
    )
    .map_err(refuse)?;
    let buf = AlignedBuf::new(4096);
    let w = sys::pwrite_all(fd, buf.as_slice(), 0);
    let _ = sys::close(fd);
    let _ = sys::unlinkat(dir_fd.as_raw_fd(), &p);
    w.map(drop).map_err(refuse)
}

/// Start line for the workers: they wait until all are spawned and ready, then get the
/// common clock.
struct Gate {
    state: Mutex<(usize, Option<Option<Timing>>)>,
    cv: Condvar,
}

impl Gate {
    fn new() -> Self {
        Gate {
            state: Mutex::new((0, None)),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, Option<Option<Timing>>)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Worker side: None means abort.
    fn wait(&self) -> Option<Timing> {
        let mut g = self.lock();
        g.0 += 1;
        self.cv.notify_all();
        loop {
            if let Some(decision) = g.1 {
                return decision;
            }
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Main side: wait for `n` workers, then start them with the timing `make` gives.
    fn open(&self, n: usize, make: impl FnOnce() -> Timing) {
        let mut g = self.lock();
        while g.0 < n {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        g.1 = Some(Some(make()));
        self.cv.notify_all();
    }

    fn abort(&self) {
        self.lock().1 = Some(None);
        self.cv.notify_all();
    }
}

/// Prepare, then run the measured phase.
pub fn run(spec: &Spec) -> Result<RunResult> {
    let prepared = prepare(spec)?;
    measure(spec, prepared)
}

pub fn prepare_only(spec: &Spec) -> Result<PrepareResult> {
    let prepared = prepare(spec)?;
    Ok(PrepareResult {
        schema: spec.schema,
        engine: ENGINE,
        seed: spec.seed_or_zero(),
        spec: spec.clone(),
        prepare: prepared.report,
    })
}

fn measure(spec: &Spec, prepared: Prepared) -> Result<RunResult> {
    let seed = spec.seed_or_zero();
    let compiled: Vec<Vec<Op>> = spec
        .groups
        .iter()
        .map(|g| compile_group(spec, g))
        .collect::<Result<_>>()?;
    let shared = Shared {
        filesets: &prepared.filesets,
        stop: AtomicBool::new(false),
        ops_done: AtomicU64::new(0),
        ops_limit: spec.stop.ops,
        failure: Mutex::new(None),
        seconds: SecondHists::default(),
    };
    let gate = Gate::new();
    let warmup = Duration::from_secs_f64(spec.warmup_s);
    let duration = spec.stop.duration_s.map(Duration::from_secs_f64);
    let mut timing_used: Option<Timing> = None;
    let mut cpu_start: Option<(f64, f64)> = None;
    let mut cpu_at_deadline: Option<(f64, f64)> = None;

    let outputs: Vec<(usize, Option<ThreadOutput>)> = thread::scope(|s| {
        let mut handles = Vec::new();
        let mut spawn_error = None;
        'spawn: for (gi, (g, ops)) in spec.groups.iter().zip(&compiled).enumerate() {
            for t in 0..g.threads {
                let tseed = derive_seed(seed, SEED_DOMAIN_THREAD + gi as u64, u64::from(t));
                let (shared, gate, name) = (&shared, &gate, g.name.as_str());
                let h = thread::Builder::new()
                    .name(format!("{}-{t}", g.name))
                    .stack_size(WORKER_STACK)
                    .spawn_scoped(s, move || {
                        // reach the gate even if setting up panics, or main would wait
                        let w = panic::catch_unwind(AssertUnwindSafe(|| {
                            Worker::new(shared, ops, name, tseed)
                        }));
                        let timing = gate.wait();
                        match (w, timing) {
                            (Ok(w), Some(t)) => Some(w.run(t)),
                            (Err(_), _) => {
                                shared.fail("a worker thread panicked while starting".into());
                                None
                            }
                            (Ok(_), None) => None,
                        }
                    });
                match h {
                    Ok(h) => handles.push((gi, h)),
                    Err(e) => {
                        spawn_error = Some(e);
                        break 'spawn;
                    }
                }
            }
        }
        if let Some(e) = spawn_error {
            gate.abort();
            shared.fail(format!("could not start thread {}: {e}", handles.len() + 1));
        } else {
            gate.open(handles.len(), || {
                let start = Instant::now();
                let warmup_end = start + warmup;
                let t = Timing {
                    warmup_end,
                    deadline: duration.map(|d| warmup_end + d),
                    buckets: duration.map(|d| (d.as_secs_f64().ceil() as usize).max(1)),
                };
                timing_used = Some(t);
                t
            });
        }
        // the CPU clock of the measured phase starts with it
        if let Some(t) = timing_used {
            loop {
                let now = Instant::now();
                if now >= t.warmup_end || shared.stop.load(Ordering::Relaxed) {
                    break;
                }
                thread::sleep((t.warmup_end - now).min(Duration::from_millis(10)));
            }
            cpu_start = Some(sys::cpu_self());
            // ... and stops with it: the workers' drain after the deadline is not in it
            if let Some(deadline) = t.deadline {
                loop {
                    let now = Instant::now();
                    if now >= deadline || shared.stop.load(Ordering::Relaxed) {
                        break;
                    }
                    thread::sleep((deadline - now).min(Duration::from_millis(10)));
                }
                cpu_at_deadline = Some(sys::cpu_self());
            }
        }
        handles
            .into_iter()
            .map(|(gi, h)| match h.join() {
                Ok(out) => (gi, out),
                Err(_) => {
                    shared.fail("a worker thread panicked".into());
                    (gi, None)
                }
            })
            .collect()
    });
    let ended = Instant::now();
    let cpu_end = cpu_at_deadline.unwrap_or_else(sys::cpu_self);

    if let Some(msg) = shared
        .failure
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
    {
        return Err(Error::runtime(msg));
    }
    let Some(timing) = timing_used else {
        return Err(Error::runtime("the measured phase did not start"));
    };

    // merge
    let mut per_group: Vec<Vec<OpStats>> = compiled
        .iter()
        .map(|ops| ops.iter().map(|_| OpStats::new()).collect())
        .collect();
    let mut series: Vec<Tally> = Vec::new();
    let mut last_end: Option<Instant> = None;
    for (gi, out) in outputs.iter() {
        let Some(out) = out else { continue };
        for (acc, st) in per_group[*gi].iter_mut().zip(&out.stats) {
            acc.merge(st);
        }
        if out.series.len() > series.len() {
            series.resize(out.series.len(), Tally::default());
        }
        for (acc, c) in series.iter_mut().zip(&out.series) {
            acc.ops += c.ops;
            acc.bytes += c.bytes;
        }
        last_end = last_end.max(out.last_end);
    }
    let stopped_by = match spec.stop.ops {
        Some(limit) if shared.ops_done.load(Ordering::Relaxed) >= limit => "ops",
        _ => "duration",
    };
    // Stopped by the clock: the phase is exactly warm-up end to deadline (the workers
    // count no operation that ended after it). Stopped by the op count: to the last one.
    let end = match (stopped_by, timing.deadline) {
        ("duration", Some(deadline)) => deadline,
        _ => last_end.unwrap_or(ended),
    };
    let measured_s = secs(end.saturating_duration_since(timing.warmup_end));

    let mut total = OpStats::new();
    let groups: Vec<GroupResult> = spec
        .groups
        .iter()
        .zip(&compiled)
        .zip(&per_group)
        .map(|((g, ops), stats)| GroupResult {
            name: g.name.clone(),
            threads: g.threads,
            flowops: ops
                .iter()
                .zip(stats)
                .map(|(op, st)| {
                    total.merge(st);
                    FlowopResult {
                        name: op.name.clone(),
                        op: op.kind.as_str(),
                        summary: st.summary(measured_s),
                    }
                })
                .collect(),
        })
        .collect();

    Ok(RunResult {
        schema: spec.schema,
        engine: ENGINE,
        seed,
        spec: spec.clone(),
        prepare: prepared.report,
        measured: Measured {
            warmup_s: spec.warmup_s,
            duration_s: measured_s,
            stopped_by,
            threads: spec.groups.iter().map(|g| u64::from(g.threads)).sum(),
        },
        cpu: {
            let (u0, s0) = cpu_start.unwrap_or(cpu_end);
            CpuUse::new(cpu_end.0 - u0, cpu_end.1 - s0, total.ops())
        },
        total: total.summary(measured_s),
        groups,
        timeseries: TimeSeries::from_seconds(&series, &shared.seconds.take(), measured_s),
    })
}
