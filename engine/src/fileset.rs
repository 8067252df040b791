//! Filesets: where the files are (a directory tree of mean width `dirwidth`), how big
//! each one is (drawn from the seed), which exist, and the shared pool that threads pick
//! files from.
//!
//! Like filebench, every file slot (entry) exists or not, and is idle or busy. A flowop
//! that creates picks an idle non-existing entry, one that opens, stats, deletes or
//! renames picks an idle existing one; the entry is busy only for the duration of that
//! metadata call, so two threads never create or delete the same file at once, while
//! several may hold the same file open (the webserver log). When every candidate is
//! busy the thread waits (yields) for one; when there is no candidate at all the flowop
//! has no resource and the thread starts its chain again.
//!
//! Which entry: by default filebench's rotation (`fileset_pick` without an index): one
//! rotor for existing entries, shared by every open, stat, delete and rename of the
//! fileset, and one for free entries, used by create; a pick takes the first idle entry
//! at or after its rotor and moves the rotor past it. The threads so sweep the fileset
//! in index order, directory after directory, which is what filebench's personalities
//! measure (and much kinder to the filesystem's metadata caches and journal than
//! uniform picks: xfs relogs the same directory and inode-cluster buffers). `"pick":
//! "random"` draws uniformly instead.

use std::fs;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;

use crate::dist::{FastRng, Sampler, below, rng_for};
use crate::error::{Error, Result};
use crate::spec::{FilesetSpec, PickOrder};
use crate::sys::{self, CPath};

/// A file in the fileset root that says "made by fsbench-engine": only such a directory
/// is ever removed.
pub const MARKER: &str = ".fsbench-engine-fileset";

const SEED_DOMAIN_FILESET: u64 = 0xF11E_5E70;
const SEED_DOMAIN_TREE: u64 = 0xD1_7EE5;

/// The directory tree: consecutive files share a leaf directory (leaf `l` holds files
/// `starts[l]` up to the next leaf's first); leaves hang under `levels` levels of
/// directories with `fanout` entries each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub count: u64,
    pub leaves: u64,
    pub levels: u32,
    pub fanout: u64,
    /// The first file of each leaf directory, ascending from 0.
    starts: Vec<u64>,
}

/// The shape of filebench's directory widths (`dirgamma`, 1.5 by default).
const DIR_GAMMA_SHAPE: f64 = 1.5;

fn pow_sat(b: u64, e: u32) -> u64 {
    b.saturating_pow(e)
}

impl Layout {
    /// Every leaf directory `width` files wide (the last one what is left).
    pub fn new(count: u64, width: u64) -> Self {
        let width = width.max(1);
        let starts = (0..count.div_ceil(width).max(1))
            .map(|l| l * width)
            .collect();
        Self::with_leaves(count, width, starts)
    }

    /// filebench's widths: each leaf directory holds a gamma(1.5) number of files of mean
    /// `width` (at least one, as `fileset_populate_subdir` rounds its draw up), drawn from
    /// the fileset's seed until the fileset is full. Some directories are several times
    /// as wide as the mean and many are narrow; the threads sweeping the fileset in order
    /// meet in the wide ones and queue on their lock, as in filebench, and that changes
    /// the filesystem's work (btrfs fileserver at 64 threads: about 28,000 ops/s with
    /// every leaf 20 wide, 31,000 with every leaf 60 wide). A fileset no wider than
    /// `width` is one directory, as filebench's (varmail: 1,000 files, width 1,000,000).
    pub fn gamma(count: u64, width: u64, seed: u64, index: usize) -> Self {
        let width = width.max(1);
        if count <= width {
            return Self::new(count, width);
        }
        let mut rng = rng_for(seed, SEED_DOMAIN_TREE, index as u64);
        let g = rand_distr::Gamma::new(DIR_GAMMA_SHAPE, width as f64 / DIR_GAMMA_SHAPE)
            .expect("a positive shape and scale");
        let mut starts = Vec::with_capacity(count.div_ceil(width) as usize + 16);
        let mut next = 0u64;
        while next < count {
            starts.push(next);
            let drawn: f64 = rand_distr::Distribution::sample(&g, &mut rng);
            next += (drawn.ceil() as u64).clamp(1, count - next);
        }
        Self::with_leaves(count, width, starts)
    }

    fn with_leaves(count: u64, width: u64, starts: Vec<u64>) -> Self {
        let leaves = starts.len() as u64;
        if leaves == 1 {
            return Layout {
                count,
                leaves,
                levels: 0,
                fanout: 1,
                starts,
            };
        }
        let base = width.max(2);
        let mut levels = 1u32;
        while pow_sat(base, levels) < leaves {
            levels += 1;
        }
        // the smallest fanout that still holds every leaf: a balanced tree
        let mut fanout = ((leaves as f64).powf(1.0 / f64::from(levels)).floor() as u64).max(2);
        while pow_sat(fanout, levels) < leaves {
            fanout += 1;
        }
        while fanout > 2 && pow_sat(fanout - 1, levels) >= leaves {
            fanout -= 1;
        }
        Layout {
            count,
            leaves,
            levels,
            fanout,
            starts,
        }
    }

    /// The leaf directory of file `i`.
    pub fn leaf_of(&self, i: u64) -> u64 {
        (self.starts.partition_point(|&s| s <= i) - 1) as u64
    }

    /// How many files leaf directory `leaf` holds.
    #[cfg(test)]
    pub fn files_in(&self, leaf: u64) -> u64 {
        let l = leaf as usize;
        self.starts.get(l + 1).copied().unwrap_or(self.count) - self.starts[l]
    }

    /// Number of directories at `level` (1..=levels).
    pub fn dirs_at(&self, level: u32) -> u64 {
        self.leaves
            .div_ceil(pow_sat(self.fanout, self.levels - level))
    }

    /// Append directory `j` of `level` ("d3/d0/d7").
    pub fn push_dir(&self, level: u32, j: u64, out: &mut CPath) {
        for k in (0..level).rev() {
            let digit = (j / pow_sat(self.fanout, k)) % self.fanout;
            out.push(b"d");
            out.push_u64(digit);
            if k > 0 {
                out.push(b"/");
            }
        }
    }

    /// The path of leaf directory `leaf`, relative to the fileset root ("." for the root).
    pub fn leaf_path(&self, leaf: u64, out: &mut CPath) {
        out.clear();
        if self.levels == 0 {
            out.push(b".");
        } else {
            self.push_dir(self.levels, leaf, out);
        }
        out.terminate();
    }

    /// The path of file `i`, relative to the fileset root.
    pub fn file_path(&self, i: u64, out: &mut CPath) {
        out.clear();
        if self.levels > 0 {
            self.push_dir(self.levels, self.leaf_of(i), out);
            out.push(b"/");
        }
        out.push(b"f");
        out.push_u64(i);
        out.terminate();
    }
}

/// What the seed decides about a fileset: every entry's size, and which entries prepare
/// creates.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub sizes: Vec<u64>,
    pub prealloc: Vec<bool>,
}

pub fn plan(spec: &FilesetSpec, seed: u64, index: usize) -> Result<Plan> {
    let mut rng = rng_for(seed, SEED_DOMAIN_FILESET, index as u64);
    let sampler = Sampler::new(&spec.size)?;
    let n = spec.count as usize;
    let sizes: Vec<u64> = (0..n).map(|_| sampler.sample(&mut rng)).collect();
    let k = ((spec.count as f64) * spec.prealloc_pct / 100.0).round() as usize;
    let k = k.min(n);
    let mut prealloc = vec![false; n];
    if k == n {
        prealloc.fill(true);
    } else if k > 0 {
        // a partial Fisher-Yates shuffle picks k of n entries
        let mut idx: Vec<u32> = (0..n as u32).collect();
        for i in 0..k {
            let j = i + below(&mut rng, (n - i) as u64) as usize;
            idx.swap(i, j);
            prealloc[idx[i] as usize] = true;
        }
    }
    Ok(Plan { sizes, prealloc })
}

/// What prepare did to one fileset (reported, untimed by the measured phase).
#[derive(Debug, Clone, Serialize)]
pub struct PrepareStats {
    pub name: String,
    pub path: String,
    pub entries: u64,
    pub dirs: u64,
    /// Files present when the measured phase starts.
    pub files: u64,
    pub bytes: u64,
    /// True if the files of an earlier prepare were kept (`reuse`).
    pub reused: bool,
}

const FREE: u8 = 0;
const EXISTS: u8 = 1;
const BUSY_FREE: u8 = 2;
const BUSY_EXISTS: u8 = 3;

/// A set of entry indices as bits, with "the next member at or after i, wrapping".
#[derive(Debug, Clone)]
struct Bits {
    words: Vec<u64>,
    n: usize,
}

impl Bits {
    fn new(n: usize) -> Self {
        Bits {
            words: vec![0; n.div_ceil(64)],
            n,
        }
    }

    #[inline]
    fn set(&mut self, i: u32) {
        self.words[i as usize / 64] |= 1 << (i % 64);
    }

    #[inline]
    fn clear(&mut self, i: u32) {
        self.words[i as usize / 64] &= !(1 << (i % 64));
    }

    /// The first member at or after `from` (wrapping to 0), if any.
    fn next_from(&self, from: usize) -> Option<u32> {
        let nw = self.words.len();
        if nw == 0 {
            return None;
        }
        let from = if from >= self.n { 0 } else { from };
        let w0 = from / 64;
        let first = self.words[w0] & (!0u64 << (from % 64));
        if first != 0 {
            return Some((w0 * 64) as u32 + first.trailing_zeros());
        }
        for k in 1..=nw {
            let w = (w0 + k) % nw;
            let mut bits = self.words[w];
            if w == w0 {
                // back where we started: only the bits before `from`
                bits &= !(!0u64 << (from % 64));
            }
            if bits != 0 {
                return Some((w * 64) as u32 + bits.trailing_zeros());
            }
        }
        None
    }
}

/// Which entries exist and which are busy, with O(1) random picks and filebench's
/// rotation (the next idle entry after the last pick, found in a bitset).
#[derive(Debug)]
struct Pool {
    order: PickOrder,
    status: Vec<u8>,
    /// Position of each idle entry in `free` or `exist`.
    pos: Vec<u32>,
    free: Vec<u32>,
    exist: Vec<u32>,
    /// The same idle entries as bits, for the rotors.
    free_bits: Bits,
    exist_bits: Bits,
    /// Where the next rotor pick of an existing / a free entry starts looking.
    exist_rotor: usize,
    free_rotor: usize,
    busy_free: u64,
    busy_exist: u64,
}

impl Pool {
    fn new(exists: &[bool], order: PickOrder) -> Self {
        let mut p = Pool {
            order,
            status: vec![FREE; exists.len()],
            pos: vec![0; exists.len()],
            free: Vec::new(),
            exist: Vec::new(),
            free_bits: Bits::new(exists.len()),
            exist_bits: Bits::new(exists.len()),
            exist_rotor: 0,
            free_rotor: 0,
            busy_free: 0,
            busy_exist: 0,
        };
        for (i, &e) in exists.iter().enumerate() {
            p.insert(i as u32, e);
        }
        p
    }

    fn insert(&mut self, i: u32, exists: bool) {
        let (set, bits) = if exists {
            (&mut self.exist, &mut self.exist_bits)
        } else {
            (&mut self.free, &mut self.free_bits)
        };
        self.pos[i as usize] = set.len() as u32;
        set.push(i);
        bits.set(i);
        self.status[i as usize] = if exists { EXISTS } else { FREE };
    }

    fn take(&mut self, exists: bool, rng: &mut FastRng) -> Option<u32> {
        let (set, bits, rotor) = if exists {
            (&mut self.exist, &mut self.exist_bits, &mut self.exist_rotor)
        } else {
            (&mut self.free, &mut self.free_bits, &mut self.free_rotor)
        };
        if set.is_empty() {
            return None;
        }
        let (k, i) = match self.order {
            PickOrder::Random => {
                let k = below(rng, set.len() as u64) as usize;
                (k, set[k])
            }
            PickOrder::Rotor => {
                let i = bits.next_from(*rotor)?;
                *rotor = i as usize + 1;
                (self.pos[i as usize] as usize, i)
            }
        };
        set.swap_remove(k);
        if let Some(&moved) = set.get(k) {
            self.pos[moved as usize] = k as u32;
        }
        bits.clear(i);
        if exists {
            self.status[i as usize] = BUSY_EXISTS;
            self.busy_exist += 1;
        } else {
            self.status[i as usize] = BUSY_FREE;
            self.busy_free += 1;
        }
        Some(i)
    }

    fn release(&mut self, i: u32, exists: bool) {
        match self.status[i as usize] {
            BUSY_EXISTS => self.busy_exist -= 1,
            BUSY_FREE => self.busy_free -= 1,
            _ => return, // not busy: nothing to release
        }
        self.insert(i, exists);
    }
}

/// The outcome of a pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    Got(u32),
    /// No entry of that kind exists at all (filebench's "no resource").
    None,
    /// The run ended while waiting for a busy entry.
    Stopped,
}

/// A fileset ready for the measured phase.
#[derive(Debug)]
pub struct Fileset {
    pub name: String,
    pub root_path: PathBuf,
    pub root: OwnedFd,
    pub layout: Layout,
    pub sizes: Vec<u64>,
    /// Open files read-only (filebench's `readonly`).
    pub readonly: bool,
    pool: Mutex<Pool>,
}

impl Fileset {
    pub fn root_fd(&self) -> RawFd {
        self.root.as_raw_fd()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pool> {
        // A thread that panicked while holding the lock left the pool consistent (every
        // mutation is a few lines with no call that can panic), so go on.
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Pick an idle entry that exists (`exists`) or not, marking it busy. Waits while
    /// every such entry is busy; gives up when `stop` is set or `deadline` passes.
    pub fn pick(
        &self,
        exists: bool,
        rng: &mut FastRng,
        wait: bool,
        stop: &AtomicBool,
        deadline: Option<Instant>,
    ) -> Pick {
        loop {
            {
                let mut p = self.lock();
                if let Some(i) = p.take(exists, rng) {
                    return Pick::Got(i);
                }
                let busy = if exists { p.busy_exist } else { p.busy_free };
                if busy == 0 || !wait {
                    return Pick::None;
                }
            }
            if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                return Pick::Stopped;
            }
            std::thread::yield_now();
        }
    }

    /// Make a busy entry idle again, existing or not.
    pub fn release(&self, i: u32, exists: bool) {
        self.lock().release(i, exists);
    }

    /// Number of entries that exist now (busy ones counted by what they were).
    pub fn existing(&self) -> u64 {
        let p = self.lock();
        p.exist.len() as u64 + p.busy_exist
    }

    pub fn path_of(&self, rel: &CPath) -> String {
        let rel = rel.display();
        if rel == "." {
            self.root_path.display().to_string()
        } else {
            format!("{}/{}", self.root_path.display(), rel)
        }
    }
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::runtime(format!("{what} {}: {e}", path.display()))
}

fn open_dir(path: &Path) -> Result<OwnedFd> {
    let f = fs::File::open(path).map_err(|e| io_err("open directory", path, e))?;
    Ok(OwnedFd::from(f))
}

/// Content written into files: random bytes (so compressing filesystems can't cheat).
pub fn fill_random(buf: &mut [u8], seed: u64) {
    let mut rng = rng_for(seed, 0xDA7A, 0);
    for chunk in buf.chunks_mut(8) {
        let v = rand::Rng::next_u64(&mut rng).to_ne_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

/// Create (or reuse) one fileset under `dir`, with `threads` threads writing files.
pub fn prepare(
    dir: &Path,
    spec: &FilesetSpec,
    index: usize,
    seed: u64,
    content: &[u8],
    threads: usize,
) -> Result<(Fileset, PrepareStats)> {
    let plan = plan(spec, seed, index)?;
    let layout = Layout::gamma(spec.count, spec.dirwidth, seed, index);
    let root_path = dir.join(&spec.name);
    let marker = root_path.join(MARKER);

    let mut reused = false;
    match fs::symlink_metadata(&root_path) {
        Ok(md) if md.is_dir() && marker.exists() => {
            if spec.reuse {
                reused = true;
            } else {
                fs::remove_dir_all(&root_path)
                    .map_err(|e| io_err("remove the old fileset", &root_path, e))?;
            }
        }
        Ok(_) => {
            return Err(Error::runtime(format!(
                "{} exists and was not made by fsbench-engine (no {MARKER} in it); \
                 remove it or choose another dir",
                root_path.display()
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("stat", &root_path, e)),
    }
    if !reused {
        fs::create_dir(&root_path).map_err(|e| io_err("create directory", &root_path, e))?;
        fs::write(&marker, format!("{}\n", spec.name)).map_err(|e| io_err("write", &marker, e))?;
    }
    let root = open_dir(&root_path)?;
    let rfd = root.as_raw_fd();

    // directories, level by level (mkdirat accepts existing ones, for reuse)
    let mut dirs = 0u64;
    let mut p = CPath::with_capacity(64);
    for level in 1..=layout.levels {
        for j in 0..layout.dirs_at(level) {
            p.clear();
            layout.push_dir(level, j, &mut p);
            p.terminate();
            sys::mkdirat(rfd, &p).map_err(|e| {
                Error::runtime(format!(
                    "mkdir {}/{}: {e}",
                    root_path.display(),
                    p.display()
                ))
            })?;
            dirs += 1;
        }
    }

    let n = spec.count as usize;
    let (exists, bytes) = if reused {
        scan_existing(&root_path, rfd, &layout, n)?
    } else {
        create_files(&root_path, rfd, &layout, &plan, content, threads)?;
        let bytes = plan
            .sizes
            .iter()
            .zip(&plan.prealloc)
            .filter(|(_, p)| **p)
            .map(|(s, _)| *s)
            .sum();
        (plan.prealloc, bytes)
    };
    let files = exists.iter().filter(|e| **e).count() as u64;
    let stats = PrepareStats {
        name: spec.name.clone(),
        path: root_path.display().to_string(),
        entries: spec.count,
        dirs,
        files,
        bytes,
        reused,
    };
    let fileset = Fileset {
        name: spec.name.clone(),
        root_path,
        root,
        layout,
        sizes: plan.sizes,
        readonly: spec.readonly,
        pool: Mutex::new(Pool::new(&exists, spec.pick)),
    };
    Ok((fileset, stats))
}

fn scan_existing(root: &Path, rfd: RawFd, layout: &Layout, n: usize) -> Result<(Vec<bool>, u64)> {
    let mut exists = vec![false; n];
    let mut bytes = 0;
    let mut p = CPath::with_capacity(64);
    for (i, e) in exists.iter_mut().enumerate() {
        layout.file_path(i as u64, &mut p);
        match sys::fstatat_size(rfd, &p) {
            Ok(size) => {
                *e = true;
                bytes += size;
            }
            Err(err) if err.raw_os_error() == Some(libc::ENOENT) => {}
            Err(err) => {
                return Err(Error::runtime(format!(
                    "stat {}/{}: {err}",
                    root.display(),
                    p.display()
                )));
            }
        }
    }
    Ok((exists, bytes))
}

fn create_files(
    root: &Path,
    rfd: RawFd,
    layout: &Layout,
    plan: &Plan,
    content: &[u8],
    threads: usize,
) -> Result<()> {
    let threads = threads.max(1);
    let failed = AtomicBool::new(false);
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let failed = &failed;
                s.spawn(move || -> Result<()> {
                    let mut p = CPath::with_capacity(64);
                    let mut i = t;
                    while i < plan.sizes.len() {
                        if failed.load(Ordering::Relaxed) {
                            return Ok(());
                        }
                        if plan.prealloc[i] {
                            layout.file_path(i as u64, &mut p);
                            if let Err(e) = write_file(rfd, &p, plan.sizes[i], content) {
                                failed.store(true, Ordering::Relaxed);
                                return Err(Error::runtime(format!(
                                    "create {}/{}: {e}",
                                    root.display(),
                                    p.display()
                                )));
                            }
                        }
                        i += threads;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::runtime("a prepare thread panicked")))
            })
            .collect()
    });
    results.into_iter().collect()
}

fn write_file(rfd: RawFd, p: &CPath, size: u64, content: &[u8]) -> std::io::Result<()> {
    let fd = sys::openat(
        rfd,
        p,
        libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
        0o644,
    )?;
    let mut off = 0u64;
    let mut r = Ok(());
    while off < size {
        let n = (size - off).min(content.len() as u64) as usize;
        if let Err(e) = sys::pwrite_all(fd, &content[..n], off) {
            r = Err(e);
            break;
        }
        off += n as u64;
    }
    let c = sys::close(fd);
    r.and(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::SizeDist;
    use rand::SeedableRng;

    fn fs_spec(count: u64, width: u64, pct: f64) -> FilesetSpec {
        FilesetSpec {
            name: "f".into(),
            count,
            dirwidth: width,
            size: SizeDist::Gamma {
                mean: 16384.0,
                shape: 1.5,
            },
            prealloc_pct: pct,
            reuse: false,
            pick: PickOrder::Rotor,
            readonly: false,
        }
    }

    #[test]
    fn layouts() {
        let one = Layout::new(1000, 1_000_000); // varmail: one directory
        assert_eq!((one.leaves, one.levels), (1, 0));
        let mut p = CPath::default();
        one.file_path(17, &mut p);
        assert_eq!(p.display(), "f17");
        one.leaf_path(0, &mut p);
        assert_eq!(p.display(), ".");

        let fsrv = Layout::new(10_000, 20); // fileserver: 500 leaves of 20 files
        assert_eq!(fsrv.leaves, 500);
        assert_eq!(fsrv.levels, 3);
        assert_eq!(fsrv.fanout, 8); // 8^3 = 512 >= 500 > 7^3
        fsrv.file_path(9_999, &mut p);
        // leaf 499 = 7*64 + 6*8 + 3
        assert_eq!(p.display(), "d7/d6/d3/f9999");
        assert_eq!(fsrv.dirs_at(1), 8);
        assert_eq!(fsrv.dirs_at(2), 63);
        assert_eq!(fsrv.dirs_at(3), 500);

        let web = Layout::new(1000, 20);
        assert_eq!((web.leaves, web.levels, web.fanout), (50, 2, 8));
        let small = Layout::new(30, 20);
        assert_eq!((small.leaves, small.levels, small.fanout), (2, 1, 2));
        small.file_path(29, &mut p);
        assert_eq!(p.display(), "d1/f29");
    }

    #[test]
    fn every_file_has_a_distinct_path_in_a_created_dir() {
        // even leaves, and filebench's gamma widths
        for l in [Layout::new(2_000, 7), Layout::gamma(2_000, 7, 3, 0)] {
            let mut dirs = std::collections::HashSet::new();
            let mut p = CPath::default();
            for level in 1..=l.levels {
                for j in 0..l.dirs_at(level) {
                    p.clear();
                    l.push_dir(level, j, &mut p);
                    assert!(dirs.insert(p.display()), "dup dir {}", p.display());
                }
            }
            let mut files = std::collections::HashSet::new();
            for i in 0..l.count {
                l.file_path(i, &mut p);
                let s = p.display();
                let parent = s
                    .rsplit_once('/')
                    .map(|(d, _)| d.to_string())
                    .unwrap_or_default();
                assert!(dirs.contains(&parent), "{s} has no dir");
                assert!(files.insert(s));
            }
            for leaf in 0..l.leaves {
                l.leaf_path(leaf, &mut p);
                assert!(dirs.contains(&p.display()));
            }
        }
    }

    #[test]
    fn gamma_tree_has_filebench_widths() {
        // fileserver: 10,000 files, mean width 20
        let l = Layout::gamma(10_000, 20, 7, 0);
        assert_eq!(l, Layout::gamma(10_000, 20, 7, 0), "drawn from the seed");
        assert_ne!(l, Layout::gamma(10_000, 20, 8, 0));
        assert_ne!(l, Layout::gamma(10_000, 20, 7, 1));
        let widths: Vec<u64> = (0..l.leaves).map(|d| l.files_in(d)).collect();
        assert_eq!(widths.iter().sum::<u64>(), 10_000);
        assert!(widths.iter().all(|w| *w >= 1));
        let n = widths.len() as f64;
        let mean = 10_000.0 / n;
        let sd = (widths
            .iter()
            .map(|w| (*w as f64 - mean).powi(2))
            .sum::<f64>()
            / n)
            .sqrt();
        // ceil(gamma(1.5)) of mean 20: mean about 20.5, CV about 0.8 (1 / sqrt(1.5))
        assert!((18.5..22.5).contains(&mean), "mean width {mean}");
        assert!((0.65..0.95).contains(&(sd / mean)), "CV {}", sd / mean);
        assert!(*widths.iter().max().unwrap() >= 60, "no wide directory");
        // consecutive files share a directory, and every file is in exactly one
        let mut p = CPath::default();
        let mut seen = std::collections::HashSet::new();
        for i in 0..l.count {
            let leaf = l.leaf_of(i);
            assert!(i == 0 || leaf == l.leaf_of(i - 1) || leaf == l.leaf_of(i - 1) + 1);
            l.file_path(i, &mut p);
            assert!(seen.insert(p.display()));
        }
        // a fileset no wider than its width is one directory (varmail)
        let one = Layout::gamma(1000, 1_000_000, 7, 0);
        assert_eq!(one, Layout::new(1000, 1_000_000));
        assert_eq!((one.leaves, one.levels), (1, 0));
    }

    #[test]
    fn plan_is_deterministic() {
        let s = fs_spec(1000, 20, 80.0);
        let a = plan(&s, 5, 0).expect("plan");
        let b = plan(&s, 5, 0).expect("plan");
        assert_eq!(a, b);
        assert_eq!(a.prealloc.iter().filter(|p| **p).count(), 800);
        let c = plan(&s, 6, 0).expect("plan");
        assert_ne!(a.sizes, c.sizes);
        assert_ne!(a.prealloc, c.prealloc);
        let d = plan(&s, 5, 1).expect("plan");
        assert_ne!(a.sizes, d.sizes);
        let all = plan(&fs_spec(10, 20, 100.0), 1, 0).expect("plan");
        assert!(all.prealloc.iter().all(|p| *p));
        let none = plan(&fs_spec(10, 20, 0.0), 1, 0).expect("plan");
        assert!(none.prealloc.iter().all(|p| !*p));
    }

    #[test]
    fn bits_next_from_wraps() {
        let mut b = Bits::new(130);
        assert_eq!(b.next_from(0), None);
        for i in [3u32, 64, 129] {
            b.set(i);
        }
        assert_eq!(b.next_from(0), Some(3));
        assert_eq!(b.next_from(4), Some(64));
        assert_eq!(b.next_from(65), Some(129));
        assert_eq!(b.next_from(130), Some(3), "past the end starts again at 0");
        b.clear(3);
        assert_eq!(b.next_from(100), Some(129));
        b.clear(129);
        assert_eq!(b.next_from(65), Some(64), "wraps back to before the start");
        b.clear(64);
        assert_eq!(b.next_from(65), None);
    }

    #[test]
    fn rotor_sweeps_in_index_order_as_filebench() {
        let mut rng = FastRng::seed_from_u64(1);
        let mut p = Pool::new(&[true, true, false, true, false, true], PickOrder::Rotor);
        // existing entries in order, one rotor whoever picks
        assert_eq!(p.take(true, &mut rng), Some(0));
        assert_eq!(p.take(true, &mut rng), Some(1));
        p.release(0, true);
        p.release(1, false); // deleted
        assert_eq!(p.take(true, &mut rng), Some(3));
        // a busy entry is skipped, the rotor wraps
        assert_eq!(p.take(true, &mut rng), Some(5));
        assert_eq!(p.take(true, &mut rng), Some(0));
        assert_eq!(p.take(true, &mut rng), None, "3 and 5 are busy");
        // free entries have their own rotor: 1, 2, 4 in turn
        assert_eq!(p.take(false, &mut rng), Some(1));
        assert_eq!(p.take(false, &mut rng), Some(2));
        assert_eq!(p.take(false, &mut rng), Some(4));
        assert_eq!(p.take(false, &mut rng), None);
        // positions stay consistent for random picks after rotor picks
        for (k, &i) in p.exist.iter().enumerate() {
            assert_eq!(p.pos[i as usize] as usize, k);
        }
        for (k, &i) in p.free.iter().enumerate() {
            assert_eq!(p.pos[i as usize] as usize, k);
        }
    }

    #[test]
    fn pool_picks_and_releases() {
        let mut rng = FastRng::seed_from_u64(1);
        let mut p = Pool::new(&[true, false, true, false], PickOrder::Random);
        let a = p.take(true, &mut rng).expect("one exists");
        let b = p.take(true, &mut rng).expect("two exist");
        assert_ne!(a, b);
        assert!(p.take(true, &mut rng).is_none());
        assert_eq!(p.busy_exist, 2);
        p.release(a, false); // deleted
        assert_eq!(p.free.len(), 3);
        p.release(b, true);
        assert_eq!(p.exist, vec![b]);
        p.release(b, true); // not busy: ignored
        assert_eq!(p.exist, vec![b]);
        for _ in 0..3 {
            let f = p.take(false, &mut rng).expect("free");
            assert_eq!(p.status[f as usize], BUSY_FREE);
        }
        assert!(p.take(false, &mut rng).is_none());
        assert_eq!(p.busy_free, 3);
        // positions stay consistent after swap_remove
        for (k, &i) in p.exist.iter().enumerate() {
            assert_eq!(p.pos[i as usize] as usize, k);
        }
    }
}
