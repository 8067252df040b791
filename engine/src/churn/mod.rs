//! `fsbench-engine churn`: age a filesystem by creating and deleting files (after
//! Geriatrix, Kadekodi et al., ATC'18) until it is at a target fullness having written a
//! given volume, continuing from the files an earlier call left in the directory.
//!
//! One call: while the cumulative volume written is below `write_bytes`, delete a file
//! (the choice seeded and biased toward old files) when the filesystem is above the
//! target fullness, else create one (size and depth from the profile). Once the volume is
//! reached, settle: delete while above the band around the target, create while below
//! it, the file cut so as not to overshoot the target; stop when inside the band.
//!
//! Fullness is what statvfs says ((f_blocks - f_bfree) / f_blocks), anchored by a
//! syncfs + statvfs at the start, every 1/32 of the filesystem's size churned, on
//! ENOSPC and before stopping, and followed in between from the files' own `st_blocks`
//! (statvfs lags behind deletions on some filesystems, btrfs's until its commit). With
//! `capacity_bytes`, fullness is the churn's own files (sizes rounded up to blocks)
//! over that capacity instead: deterministic on any filesystem, for tests and shared
//! filesystems.

pub mod spec;
pub mod state;

use std::fs;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::dist::derive_seed;
use crate::error::{Error, Result};
use crate::fileset::fill_random;
use crate::stats::{ENGINE, EngineInfo};
use crate::sys::{self, CPath, FsStat};
pub use spec::{ChurnSpec, parse};
use state::{Draw, LiveFile, LiveFiles, Model, STATE_FILE, State, pick_deletion};

const SEED_DOMAIN_CONTENT: u64 = 0xC4C0_47E7;
/// ENOSPC this many times in a row (no file created in between) is a failure.
const MAX_ENOSPC_IN_A_ROW: u32 = 64;
/// Re-measurements while settling before giving up ("unsettled").
const MAX_SETTLE_CHECKS: u32 = 64;
/// Entries a directory may hold without being the churn's.
const IGNORED_ENTRIES: [&str; 1] = ["lost+found"];

/// What one call did, and where the churn stands (cumulative unless `_call`).
#[derive(Debug, Clone, Serialize)]
pub struct ChurnResult {
    pub schema: u32,
    pub engine: EngineInfo,
    /// The effective spec: the profile expanded, every default filled in.
    pub spec: ChurnSpec,
    pub seed: u64,
    /// Calls on this directory so far, this one included.
    pub calls: u64,
    pub written_bytes: u64,
    pub written_bytes_call: u64,
    pub created: u64,
    pub created_call: u64,
    pub deleted: u64,
    pub deleted_call: u64,
    pub enospc_events: u64,
    pub enospc_events_call: u64,
    /// Live files and the sum of their sizes.
    pub files: u64,
    pub live_bytes: u64,
    /// Live files at each depth below `dir` (index = depth).
    pub files_by_depth: Vec<u64>,
    /// After the call: statvfs's, or with `capacity_bytes` the churn's own.
    pub fullness: f64,
    pub target_fullness: f64,
    pub band: f64,
    /// `written_bytes` >= the spec's and `fullness` within target +- band.
    pub reached: bool,
    /// "reached", "max_seconds", or "unsettled" (64 fresh measurements while settling
    /// found the fullness out of the band, though the files' own count said in).
    pub stopped_by: &'static str,
    /// "statfs" or "capacity_bytes".
    pub measured_by: &'static str,
    /// What fullness counts: the filesystem's size and used bytes, or `capacity_bytes` and
    /// the churn's own allocation.
    pub capacity_bytes: u64,
    pub used_bytes: u64,
    /// The largest file this call could create (the profile's max_size, at most 1/16 of
    /// the capacity).
    pub max_file_size: u64,
    pub seconds: f64,
    /// Of which in syncfs (statfs mode only).
    pub sync_seconds: f64,
    /// statvfs of `dir` at the end.
    pub fs: FsStat,
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e6
}

fn is_no_space(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

fn cpath(rel: &str) -> CPath {
    let mut p = CPath::with_capacity(rel.len() + 1);
    p.push(rel.as_bytes());
    p.terminate();
    p
}

enum Created {
    Yes { alloc: u64 },
    NoSpace,
}

/// One call's working set.
struct Churn {
    dir: PathBuf,
    root: OwnedFd,
    st: State,
    live: LiveFiles,
    model: Model,
    content: Vec<u8>,
    block: u64,
    capacity_mode: bool,
    /// Bytes fullness counts as used now (estimated between measurements in statfs mode).
    used: u64,
    /// Bytes allocated or freed since the last measurement.
    churned: u64,
    fresh: bool,
    capacity: u64,
    /// Target and half-width of the band, in bytes (the band at least 2 blocks).
    target: u64,
    band: u64,
    resync_every: u64,
    sync_time: Duration,
}

impl Churn {
    fn rfd(&self) -> RawFd {
        self.root.as_raw_fd()
    }

    fn path_of(&self, rel: &str) -> String {
        format!("{}/{rel}", self.dir.display())
    }

    fn round_up(&self, size: u64) -> u64 {
        size.div_ceil(self.block) * self.block
    }

    fn statvfs(&self) -> Result<FsStat> {
        sys::fstatvfs(self.rfd())
            .map_err(|e| Error::runtime(format!("statvfs {}: {e}", self.dir.display())))
    }

    /// statfs mode: syncfs and measure (capacity mode: nothing to measure).
    fn measure(&mut self) -> Result<()> {
        if !self.capacity_mode {
            let t = Instant::now();
            sys::syncfs(self.rfd())
                .map_err(|e| Error::runtime(format!("syncfs {}: {e}", self.dir.display())))?;
            self.sync_time += t.elapsed();
            self.used = self.statvfs()?.used_bytes;
        }
        self.churned = 0;
        self.fresh = true;
        Ok(())
    }

    fn fullness(&self) -> f64 {
        self.used as f64 / self.capacity as f64
    }

    /// A file of `size` bytes, `alloc` allocated, came or went.
    fn moved(&mut self, size: u64, alloc: u64) -> Result<()> {
        self.fresh = self.capacity_mode;
        // by the sizes too: a filesystem whose st_blocks says 0 is still measured
        self.churned += alloc.max(self.round_up(size));
        if self.churned >= self.resync_every {
            self.measure()?;
        }
        Ok(())
    }

    /// Create file `d` (directories first if missing), write it, fsync it if asked.
    fn create(&self, d: &Draw, fsync: bool) -> Result<Created> {
        let rel = LiveFile(d.id, d.dir.clone(), d.size).rel_path();
        let p = cpath(&rel);
        let err = |what: &str, e: std::io::Error| {
            Error::runtime(format!("{what} {}: {e}", self.path_of(&rel)))
        };
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
        let fd = match sys::openat(self.rfd(), &p, flags, 0o644) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) && !d.dir.is_empty() => {
                let mut prefix = String::new();
                for part in d.dir.split('/') {
                    if !prefix.is_empty() {
                        prefix.push('/');
                    }
                    prefix.push_str(part);
                    match sys::mkdirat(self.rfd(), &cpath(&prefix)) {
                        Err(e) if is_no_space(&e) => return Ok(Created::NoSpace),
                        Err(e) => {
                            return Err(Error::runtime(format!(
                                "mkdir {}: {e}",
                                self.path_of(&prefix)
                            )));
                        }
                        Ok(()) => {}
                    }
                }
                sys::openat(self.rfd(), &p, flags, 0o644)
            }
            r => r,
        };
        let fd = match fd {
            Ok(fd) => fd,
            Err(e) if is_no_space(&e) => return Ok(Created::NoSpace),
            Err(e) => return Err(err("create", e)),
        };
        let mut r = Ok(());
        let mut off = 0u64;
        while off < d.size {
            let n = (d.size - off).min(self.content.len() as u64) as usize;
            if let Err(e) = sys::pwrite_all(fd, &self.content[..n], off) {
                r = Err(("write", e));
                break;
            }
            off += n as u64;
        }
        if r.is_ok() && fsync {
            r = sys::fsync(fd).map_err(|e| ("fsync", e));
        }
        let alloc = if r.is_ok() && !self.capacity_mode {
            sys::fstat_alloc(fd).map_err(|e| ("stat", e))
        } else {
            Ok(self.round_up(d.size))
        };
        let closed = sys::close(fd).map_err(|e| ("close", e));
        let outcome = r.and(closed).and(alloc);
        match outcome {
            Ok(alloc) => Ok(Created::Yes { alloc }),
            Err((what, e)) => {
                let removed = sys::unlinkat(self.rfd(), &p);
                if is_no_space(&e) {
                    removed.map_err(|u| err("remove the partial file", u))?;
                    Ok(Created::NoSpace)
                } else {
                    Err(err(what, e))
                }
            }
        }
    }

    /// Delete the live file the deletion rule picks.
    fn delete_one(&mut self) -> Result<()> {
        let n = self.live.len();
        let k = pick_deletion(self.st.seed, self.st.deletions, n, self.model.age_bias);
        let Some(f) = self.live.get(k) else {
            return Err(Error::runtime("churn: nothing left to delete"));
        };
        let rel = f.rel_path();
        let size = f.size();
        let p = cpath(&rel);
        let alloc = match sys::fstatat_alloc(self.rfd(), &p) {
            Ok((_, blocks)) if !self.capacity_mode => blocks,
            Ok(_) => self.round_up(size),
            Err(e) => {
                let hint = if e.raw_os_error() == Some(libc::ENOENT) {
                    format!(" (the directory no longer matches its {STATE_FILE})")
                } else {
                    String::new()
                };
                return Err(Error::runtime(format!(
                    "stat {}: {e}{hint}",
                    self.path_of(&rel)
                )));
            }
        };
        sys::unlinkat(self.rfd(), &p)
            .map_err(|e| Error::runtime(format!("delete {}: {e}", self.path_of(&rel))))?;
        self.live.remove(k);
        self.st.deletions += 1;
        self.st.deleted += 1;
        self.used = self.used.saturating_sub(alloc);
        self.moved(size, alloc)
    }
}

/// Refuse a directory with files but no state: the churn deletes what it finds listed,
/// and must never be pointed at someone's data.
fn check_unowned_dir(dir: &Path) -> Result<()> {
    let entries = fs::read_dir(dir)
        .map_err(|e| Error::runtime(format!("read directory {}: {e}", dir.display())))?;
    for e in entries {
        let e = e.map_err(|e| Error::runtime(format!("read directory {}: {e}", dir.display())))?;
        let name = e.file_name();
        if !IGNORED_ENTRIES.iter().any(|i| name == *i) {
            return Err(Error::runtime(format!(
                "{} is not empty and has no {STATE_FILE} (it holds {:?}): churn works only \
                 in a directory it made; choose an empty or new dir",
                dir.display(),
                name
            )));
        }
    }
    Ok(())
}

/// A state from an earlier call must be for the same churn.
fn check_same_churn(spec: &ChurnSpec, st: &State, path: &Path) -> Result<()> {
    let differs = |what: &str, was: String, now: String| {
        Err(Error::input(format!(
            "spec: {what} {now} differs from the {what} {was} the churn in {} began with \
             (in {}); use the same or a new dir",
            spec.dir,
            path.display()
        )))
    };
    if st.seed != spec.seed {
        return differs("seed", st.seed.to_string(), spec.seed.to_string());
    }
    if st.profile != spec.profile {
        let j = |p| serde_json::to_string(p).unwrap_or_default();
        return differs("profile", j(&st.profile), j(&spec.profile));
    }
    if st.capacity_bytes != spec.capacity_bytes {
        let s = |c: Option<u64>| c.map_or("none".to_string(), |c| c.to_string());
        return differs(
            "capacity_bytes",
            s(st.capacity_bytes),
            s(spec.capacity_bytes),
        );
    }
    if st.in_progress {
        return Err(Error::runtime(format!(
            "{}: the previous churn call did not finish (killed?), so the files no longer \
             match the state; remove {} and age again",
            path.display(),
            spec.dir
        )));
    }
    Ok(())
}

/// The loop of one call, from the first measurement to the last; returns why it stopped.
fn churn_loop(c: &mut Churn, spec: &ChurnSpec, deadline: Option<Instant>) -> Result<&'static str> {
    let dir = c.dir.clone();
    let (target, band) = (c.target, c.band);
    let mut enospc_in_a_row = 0u32;
    let mut settle_checks = 0u32;
    c.measure()?;
    let why = loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break "max_seconds";
        }
        let writing = c.st.written_bytes < spec.write_bytes;
        if !writing && c.used.abs_diff(target) <= band {
            if c.fresh {
                break "reached";
            }
            settle_checks += 1;
            if settle_checks > MAX_SETTLE_CHECKS {
                break "unsettled";
            }
            c.measure()?;
            continue;
        }
        let over = if writing {
            c.used > target
        } else {
            c.used > target + band
        };
        if over {
            if c.live.is_empty() {
                return Err(Error::runtime(format!(
                    "{}: the filesystem is at fullness {:.4}, above the target {} +- {}, \
                     with no churn file left to delete",
                    dir.display(),
                    c.fullness(),
                    spec.fullness,
                    spec.band
                )));
            }
            c.delete_one()?;
            continue;
        }
        let mut d = c.model.draw(c.st.next_id, &c.live);
        if !writing && c.used + c.round_up(d.size) > target + band {
            // settling from below: the last file brings the fullness to the target
            d.size = (target - c.used) / c.block * c.block;
        }
        c.st.next_id += 1;
        let fsync = spec.fsync_every > 0 && (c.st.created + 1).is_multiple_of(spec.fsync_every);
        match c.create(&d, fsync)? {
            Created::Yes { alloc } => {
                enospc_in_a_row = 0;
                c.st.created += 1;
                c.st.written_bytes += d.size;
                c.used += alloc;
                c.moved(d.size, alloc)?;
                c.live.push(LiveFile(d.id, d.dir, d.size));
            }
            Created::NoSpace => {
                c.st.enospc_events += 1;
                enospc_in_a_row += 1;
                c.measure()?;
                let fs = c.statvfs()?;
                let no_space = |what: &str| {
                    Error::runtime(format!(
                        "{}: No space left on device {what} (fullness {:.4}, target {} +- {}; \
                         the filesystem: {} of {} bytes free, {} inodes free)",
                        c.path_of(&LiveFile(d.id, d.dir.clone(), 0).rel_path()),
                        c.fullness(),
                        spec.fullness,
                        spec.band,
                        fs.free_bytes,
                        fs.total_bytes,
                        fs.inodes_free
                    ))
                };
                if c.used + band < target {
                    return Err(no_space(
                        "below the target: the filesystem cannot be filled to it",
                    ));
                }
                if enospc_in_a_row > MAX_ENOSPC_IN_A_ROW {
                    return Err(no_space(&format!("{enospc_in_a_row} times in a row")));
                }
                if c.live.is_empty() {
                    return Err(no_space("with no churn file left to delete"));
                }
                c.delete_one()?;
            }
        }
    };
    if !c.fresh {
        c.measure()?;
    }
    Ok(why)
}

/// Run one churn call.
pub fn run(spec: &ChurnSpec) -> Result<ChurnResult> {
    let t0 = Instant::now();
    let deadline = spec.max_seconds.map(|s| t0 + Duration::from_secs_f64(s));
    let dir = PathBuf::from(&spec.dir);
    let state_path = dir.join(STATE_FILE);
    let st = match State::load(&state_path)? {
        Some(st) => {
            check_same_churn(spec, &st, &state_path)?;
            st
        }
        None => {
            fs::create_dir_all(&dir)
                .map_err(|e| Error::runtime(format!("create directory {}: {e}", dir.display())))?;
            check_unowned_dir(&dir)?;
            State::new(spec.seed, spec.profile.clone(), spec.capacity_bytes)
        }
    };
    let root = OwnedFd::from(
        fs::File::open(&dir)
            .map_err(|e| Error::runtime(format!("open directory {}: {e}", dir.display())))?,
    );
    let fs0 = sys::fstatvfs(root.as_raw_fd())
        .map_err(|e| Error::runtime(format!("statvfs {}: {e}", dir.display())))?;
    let capacity = spec.capacity_bytes.unwrap_or(fs0.total_bytes);
    if capacity == 0 {
        return Err(Error::runtime(format!(
            "{}: statvfs reports a filesystem of 0 blocks; give capacity_bytes",
            dir.display()
        )));
    }
    let model = Model::new(spec.seed, &spec.profile, capacity)?;
    let mut content = vec![0u8; 1 << 20];
    fill_random(&mut content, derive_seed(spec.seed, SEED_DOMAIN_CONTENT, 0));

    let mut st = st;
    st.calls += 1;
    st.in_progress = true;
    st.save(&state_path)?;
    let live = LiveFiles::new(std::mem::take(&mut st.files))?;
    let before = (st.written_bytes, st.created, st.deleted, st.enospc_events);

    let mut c = Churn {
        dir: dir.clone(),
        root,
        st,
        live,
        model,
        content,
        block: fs0.block_size.max(1),
        capacity_mode: spec.capacity_bytes.is_some(),
        used: 0,
        churned: 0,
        fresh: false,
        capacity,
        target: (spec.fullness * capacity as f64) as u64,
        band: ((spec.band * capacity as f64) as u64).max(2 * fs0.block_size.max(1)),
        resync_every: (capacity / 32).max(8 << 20),
        sync_time: Duration::ZERO,
    };
    if c.capacity_mode {
        c.used = c.live.iter().map(|f| c.round_up(f.size())).sum();
    }

    let stopped_by = match churn_loop(&mut c, spec, deadline) {
        Ok(why) => why,
        Err(e) => {
            // keep what was done (the files and the state agree), so that a later call
            // can go on once the cause is fixed
            c.st.files = c.live.to_vec();
            c.st.in_progress = false;
            let _ = c.st.save(&state_path);
            return Err(e);
        }
    };
    let fs = c.statvfs()?;
    let fullness = c.fullness();
    let reached = c.st.written_bytes >= spec.write_bytes && c.used.abs_diff(c.target) <= c.band;

    let mut st = c.st;
    st.files = c.live.to_vec();
    st.in_progress = false;
    st.save(&state_path)?;
    Ok(ChurnResult {
        schema: crate::spec::SCHEMA,
        engine: ENGINE,
        spec: spec.clone(),
        seed: spec.seed,
        calls: st.calls,
        written_bytes: st.written_bytes,
        written_bytes_call: st.written_bytes - before.0,
        created: st.created,
        created_call: st.created - before.1,
        deleted: st.deleted,
        deleted_call: st.deleted - before.2,
        enospc_events: st.enospc_events,
        enospc_events_call: st.enospc_events - before.3,
        files: c.live.len() as u64,
        live_bytes: c.live.bytes(),
        files_by_depth: c.live.by_depth().to_vec(),
        fullness,
        target_fullness: spec.fullness,
        band: spec.band,
        reached,
        stopped_by,
        measured_by: if c.capacity_mode {
            "capacity_bytes"
        } else {
            "statfs"
        },
        capacity_bytes: capacity,
        used_bytes: c.used,
        max_file_size: c.model.max_size,
        seconds: secs(t0.elapsed()),
        sync_seconds: secs(c.sync_time),
        fs,
    })
}
