//! Replaying a trace: `prepare` checks the whole trace and makes its starting tree
//! (untimed); `run` streams the trace again and replays its calls, one engine thread per
//! recorded thread, each in its recorded order, a call waiting for the earlier calls of
//! other threads on the resources it names (ROOT's resource-oriented ordering, Weiss et
//! al., SOSP 2013), as fast as possible or with the recorded think time between calls.
//!
//! One reader thread decodes the trace and hands each thread its calls in batches over a
//! bounded queue: memory stays bounded however long the trace. The reader never holds back
//! a call another thread's call waits for (it sends the batch first), and a call only ever
//! waits for calls before it in the trace, so the replay cannot deadlock.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fileset::fill_random;
use crate::stats::{ENGINE, EngineInfo, Latency};
use crate::sys::{self, AlignedBuf};
use crate::trace::calls::{self, Buffers};
use crate::trace::check::{self, MAX_FD_IDS, MAX_MAP_IDS, Summary, Validator};
use crate::trace::clock::CallClock;
use crate::trace::format::{EntryType, Record, TraceReader};
use crate::trace::import::TreeCounts;
use crate::trace::kind::{Kind, MAX_INTS};

pub const SCHEMA: u32 = 1;
/// Calls a thread's batch holds before it is sent: a worker that takes a batch from a
/// full queue wakes the reader, which costs microseconds, so a batch must hold enough
/// calls to spread it thin (128 cheap calls paid a tenth more, 1,024 a few hundredths
/// more than 4,096). A batch is about half a megabyte then, and a thread holds at most
/// its queue's and one being filled.
const BATCH: usize = 4096;
const QUEUE_BATCHES: usize = 4;
const WORKER_STACK: usize = 256 << 10;
/// Waits a thread keeps between two of its calls: past that the older half is summed,
/// taken as lying after the think time's start (the end of a child it joined could
/// fall after one; its think time is then the shorter), so that a thread that waits
/// often and calls rarely does not hold every wait in memory.
const WAITS_KEPT: usize = 4096;
/// Mismatch examples kept (the first of the run).
const EXAMPLES: usize = 20;
/// Seed of the synthetic contents (the starting tree's files, the data written).
pub const FILL_SEED: u64 = 0x7ACE;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Timing {
    /// Each call as soon as its thread's previous call and its dependencies are done.
    #[default]
    Fast,
    /// Also wait the recorded think time before each call (less the tracer's overhead),
    /// divided by `speed`.
    Recorded,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaySpec {
    pub schema: u32,
    pub trace: String,
    /// The directory the tree is made in and the calls replayed in.
    pub dir: String,
    #[serde(default)]
    pub timing: Timing,
    #[serde(default = "one")]
    pub speed: f64,
    /// The trace's threads, as `replay prepare` counted them. A trace of one thread is
    /// replayed with a descriptor table of the replay thread's own, as the one-threaded
    /// program that was recorded had: the kernel looks a descriptor up without taking a
    /// reference only in a table no other thread shares (in one the reader shared, a
    /// reference taken and dropped per call was about a twentieth of a cached fstat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u64>,
}

fn one() -> f64 {
    1.0
}

pub fn parse_spec(text: &str) -> Result<ReplaySpec> {
    let s: ReplaySpec =
        serde_json::from_str(text).map_err(|e| Error::input(format!("replay spec: {e}")))?;
    if s.schema != SCHEMA {
        return Err(Error::input(format!(
            "replay spec: schema {} is not supported (this engine reads schema {SCHEMA})",
            s.schema
        )));
    }
    if !(s.speed.is_finite() && s.speed > 0.0 && s.speed <= 1e6) {
        return Err(Error::input(format!(
            "replay spec: speed must be > 0, got {}",
            s.speed
        )));
    }
    if s.dir.trim().is_empty() || s.trace.trim().is_empty() {
        return Err(Error::input("replay spec: trace and dir are required"));
    }
    if s.threads == Some(0) {
        return Err(Error::input("replay spec: threads must be at least 1"));
    }
    Ok(s)
}

#[derive(Debug, Serialize)]
pub struct PrepareReport {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub sync_seconds: f64,
}

#[derive(Debug, Serialize)]
pub struct PrepareResult {
    pub schema: u32,
    pub engine: EngineInfo,
    pub trace: Summary,
    pub prepare: PrepareReport,
}

fn cstring(p: &[u8]) -> Result<CString> {
    CString::new(p.to_vec()).map_err(|_| Error::input("trace: a path holds a NUL byte"))
}

fn rt(what: &str, p: &[u8], e: std::io::Error) -> Error {
    Error::runtime(format!("{what} {}: {e}", String::from_utf8_lossy(p)))
}

/// Check the trace, then make its starting tree in `dir` (which must be empty or absent):
/// directories, files of their recorded size (the recorded contents, or the synthetic
/// fill), symlinks; modes as recorded; then syncfs.
pub fn prepare(spec: &ReplaySpec) -> Result<PrepareResult> {
    let summary = check::check(Path::new(&spec.trace))?;
    let dir = Path::new(&spec.dir);
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::runtime(format!("create {}: {e}", dir.display())))?;
    let not_empty = std::fs::read_dir(dir)
        .map_err(|e| Error::runtime(format!("read {}: {e}", dir.display())))?
        .next()
        .is_some();
    if not_empty {
        return Err(Error::input(format!(
            "replay dir {} is not empty: the starting tree is made in an empty one",
            dir.display()
        )));
    }
    let root = std::fs::File::open(dir)
        .map_err(|e| Error::runtime(format!("open {}: {e}", dir.display())))?;
    let rootfd = root.as_raw_fd();
    let t0 = Instant::now();
    let mut r = TraceReader::open(Path::new(&spec.trace))?;
    let mut v = Validator::default();
    let mut fill = vec![0u8; 1 << 20];
    fill_random(&mut fill, FILL_SEED);
    let mut counts = TreeCounts::default();
    let mut dir_modes: Vec<(CString, u32)> = Vec::new();
    while let Some(rec) = r.next_record()? {
        v.see(&rec)?;
        match rec {
            Record::Tree {
                path,
                kind,
                size,
                mode,
                target,
            } => {
                let rel = v.paths[path as usize].clone();
                let c = cstring(&rel)?;
                match kind {
                    EntryType::Dir => {
                        counts.dirs += 1;
                        if rel != b"." {
                            calls::mkdirat(rootfd, &c, 0o700).map_err(|e| rt("mkdir", &rel, e))?;
                        }
                        dir_modes.push((c, mode));
                    }
                    EntryType::File => {
                        counts.files += 1;
                        counts.bytes += size;
                        calls::make_file(rootfd, &c, size, mode, &fill)
                            .map_err(|e| rt("create", &rel, e))?;
                    }
                    EntryType::Symlink => {
                        counts.symlinks += 1;
                        let t = cstring(&target.unwrap_or_default())?;
                        calls::symlinkat(&t, rootfd, &c).map_err(|e| rt("symlink", &rel, e))?;
                    }
                }
            }
            Record::Data {
                path,
                offset,
                bytes,
            } => {
                let rel = v.paths[path as usize].clone();
                calls::write_at(rootfd, &cstring(&rel)?, offset, &bytes)
                    .map_err(|e| rt("write", &rel, e))?;
                counts.data_bytes += bytes.len() as u64;
            }
            _ => {}
        }
    }
    // modes last, deepest first: a directory without write permission is still filled
    for (c, mode) in dir_modes.iter().rev() {
        calls::chmodat(rootfd, c, *mode).map_err(|e| rt("chmod", c.as_bytes(), e))?;
    }
    let seconds = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    sys::syncfs(rootfd).map_err(|e| Error::runtime(format!("syncfs {}: {e}", dir.display())))?;
    Ok(PrepareResult {
        schema: SCHEMA,
        engine: ENGINE,
        trace: summary,
        prepare: PrepareReport {
            files: counts.files,
            dirs: counts.dirs,
            symlinks: counts.symlinks,
            bytes: counts.bytes,
            seconds: round6(seconds),
            sync_seconds: round6(t1.elapsed().as_secs_f64()),
        },
    })
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// A replay thread's progress, which other threads wait on.
pub struct ThreadState {
    done: AtomicU64,
    waiters: AtomicU32,
    lock: Mutex<()>,
    cv: Condvar,
}

impl ThreadState {
    fn new() -> Self {
        ThreadState {
            done: AtomicU64::new(0),
            waiters: AtomicU32::new(0),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// Its first `n` calls are done. Only its own worker calls this, so a plain store
    /// publishes the count: a locked add and a sequentially consistent load here were a
    /// large part of what a replayed call costs beyond the call itself. A waiter that
    /// registers just as the count moves may miss the wake-up; it looks again within
    /// its 1 ms timeout (wait_for).
    fn finish(&self, n: u64) {
        self.done.store(n, Ordering::Release);
        if self.waiters.load(Ordering::Relaxed) > 0 {
            let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.cv.notify_all();
        }
    }

    /// Wait until `n` of its calls are done.
    fn wait_for(&self, n: u64) {
        for _ in 0..200 {
            if self.done.load(Ordering::Acquire) >= n {
                return;
            }
            std::hint::spin_loop();
        }
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let mut g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        while self.done.load(Ordering::SeqCst) < n {
            g = self
                .cv
                .wait_timeout(g, Duration::from_millis(1))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(g);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Dep {
    thread: Arc<ThreadState>,
    need: u64,
}

/// One call as a replay thread makes it.
pub struct Op {
    pub kind: Kind,
    pub ints: [i64; MAX_INTS],
    pub text: Option<CString>,
    pub path: Option<Arc<CString>>,
    pub path2: Option<Arc<CString>>,
    pub result: i64,
    think_ns: u64,
    /// The think time counts from when its dependencies were met (a parent's first call
    /// after a child it waited for ended), not from its own previous call.
    after_deps: bool,
    deps: Vec<Dep>,
}

enum Work {
    Call(Op),
    Release { fd: u32, deps: Vec<Dep> },
}

/// What the threads share: the real descriptors and mappings behind the trace's ids.
pub struct Tables {
    /// The replay's directory: the paths' root.
    pub root: RawFd,
    pub root_path: Vec<u8>,
    pub fds: Vec<AtomicI32>,
    pub maps: Vec<(AtomicUsize, AtomicUsize)>,
}

impl Tables {
    fn new(root: RawFd, root_path: Vec<u8>) -> Self {
        Tables {
            root,
            root_path,
            fds: (0..MAX_FD_IDS).map(|_| AtomicI32::new(-1)).collect(),
            maps: (0..MAX_MAP_IDS)
                .map(|_| (AtomicUsize::new(0), AtomicUsize::new(0)))
                .collect(),
        }
    }
}

#[derive(Default)]
struct KindStats {
    calls: u64,
    bytes: u64,
    recorded_bytes: u64,
    mismatches: u64,
    hist: Option<hdrhistogram::Histogram<u64>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Example {
    pub kind: &'static str,
    pub path: Option<String>,
    pub recorded: i64,
    pub replayed: i64,
}

struct WorkerOut {
    kinds: Vec<KindStats>,
    examples: Vec<Example>,
    releases: u64,
    end: Instant,
}

/// Its place in `Kind::ALL` (declared in the same order).
fn kind_index(k: Kind) -> usize {
    k as usize
}

/// Same result as recorded? Ids differ by nature; errors compare by errno.
fn matches(kind: Kind, recorded: i64, got: i64) -> bool {
    if recorded < 0 || got < 0 {
        if kind == Kind::Mmap {
            return (-4095..0).contains(&recorded) != (got >= 0);
        }
        return recorded == got;
    }
    if kind.makes_id() || !kind.compares_value() {
        return true;
    }
    recorded == got
}

fn worker(
    rx: Receiver<Vec<Work>>,
    spent: Sender<Vec<Work>>,
    me: Arc<ThreadState>,
    tables: Arc<Tables>,
    clock: CallClock,
    own_table: bool,
) -> WorkerOut {
    let mut kinds: Vec<KindStats> = Kind::ALL.iter().map(|_| KindStats::default()).collect();
    let mut examples = Vec::new();
    let mut releases = 0;
    let mut finished = 0u64;
    let mut bufs = Buffers::default();
    if own_table {
        // A failure leaves the table shared: slower lookups, the same calls.
        let _ = sys::unshare_files();
    }
    let mut last_end = clock.ticks();
    for batch in rx {
        // `last_end` was read at the end of the call before, with only its bookkeeping
        // since: not so after waiting for a batch, a release or a dependency
        let mut back_to_back = false;
        // By reference: a call is read where the dispatcher wrote it, not copied out first.
        for w in &batch {
            match w {
                Work::Release { fd, deps } => {
                    back_to_back = false;
                    for d in deps {
                        d.thread.wait_for(d.need);
                    }
                    let real = tables.fds[*fd as usize].swap(-1, Ordering::AcqRel);
                    if real >= 0 {
                        let _ = sys::close(real);
                    }
                    releases += 1;
                }
                Work::Call(op) => {
                    if !op.deps.is_empty() || op.after_deps || op.think_ns > 0 {
                        back_to_back = false;
                    }
                    for d in &op.deps {
                        d.thread.wait_for(d.need);
                    }
                    if op.after_deps {
                        last_end = last_end.max(clock.ticks());
                    }
                    if op.think_ns > 0 {
                        let think = clock.ticks_in(Duration::from_nanos(op.think_ns));
                        wait_until(&clock, last_end + think);
                    }
                    // Back to back, the call before's end is this one's start: one clock
                    // read a call, not two (a read was a tenth of the replayer's own cost
                    // per cheap call), and the few instructions of bookkeeping between the
                    // two calls count in this one's latency.
                    let t0 = if back_to_back {
                        last_end
                    } else {
                        clock.ticks()
                    };
                    let got = calls::execute(op, &tables, &mut bufs);
                    let t1 = clock.ticks();
                    last_end = t1;
                    back_to_back = true;
                    let k = &mut kinds[kind_index(op.kind)];
                    k.calls += 1;
                    // in ticks: scaled to nanoseconds once, at the end (ticks_to_ns)
                    crate::stats::record_value(
                        k.hist.get_or_insert_with(crate::stats::histogram),
                        t1.saturating_sub(t0),
                    );
                    if op.kind.moves_bytes() {
                        k.bytes += got.max(0) as u64;
                        k.recorded_bytes += op.result.max(0) as u64;
                    }
                    if !matches(op.kind, op.result, got) {
                        k.mismatches += 1;
                        if examples.len() < EXAMPLES {
                            examples.push(Example {
                                kind: op.kind.name(),
                                path: op
                                    .path
                                    .as_ref()
                                    .map(|p| String::from_utf8_lossy(p.as_bytes()).into_owned()),
                                recorded: op.result,
                                replayed: got,
                            });
                        }
                    }
                }
            }
            finished += 1;
            me.finish(finished);
        }
        // emptied by the reader (Spent::take), which has time to spare: dropping the calls
        // here was the replay thread's work; no allocation per batch either way
        let _ = spent.send(batch);
    }
    for k in &mut kinds {
        if let Some(h) = &k.hist {
            k.hist = Some(clock.ticks_to_ns(h));
        }
    }
    WorkerOut {
        kinds,
        examples,
        releases,
        end: clock.instant(last_end),
    }
}

/// Sleep most of the way, spin the rest: a sleep overshoots by tens of microseconds.
fn wait_until(clock: &CallClock, t: u64) {
    loop {
        let now = clock.ticks();
        if now >= t {
            return;
        }
        let left = clock.between(now, t);
        if left > Duration::from_micros(300) {
            thread::sleep(left - Duration::from_micros(200));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// The resources a call names, and how.
#[derive(Default)]
struct ResState {
    writer: Option<(u32, u64)>,
    readers: Vec<(u32, u64)>,
}

/// A key names a resource: a path id, or a descriptor or mapping id with this tag.
const KEY_TAG: u32 = 40;
const FD_KEY: u64 = 1 << KEY_TAG;
const MAP_KEY: u64 = 2 << KEY_TAG;

/// The resources' states by path, descriptor and mapping id: the ids are small and
/// dense (the validator bounds them), so a vector each, not a hash map (hashing two or
/// three keys a call was a fifth of the reader's time).
#[derive(Default)]
struct Resources {
    by_tag: [Vec<ResState>; 3],
}

impl Resources {
    fn state(&mut self, key: u64) -> &mut ResState {
        let table = &mut self.by_tag[(key >> KEY_TAG) as usize];
        let i = (key & (FD_KEY - 1)) as usize;
        if table.len() <= i {
            table.resize_with(i + 1, ResState::default);
        }
        &mut table[i]
    }

    /// Record `me` (thread, index) using `key`; add to `deps` what it must wait for.
    fn access(&mut self, key: u64, write: bool, me: (u32, u64), deps: &mut Vec<(u32, u64)>) {
        let st = self.state(key);
        if let Some(w) = st.writer
            && w.0 != me.0
        {
            deps.push(w);
        }
        if write {
            deps.extend(st.readers.iter().filter(|r| r.0 != me.0));
            st.writer = Some(me);
            st.readers.clear();
        } else if let Some(r) = st.readers.iter_mut().find(|r| r.0 == me.0) {
            r.1 = me.1;
        } else {
            st.readers.push(me);
        }
    }
}

/// Batches the workers have replayed and emptied, for the reader to fill again: a batch
/// is allocated once, not once per use (a fresh one per flush, freed by the worker, was
/// an allocation and a free per batch, and cold memory to write). A new batch grows as
/// calls are pushed: a thread of few calls holds little memory.
struct Spent {
    tx: Sender<Vec<Work>>,
    rx: Receiver<Vec<Work>>,
}

impl Spent {
    fn new() -> Self {
        let (tx, rx) = channel();
        Spent { tx, rx }
    }

    fn take(&self) -> Vec<Work> {
        let mut batch = self.rx.try_recv().unwrap_or_default();
        batch.clear();
        batch
    }
}

/// A recorded thread as the reader sees it.
struct Lane {
    tx: Option<SyncSender<Vec<Work>>>,
    batch: Vec<Work>,
    /// Work items handed out so far.
    count: u64,
    /// End of its previous call as recorded (ns since the trace's start).
    last_end_ns: i64,
    /// The tracer's cost per call is a mean: where a gap was shorter than the cost taken
    /// off it, the rest is taken off the gaps after (clipping each gap at zero instead
    /// kept every gap's excess over the mean, and a recording of many cheap calls, tar's,
    /// replayed with its gaps in over twice the program's time).
    tracer_owed_ns: i64,
    start_dep: Option<(u32, u64)>,
    parent: Option<u32>,
    /// Threads it started that have ended: (thread, its work items, when it ended).
    ended_children: Vec<(u32, u64, i64)>,
    /// Threads it started that have not ended (as far as the trace has been read).
    live_children: Vec<u32>,
    /// Its waits for other threads since its previous call, as recorded (start, end):
    /// the recorded gap less these is its think time.
    waits: Vec<(i64, i64)>,
    /// Waits folded out of `waits` (their length summed), for memory (WAITS_KEPT).
    waits_folded_ns: i64,
}

impl Lane {
    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        // the next batch is taken from the spent ones when a call is pushed (push)
        let b = std::mem::take(&mut self.batch);
        if let Some(tx) = &self.tx {
            // a worker that died (panicked) drops its receiver: its calls are lost,
            // which the missing counts say
            let _ = tx.send(b);
        }
    }
}

#[derive(Debug, Serialize)]
pub struct KindResult {
    pub kind: &'static str,
    pub calls: u64,
    pub bytes: u64,
    pub recorded_bytes: u64,
    pub mismatches: u64,
    pub latency_us: Latency,
}

#[derive(Debug, Serialize)]
pub struct Mismatches {
    pub total: u64,
    pub examples: Vec<Example>,
}

#[derive(Debug, Serialize)]
pub struct Measured {
    pub elapsed_s: f64,
    pub calls: u64,
    pub calls_per_s: f64,
    pub threads: u64,
    pub releases: u64,
}

#[derive(Debug, Serialize)]
pub struct RunResult {
    pub schema: u32,
    pub engine: EngineInfo,
    pub spec: ReplaySpec,
    pub measured: Measured,
    pub kinds: Vec<KindResult>,
    pub mismatches: Mismatches,
    pub unrecorded: BTreeMap<String, u64>,
    pub cpu: crate::stats::CpuUse,
}

fn raise_nofile() {
    // SAFETY: plain syscalls on a valid out-pointer.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// Replay the calls of a prepared trace in `spec.dir`.
pub fn run(spec: &ReplaySpec) -> Result<RunResult> {
    let mut reader = TraceReader::open(Path::new(&spec.trace))?;
    let dir = Path::new(&spec.dir);
    let root = std::fs::File::open(dir)
        .map_err(|e| Error::runtime(format!("open {}: {e}", dir.display())))?;
    let root_path = std::fs::canonicalize(dir)
        .map_err(|e| Error::runtime(format!("resolve {}: {e}", dir.display())))?;
    raise_nofile();
    let overhead = |k: &str| {
        reader
            .header
            .get(k)
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(0)
    };
    let (total_over, gap_over) = (overhead("tracer_overhead_ns"), overhead("gap_overhead_ns"));
    let tables = Arc::new(Tables::new(
        root.as_raw_fd(),
        root_path.as_os_str().as_encoded_bytes().to_vec(),
    ));
    let mut v = Validator::default();
    let mut cpaths: Vec<Arc<CString>> = Vec::new();
    let mut fd_path: Vec<u32> = Vec::new();
    let mut map_path: Vec<u32> = Vec::new();
    let mut res = Resources::default();
    let mut unrecorded = BTreeMap::new();
    let mut dep_buf: Vec<(u32, u64)> = Vec::new();
    let cpu0 = sys::cpu_self();
    let clock = CallClock::new();
    let own_table = spec.threads == Some(1);
    let start = Instant::now();

    // The lanes (and their senders) live inside the scope: on a refusal mid-stream they
    // are dropped on the way out, so the workers end and the scope can join them.
    let outs = thread::scope(|s| -> Result<(Vec<WorkerOut>, u64)> {
        let mut lanes: Vec<Lane> = Vec::new();
        let mut states: Vec<Arc<ThreadState>> = Vec::new();
        let mut handles = Vec::new();
        let spent = Spent::new();
        while let Some(rec) = reader.next_record()? {
            v.see(&rec)?;
            match rec {
                Record::Path { path, .. } => cpaths.push(Arc::new(cstring(&path)?)),
                Record::Thread { tid, parent, at_ns } => {
                    if own_table && tid > 0 {
                        return Err(Error::input(format!(
                            "replay spec: threads = 1, but the trace starts thread {tid}"
                        )));
                    }
                    let st = Arc::new(ThreadState::new());
                    let (tx, rx) = sync_channel::<Vec<Work>>(QUEUE_BATCHES);
                    let (me, tables, back) = (st.clone(), tables.clone(), spent.tx.clone());
                    let h = thread::Builder::new()
                        .name(format!("replay-{tid}"))
                        .stack_size(WORKER_STACK)
                        .spawn_scoped(s, move || worker(rx, back, me, tables, clock, own_table))
                        .map_err(|e| Error::runtime(format!("start a replay thread: {e}")))?;
                    handles.push(h);
                    states.push(st);
                    let start_dep = match parent {
                        Some(p) => {
                            let pl = &mut lanes[p as usize];
                            pl.live_children.push(tid);
                            pl.flush();
                            Some((p, pl.count))
                        }
                        None => None,
                    };
                    lanes.push(Lane {
                        tx: Some(tx),
                        batch: Vec::new(),
                        count: 0,
                        last_end_ns: at_ns,
                        tracer_owed_ns: 0,
                        start_dep,
                        parent,
                        ended_children: Vec::new(),
                        live_children: Vec::new(),
                        waits: Vec::new(),
                        waits_folded_ns: 0,
                    });
                }
                Record::Call(c) => {
                    let t = c.tid as usize;
                    let me = (c.tid, lanes[t].count);
                    dep_buf.clear();
                    if let Some(d) = lanes[t].start_dep.take() {
                        dep_buf.push((d.0, d.1.saturating_sub(1)));
                        if d.1 == 0 {
                            dep_buf.pop();
                        }
                    }
                    // A child that ended before this call began: the call waits for its
                    // last one (a shell waits for the command it ran), and the think time
                    // counts from its end, so that the child's own time, and the tracer's
                    // cost in it, is not waited again as this thread's gap.
                    let mut since_ns = lanes[t].last_end_ns;
                    let mut joined = false;
                    lanes[t].ended_children.retain(|&(child, items, ended_ns)| {
                        if ended_ns > c.start_ns {
                            return true;
                        }
                        dep_buf.push((child, items - 1));
                        since_ns = since_ns.max(ended_ns);
                        joined = true;
                        false
                    });
                    // A child still running whose last call ended in this thread's gap:
                    // with the recorded gaps, the think time counts from that call's end
                    // (and waits for it). A parent blocked on a pipe from its child (git
                    // repack reading pack-objects) makes its next call before the tracer
                    // reports the child's exit, so the rule above misses it, and the
                    // child's whole traced life was waited again as the parent's gap.
                    if spec.timing == Timing::Recorded {
                        for i in 0..lanes[t].live_children.len() {
                            let child = lanes[t].live_children[i];
                            let cl = &lanes[child as usize];
                            if cl.count > 0
                                && cl.last_end_ns > since_ns
                                && cl.last_end_ns <= c.start_ns
                            {
                                dep_buf.push((child, cl.count - 1));
                                since_ns = cl.last_end_ns;
                                joined = true;
                            }
                        }
                    }
                    let path = |i: usize| cpaths[c.ints[i] as usize].clone();
                    let fkey = |fd: i64| FD_KEY | fd as u64;
                    let file_of = |fd: i64| fd_path.get(fd as usize).map(|p| u64::from(*p));
                    let (mut p1, mut p2) = (None, None);
                    let k = c.kind;
                    use Kind::*;
                    match k {
                        Open => {
                            p1 = Some(path(0));
                            let creates = c.ints[1] & i64::from(libc::O_CREAT | libc::O_TRUNC) != 0;
                            let pid = c.ints[0] as u64;
                            res.access(pid, creates, me, &mut dep_buf);
                            if creates {
                                res.access(u64::from(v.parent(c.ints[0])), true, me, &mut dep_buf);
                            }
                            if c.result >= 0 {
                                res.access(fkey(c.result), true, me, &mut dep_buf);
                                set(&mut fd_path, c.result as usize, c.ints[0] as u32);
                            }
                        }
                        Dup => {
                            res.access(fkey(c.ints[0]), false, me, &mut dep_buf);
                            if c.result >= 0 {
                                res.access(fkey(c.result), true, me, &mut dep_buf);
                                let p = fd_path.get(c.ints[0] as usize).copied().unwrap_or(0);
                                set(&mut fd_path, c.result as usize, p);
                            }
                        }
                        Mkdir | Rmdir | Unlink | Symlink | Truncate => {
                            // the path is the first id operand (a symlink's target is text)
                            let at = 0;
                            p1 = Some(path(at));
                            let pid = c.ints[at] as u64;
                            res.access(pid, true, me, &mut dep_buf);
                            res.access(u64::from(v.parent(c.ints[at])), true, me, &mut dep_buf);
                        }
                        Rename | Link => {
                            p1 = Some(path(0));
                            p2 = Some(path(1));
                            for i in 0..2 {
                                res.access(c.ints[i] as u64, true, me, &mut dep_buf);
                                res.access(u64::from(v.parent(c.ints[i])), true, me, &mut dep_buf);
                            }
                        }
                        Stat | Access | Readlink | Getxattr | Listxattr => {
                            p1 = Some(path(0));
                            res.access(c.ints[0] as u64, false, me, &mut dep_buf);
                        }
                        Setxattr | Removexattr | Chmod | Chown | Utimes => {
                            p1 = Some(path(0));
                            res.access(c.ints[0] as u64, true, me, &mut dep_buf);
                        }
                        Close => res.access(fkey(c.ints[0]), true, me, &mut dep_buf),
                        Read | Readv | Getdents | Lseek => {
                            res.access(fkey(c.ints[0]), true, me, &mut dep_buf);
                            if let Some(f) = file_of(c.ints[0]) {
                                res.access(f, false, me, &mut dep_buf);
                            }
                        }
                        Write | Writev => {
                            res.access(fkey(c.ints[0]), true, me, &mut dep_buf);
                            if let Some(f) = file_of(c.ints[0]) {
                                res.access(f, true, me, &mut dep_buf);
                            }
                        }
                        CopyFileRange | Sendfile => {
                            // (source, its offset operand, destination)
                            let (from, from_off, to) = match k {
                                Sendfile => (c.ints[1], c.ints[2], c.ints[0]),
                                _ => (c.ints[0], c.ints[1], c.ints[2]),
                            };
                            // a descriptor whose own offset the call moves is written
                            res.access(fkey(from), from_off < 0, me, &mut dep_buf);
                            let to_moves = k == Sendfile || c.ints[3] < 0;
                            res.access(fkey(to), to_moves, me, &mut dep_buf);
                            if let Some(f) = file_of(from) {
                                res.access(f, false, me, &mut dep_buf);
                            }
                            if let Some(f) = file_of(to) {
                                res.access(f, true, me, &mut dep_buf);
                            }
                        }
                        Pread | Preadv | Fstat | Fgetxattr | Flistxattr => {
                            res.access(fkey(c.ints[0]), false, me, &mut dep_buf);
                            if let Some(f) = file_of(c.ints[0]) {
                                res.access(f, false, me, &mut dep_buf);
                            }
                        }
                        Pwrite | Pwritev | Fsync | Fdatasync | SyncFileRange | Syncfs
                        | Ftruncate | Fallocate | Fsetxattr | Fremovexattr | Fchmod | Fchown
                        | Futimes => {
                            res.access(fkey(c.ints[0]), false, me, &mut dep_buf);
                            if let Some(f) = file_of(c.ints[0]) {
                                res.access(f, true, me, &mut dep_buf);
                            }
                        }
                        Mmap => {
                            res.access(fkey(c.ints[0]), false, me, &mut dep_buf);
                            if c.result >= 0 {
                                res.access(MAP_KEY | c.result as u64, true, me, &mut dep_buf);
                                let p = fd_path.get(c.ints[0] as usize).copied().unwrap_or(0);
                                set(&mut map_path, c.result as usize, p);
                            }
                        }
                        Munmap | Msync => {
                            res.access(MAP_KEY | c.ints[0] as u64, true, me, &mut dep_buf);
                        }
                        Sync => {}
                    }
                    let think_ns = match spec.timing {
                        Timing::Fast => 0,
                        Timing::Recorded => {
                            let lane = &mut lanes[t];
                            let owed =
                                lane.tracer_owed_ns + i64::from(c.skipped) * total_over + gap_over;
                            // what it waited for other threads in the gap (a lock another
                            // thread held while the tracer stopped it) is not its own time
                            let waited: i64 = lane.waits_folded_ns
                                + lane
                                    .waits
                                    .iter()
                                    .map(|&(a, b)| (b.min(c.start_ns) - a.max(since_ns)).max(0))
                                    .sum::<i64>();
                            let gap = c.start_ns - since_ns - waited;
                            lane.tracer_owed_ns = (owed - gap).max(0);
                            ((gap - owed).max(0) as f64 / spec.speed) as u64
                        }
                    };
                    lanes[t].last_end_ns = c.start_ns + c.dur_ns as i64;
                    lanes[t].waits.clear();
                    lanes[t].waits_folded_ns = 0;
                    let deps = resolve_deps(&mut dep_buf, &mut lanes, &states, c.tid);
                    let text = match c.text {
                        Some(t) => Some(cstring(&t)?),
                        None => None,
                    };
                    let op = Op {
                        kind: k,
                        ints: c.ints,
                        text,
                        path: p1,
                        path2: p2,
                        result: c.result,
                        think_ns,
                        after_deps: joined,
                        deps,
                    };
                    push(&mut lanes[t], &spent, Work::Call(op));
                }
                Record::Release { tid, fd } => {
                    let t = tid as usize;
                    dep_buf.clear();
                    res.access(
                        FD_KEY | u64::from(fd),
                        true,
                        (tid, lanes[t].count),
                        &mut dep_buf,
                    );
                    let deps = resolve_deps(&mut dep_buf, &mut lanes, &states, tid);
                    push(&mut lanes[t], &spent, Work::Release { fd, deps });
                }
                Record::Wait {
                    tid,
                    start_ns,
                    dur_ns,
                } => {
                    if spec.timing == Timing::Recorded {
                        let end =
                            start_ns.saturating_add(i64::try_from(dur_ns).unwrap_or(i64::MAX));
                        let lane = &mut lanes[tid as usize];
                        if lane.waits.len() >= WAITS_KEPT {
                            let old = lane.waits.drain(..WAITS_KEPT / 2);
                            lane.waits_folded_ns += old.map(|(a, b)| b - a).sum::<i64>();
                        }
                        lane.waits.push((start_ns, end));
                    }
                }
                Record::Exit { tid, at_ns } => {
                    let lane = &mut lanes[tid as usize];
                    lane.flush();
                    lane.tx = None;
                    let (parent, lane_items) = (lane.parent, lane.count);
                    if let Some(p) = parent {
                        let pl = &mut lanes[p as usize];
                        pl.live_children.retain(|c| *c != tid);
                        if lane_items > 0 {
                            pl.ended_children.push((tid, lane_items, at_ns));
                        }
                    }
                }
                Record::Unrecorded { what, count } => {
                    *unrecorded.entry(what).or_insert(0) += count;
                }
                Record::Tree { .. } | Record::Data { .. } => {}
            }
        }
        for lane in &mut lanes {
            lane.flush();
            lane.tx = None;
        }
        let outs = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| Error::runtime("a replay thread panicked"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((outs, states.len() as u64))
    });
    let (outs, threads) = outs?;
    let _ = map_path;
    let cpu1 = sys::cpu_self();
    let end = outs.iter().map(|o| o.end).max().unwrap_or(start);
    let elapsed = end.saturating_duration_since(start).as_secs_f64();
    let mut merged: Vec<KindStats> = Kind::ALL.iter().map(|_| KindStats::default()).collect();
    let mut examples = Vec::new();
    let mut releases = 0;
    for o in outs {
        releases += o.releases;
        for (m, k) in merged.iter_mut().zip(o.kinds) {
            m.calls += k.calls;
            m.bytes += k.bytes;
            m.recorded_bytes += k.recorded_bytes;
            m.mismatches += k.mismatches;
            if let Some(h) = k.hist {
                match &mut m.hist {
                    Some(mh) => {
                        let _ = mh.add(&h);
                    }
                    None => m.hist = Some(h),
                }
            }
        }
        examples.extend(o.examples);
    }
    examples.truncate(EXAMPLES);
    let kinds: Vec<KindResult> = Kind::ALL
        .iter()
        .zip(&merged)
        .filter(|(_, k)| k.calls > 0)
        .map(|(kind, k)| KindResult {
            kind: kind.name(),
            calls: k.calls,
            bytes: k.bytes,
            recorded_bytes: k.recorded_bytes,
            mismatches: k.mismatches,
            latency_us: k
                .hist
                .as_ref()
                .map_or_else(|| Latency::of(&crate::stats::histogram()), Latency::of),
        })
        .collect();
    let calls: u64 = kinds.iter().map(|k| k.calls).sum();
    let total_mismatches = kinds.iter().map(|k| k.mismatches).sum();
    Ok(RunResult {
        schema: SCHEMA,
        engine: ENGINE,
        spec: spec.clone(),
        measured: Measured {
            elapsed_s: round6(elapsed),
            calls,
            calls_per_s: if elapsed > 0.0 {
                (calls as f64 / elapsed).round()
            } else {
                0.0
            },
            threads,
            releases,
        },
        kinds,
        mismatches: Mismatches {
            total: total_mismatches,
            examples,
        },
        unrecorded,
        cpu: crate::stats::CpuUse::new(cpu1.0 - cpu0.0, cpu1.1 - cpu0.1, calls),
    })
}

fn set(v: &mut Vec<u32>, i: usize, x: u32) {
    if v.len() <= i {
        v.resize(i + 1, 0);
    }
    v[i] = x;
}

fn push(lane: &mut Lane, spent: &Spent, w: Work) {
    if lane.batch.capacity() == 0 {
        lane.batch = spent.take();
    }
    lane.batch.push(w);
    lane.count += 1;
    if lane.batch.len() >= BATCH {
        lane.flush();
    }
}

/// The (thread, index) pairs a call waits for as waits on thread states: the latest of
/// each thread, whose batch is sent first so that it can run.
fn resolve_deps(
    raw: &mut [(u32, u64)],
    lanes: &mut [Lane],
    states: &[Arc<ThreadState>],
    me: u32,
) -> Vec<Dep> {
    if raw.is_empty() {
        return Vec::new();
    }
    raw.sort_unstable();
    let mut out: Vec<Dep> = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let t = raw[i].0;
        let mut idx = raw[i].1;
        while i < raw.len() && raw[i].0 == t {
            idx = idx.max(raw[i].1);
            i += 1;
        }
        if t == me {
            continue;
        }
        lanes[t as usize].flush();
        out.push(Dep {
            thread: states[t as usize].clone(),
            need: idx + 1,
        });
    }
    out
}

/// A buffer of the synthetic fill, at least `len` bytes, aligned for O_DIRECT.
pub fn filled(len: usize) -> AlignedBuf {
    let mut b = AlignedBuf::new(len);
    fill_random(b.as_mut_slice(), FILL_SEED);
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::{Call, TraceWriter};

    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let d =
                std::env::temp_dir().join(format!("fsbench-replay-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).expect("scratch dir");
            Scratch(d)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn call(tid: u32, start_ns: i64, kind: Kind, result: i64, ints: &[i64]) -> Record {
        let mut all = [0i64; MAX_INTS];
        all[..ints.len()].copy_from_slice(ints);
        Record::Call(Call {
            tid,
            start_ns,
            dur_ns: 1000,
            skipped: 0,
            kind,
            result,
            ints: all,
            text: None,
        })
    }

    /// A path of the recorded tree, directly under its root (id 0, ".").
    fn path(id: u32, name: &[u8]) -> Record {
        Record::Path {
            id,
            parent: 0,
            path: name.to_vec(),
        }
    }

    /// A trace at `dir`/t.gz with `header`: the tree's root and its file `a` (path 1), and
    /// thread 0; the caller writes its calls.
    fn one_thread_on_a(dir: &std::path::Path, header: serde_json::Value) -> TraceWriter {
        let mut w = TraceWriter::create(&dir.join("t.gz"), &header).expect("w");
        w.write(&path(0, b".")).expect("p");
        w.write(&path(1, b"a")).expect("p");
        w.write(&thread(0)).expect("n");
        w
    }

    /// A thread there from the start.
    fn thread(tid: u32) -> Record {
        Record::Thread {
            tid,
            parent: None,
            at_ns: 0,
        }
    }

    /// The trace `w` finished with a starting tree of its root (path 0) and files 1 to
    /// `paths` - 1 of 10 bytes each, then replayed with the recorded gaps.
    fn replayed_with_gaps(s: &Scratch, mut w: TraceWriter, paths: u32) -> RunResult {
        for id in 0..paths {
            let kind = if id == 0 {
                EntryType::Dir
            } else {
                EntryType::File
            };
            w.write(&Record::Tree {
                path: id,
                kind,
                size: 10,
                mode: 0o644,
                target: None,
            })
            .expect("t");
        }
        w.finish().expect("finish");
        let spec = spec(s, Timing::Recorded);
        prepare(&spec).expect("prepare");
        run(&spec).expect("run")
    }

    fn spec(s: &Scratch, timing: Timing) -> ReplaySpec {
        ReplaySpec {
            schema: SCHEMA,
            trace: s.0.join("t.gz").display().to_string(),
            dir: s.0.join("replay").display().to_string(),
            timing,
            speed: 1.0,
            threads: None,
        }
    }

    /// A shell (thread 0) that made one call, then started a command (thread 1) that makes
    /// 5 calls 40 ms apart (from 10 ms to 210 ms), with 20 ms a call of the tracer's; the
    /// shell's next call and the child's exit are the caller's to write.
    fn shell_and_child(s: &Scratch) -> TraceWriter {
        let header =
            serde_json::json!({"tracer_overhead_ns": 20_000_000, "gap_overhead_ns": 20_000_000});
        let mut w = one_thread_on_a(&s.0, header);
        w.write(&call(0, 0, Kind::Stat, 0, &[1, 1])).expect("c");
        let child = Record::Thread {
            tid: 1,
            parent: Some(0),
            at_ns: 10_000_000,
        };
        w.write(&child).expect("n");
        for k in 1..=5 {
            w.write(&call(
                1,
                10_000_000 + k * 40_000_000,
                Kind::Stat,
                0,
                &[1, 1],
            ))
            .expect("c");
        }
        w
    }

    /// A shell (thread 0) runs a command (thread 1) and waits for it: its next call's
    /// recorded gap spans the child's whole life, tracer cost included. Replayed with
    /// the recorded gaps, the shell waits for the child's last call, then its own think
    /// time after the child ended: about the child's replay (5 gaps of 40 ms recorded, 20
    /// ms of each the tracer's), not the shell's recorded 220 ms.
    #[test]
    fn a_parent_waits_for_its_ended_child_not_the_childs_recorded_time() {
        let s = Scratch::new("join");
        let mut w = shell_and_child(&s);
        w.write(&Record::Exit {
            tid: 1,
            at_ns: 211_000_000,
        })
        .expect("x");
        w.write(&call(0, 221_000_000, Kind::Stat, 0, &[1, 1]))
            .expect("c");
        let r = replayed_with_gaps(&s, w, 2);
        assert_eq!(r.mismatches.total, 0, "{:?}", r.mismatches.examples);
        let e = r.measured.elapsed_s;
        // the child's 5 gaps of 20 ms: 0.1 s; the shell's own recorded gap less the
        // tracer's part would be 0.2 s
        assert!((0.095..0.17).contains(&e), "elapsed {e} s");
    }

    /// As above, but the shell's next call comes before the tracer reports the child's
    /// exit (a parent woken by its child's pipe closing): the think time still counts
    /// from the child's last call.
    #[test]
    fn a_parent_s_call_before_its_child_s_reported_exit_waits_for_its_last_call() {
        let s = Scratch::new("pipe");
        let mut w = shell_and_child(&s);
        w.write(&call(0, 211_000_000, Kind::Stat, 0, &[1, 1]))
            .expect("c");
        w.write(&Record::Exit {
            tid: 1,
            at_ns: 212_000_000,
        })
        .expect("x");
        let r = replayed_with_gaps(&s, w, 2);
        assert_eq!(r.mismatches.total, 0, "{:?}", r.mismatches.examples);
        let e = r.measured.elapsed_s;
        // the child's 5 gaps of 20 ms: 0.1 s; the shell's own gap less the tracer's cost
        // of its two calls would be 0.17 s
        assert!((0.095..0.15).contains(&e), "elapsed {e} s");
    }

    /// The tracer's cost taken off the gaps is a mean: gaps of 1 ms and 59 ms in turn,
    /// with 30 ms a call of the tracer's, hold no think time at all. Taken off each gap
    /// alone and clipped at zero, the long ones would keep 29 ms each (87 ms here).
    #[test]
    fn the_tracer_s_cost_is_taken_off_the_gaps_on_average() {
        let s = Scratch::new("owed");
        let header =
            serde_json::json!({"tracer_overhead_ns": 30_000_000, "gap_overhead_ns": 30_000_000});
        let mut w = one_thread_on_a(&s.0, header);
        let mut t = 0;
        for k in 0..6 {
            // each call lasts 1 us (call()); the gap before it is 1 ms or 59 ms
            t += if k % 2 == 0 { 1_000_000 } else { 59_000_000 };
            w.write(&call(0, t, Kind::Stat, 0, &[1, 1])).expect("c");
            t += 1000;
        }
        let r = replayed_with_gaps(&s, w, 2);
        assert_eq!(r.mismatches.total, 0, "{:?}", r.mismatches.examples);
        let e = r.measured.elapsed_s;
        assert!(
            e < 0.06,
            "elapsed {e} s: the long gaps kept the tracer's excess"
        );
    }

    /// A thread that waited 50 ms of a 60 ms gap for another thread (a futex wait, a
    /// `w` record) replays the 10 ms left as its think time, not the whole gap.
    #[test]
    fn a_wait_for_another_thread_is_not_think_time() {
        let s = Scratch::new("waits");
        let mut w = one_thread_on_a(&s.0, serde_json::json!({}));
        w.write(&call(0, 0, Kind::Stat, 0, &[1, 1])).expect("c");
        for k in 0..3 {
            let t = k * 60_000_000;
            w.write(&Record::Wait {
                tid: 0,
                start_ns: t + 5_000_000,
                dur_ns: 50_000_000,
            })
            .expect("w");
            w.write(&call(0, t + 60_000_000, Kind::Stat, 0, &[1, 1]))
                .expect("c");
        }
        let r = replayed_with_gaps(&s, w, 2);
        assert_eq!(r.mismatches.total, 0, "{:?}", r.mismatches.examples);
        let e = r.measured.elapsed_s;
        // 3 gaps of 10 ms left: 0.03 s; the gaps whole would be 0.18 s
        assert!((0.029..0.1).contains(&e), "elapsed {e} s");
    }

    /// More waits in one gap than a thread keeps (10,000 of 10 us in a 110 ms gap): the
    /// folded ones are still taken off, and 10 ms is left.
    #[test]
    fn waits_past_those_kept_are_summed_not_lost() {
        let s = Scratch::new("many-waits");
        let mut w = one_thread_on_a(&s.0, serde_json::json!({}));
        w.write(&call(0, 0, Kind::Stat, 0, &[1, 1])).expect("c");
        let waits: i64 = 10_000;
        assert!(waits as usize > WAITS_KEPT);
        for k in 0..waits {
            w.write(&Record::Wait {
                tid: 0,
                start_ns: 5_000_000 + k * 10_000,
                dur_ns: 10_000,
            })
            .expect("w");
        }
        w.write(&call(0, 110_000_000, Kind::Stat, 0, &[1, 1]))
            .expect("c");
        let r = replayed_with_gaps(&s, w, 2);
        assert_eq!(r.mismatches.total, 0, "{:?}", r.mismatches.examples);
        let e = r.measured.elapsed_s;
        assert!((0.009..0.06).contains(&e), "elapsed {e} s");
    }

    const CREATE: i64 = (libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC) as i64;

    /// Finish `w` with a starting tree of its root alone.
    fn finish_with_root(mut w: TraceWriter) {
        w.write(&Record::Tree {
            path: 0,
            kind: EntryType::Dir,
            size: 0,
            mode: 0o755,
            target: None,
        })
        .expect("t");
        w.finish().expect("finish");
    }

    /// A trace of `threads` threads, each making a file, writing it, fstat-ing and
    /// closing it, finished with its tree (the root alone).
    fn files_made_by(s: &Scratch, threads: u32) {
        let mut w = TraceWriter::create(&s.0.join("t.gz"), &serde_json::json!({})).expect("w");
        w.write(&path(0, b".")).expect("p");
        for tid in 0..threads {
            w.write(&thread(tid)).expect("n");
        }
        for tid in 0..threads {
            let (id, fd) = (i64::from(tid) + 1, i64::from(tid));
            w.write(&path(tid + 1, format!("f{tid}").as_bytes()))
                .expect("p");
            let t = i64::from(tid) * 10;
            w.write(&call(tid, t, Kind::Open, fd, &[id, CREATE, 0o644]))
                .expect("c");
            w.write(&call(tid, t + 1, Kind::Write, 100, &[fd, 100]))
                .expect("c");
            w.write(&call(tid, t + 2, Kind::Fstat, 0, &[fd]))
                .expect("c");
            w.write(&call(tid, t + 3, Kind::Close, 0, &[fd]))
                .expect("c");
        }
        finish_with_root(w);
    }

    /// One thread, told so by the spec, replays in a descriptor table of its own: its
    /// descriptors are made, used and closed there, as in a shared one.
    #[test]
    fn a_one_thread_trace_replays_in_its_own_descriptor_table() {
        let s = Scratch::new("own-table");
        files_made_by(&s, 1);
        let spec = ReplaySpec {
            threads: Some(1),
            ..spec(&s, Timing::Fast)
        };
        prepare(&spec).expect("prepare");
        let r = run(&spec).expect("run");
        assert_eq!(r.measured.calls, 4);
        assert_eq!(r.mismatches.total, 0, "{:?}", r.mismatches.examples);
        assert_eq!(
            std::fs::metadata(s.0.join("replay/f0"))
                .expect("made")
                .len(),
            100
        );
    }

    /// A spec that says one thread, on a trace of two, is refused when the second starts;
    /// a spec of no threads is refused at once.
    #[test]
    fn a_spec_s_thread_count_must_be_the_trace_s() {
        let s = Scratch::new("threads");
        files_made_by(&s, 2);
        let wrong = ReplaySpec {
            threads: Some(1),
            ..spec(&s, Timing::Fast)
        };
        prepare(&wrong).expect("prepare");
        let e = run(&wrong).expect_err("refused").to_string();
        assert!(
            e.contains("threads = 1, but the trace starts thread 1"),
            "{e}"
        );
        let text = serde_json::to_string(&ReplaySpec {
            threads: Some(0),
            ..wrong.clone()
        })
        .expect("json");
        assert!(parse_spec(&text).is_err());
        let right = ReplaySpec {
            threads: Some(2),
            ..wrong
        };
        assert_eq!(run(&right).expect("run").measured.calls, 8);
    }

    /// Thread 0 creates and writes file i, then thread 1 reads it, for many files; and for
    /// one file thread 1 looked first (ENOENT), before thread 0 made it. Replayed as fast
    /// as possible, every result is the recorded one: each call waited for the other
    /// thread's earlier calls on its file.
    #[test]
    fn two_threads_on_one_file_keep_the_recorded_order() {
        let s = Scratch::new("order");
        let mut w = TraceWriter::create(&s.0.join("t.gz"), &serde_json::json!({})).expect("w");
        w.write(&path(0, b".")).expect("p");
        w.write(&thread(0)).expect("n");
        w.write(&thread(1)).expect("n");
        let mut t = 0;
        let files = 300;
        for i in 0..files {
            let id = i64::from(i) + 1;
            w.write(&path(i + 1, format!("f{i}").as_bytes()))
                .expect("p");
            t += 10_000;
            if i == 7 {
                // thread 1 looks before the file is made
                w.write(&call(1, t, Kind::Stat, -i64::from(libc::ENOENT), &[id, 1]))
                    .expect("c");
            }
            // thread 0 makes it with 3 fsyncs: slow, so an unordered read would come first
            w.write(&call(0, t + 1, Kind::Open, 0, &[id, CREATE, 0o644]))
                .expect("c");
            w.write(&call(0, t + 2, Kind::Write, 100, &[0, 100]))
                .expect("c");
            w.write(&call(0, t + 3, Kind::Close, 0, &[0])).expect("c");
            w.write(&call(1, t + 4, Kind::Open, 1, &[id, 0, 0]))
                .expect("c");
            w.write(&call(1, t + 5, Kind::Read, 100, &[1, 4096]))
                .expect("c");
            w.write(&call(1, t + 6, Kind::Close, 0, &[1])).expect("c");
        }
        finish_with_root(w);
        let spec = spec(&s, Timing::Fast);
        prepare(&spec).expect("prepare");
        let r = run(&spec).expect("run");
        assert_eq!(r.measured.calls, u64::from(files) * 6 + 1);
        assert_eq!(r.mismatches.total, 0, "{:?}", r.mismatches.examples);
        let read = r.kinds.iter().find(|k| k.kind == "read").expect("reads");
        assert_eq!(read.bytes, u64::from(files) * 100);
        assert_eq!(read.bytes, read.recorded_bytes);
    }

    /// Two threads on files of their own, each waiting 40 ms of recorded think time before
    /// each of 5 calls at the same recorded times: replayed together (about 200 ms), not
    /// one after the other (400 ms).
    #[test]
    fn independent_files_run_concurrently() {
        let s = Scratch::new("concurrent");
        let mut w = TraceWriter::create(&s.0.join("t.gz"), &serde_json::json!({})).expect("w");
        w.write(&path(0, b".")).expect("p");
        w.write(&path(1, b"a")).expect("p");
        w.write(&path(2, b"b")).expect("p");
        w.write(&thread(0)).expect("n");
        w.write(&thread(1)).expect("n");
        let gap = 40_000_000;
        for k in 1..=5 {
            for tid in 0..2u32 {
                w.write(&call(tid, k * gap, Kind::Stat, 0, &[i64::from(tid) + 1, 1]))
                    .expect("c");
            }
        }
        let r = replayed_with_gaps(&s, w, 3);
        assert_eq!(r.mismatches.total, 0, "{:?}", r.mismatches.examples);
        assert_eq!(r.measured.threads, 2);
        let e = r.measured.elapsed_s;
        // 5 gaps of 40 ms per thread: 0.2 s if the threads overlap, 0.4 s one after the
        // other (the upper bound leaves room for a loaded machine)
        assert!(
            (0.19..0.38).contains(&e),
            "elapsed {e} s: the threads did not overlap"
        );
    }

    /// A call whose replayed result differs from the recording is counted, not skipped.
    #[test]
    fn mismatching_results_are_counted() {
        let s = Scratch::new("mismatch");
        let mut w = TraceWriter::create(&s.0.join("t.gz"), &serde_json::json!({})).expect("w");
        w.write(&path(0, b".")).expect("p");
        w.write(&path(1, b"gone")).expect("p");
        w.write(&thread(0)).expect("n");
        // recorded: the file was there (open ok, 10 bytes read); the tree lacks it
        w.write(&call(0, 1, Kind::Stat, 0, &[1, 1])).expect("c");
        w.write(&call(0, 2, Kind::Open, 0, &[1, 0, 0])).expect("c");
        w.write(&call(0, 3, Kind::Read, 10, &[0, 10])).expect("c");
        finish_with_root(w);
        let spec = spec(&s, Timing::Fast);
        prepare(&spec).expect("prepare");
        let r = run(&spec).expect("run");
        assert_eq!(r.measured.calls, 3);
        assert_eq!(r.mismatches.total, 3);
        let e = &r.mismatches.examples[0];
        assert_eq!(
            (e.kind, e.recorded, e.replayed),
            ("stat", 0, -i64::from(libc::ENOENT))
        );
        let read = r.kinds.iter().find(|k| k.kind == "read").expect("read");
        assert_eq!(
            (read.bytes, read.recorded_bytes, read.mismatches),
            (0, 10, 1)
        );
    }
}
