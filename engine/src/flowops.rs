//! One worker thread: runs its group's flowop chain in a loop and records per-flowop
//! statistics.
//!
//! Semantics follow filebench: a thread has a few fd slots (`fd=1`, `fd=2`...), each
//! holding at most one open file. `create`/`open` fill a slot with a file picked from a
//! fileset, `close` empties it, and the I/O flowops work on the file in their slot,
//! opening one from their fileset first when the slot is empty (filebench's implicit
//! open, which keeps the webserver log open across loops). When a flowop finds no file
//! to work on (no free slot to create, nothing to delete), it is counted as skipped,
//! the thread's files are closed and the chain starts over.
//!
//! The hot path (an I/O flowop on an open fd) makes one system call, reads the clock
//! twice and records into thread-local histograms (the flowop's, and the current
//! second's): no allocation, no lock, no atomic unless the run stops after a number of
//! operations. Once a second a thread adds its second's histogram to the shared ones.

use std::os::fd::RawFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::dist::{FastRng, Sampler, below};
use crate::error::{Error, Result};
use crate::fileset::{Fileset, Pick};
use crate::spec::{DIRECT_ALIGN, FlowopSpec, GroupSpec, MAX_FD, OpKind, Spec};
use crate::stats::{self, OpStats, SecondHists, Tally};
use crate::sys::{self, AlignedBuf, CPath};

/// With only an op count to stop at, a thread whose chain keeps finding no file gives up
/// after this many restarts in a row instead of spinning forever.
const MAX_IDLE_RESTARTS: u64 = 1_000_000;

/// A flowop, resolved against the spec (fileset index, sampler, defaults applied).
#[derive(Debug, Clone)]
pub struct Op {
    pub kind: OpKind,
    pub name: String,
    pub fileset: Option<usize>,
    pub fd: usize,
    pub iosize: u64,
    pub append: Option<Sampler>,
    pub direct: bool,
}

impl Op {
    pub fn compile(spec: &Spec, f: &FlowopSpec) -> Result<Op> {
        let fileset = match &f.fileset {
            Some(n) => Some(
                spec.fileset_index(n)
                    .ok_or_else(|| Error::input(format!("spec: fileset {n:?} is not defined")))?,
            ),
            None => None,
        };
        let iosize = f.iosize.or(f.op.default_iosize()).unwrap_or(0);
        let append = match (f.op, &f.size) {
            (OpKind::Append, Some(d)) => Some(Sampler::new(d)?),
            (OpKind::Append, None) => Some(Sampler::up_to(iosize)),
            _ => None,
        };
        Ok(Op {
            kind: f.op,
            name: f.label().to_string(),
            fileset,
            fd: usize::from(f.fd),
            iosize,
            append,
            direct: f.direct,
        })
    }
}

pub fn compile_group(spec: &Spec, g: &GroupSpec) -> Result<Vec<Op>> {
    g.flowops.iter().map(|f| Op::compile(spec, f)).collect()
}

/// Size of a group's per-thread I/O buffer.
pub fn buffer_size(ops: &[Op]) -> usize {
    let io = ops.iter().map(|o| o.iosize).max().unwrap_or(0);
    (io.max(64 << 10) as usize).next_multiple_of(sys::BUF_ALIGN)
}

/// What all workers share.
pub struct Shared<'a> {
    pub filesets: &'a [Fileset],
    /// Set by the first failing thread or when the op limit is reached.
    pub stop: AtomicBool,
    pub ops_done: AtomicU64,
    pub ops_limit: Option<u64>,
    pub failure: Mutex<Option<String>>,
    /// The latencies of each second of the measured phase, all threads'.
    pub seconds: SecondHists,
}

impl Shared<'_> {
    pub fn fail(&self, msg: String) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            *f = Some(msg);
        }
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The clock of the measured phase.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub warmup_end: Instant,
    pub deadline: Option<Instant>,
    /// Number of one-second buckets of the time series, when the duration is known.
    pub buckets: Option<usize>,
}

/// What a worker hands back.
pub struct ThreadOutput {
    pub stats: Vec<OpStats>,
    /// What ended in each second of the measured phase.
    pub series: Vec<Tally>,
    pub last_end: Option<Instant>,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    fd: RawFd,
    fileset: usize,
    entry: u32,
    size: Option<u64>,
    direct: bool,
}

enum Outcome {
    Done { read: u64, written: u64 },
    NoResource,
    Stopped,
}

type OpResult = std::result::Result<Outcome, String>;

pub struct Worker<'a> {
    shared: &'a Shared<'a>,
    ops: &'a [Op],
    group: &'a str,
    slots: [Option<Slot>; MAX_FD as usize + 1],
    rng: FastRng,
    buf: AlignedBuf,
    path: CPath,
    path2: CPath,
    deadline: Option<Instant>,
}

fn round_up(n: u64, a: u64) -> u64 {
    n.div_ceil(a) * a
}

impl<'a> Worker<'a> {
    pub fn new(shared: &'a Shared<'a>, ops: &'a [Op], group: &'a str, seed: u64) -> Self {
        use rand::SeedableRng;
        let mut buf = AlignedBuf::new(buffer_size(ops));
        crate::fileset::fill_random(buf.as_mut_slice(), seed);
        Worker {
            shared,
            ops,
            group,
            slots: [None; MAX_FD as usize + 1],
            rng: FastRng::seed_from_u64(seed),
            buf,
            path: CPath::with_capacity(64),
            path2: CPath::with_capacity(64),
            deadline: None,
        }
    }

    /// Run the chain until the deadline, the op limit or a failure.
    pub fn run(mut self, timing: Timing) -> ThreadOutput {
        self.deadline = timing.deadline;
        let mut stats: Vec<OpStats> = self.ops.iter().map(|_| OpStats::new()).collect();
        let mut series: Vec<Tally> = vec![Tally::default(); timing.buckets.unwrap_or(0)];
        let max_bucket = timing.buckets.map(|b| b.saturating_sub(1));
        let mut bucket = 0usize;
        // The latencies of the second `bucket` is in, added to shared.seconds when over.
        let mut second = stats::histogram();
        let mut second_of = 0usize;
        let mut next_tick = timing.warmup_end + Duration::from_secs(1);
        let mut recording = false;
        let mut last_end = None;
        let mut idle_restarts = 0u64;
        let shared = self.shared;

        'chain: loop {
            for (i, st) in stats.iter_mut().enumerate() {
                if shared.stop.load(Ordering::Relaxed) {
                    break 'chain;
                }
                let t0 = Instant::now();
                let r = self.exec(i);
                let t1 = Instant::now();
                if !recording && t0 >= timing.warmup_end {
                    recording = true;
                }
                match r {
                    // The measured phase ends at the deadline, as filebench's counters do
                    // when its run's time is up: an operation still in flight then is
                    // outside it, and the thread stops. Counting it would stretch the
                    // phase to the slowest thread's last operation (at 64 threads queued
                    // on one directory: tens of milliseconds to seconds), a rate biased
                    // down by that drain.
                    Ok(Outcome::Done { .. }) if timing.deadline.is_some_and(|d| t1 > d) => {
                        break 'chain;
                    }
                    Ok(Outcome::Done { read, written }) => {
                        idle_restarts = 0;
                        if recording {
                            if let Some(limit) = shared.ops_limit {
                                let prev = shared.ops_done.fetch_add(1, Ordering::Relaxed);
                                if prev >= limit {
                                    shared.stop.store(true, Ordering::Relaxed);
                                    break 'chain;
                                }
                                if prev + 1 == limit {
                                    shared.stop.store(true, Ordering::Relaxed);
                                }
                            }
                            let latency = t1.duration_since(t0);
                            st.record(latency, read, written);
                            while t1 >= next_tick {
                                next_tick += Duration::from_secs(1);
                                if max_bucket.is_none_or(|m| bucket < m) {
                                    bucket += 1;
                                }
                            }
                            if bucket >= series.len() {
                                series.resize(bucket + 1, Tally::default());
                            }
                            series[bucket].ops += 1;
                            series[bucket].bytes += read + written;
                            if bucket != second_of {
                                shared.seconds.add(second_of, &second);
                                second.reset();
                                second_of = bucket;
                            }
                            stats::record_latency(&mut second, latency);
                            last_end = Some(t1);
                        }
                    }
                    Ok(Outcome::NoResource) => {
                        if recording {
                            st.skipped += 1;
                        }
                        self.close_all();
                        if timing.deadline.is_some_and(|d| t1 >= d) {
                            break 'chain;
                        }
                        idle_restarts += 1;
                        if timing.deadline.is_none() && idle_restarts >= MAX_IDLE_RESTARTS {
                            let op = &self.ops[i];
                            shared.fail(format!(
                                "flowop {:?} ({}) of group {:?} found no file to work on \
                                 {MAX_IDLE_RESTARTS} times in a row (is its fileset empty, \
                                 or full for create?): the run would never reach stop.ops",
                                op.name,
                                op.kind.as_str(),
                                self.group
                            ));
                            break 'chain;
                        }
                        continue 'chain;
                    }
                    Ok(Outcome::Stopped) => break 'chain,
                    Err(msg) => {
                        let op = &self.ops[i];
                        shared.fail(format!(
                            "flowop {:?} ({}) of group {:?} failed: {msg}",
                            op.name,
                            op.kind.as_str(),
                            self.group
                        ));
                        break 'chain;
                    }
                }
                if timing.deadline.is_some_and(|d| t1 >= d) {
                    break 'chain;
                }
            }
        }
        self.close_all();
        shared.seconds.add(second_of, &second);
        ThreadOutput {
            stats,
            series,
            last_end,
        }
    }

    fn close_all(&mut self) {
        for s in self.slots.iter_mut() {
            if let Some(slot) = s.take() {
                let _ = sys::close(slot.fd);
            }
        }
    }

    fn close_slot(&mut self, fd: usize) -> std::result::Result<(), String> {
        if let Some(slot) = self.slots[fd].take() {
            sys::close(slot.fd).map_err(|e| format!("close: {e}"))?;
        }
        Ok(())
    }

    fn pick(&mut self, fs: &Fileset, exists: bool, wait: bool) -> Pick {
        fs.pick(
            exists,
            &mut self.rng,
            wait,
            &self.shared.stop,
            self.deadline,
        )
    }

    /// Open (or create) a file from the op's fileset into the op's fd slot.
    fn open_into(&mut self, op: &Op, create: bool) -> OpResult {
        let Some(fi) = op.fileset else {
            return Err(format!("fd {} is not open and there is no fileset", op.fd));
        };
        let filesets = self.shared.filesets;
        let fs = &filesets[fi];
        let entry = match self.pick(fs, !create, true) {
            Pick::Got(e) => e,
            Pick::None => return Ok(Outcome::NoResource),
            Pick::Stopped => return Ok(Outcome::Stopped),
        };
        if let Err(e) = self.close_slot(op.fd) {
            fs.release(entry, !create);
            return Err(e);
        }
        fs.layout.file_path(u64::from(entry), &mut self.path);
        let mut flags = if fs.readonly {
            libc::O_RDONLY
        } else {
            libc::O_RDWR
        };
        if create {
            flags |= libc::O_CREAT | libc::O_TRUNC;
        }
        if op.direct {
            flags |= libc::O_DIRECT;
        }
        let r = sys::openat(fs.root_fd(), &self.path, flags, 0o644);
        match r {
            Ok(fd) => {
                fs.release(entry, true);
                self.slots[op.fd] = Some(Slot {
                    fd,
                    fileset: fi,
                    entry,
                    size: if create { Some(0) } else { None },
                    direct: op.direct,
                });
                Ok(Outcome::Done {
                    read: 0,
                    written: 0,
                })
            }
            Err(e) => {
                // a failed create leaves the entry free; a failed open of an existing
                // entry means it is gone
                fs.release(entry, false);
                let what = if create { "create" } else { "open" };
                if op.direct && e.raw_os_error() == Some(libc::EINVAL) {
                    return Err(format!(
                        "{what} {} with O_DIRECT: the filesystem refuses O_DIRECT ({e}); \
                         set \"direct\": false",
                        fs.path_of(&self.path)
                    ));
                }
                Err(format!("{what} {}: {e}", fs.path_of(&self.path)))
            }
        }
    }

    /// The slot of the op's fd, opening a file from its fileset when it is empty, and
    /// with O_DIRECT switched to what the op asks.
    #[inline]
    fn ensure_slot(&mut self, op: &Op) -> std::result::Result<Slot, OpResult> {
        if self.slots[op.fd].is_none() {
            match self.open_into(op, false) {
                Ok(Outcome::Done { .. }) => {}
                other => return Err(other),
            }
        }
        let Some(mut slot) = self.slots[op.fd] else {
            return Err(Err(format!("fd {} is not open", op.fd)));
        };
        if slot.direct != op.direct {
            if let Err(e) = sys::set_direct(slot.fd, op.direct) {
                return Err(Err(format!(
                    "fcntl O_DIRECT={} on {}: {e} (the filesystem may refuse O_DIRECT)",
                    op.direct,
                    self.slot_path(&slot)
                )));
            }
            slot.direct = op.direct;
            self.slots[op.fd] = Some(slot);
        }
        Ok(slot)
    }

    fn slot_path(&mut self, slot: &Slot) -> String {
        let filesets = self.shared.filesets;
        let fs = &filesets[slot.fileset];
        fs.layout.file_path(u64::from(slot.entry), &mut self.path);
        fs.path_of(&self.path)
    }

    fn io_error(&mut self, what: &str, slot: &Slot, e: std::io::Error) -> String {
        let p = self.slot_path(slot);
        format!("{what} {p}: {e}")
    }

    fn known_size(&mut self, slot: &mut Slot) -> std::result::Result<u64, String> {
        match slot.size {
            Some(s) => Ok(s),
            None => {
                let s = sys::fstat_size(slot.fd).map_err(|e| self.io_error("fstat", slot, e))?;
                slot.size = Some(s);
                Ok(s)
            }
        }
    }

    #[inline]
    fn exec(&mut self, i: usize) -> OpResult {
        let ops = self.ops;
        let op = &ops[i];
        match op.kind {
            OpKind::Randread | OpKind::Randwrite => self.random_io(op),
            OpKind::Create => self.open_into(op, true),
            OpKind::Open => self.open_into(op, false),
            OpKind::Close => {
                self.close_slot(op.fd)?;
                Ok(Outcome::Done {
                    read: 0,
                    written: 0,
                })
            }
            OpKind::Delete => self.delete(op),
            OpKind::Stat => self.stat(op),
            OpKind::Readwhole => self.read_whole(op),
            OpKind::Writewhole => self.write_whole(op),
            OpKind::Append => self.append(op),
            OpKind::Fsync | OpKind::Fdatasync => self.sync(op),
            OpKind::Readdir => self.readdir(op),
            OpKind::Rename => self.rename(op),
        }
    }

    #[inline]
    fn random_io(&mut self, op: &Op) -> OpResult {
        let mut slot = match self.ensure_slot(op) {
            Ok(s) => s,
            Err(r) => return r,
        };
        let size = self.known_size(&mut slot)?;
        let n = op.iosize;
        let blocks = if size >= n { (size - n) / n + 1 } else { 1 };
        let off = below(&mut self.rng, blocks) * n;
        let buf = &mut self.buf.as_mut_slice()[..n as usize];
        if op.kind == OpKind::Randread {
            match sys::pread(slot.fd, buf, off) {
                Ok(got) => {
                    self.slots[op.fd] = Some(slot);
                    Ok(Outcome::Done {
                        read: got as u64,
                        written: 0,
                    })
                }
                Err(e) => Err(self.io_error("read", &slot, e)),
            }
        } else {
            match sys::pwrite_all(slot.fd, buf, off) {
                Ok(w) => {
                    slot.size = Some(size.max(off + w));
                    self.slots[op.fd] = Some(slot);
                    Ok(Outcome::Done {
                        read: 0,
                        written: w,
                    })
                }
                Err(e) => Err(self.io_error("write", &slot, e)),
            }
        }
    }

    fn read_whole(&mut self, op: &Op) -> OpResult {
        let mut slot = match self.ensure_slot(op) {
            Ok(s) => s,
            Err(r) => return r,
        };
        let n = op.iosize as usize;
        let mut off = 0u64;
        loop {
            let got = match sys::pread(slot.fd, &mut self.buf.as_mut_slice()[..n], off) {
                Ok(g) => g,
                Err(e) => return Err(self.io_error("read", &slot, e)),
            };
            off += got as u64;
            if got < n {
                break;
            }
        }
        slot.size = Some(off);
        self.slots[op.fd] = Some(slot);
        Ok(Outcome::Done {
            read: off,
            written: 0,
        })
    }

    fn write_whole(&mut self, op: &Op) -> OpResult {
        let mut slot = match self.ensure_slot(op) {
            Ok(s) => s,
            Err(r) => return r,
        };
        let target = self.shared.filesets[slot.fileset].sizes[slot.entry as usize];
        let n = op.iosize;
        let mut off = 0u64;
        while off < target {
            let mut len = (target - off).min(n);
            if op.direct {
                len = round_up(len, DIRECT_ALIGN);
            }
            let buf = &self.buf.as_slice()[..len as usize];
            if let Err(e) = sys::pwrite_all(slot.fd, buf, off) {
                return Err(self.io_error("write", &slot, e));
            }
            off += len;
        }
        slot.size = slot.size.map(|s| s.max(off));
        self.slots[op.fd] = Some(slot);
        Ok(Outcome::Done {
            read: 0,
            written: off,
        })
    }

    fn append(&mut self, op: &Op) -> OpResult {
        let mut slot = match self.ensure_slot(op) {
            Ok(s) => s,
            Err(r) => return r,
        };
        let mut len = match &op.append {
            Some(s) => s.sample(&mut self.rng),
            None => op.iosize,
        };
        let mut off = match sys::lseek_end(slot.fd) {
            Ok(o) => o,
            Err(e) => return Err(self.io_error("lseek", &slot, e)),
        };
        if op.direct {
            off = round_up(off, DIRECT_ALIGN);
            len = round_up(len, DIRECT_ALIGN);
        }
        let end = off + len;
        let chunk = self.buf.len() as u64;
        while off < end {
            let n = (end - off).min(chunk) as usize;
            if let Err(e) = sys::pwrite_all(slot.fd, &self.buf.as_slice()[..n], off) {
                return Err(self.io_error("append to", &slot, e));
            }
            off += n as u64;
        }
        slot.size = Some(end);
        self.slots[op.fd] = Some(slot);
        Ok(Outcome::Done {
            read: 0,
            written: len,
        })
    }

    fn sync(&mut self, op: &Op) -> OpResult {
        let slot = match self.ensure_slot(op) {
            Ok(s) => s,
            Err(r) => return r,
        };
        let r = if op.kind == OpKind::Fsync {
            sys::fsync(slot.fd)
        } else {
            sys::fdatasync(slot.fd)
        };
        match r {
            Ok(()) => Ok(Outcome::Done {
                read: 0,
                written: 0,
            }),
            Err(e) => Err(self.io_error(op.kind.as_str(), &slot, e)),
        }
    }

    fn delete(&mut self, op: &Op) -> OpResult {
        let Some(fi) = op.fileset else {
            return Err("delete needs a fileset".into());
        };
        let filesets = self.shared.filesets;
        let fs = &filesets[fi];
        let entry = match self.pick(fs, true, true) {
            Pick::Got(e) => e,
            Pick::None => return Ok(Outcome::NoResource),
            Pick::Stopped => return Ok(Outcome::Stopped),
        };
        fs.layout.file_path(u64::from(entry), &mut self.path);
        let r = sys::unlinkat(fs.root_fd(), &self.path);
        fs.release(entry, false);
        match r {
            Ok(()) => Ok(Outcome::Done {
                read: 0,
                written: 0,
            }),
            Err(e) => Err(format!("unlink {}: {e}", fs.path_of(&self.path))),
        }
    }

    fn stat(&mut self, op: &Op) -> OpResult {
        let done = Outcome::Done {
            read: 0,
            written: 0,
        };
        let Some(fi) = op.fileset else {
            let slot = match self.ensure_slot(op) {
                Ok(s) => s,
                Err(r) => return r,
            };
            return match sys::fstat_size(slot.fd) {
                Ok(_) => Ok(done),
                Err(e) => Err(self.io_error("fstat", &slot, e)),
            };
        };
        let filesets = self.shared.filesets;
        let fs = &filesets[fi];
        let entry = match self.pick(fs, true, true) {
            Pick::Got(e) => e,
            Pick::None => return Ok(Outcome::NoResource),
            Pick::Stopped => return Ok(Outcome::Stopped),
        };
        fs.layout.file_path(u64::from(entry), &mut self.path);
        let r = sys::fstatat_size(fs.root_fd(), &self.path);
        fs.release(entry, r.is_ok());
        match r {
            Ok(_) => Ok(done),
            Err(e) => Err(format!("stat {}: {e}", fs.path_of(&self.path))),
        }
    }

    fn readdir(&mut self, op: &Op) -> OpResult {
        let Some(fi) = op.fileset else {
            return Err("readdir needs a fileset".into());
        };
        let filesets = self.shared.filesets;
        let fs = &filesets[fi];
        let leaf = below(&mut self.rng, fs.layout.leaves);
        fs.layout.leaf_path(leaf, &mut self.path);
        match sys::count_dir_entries(fs.root_fd(), &self.path, self.buf.as_mut_slice()) {
            Ok(_) => Ok(Outcome::Done {
                read: 0,
                written: 0,
            }),
            Err(e) => Err(format!("readdir {}: {e}", fs.path_of(&self.path))),
        }
    }

    fn rename(&mut self, op: &Op) -> OpResult {
        let Some(fi) = op.fileset else {
            return Err("rename needs a fileset".into());
        };
        let filesets = self.shared.filesets;
        let fs = &filesets[fi];
        let from = match self.pick(fs, true, true) {
            Pick::Got(e) => e,
            Pick::None => return Ok(Outcome::NoResource),
            Pick::Stopped => return Ok(Outcome::Stopped),
        };
        // never wait while holding an entry
        let to = match self.pick(fs, false, false) {
            Pick::Got(e) => e,
            other => {
                fs.release(from, true);
                return Ok(if other == Pick::Stopped {
                    Outcome::Stopped
                } else {
                    Outcome::NoResource
                });
            }
        };
        fs.layout.file_path(u64::from(from), &mut self.path);
        fs.layout.file_path(u64::from(to), &mut self.path2);
        let r = sys::renameat(fs.root_fd(), &self.path, &self.path2);
        let ok = r.is_ok();
        fs.release(from, !ok);
        fs.release(to, ok);
        match r {
            Ok(()) => Ok(Outcome::Done {
                read: 0,
                written: 0,
            }),
            Err(e) => Err(format!(
                "rename {} to {}: {e}",
                fs.path_of(&self.path),
                fs.path_of(&self.path2)
            )),
        }
    }
}
