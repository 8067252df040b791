//! From strace's output to a trace: every call on the recorded tree, per thread, its
//! descriptors and mappings given per-trace ids, its paths made relative to the tree and
//! interned; then the starting tree (what the command touched, from the snapshot taken
//! before it ran). What the trace leaves out is counted in `u` records: calls outside the
//! tree (`outside:KIND`), calls no replay makes (`not-replayed:NAME`), a close of a
//! descriptor another process still held (`shared-close`), lines strace wrote that are no
//! call (`unparsed`).

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::rc::Rc;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::trace::format::{Call, EntryType, Record, TraceWriter, parent_of, target_inside};
use crate::trace::kind::{Kind, MAX_INTS};
use crate::trace::snapshot::{self, Entry};
use crate::trace::straceline::{
    Body, Parsed, field, iov_total, number_and_decoration, parse_call, parse_int, parse_line,
    parse_string, trim,
};

/// What the starting tree's files hold when their contents were not recorded.
pub const FILL: &str = "pseudo-random bytes from a fixed seed (incompressible), not the \
                        original contents";

const O_CLOEXEC: i64 = 0o2000000;
const O_CREAT_WRONLY_TRUNC: i64 = 0o1101;
const AT_EMPTY_PATH: i64 = 0x1000;
const AT_SYMLINK_NOFOLLOW: i64 = 0x100;
const AT_REMOVEDIR: i64 = 0x200;
const CLONE_VM: i64 = 0x100;
const CLONE_FS: i64 = 0x200;
const CLONE_FILES: i64 = 0x400;
const CLONE_THREAD: i64 = 0x10000;
const F_DUPFD: i64 = 0;
const F_SETFD: i64 = 2;
const F_DUPFD_CLOEXEC: i64 = 1030;
const DATA_CHUNK: usize = 64 << 10;

/// The system calls strace is asked for (`-e trace=`): those [`Importer::call`] turns into
/// a trace's calls or follows (threads, processes, the working directory).
pub const SYSCALLS: &[&str] = &[
    "open",
    "openat",
    "openat2",
    "creat",
    "close",
    "read",
    "readv",
    "pread64",
    "preadv",
    "preadv2",
    "write",
    "writev",
    "pwrite64",
    "pwritev",
    "pwritev2",
    "copy_file_range",
    "sendfile",
    "lseek",
    "fsync",
    "fdatasync",
    "syncfs",
    "sync_file_range",
    "sync",
    "ftruncate",
    "fallocate",
    "fstat",
    "getdents64",
    "getdents",
    "fgetxattr",
    "fsetxattr",
    "flistxattr",
    "fremovexattr",
    "fchmod",
    "fchown",
    "mmap",
    "munmap",
    "msync",
    "dup",
    "dup2",
    "dup3",
    "fcntl",
    "mkdir",
    "mkdirat",
    "rmdir",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "truncate",
    "stat",
    "lstat",
    "newfstatat",
    "statx",
    "access",
    "faccessat",
    "faccessat2",
    "readlink",
    "readlinkat",
    "getxattr",
    "lgetxattr",
    "setxattr",
    "lsetxattr",
    "listxattr",
    "llistxattr",
    "removexattr",
    "lremovexattr",
    "chmod",
    "fchmodat",
    "chown",
    "lchown",
    "fchownat",
    "utimensat",
    "utimes",
    "utime",
    "futimesat",
    "chdir",
    "fchdir",
    "clone",
    "clone3",
    "fork",
    "vfork",
    "execve",
    "execveat",
];
/// Traced too, only to be counted in the trace as not replayed (`not-replayed:NAME`): calls
/// that move a file's data or drop descriptors in ways the replay does not make.
pub const SEEN_NOT_REPLAYED: &[&str] = &[
    "splice",
    "close_range",
    "mremap",
    "io_submit",
    "io_uring_enter",
];

/// Traced too, for the time a thread waited for another of its process (`w` records): a
/// lock another thread held while the tracer stopped it at a call is not think time.
pub const WAITS: &[&str] = &["futex", "futex_waitv"];
/// futex operations that block until another thread wakes the caller (the command, its
/// flags masked): WAIT, LOCK_PI, WAIT_BITSET, WAIT_REQUEUE_PI, LOCK_PI2.
const FUTEX_WAITS: [i64; 5] = [0, 6, 9, 11, 13];
const FUTEX_CMD_MASK: i64 = 0x7f;

/// strace's options for a recording, before `-o FILE -- COMMAND`: the format
/// [`crate::trace::straceline`] reads, and the calls above (`?`: a name this
/// architecture lacks, such as `open` on arm64, is no error).
pub fn strace_args() -> Vec<String> {
    let calls: Vec<String> = SYSCALLS
        .iter()
        .chain(SEEN_NOT_REPLAYED)
        .chain(WAITS)
        .map(|n| format!("?{n}"))
        .collect();
    [
        "-f",
        // Stop the program only at the calls traced: without it, every other call (mmap,
        // brk, futex...) also stops it, a cost the recorded gaps keep.
        "--seccomp-bpf",
        "-y",
        "--timestamps=unix,ns",
        "--syscall-times=ns",
        "-X",
        "raw",
        "-s",
        "0",
        "-e",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(std::iter::once(format!("trace={}", calls.join(","))))
    .collect()
}

pub struct Options {
    pub strace: PathBuf,
    /// The recorded tree, absolute, as the kernel names it (symlinks resolved).
    pub root: PathBuf,
    pub snapshot: Option<PathBuf>,
    pub out: PathBuf,
    /// The caller's header fields (the command, the tracer...), completed here.
    pub header: serde_json::Map<String, serde_json::Value>,
    /// Tracer time added to each traced call, and the part of it in the gap before.
    pub tracer_overhead_ns: u64,
    pub gap_overhead_ns: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct TreeCounts {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub bytes: u64,
    pub data_bytes: u64,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub trace: String,
    pub lines: u64,
    pub calls: u64,
    pub paths: u64,
    pub threads: u64,
    pub calls_by_kind: BTreeMap<&'static str, u64>,
    /// Waits for other threads recorded (`w`), and their seconds in all.
    pub waits: u64,
    pub waited_s: f64,
    pub tree: TreeCounts,
    pub unrecorded: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Copy)]
struct FdEntry {
    id: u32,
    path: u32,
    cloexec: bool,
}

type Table = Rc<RefCell<HashMap<i64, FdEntry>>>;

struct Task {
    idx: u32,
    tgid: i64,
    table: Table,
    cwd: Rc<RefCell<Vec<u8>>>,
    skipped: u32,
    pending: Option<(i64, Vec<u8>)>,
    /// A close(2) in flight: its descriptor, out of the table since the call began.
    closing: Option<(i64, FdEntry)>,
}

/// Ids handed out smallest first, given back when their last holder lets go.
#[derive(Default)]
struct Ids {
    refs: Vec<u32>,
    free: BinaryHeap<Reverse<u32>>,
}

impl Ids {
    fn take(&mut self) -> u32 {
        let id = match self.free.pop() {
            Some(Reverse(id)) => id,
            None => {
                self.refs.push(0);
                (self.refs.len() - 1) as u32
            }
        };
        self.refs[id as usize] = 1;
        id
    }

    fn hold(&mut self, id: u32) {
        self.refs[id as usize] += 1;
    }

    /// Let go of one hold; true when it was the last.
    fn release(&mut self, id: u32) -> bool {
        let r = &mut self.refs[id as usize];
        *r = r.saturating_sub(1);
        if *r == 0 {
            self.free.push(Reverse(id));
            true
        } else {
            false
        }
    }
}

struct Importer {
    root: Vec<u8>,
    w: TraceWriter,
    tasks: HashMap<i64, Task>,
    next_task: u32,
    children: HashMap<i64, (i64, i64)>,
    paths: HashMap<Vec<u8>, u32>,
    path_list: Vec<Vec<u8>>,
    fds: Ids,
    maps: Ids,
    mapped: HashMap<(i64, u64), (u32, u64)>,
    read_dirs: HashSet<u32>,
    t0: Option<i64>,
    last_ns: i64,
    unrecorded: BTreeMap<String, u64>,
    by_kind: BTreeMap<&'static str, u64>,
    waits: u64,
    waited_ns: u64,
}

/// The errno a name means (`ENOENT` -> 2); an unknown name is EIO's neighbour 1000 + n.
fn errno_of(name: &[u8]) -> i64 {
    let known: &[(&[u8], i32)] = &[
        (b"EPERM", libc::EPERM),
        (b"ENOENT", libc::ENOENT),
        (b"EINTR", libc::EINTR),
        (b"EIO", libc::EIO),
        (b"ENXIO", libc::ENXIO),
        (b"E2BIG", libc::E2BIG),
        (b"EBADF", libc::EBADF),
        (b"EAGAIN", libc::EAGAIN),
        (b"ENOMEM", libc::ENOMEM),
        (b"EACCES", libc::EACCES),
        (b"EFAULT", libc::EFAULT),
        (b"EBUSY", libc::EBUSY),
        (b"EEXIST", libc::EEXIST),
        (b"EXDEV", libc::EXDEV),
        (b"ENODEV", libc::ENODEV),
        (b"ENOTDIR", libc::ENOTDIR),
        (b"EISDIR", libc::EISDIR),
        (b"EINVAL", libc::EINVAL),
        (b"ENFILE", libc::ENFILE),
        (b"EMFILE", libc::EMFILE),
        (b"ENOTTY", libc::ENOTTY),
        (b"ETXTBSY", libc::ETXTBSY),
        (b"EFBIG", libc::EFBIG),
        (b"ENOSPC", libc::ENOSPC),
        (b"ESPIPE", libc::ESPIPE),
        (b"EROFS", libc::EROFS),
        (b"EMLINK", libc::EMLINK),
        (b"ERANGE", libc::ERANGE),
        (b"ENAMETOOLONG", libc::ENAMETOOLONG),
        (b"ENOSYS", libc::ENOSYS),
        (b"ENOTEMPTY", libc::ENOTEMPTY),
        (b"ELOOP", libc::ELOOP),
        (b"ENODATA", libc::ENODATA),
        (b"EOVERFLOW", libc::EOVERFLOW),
        (b"EOPNOTSUPP", libc::EOPNOTSUPP),
        (b"ENOTSUP", libc::ENOTSUP),
        (b"EDQUOT", libc::EDQUOT),
        (b"ESTALE", libc::ESTALE),
        (b"EWOULDBLOCK", libc::EWOULDBLOCK),
    ];
    known
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(1000, |(_, e)| i64::from(*e))
}

/// `a/./b/../c` -> `a/c`, lexically, for an absolute path.
fn normalize(path: &[u8]) -> Vec<u8> {
    let mut parts: Vec<&[u8]> = Vec::new();
    for c in path.split(|b| *b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let mut out = Vec::with_capacity(path.len());
    for p in parts {
        out.push(b'/');
        out.extend_from_slice(p);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

fn arg<'a>(p: &Parsed<'a>, i: usize) -> &'a [u8] {
    p.args.get(i).copied().unwrap_or_default()
}

fn int(p: &Parsed<'_>, i: usize) -> i64 {
    parse_int(arg(p, i)).unwrap_or(0)
}

/// An offset given by pointer, as strace shows it: `NULL` (-1: the descriptor's own
/// offset, moved by the call), `[10]`, or `[10] => [4106]` (the value before the call).
fn offset(a: &[u8]) -> i64 {
    let a = trim(a);
    match a.strip_prefix(b"[") {
        Some(rest) => {
            let end = rest.iter().position(|b| *b == b']').unwrap_or(rest.len());
            parse_int(&rest[..end]).unwrap_or(-1)
        }
        None => -1,
    }
}

/// A descriptor operand: one of the tree's, one outside it, or one that names a file of
/// the tree but was opened where the trace cannot follow.
enum Descriptor {
    Tree(FdEntry),
    Outside,
    Unknown,
}

impl Importer {
    fn skip(&mut self, pid: i64, what: String) {
        if let Some(t) = self.tasks.get_mut(&pid) {
            t.skipped += 1;
        }
        *self.unrecorded.entry(what).or_default() += 1;
    }

    /// A futex call: a wait until another thread woke it is recorded as a wait; any
    /// other (a wake, a wait its own timeout ended) is only counted as skipped, for the
    /// tracer's cost in the gap.
    fn futex(&mut self, pid: i64, ts: i64, p: &Parsed<'_>) -> Result<()> {
        let t0 = self.t0.unwrap_or(ts);
        let Some(task) = self.tasks.get_mut(&pid) else {
            return Ok(());
        };
        task.skipped += 1;
        let waits = p.name == b"futex_waitv" || FUTEX_WAITS.contains(&(int(p, 1) & FUTEX_CMD_MASK));
        if !waits || p.errno == Some(b"ETIMEDOUT".as_slice()) {
            return Ok(());
        }
        self.waits += 1;
        self.waited_ns += p.dur_ns;
        let tid = task.idx;
        self.w.write(&Record::Wait {
            tid,
            start_ns: ts - t0,
            dur_ns: p.dur_ns,
        })
    }

    fn outside(&mut self, pid: i64, kind: Kind) {
        self.skip(pid, format!("outside:{}", kind.name()));
    }

    fn intern(&mut self, rel: &[u8]) -> Result<u32> {
        if let Some(id) = self.paths.get(rel) {
            return Ok(*id);
        }
        let parent = if rel == b"." {
            None
        } else {
            Some(self.intern(parent_of(rel))?)
        };
        let id = self.path_list.len() as u32;
        self.paths.insert(rel.to_vec(), id);
        self.path_list.push(rel.to_vec());
        self.w.write(&Record::Path {
            id,
            parent: parent.unwrap_or(id),
            path: rel.to_vec(),
        })?;
        Ok(id)
    }

    /// The absolute path as the tree names it (relative; "." the root), or None outside.
    fn relative(&self, abs: &[u8]) -> Option<Vec<u8>> {
        let abs = normalize(abs);
        if abs == self.root {
            return Some(b".".to_vec());
        }
        let rest = abs.strip_prefix(self.root.as_slice())?;
        let rest = if self.root == b"/" {
            &abs[1..]
        } else {
            rest.strip_prefix(b"/")?
        };
        Some(rest.to_vec())
    }

    fn cwd(&self, pid: i64) -> Vec<u8> {
        self.tasks
            .get(&pid)
            .map_or_else(|| self.root.clone(), |t| t.cwd.borrow().clone())
    }

    /// A path argument, resolved against its directory descriptor (or the cwd), made
    /// relative to the tree: Some(None) when outside, None when it cannot be told.
    fn resolve(&self, pid: i64, dirfd: Option<&[u8]>, path: &[u8]) -> Option<Option<Vec<u8>>> {
        let abs = if path.starts_with(b"/") {
            path.to_vec()
        } else {
            let base = match dirfd {
                None => self.cwd(pid),
                Some(tok) => {
                    let (n, deco) = number_and_decoration(tok)?;
                    match deco {
                        Some(d) => strip_deleted(d),
                        None if n == -100 => self.cwd(pid),
                        None => {
                            let e = self.fd(pid, n)?;
                            let mut b = self.root.clone();
                            b.push(b'/');
                            b.extend_from_slice(&self.path_list[e.path as usize]);
                            b
                        }
                    }
                }
            };
            let mut b = base;
            b.push(b'/');
            b.extend_from_slice(path);
            b
        };
        Some(self.relative(&abs))
    }

    fn fd(&self, pid: i64, fd: i64) -> Option<FdEntry> {
        self.tasks.get(&pid)?.table.borrow().get(&fd).copied()
    }

    fn descriptor(&self, pid: i64, a: &[u8]) -> Option<Descriptor> {
        let (fd, deco) = number_and_decoration(a)?;
        Some(match self.fd(pid, fd) {
            Some(e) => Descriptor::Tree(e),
            None if deco.is_some_and(|d| self.relative(&strip_deleted(d)).is_some()) => {
                Descriptor::Unknown
            }
            None => Descriptor::Outside,
        })
    }

    /// copy_file_range and sendfile: a copy when both files are the tree's; a write of
    /// the bytes that arrived when only the destination is (the source, outside the
    /// tree, is not replayed), a read of those that left when only the source is.
    #[allow(clippy::too_many_arguments)]
    fn copy(
        &mut self,
        pid: i64,
        ts: i64,
        p: &Parsed<'_>,
        kind: Kind,
        (from_arg, to_arg): (usize, usize),
        (from_off, to_off): (i64, i64),
        len: i64,
    ) -> Result<()> {
        let name = kind.name();
        let (Some(from), Some(to)) = (
            self.descriptor(pid, arg(p, from_arg)),
            self.descriptor(pid, arg(p, to_arg)),
        ) else {
            self.skip(pid, format!("unparsed:{name}"));
            return Ok(());
        };
        let Some(res) = Self::result(p) else {
            self.skip(pid, format!("interrupted:{name}"));
            return Ok(());
        };
        let moved = res.max(0);
        match (from, to) {
            (Descriptor::Unknown, _) | (_, Descriptor::Unknown) => {
                self.skip(pid, format!("unknown-descriptor:{name}"));
                Ok(())
            }
            (Descriptor::Tree(f), Descriptor::Tree(t)) => {
                let ints = match kind {
                    Kind::Sendfile => vec![i64::from(t.id), i64::from(f.id), from_off, len],
                    _ => vec![i64::from(f.id), from_off, i64::from(t.id), to_off, len],
                };
                self.emit(pid, ts, p, kind, res, &ints, None)
            }
            _ if res < 0 => {
                self.outside(pid, kind);
                Ok(())
            }
            (Descriptor::Outside, Descriptor::Tree(t)) if to_off >= 0 => {
                let ints = [i64::from(t.id), moved, to_off];
                self.emit(pid, ts, p, Kind::Pwrite, res, &ints, None)
            }
            (Descriptor::Outside, Descriptor::Tree(t)) => self.emit(
                pid,
                ts,
                p,
                Kind::Write,
                res,
                &[i64::from(t.id), moved],
                None,
            ),
            (Descriptor::Tree(f), Descriptor::Outside) if from_off >= 0 => {
                let ints = [i64::from(f.id), moved, from_off];
                self.emit(pid, ts, p, Kind::Pread, res, &ints, None)
            }
            (Descriptor::Tree(f), Descriptor::Outside) => {
                self.emit(pid, ts, p, Kind::Read, res, &[i64::from(f.id), moved], None)
            }
            (Descriptor::Outside, Descriptor::Outside) => {
                self.outside(pid, kind);
                Ok(())
            }
        }
    }

    fn result(p: &Parsed<'_>) -> Option<i64> {
        match p.result {
            Some(-1) => Some(-p.errno.map_or(1000, errno_of)),
            r => r,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        pid: i64,
        ts: i64,
        p: &Parsed<'_>,
        kind: Kind,
        result: i64,
        ints: &[i64],
        text: Option<Vec<u8>>,
    ) -> Result<()> {
        let t0 = self.t0.unwrap_or(ts);
        let Some(task) = self.tasks.get_mut(&pid) else {
            return Ok(());
        };
        let mut all = [0i64; MAX_INTS];
        all[..ints.len()].copy_from_slice(ints);
        let call = Call {
            tid: task.idx,
            start_ns: ts - t0,
            dur_ns: p.dur_ns,
            skipped: std::mem::take(&mut task.skipped),
            kind,
            result,
            ints: all,
            text,
        };
        *self.by_kind.entry(kind.name()).or_default() += 1;
        self.w.write(&Record::Call(call))
    }

    fn task(&mut self, pid: i64, ts: i64) -> Result<()> {
        if self.tasks.contains_key(&pid) {
            return Ok(());
        }
        let t0 = *self.t0.get_or_insert(ts);
        // Its parent: a clone that returned its pid, else a clone still in flight.
        let parent = self.children.remove(&pid).or_else(|| {
            self.tasks
                .iter()
                .filter_map(|(ppid, t)| {
                    let (at, prefix) = t.pending.as_ref()?;
                    let flags = if prefix.starts_with(b"vfork(") {
                        CLONE_VM
                    } else if prefix.starts_with(b"fork(") {
                        0
                    } else if prefix.starts_with(b"clone") {
                        field(prefix, b"flags").and_then(parse_int).unwrap_or(0)
                    } else {
                        return None;
                    };
                    Some((*at, *ppid, flags))
                })
                .max()
                .map(|(_, ppid, flags)| (ppid, flags))
        });
        let idx = self.next_task;
        self.next_task += 1;
        let (task, parent_idx) =
            match parent.and_then(|(ppid, f)| Some((self.tasks.get(&ppid)?, f))) {
                Some((p, flags)) => {
                    let table = if flags & CLONE_FILES != 0 {
                        p.table.clone()
                    } else {
                        let copy = p.table.borrow().clone();
                        for e in copy.values() {
                            self.fds.hold(e.id);
                        }
                        Rc::new(RefCell::new(copy))
                    };
                    let cwd = if flags & CLONE_FS != 0 {
                        p.cwd.clone()
                    } else {
                        Rc::new(RefCell::new(p.cwd.borrow().clone()))
                    };
                    let tgid = if flags & CLONE_THREAD != 0 {
                        p.tgid
                    } else {
                        pid
                    };
                    (
                        Task {
                            idx,
                            tgid,
                            table,
                            cwd,
                            skipped: 0,
                            pending: None,
                            closing: None,
                        },
                        Some(p.idx),
                    )
                }
                None => (
                    Task {
                        idx,
                        tgid: pid,
                        table: Rc::new(RefCell::new(HashMap::new())),
                        cwd: Rc::new(RefCell::new(self.root.clone())),
                        skipped: 0,
                        pending: None,
                        closing: None,
                    },
                    None,
                ),
            };
        self.tasks.insert(pid, task);
        self.w.write(&Record::Thread {
            tid: idx,
            parent: parent_idx,
            at_ns: ts - t0,
        })
    }

    fn exit(&mut self, pid: i64, ts: i64) -> Result<()> {
        let Some(task) = self.tasks.remove(&pid) else {
            return Ok(());
        };
        // A close still in flight when its thread ends lets go of its id too.
        if let Some((_, e)) = task.closing
            && self.fds.release(e.id)
        {
            self.w.write(&Record::Release {
                tid: task.idx,
                fd: e.id,
            })?;
        }
        if Rc::strong_count(&task.table) == 1 {
            let mut entries: Vec<FdEntry> = task.table.borrow().values().copied().collect();
            entries.sort_by_key(|e| e.id);
            for e in entries {
                if self.fds.release(e.id) {
                    self.w.write(&Record::Release {
                        tid: task.idx,
                        fd: e.id,
                    })?;
                }
            }
        }
        let t0 = self.t0.unwrap_or(ts);
        self.w.write(&Record::Exit {
            tid: task.idx,
            at_ns: ts - t0,
        })
    }

    /// Drop `fd` of `pid`'s table: the descriptor is gone for it (close, dup2 over it,
    /// exec). Returns its id when that was the last hold on it.
    fn drop_fd(&mut self, pid: i64, fd: i64) -> Option<(u32, bool)> {
        let e = self.tasks.get(&pid)?.table.borrow_mut().remove(&fd)?;
        Some((e.id, self.fds.release(e.id)))
    }

    /// close(2) takes the descriptor out of the table as it begins (the kernel's
    /// close_fd), then flushes: a close cut in two by strace lets go of the number at its
    /// first half, since another thread's open may reuse it before the second. Its id
    /// stays held until the close is recorded (the open gets a new one).
    fn close_begins(&mut self, pid: i64, first: &[u8]) -> Option<(i64, FdEntry)> {
        let rest = first.strip_prefix(b"close(")?;
        let end = rest
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(rest.len());
        let fd = parse_int(&rest[..end])?;
        let e = self.tasks.get(&pid)?.table.borrow_mut().remove(&fd)?;
        Some((fd, e))
    }

    fn release_implicitly(&mut self, pid: i64, fd: i64) -> Result<()> {
        if let Some((id, true)) = self.drop_fd(pid, fd) {
            let tid = self.tasks.get(&pid).map_or(0, |t| t.idx);
            self.w.write(&Record::Release { tid, fd: id })?;
        }
        Ok(())
    }

    fn put_fd(&mut self, pid: i64, fd: i64, entry: FdEntry) {
        if let Some(t) = self.tasks.get(&pid) {
            t.table.borrow_mut().insert(fd, entry);
        }
    }

    /// A call on a path (resolved against `dirfd`): recorded when inside the tree.
    #[allow(clippy::too_many_arguments)]
    fn on_path(
        &mut self,
        pid: i64,
        ts: i64,
        p: &Parsed<'_>,
        kind: Kind,
        dirfd: Option<usize>,
        path: usize,
        more: &[i64],
        text: Option<Vec<u8>>,
    ) -> Result<()> {
        let Some(name) = parse_string(arg(p, path)) else {
            self.skip(pid, format!("unparsed:{}", kind.name()));
            return Ok(());
        };
        let Some(res) = Self::result(p) else {
            self.skip(pid, format!("interrupted:{}", kind.name()));
            return Ok(());
        };
        match self.resolve(pid, dirfd.map(|i| arg(p, i)), &name) {
            Some(Some(rel)) => {
                let id = self.intern(&rel)?;
                let mut ints = vec![i64::from(id)];
                ints.extend_from_slice(more);
                self.emit(pid, ts, p, kind, res, &ints, text)
            }
            Some(None) => {
                self.outside(pid, kind);
                Ok(())
            }
            None => {
                self.skip(pid, format!("unresolved:{}", kind.name()));
                Ok(())
            }
        }
    }

    /// A call on a descriptor: recorded when it is one of the tree's.
    #[allow(clippy::too_many_arguments)]
    fn on_fd(
        &mut self,
        pid: i64,
        ts: i64,
        p: &Parsed<'_>,
        kind: Kind,
        fd_arg: usize,
        more: &[i64],
        text: Option<Vec<u8>>,
    ) -> Result<Option<FdEntry>> {
        let Some((fd, deco)) = number_and_decoration(arg(p, fd_arg)) else {
            self.skip(pid, format!("unparsed:{}", kind.name()));
            return Ok(None);
        };
        let Some(e) = self.fd(pid, fd) else {
            let inside = deco.is_some_and(|d| self.relative(&strip_deleted(d)).is_some());
            if inside {
                self.skip(pid, format!("unknown-descriptor:{}", kind.name()));
            } else {
                self.outside(pid, kind);
            }
            return Ok(None);
        };
        let Some(res) = Self::result(p) else {
            self.skip(pid, format!("interrupted:{}", kind.name()));
            return Ok(None);
        };
        let mut ints = vec![i64::from(e.id)];
        ints.extend_from_slice(more);
        self.emit(pid, ts, p, kind, res, &ints, text)?;
        Ok(Some(e))
    }

    #[allow(clippy::too_many_arguments)]
    fn open(
        &mut self,
        pid: i64,
        ts: i64,
        p: &Parsed<'_>,
        dirfd: Option<usize>,
        path: usize,
        flags: i64,
        mode: i64,
    ) -> Result<()> {
        let Some(name) = parse_string(arg(p, path)) else {
            self.skip(pid, "unparsed:open".into());
            return Ok(());
        };
        let Some(res) = Self::result(p) else {
            self.skip(pid, "interrupted:open".into());
            return Ok(());
        };
        let rel = match self.resolve(pid, dirfd.map(|i| arg(p, i)), &name) {
            Some(Some(rel)) => rel,
            Some(None) => {
                self.outside(pid, Kind::Open);
                return Ok(());
            }
            None => {
                self.skip(pid, "unresolved:open".into());
                return Ok(());
            }
        };
        let path_id = self.intern(&rel)?;
        let result = if res >= 0 {
            self.release_implicitly(pid, res)?;
            let id = self.fds.take();
            self.put_fd(
                pid,
                res,
                FdEntry {
                    id,
                    path: path_id,
                    cloexec: flags & O_CLOEXEC != 0,
                },
            );
            i64::from(id)
        } else {
            res
        };
        self.emit(
            pid,
            ts,
            p,
            Kind::Open,
            result,
            &[i64::from(path_id), flags, mode],
            None,
        )
    }

    fn dup(
        &mut self,
        pid: i64,
        ts: i64,
        p: &Parsed<'_>,
        newfd: Option<i64>,
        cloexec: bool,
    ) -> Result<()> {
        let Some((old, _)) = number_and_decoration(arg(p, 0)) else {
            self.skip(pid, "unparsed:dup".into());
            return Ok(());
        };
        let res = Self::result(p);
        if let (Some(n), Some(r)) = (newfd, res)
            && r >= 0
            && n != old
        {
            self.release_implicitly(pid, n)?;
        }
        let Some(e) = self.fd(pid, old) else {
            self.outside(pid, Kind::Dup);
            return Ok(());
        };
        let Some(res) = res else {
            self.skip(pid, "interrupted:dup".into());
            return Ok(());
        };
        let result = if res >= 0 && res != old {
            let id = self.fds.take();
            self.put_fd(
                pid,
                res,
                FdEntry {
                    id,
                    path: e.path,
                    cloexec,
                },
            );
            i64::from(id)
        } else {
            res
        };
        self.emit(pid, ts, p, Kind::Dup, result, &[i64::from(e.id)], None)
    }

    fn call(&mut self, pid: i64, ts: i64, text: &[u8]) -> Result<()> {
        let Some(p) = parse_call(text) else {
            self.skip(pid, "unparsed".into());
            return Ok(());
        };
        let name = std::str::from_utf8(p.name).unwrap_or("?").to_string();
        let s = |i: usize| parse_string(arg(&p, i));
        // The xattr's name is a string, which `-s 0` cuts: without it there is no call to make.
        if name.contains("xattr")
            && !name.contains("list")
            && trim_end(arg(&p, 1)).ends_with(b"...")
        {
            self.skip(pid, format!("name-cut:{name}"));
            return Ok(());
        }
        match name.as_str() {
            "open" => self.open(pid, ts, &p, None, 0, int(&p, 1), int(&p, 2)),
            "openat" => self.open(pid, ts, &p, Some(0), 1, int(&p, 2), int(&p, 3)),
            "openat2" => {
                let how = arg(&p, 2);
                let flags = field(how, b"flags").and_then(parse_int).unwrap_or(0);
                let mode = field(how, b"mode").and_then(parse_int).unwrap_or(0);
                self.open(pid, ts, &p, Some(0), 1, flags, mode)
            }
            "creat" => self.open(pid, ts, &p, None, 0, O_CREAT_WRONLY_TRUNC, int(&p, 1)),
            "close" => {
                let Some((fd, _)) = number_and_decoration(arg(&p, 0)) else {
                    self.skip(pid, "unparsed:close".into());
                    return Ok(());
                };
                let dropped = match self.tasks.get_mut(&pid).and_then(|t| t.closing.take()) {
                    Some((early, e)) if early == fd => Some((e.id, self.fds.release(e.id))),
                    Some((early, e)) => {
                        self.put_fd(pid, early, e);
                        self.drop_fd(pid, fd)
                    }
                    None => self.drop_fd(pid, fd),
                };
                match dropped {
                    Some((id, true)) => {
                        let res = Self::result(&p).unwrap_or(0);
                        self.emit(pid, ts, &p, Kind::Close, res, &[i64::from(id)], None)
                    }
                    Some((_, false)) => {
                        self.skip(pid, "shared-close".into());
                        Ok(())
                    }
                    None => {
                        self.outside(pid, Kind::Close);
                        Ok(())
                    }
                }
            }
            "read" => self
                .on_fd(pid, ts, &p, Kind::Read, 0, &[int(&p, 2)], None)
                .map(drop),
            "readv" => {
                let n = iov_total(arg(&p, 1));
                self.on_fd(pid, ts, &p, Kind::Readv, 0, &[n], None)
                    .map(drop)
            }
            "pread64" => {
                let more = [int(&p, 2), int(&p, 3)];
                self.on_fd(pid, ts, &p, Kind::Pread, 0, &more, None)
                    .map(drop)
            }
            "preadv" | "preadv2" => {
                let more = [iov_total(arg(&p, 1)), int(&p, 3)];
                self.on_fd(pid, ts, &p, Kind::Preadv, 0, &more, None)
                    .map(drop)
            }
            "write" => self
                .on_fd(pid, ts, &p, Kind::Write, 0, &[int(&p, 2)], None)
                .map(drop),
            "writev" => {
                let n = iov_total(arg(&p, 1));
                self.on_fd(pid, ts, &p, Kind::Writev, 0, &[n], None)
                    .map(drop)
            }
            "pwrite64" => {
                let more = [int(&p, 2), int(&p, 3)];
                self.on_fd(pid, ts, &p, Kind::Pwrite, 0, &more, None)
                    .map(drop)
            }
            "pwritev" | "pwritev2" => {
                let more = [iov_total(arg(&p, 1)), int(&p, 3)];
                self.on_fd(pid, ts, &p, Kind::Pwritev, 0, &more, None)
                    .map(drop)
            }
            "copy_file_range" => {
                let offsets = (offset(arg(&p, 1)), offset(arg(&p, 3)));
                self.copy(
                    pid,
                    ts,
                    &p,
                    Kind::CopyFileRange,
                    (0, 2),
                    offsets,
                    int(&p, 4),
                )
            }
            "sendfile" => {
                let offsets = (offset(arg(&p, 2)), -1);
                self.copy(pid, ts, &p, Kind::Sendfile, (1, 0), offsets, int(&p, 3))
            }
            "lseek" => {
                let more = [int(&p, 1), int(&p, 2)];
                self.on_fd(pid, ts, &p, Kind::Lseek, 0, &more, None)
                    .map(drop)
            }
            "fsync" => self.on_fd(pid, ts, &p, Kind::Fsync, 0, &[], None).map(drop),
            "fdatasync" => self
                .on_fd(pid, ts, &p, Kind::Fdatasync, 0, &[], None)
                .map(drop),
            "syncfs" => self
                .on_fd(pid, ts, &p, Kind::Syncfs, 0, &[], None)
                .map(drop),
            "sync_file_range" => {
                let more = [int(&p, 1), int(&p, 2), int(&p, 3)];
                self.on_fd(pid, ts, &p, Kind::SyncFileRange, 0, &more, None)
                    .map(drop)
            }
            "sync" => match Self::result(&p) {
                Some(res) => self.emit(pid, ts, &p, Kind::Sync, res, &[], None),
                None => {
                    self.skip(pid, "interrupted:sync".into());
                    Ok(())
                }
            },
            "ftruncate" => self
                .on_fd(pid, ts, &p, Kind::Ftruncate, 0, &[int(&p, 1)], None)
                .map(drop),
            "fallocate" => {
                let more = [int(&p, 1), int(&p, 2), int(&p, 3)];
                self.on_fd(pid, ts, &p, Kind::Fallocate, 0, &more, None)
                    .map(drop)
            }
            "fstat" => self.on_fd(pid, ts, &p, Kind::Fstat, 0, &[], None).map(drop),
            "getdents64" | "getdents" => {
                if let Some(e) = self.on_fd(pid, ts, &p, Kind::Getdents, 0, &[int(&p, 2)], None)? {
                    self.read_dirs.insert(e.path);
                }
                Ok(())
            }
            "fgetxattr" => self
                .on_fd(pid, ts, &p, Kind::Fgetxattr, 0, &[int(&p, 3)], s(1))
                .map(drop),
            "fsetxattr" => {
                let more = [int(&p, 3), int(&p, 4)];
                self.on_fd(pid, ts, &p, Kind::Fsetxattr, 0, &more, s(1))
                    .map(drop)
            }
            "flistxattr" => self
                .on_fd(pid, ts, &p, Kind::Flistxattr, 0, &[int(&p, 2)], None)
                .map(drop),
            "fremovexattr" => self
                .on_fd(pid, ts, &p, Kind::Fremovexattr, 0, &[], s(1))
                .map(drop),
            "fchmod" => self
                .on_fd(pid, ts, &p, Kind::Fchmod, 0, &[int(&p, 1)], None)
                .map(drop),
            "fchown" => {
                let more = [int(&p, 1), int(&p, 2)];
                self.on_fd(pid, ts, &p, Kind::Fchown, 0, &more, None)
                    .map(drop)
            }
            "mmap" => self.mmap(pid, ts, &p),
            "munmap" => {
                let addr = int(&p, 0) as u64;
                let tgid = self.tasks.get(&pid).map_or(pid, |t| t.tgid);
                match self.mapped.remove(&(tgid, addr)) {
                    Some((id, _)) => {
                        self.maps.release(id);
                        let res = Self::result(&p).unwrap_or(0);
                        self.emit(pid, ts, &p, Kind::Munmap, res, &[i64::from(id)], None)
                    }
                    None => {
                        self.outside(pid, Kind::Munmap);
                        Ok(())
                    }
                }
            }
            "msync" => {
                let addr = int(&p, 0) as u64;
                let tgid = self.tasks.get(&pid).map_or(pid, |t| t.tgid);
                let hit = self
                    .mapped
                    .iter()
                    .find(|((g, a), (_, len))| *g == tgid && addr >= *a && addr < a + len)
                    .map(|((_, a), (id, _))| (*a, *id));
                match (hit, Self::result(&p)) {
                    (Some((start, id)), Some(res)) => {
                        let ints = [i64::from(id), (addr - start) as i64, int(&p, 1), int(&p, 2)];
                        self.emit(pid, ts, &p, Kind::Msync, res, &ints, None)
                    }
                    _ => {
                        self.outside(pid, Kind::Msync);
                        Ok(())
                    }
                }
            }
            "dup" => self.dup(pid, ts, &p, None, false),
            "dup2" => {
                let newfd = int(&p, 1);
                self.dup(pid, ts, &p, Some(newfd), false)
            }
            "dup3" => {
                let newfd = int(&p, 1);
                let cloexec = int(&p, 2) & O_CLOEXEC != 0;
                self.dup(pid, ts, &p, Some(newfd), cloexec)
            }
            "fcntl" => {
                let cmd = int(&p, 1);
                if cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC {
                    return self.dup(pid, ts, &p, None, cmd == F_DUPFD_CLOEXEC);
                }
                let fd = number_and_decoration(arg(&p, 0)).map_or(-1, |(n, _)| n);
                if cmd == F_SETFD
                    && let Some(t) = self.tasks.get(&pid)
                    && let Some(e) = t.table.borrow_mut().get_mut(&fd)
                {
                    e.cloexec = int(&p, 2) & 1 != 0;
                }
                let inside = self.fd(pid, fd).is_some();
                self.skip(
                    pid,
                    if inside {
                        "not-replayed:fcntl"
                    } else {
                        "outside:fcntl"
                    }
                    .into(),
                );
                Ok(())
            }
            "mkdir" => self.on_path(pid, ts, &p, Kind::Mkdir, None, 0, &[int(&p, 1)], None),
            "mkdirat" => self.on_path(pid, ts, &p, Kind::Mkdir, Some(0), 1, &[int(&p, 2)], None),
            "rmdir" => self.on_path(pid, ts, &p, Kind::Rmdir, None, 0, &[], None),
            "unlink" => self.on_path(pid, ts, &p, Kind::Unlink, None, 0, &[], None),
            "unlinkat" => {
                let kind = if int(&p, 2) & AT_REMOVEDIR != 0 {
                    Kind::Rmdir
                } else {
                    Kind::Unlink
                };
                self.on_path(pid, ts, &p, kind, Some(0), 1, &[], None)
            }
            "rename" => self.two_paths(pid, ts, &p, Kind::Rename, (None, 0), (None, 1), Some(0)),
            "renameat" => self.two_paths(
                pid,
                ts,
                &p,
                Kind::Rename,
                (Some(0), 1),
                (Some(2), 3),
                Some(0),
            ),
            "renameat2" => {
                let flags = int(&p, 4);
                self.two_paths(
                    pid,
                    ts,
                    &p,
                    Kind::Rename,
                    (Some(0), 1),
                    (Some(2), 3),
                    Some(flags),
                )
            }
            "link" => self.two_paths(pid, ts, &p, Kind::Link, (None, 0), (None, 1), None),
            "linkat" => self.two_paths(pid, ts, &p, Kind::Link, (Some(0), 1), (Some(2), 3), None),
            "symlink" => self.symlink(pid, ts, &p, None, 1),
            "symlinkat" => self.symlink(pid, ts, &p, Some(1), 2),
            "truncate" => self.on_path(pid, ts, &p, Kind::Truncate, None, 0, &[int(&p, 1)], None),
            "stat" => self.on_path(pid, ts, &p, Kind::Stat, None, 0, &[1], None),
            "lstat" => self.on_path(pid, ts, &p, Kind::Stat, None, 0, &[0], None),
            "newfstatat" => self.stat_at(pid, ts, &p, int(&p, 3)),
            "statx" => self.stat_at(pid, ts, &p, int(&p, 2)),
            "access" => self.on_path(pid, ts, &p, Kind::Access, None, 0, &[int(&p, 1)], None),
            "faccessat" | "faccessat2" => {
                self.on_path(pid, ts, &p, Kind::Access, Some(0), 1, &[int(&p, 2)], None)
            }
            "readlink" => self.on_path(pid, ts, &p, Kind::Readlink, None, 0, &[int(&p, 2)], None),
            "readlinkat" => {
                self.on_path(pid, ts, &p, Kind::Readlink, Some(0), 1, &[int(&p, 3)], None)
            }
            "getxattr" | "lgetxattr" => {
                let follow = i64::from(name == "getxattr");
                let more = [follow, int(&p, 3)];
                self.on_path(pid, ts, &p, Kind::Getxattr, None, 0, &more, s(1))
            }
            "setxattr" | "lsetxattr" => {
                let follow = i64::from(name == "setxattr");
                let more = [follow, int(&p, 3), int(&p, 4)];
                self.on_path(pid, ts, &p, Kind::Setxattr, None, 0, &more, s(1))
            }
            "listxattr" | "llistxattr" => {
                let more = [i64::from(name == "listxattr"), int(&p, 2)];
                self.on_path(pid, ts, &p, Kind::Listxattr, None, 0, &more, None)
            }
            "removexattr" | "lremovexattr" => {
                let more = [i64::from(name == "removexattr")];
                self.on_path(pid, ts, &p, Kind::Removexattr, None, 0, &more, s(1))
            }
            "chmod" => self.on_path(pid, ts, &p, Kind::Chmod, None, 0, &[int(&p, 1)], None),
            "fchmodat" => self.on_path(pid, ts, &p, Kind::Chmod, Some(0), 1, &[int(&p, 2)], None),
            "chown" | "lchown" => {
                let more = [int(&p, 1), int(&p, 2), i64::from(name == "chown")];
                self.on_path(pid, ts, &p, Kind::Chown, None, 0, &more, None)
            }
            "fchownat" => {
                let flags = int(&p, 4);
                if flags & AT_EMPTY_PATH != 0 && s(1).is_some_and(|n| n.is_empty()) {
                    let more = [int(&p, 2), int(&p, 3)];
                    return self
                        .on_fd(pid, ts, &p, Kind::Fchown, 0, &more, None)
                        .map(drop);
                }
                let follow = i64::from(flags & AT_SYMLINK_NOFOLLOW == 0);
                let more = [int(&p, 2), int(&p, 3), follow];
                self.on_path(pid, ts, &p, Kind::Chown, Some(0), 1, &more, None)
            }
            "utimensat" => {
                if arg(&p, 1) == b"NULL" {
                    return self
                        .on_fd(pid, ts, &p, Kind::Futimes, 0, &[], None)
                        .map(drop);
                }
                let follow = i64::from(int(&p, 3) & AT_SYMLINK_NOFOLLOW == 0);
                self.on_path(pid, ts, &p, Kind::Utimes, Some(0), 1, &[follow], None)
            }
            "utimes" | "utime" => self.on_path(pid, ts, &p, Kind::Utimes, None, 0, &[1], None),
            "futimesat" => self.on_path(pid, ts, &p, Kind::Utimes, Some(0), 1, &[1], None),
            "chdir" => {
                if Self::result(&p) == Some(0)
                    && let Some(path) = s(0)
                {
                    let mut abs = if path.starts_with(b"/") {
                        Vec::new()
                    } else {
                        self.cwd(pid)
                    };
                    abs.push(b'/');
                    abs.extend_from_slice(&path);
                    self.set_cwd(pid, normalize(&abs));
                }
                self.skip(pid, "not-replayed:chdir".into());
                Ok(())
            }
            "fchdir" => {
                if Self::result(&p) == Some(0)
                    && let Some((_, Some(d))) = number_and_decoration(arg(&p, 0))
                {
                    self.set_cwd(pid, normalize(&strip_deleted(d)));
                }
                self.skip(pid, "not-replayed:fchdir".into());
                Ok(())
            }
            "clone" | "clone3" | "fork" | "vfork" => {
                let flags = match name.as_str() {
                    "vfork" => CLONE_VM,
                    "fork" => 0,
                    _ => field(arg(&p, if name == "clone3" { 0 } else { 1 }), b"flags")
                        .and_then(parse_int)
                        .unwrap_or(0),
                };
                if let Some(child) = p.result.filter(|r| *r > 0)
                    && !self.tasks.contains_key(&child)
                {
                    self.children.insert(child, (pid, flags));
                }
                self.skip(pid, format!("not-replayed:{name}"));
                Ok(())
            }
            "futex" | "futex_waitv" => self.futex(pid, ts, &p),
            "execve" | "execveat" => {
                if Self::result(&p) == Some(0) {
                    self.exec(pid)?;
                }
                self.skip(pid, format!("not-replayed:{name}"));
                Ok(())
            }
            _ => {
                self.skip(pid, format!("not-replayed:{name}"));
                Ok(())
            }
        }
    }

    fn set_cwd(&mut self, pid: i64, abs: Vec<u8>) {
        if let Some(t) = self.tasks.get(&pid) {
            *t.cwd.borrow_mut() = abs;
        }
    }

    /// A successful exec: the descriptors opened close-on-exec are gone.
    fn exec(&mut self, pid: i64) -> Result<()> {
        let Some(t) = self.tasks.get(&pid) else {
            return Ok(());
        };
        let mut closing: Vec<i64> = t
            .table
            .borrow()
            .iter()
            .filter(|(_, e)| e.cloexec)
            .map(|(fd, _)| *fd)
            .collect();
        closing.sort_unstable();
        for fd in closing {
            self.release_implicitly(pid, fd)?;
        }
        Ok(())
    }

    fn stat_at(&mut self, pid: i64, ts: i64, p: &Parsed<'_>, flags: i64) -> Result<()> {
        let empty = parse_string(arg(p, 1)).is_some_and(|n| n.is_empty());
        if empty && flags & AT_EMPTY_PATH != 0 {
            return self.on_fd(pid, ts, p, Kind::Fstat, 0, &[], None).map(drop);
        }
        let follow = i64::from(flags & AT_SYMLINK_NOFOLLOW == 0);
        self.on_path(pid, ts, p, Kind::Stat, Some(0), 1, &[follow], None)
    }

    #[allow(clippy::too_many_arguments)]
    fn two_paths(
        &mut self,
        pid: i64,
        ts: i64,
        p: &Parsed<'_>,
        kind: Kind,
        from: (Option<usize>, usize),
        to: (Option<usize>, usize),
        flags: Option<i64>,
    ) -> Result<()> {
        let name = |i: usize| parse_string(arg(p, i));
        let (Some(a), Some(b)) = (name(from.1), name(to.1)) else {
            self.skip(pid, format!("unparsed:{}", kind.name()));
            return Ok(());
        };
        let Some(res) = Self::result(p) else {
            self.skip(pid, format!("interrupted:{}", kind.name()));
            return Ok(());
        };
        let ra = self.resolve(pid, from.0.map(|i| arg(p, i)), &a);
        let rb = self.resolve(pid, to.0.map(|i| arg(p, i)), &b);
        match (ra, rb) {
            (Some(Some(ra)), Some(Some(rb))) => {
                let ia = i64::from(self.intern(&ra)?);
                let ib = i64::from(self.intern(&rb)?);
                match flags {
                    Some(f) => self.emit(pid, ts, p, kind, res, &[ia, ib, f], None),
                    None => self.emit(pid, ts, p, kind, res, &[ia, ib], None),
                }
            }
            (Some(_), Some(_)) => {
                self.outside(pid, kind);
                Ok(())
            }
            _ => {
                self.skip(pid, format!("unresolved:{}", kind.name()));
                Ok(())
            }
        }
    }

    fn symlink(
        &mut self,
        pid: i64,
        ts: i64,
        p: &Parsed<'_>,
        dirfd: Option<usize>,
        path: usize,
    ) -> Result<()> {
        let (Some(target), Some(link)) = (parse_string(arg(p, 0)), parse_string(arg(p, path)))
        else {
            self.skip(pid, "unparsed:symlink".into());
            return Ok(());
        };
        let Some(res) = Self::result(p) else {
            self.skip(pid, "interrupted:symlink".into());
            return Ok(());
        };
        let Some(Some(rel)) = self.resolve(pid, dirfd.map(|i| arg(p, i)), &link) else {
            self.outside(pid, Kind::Symlink);
            return Ok(());
        };
        let target = if target.starts_with(b"/") {
            // an absolute target inside the tree, made relative to the link's directory
            match self.relative(&target) {
                Some(t) => relative_from(parent_of(&rel), &t),
                None => {
                    self.outside(pid, Kind::Symlink);
                    return Ok(());
                }
            }
        } else {
            target
        };
        if !target_inside(&rel, &target) {
            self.outside(pid, Kind::Symlink);
            return Ok(());
        }
        let id = i64::from(self.intern(&rel)?);
        self.emit(pid, ts, p, Kind::Symlink, res, &[id], Some(target))
    }

    fn mmap(&mut self, pid: i64, ts: i64, p: &Parsed<'_>) -> Result<()> {
        let Some((fd, _)) = number_and_decoration(arg(p, 4)) else {
            self.skip(pid, "unparsed:mmap".into());
            return Ok(());
        };
        let Some(e) = (if fd >= 0 { self.fd(pid, fd) } else { None }) else {
            self.outside(pid, Kind::Mmap);
            return Ok(());
        };
        let Some(res) = Self::result(p) else {
            self.skip(pid, "interrupted:mmap".into());
            return Ok(());
        };
        let len = int(p, 1);
        let result = if !(-4095..0).contains(&res) {
            let id = self.maps.take();
            let tgid = self.tasks.get(&pid).map_or(pid, |t| t.tgid);
            self.mapped.insert((tgid, res as u64), (id, len as u64));
            i64::from(id)
        } else {
            res
        };
        let ints = [i64::from(e.id), len, int(p, 2), int(p, 3), int(p, 5)];
        self.emit(pid, ts, p, Kind::Mmap, result, &ints, None)
    }

    /// The starting tree: what the command touched of the snapshot (every path the trace
    /// names, their directories, and every entry of a directory it listed).
    fn tree(
        &mut self,
        snap: &HashMap<Vec<u8>, Entry>,
        data: Option<&mut File>,
    ) -> Result<TreeCounts> {
        let read_dirs: HashSet<Vec<u8>> = self
            .read_dirs
            .iter()
            .map(|id| self.path_list[*id as usize].clone())
            .collect();
        let mut listed: Vec<&Vec<u8>> = snap
            .keys()
            .filter(|k| k.as_slice() != b"." && read_dirs.contains(parent_of(k)))
            .collect();
        listed.sort();
        for p in listed {
            self.intern(p)?;
        }
        let mut entries: Vec<(u32, &Entry)> = self
            .path_list
            .iter()
            .enumerate()
            .filter_map(|(i, p)| snap.get(p).map(|e| (i as u32, e)))
            .collect();
        entries.sort_by_key(|(i, _)| {
            let p = &self.path_list[*i as usize];
            (
                p.iter().filter(|b| **b == b'/').count() + usize::from(p != b"."),
                *i,
            )
        });
        let mut counts = TreeCounts::default();
        let mut data = data;
        let mut buf = Vec::new();
        for (id, e) in entries {
            match e.kind {
                EntryType::File => {
                    counts.files += 1;
                    counts.bytes += e.size;
                }
                EntryType::Dir => counts.dirs += 1,
                EntryType::Symlink => counts.symlinks += 1,
            }
            let rel = &self.path_list[id as usize];
            let target = match &e.target {
                // It leads out of the tree: made a dangling link of the same length (lstat
                // and readlink answer as recorded; what it led to is not replayed).
                Some(t) if !target_inside(rel, t) => {
                    *self
                        .unrecorded
                        .entry("dangling:symlink".into())
                        .or_default() += 1;
                    Some(vec![b'_'; t.len().max(1)])
                }
                t => t.clone(),
            };
            self.w.write(&Record::Tree {
                path: id,
                kind: e.kind,
                size: e.size,
                mode: e.mode,
                target,
            })?;
            if let (Some(d), Some(off), EntryType::File) =
                (data.as_deref_mut(), e.data_offset, e.kind)
            {
                let mut at = 0u64;
                while at < e.size {
                    let n = (e.size - at).min(DATA_CHUNK as u64) as usize;
                    snapshot::read_data(d, off + at, &mut buf, n)?;
                    self.w.write(&Record::Data {
                        path: id,
                        offset: at,
                        bytes: std::mem::take(&mut buf),
                    })?;
                    at += n as u64;
                    counts.data_bytes += n as u64;
                }
            }
        }
        Ok(counts)
    }
}

/// A d_path of a file since deleted ends in " (deleted)".
fn strip_deleted(mut d: Vec<u8>) -> Vec<u8> {
    if d.ends_with(b" (deleted)") {
        d.truncate(d.len() - b" (deleted)".len());
    }
    d
}

/// `to` (relative to the tree) as seen from directory `from` (relative to the tree).
fn relative_from(from: &[u8], to: &[u8]) -> Vec<u8> {
    let split = |p: &[u8]| -> Vec<Vec<u8>> {
        if p == b"." {
            Vec::new()
        } else {
            p.split(|b| *b == b'/').map(<[u8]>::to_vec).collect()
        }
    };
    let (a, b) = (split(from), split(to));
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out: Vec<Vec<u8>> = vec![b"..".to_vec(); a.len() - common];
    out.extend(b[common..].iter().cloned());
    if out.is_empty() {
        return b".".to_vec();
    }
    out.join(&b'/')
}

fn trim_end(mut s: &[u8]) -> &[u8] {
    while let [rest @ .., b' '] = s {
        s = rest;
    }
    s
}

/// Convert strace's output to a trace.
pub fn run(opts: &Options) -> Result<Report> {
    let root = normalize(opts.root.as_os_str().as_encoded_bytes());
    let snap = match &opts.snapshot {
        Some(p) => snapshot::load(p)?,
        None => HashMap::new(),
    };
    let mut data = match &opts.snapshot {
        Some(p) if snapshot::data_path(p).is_file() => Some(
            File::open(snapshot::data_path(p))
                .map_err(|e| Error::runtime(format!("open snapshot data: {e}")))?,
        ),
        _ => None,
    };
    let mut header = opts.header.clone();
    header.insert(
        "root".into(),
        String::from_utf8_lossy(&root).into_owned().into(),
    );
    header.insert("with_data".into(), data.is_some().into());
    if data.is_none() {
        header.insert("fill".into(), FILL.into());
    }
    header.insert("tracer_overhead_ns".into(), opts.tracer_overhead_ns.into());
    header.insert("gap_overhead_ns".into(), opts.gap_overhead_ns.into());
    let w = TraceWriter::create(&opts.out, &serde_json::Value::Object(header))?;
    let mut im = Importer {
        root,
        w,
        tasks: HashMap::new(),
        next_task: 0,
        children: HashMap::new(),
        paths: HashMap::new(),
        path_list: Vec::new(),
        fds: Ids::default(),
        maps: Ids::default(),
        mapped: HashMap::new(),
        read_dirs: HashSet::new(),
        t0: None,
        last_ns: 0,
        unrecorded: BTreeMap::new(),
        by_kind: BTreeMap::new(),
        waits: 0,
        waited_ns: 0,
    };
    let input = File::open(&opts.strace)
        .map_err(|e| Error::input(format!("read {}: {e}", opts.strace.display())))?;
    let mut input = BufReader::with_capacity(1 << 20, input);
    let mut line = Vec::with_capacity(512);
    let mut lines = 0u64;
    loop {
        line.clear();
        let n = input
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::runtime(format!("read {}: {e}", opts.strace.display())))?;
        if n == 0 {
            break;
        }
        lines += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let Some(l) = parse_line(&line) else {
            *im.unrecorded.entry("unparsed".into()).or_default() += 1;
            continue;
        };
        im.task(l.pid, l.ts_ns)?;
        im.last_ns = l.ts_ns;
        match l.body {
            Body::Call(text) => im.call(l.pid, l.ts_ns, text)?,
            Body::Unfinished(first) => {
                let closing = im.close_begins(l.pid, first);
                if let Some(t) = im.tasks.get_mut(&l.pid) {
                    t.pending = Some((l.ts_ns, first.to_vec()));
                    t.closing = closing;
                }
            }
            Body::Resumed(rest) => {
                let pending = im.tasks.get_mut(&l.pid).and_then(|t| t.pending.take());
                match pending {
                    Some((ts0, mut text)) => {
                        text.extend_from_slice(rest);
                        if let Some(first) = text.strip_suffix(b" <unfinished ...>") {
                            let first = first.to_vec();
                            if let Some(t) = im.tasks.get_mut(&l.pid) {
                                t.pending = Some((ts0, first));
                            }
                        } else {
                            im.call(l.pid, ts0, &text)?;
                        }
                    }
                    None => *im.unrecorded.entry("unparsed".into()).or_default() += 1,
                }
            }
            Body::Exited => im.exit(l.pid, l.ts_ns)?,
            Body::Other => {}
        }
    }
    let tree = im.tree(&snap, data.as_mut())?;
    let unrecorded = std::mem::take(&mut im.unrecorded);
    for (what, count) in &unrecorded {
        im.w.write(&Record::Unrecorded {
            what: what.clone(),
            count: *count,
        })?;
    }
    let counts = im.w.finish()?;
    Ok(Report {
        trace: opts.out.display().to_string(),
        lines,
        calls: counts.calls,
        paths: counts.paths,
        threads: counts.threads,
        calls_by_kind: im.by_kind,
        waits: im.waits,
        waited_s: im.waited_ns as f64 / 1e9,
        tree,
        unrecorded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalise_and_relate() {
        assert_eq!(normalize(b"/a/./b/../c//d"), b"/a/c/d");
        assert_eq!(normalize(b"/.."), b"/");
        assert_eq!(relative_from(b"a/b", b"a/c/f"), b"../c/f");
        assert_eq!(relative_from(b".", b"x"), b"x");
        assert_eq!(errno_of(b"ENOENT"), 2);
    }

    #[test]
    fn strace_is_asked_for_each_call_once() {
        let args = strace_args();
        let list = args
            .last()
            .expect("trace=")
            .strip_prefix("trace=")
            .expect("trace=");
        let names: Vec<&str> = list.split(',').collect();
        let unique: HashSet<&str> = names.iter().copied().collect();
        assert_eq!(names.len(), unique.len());
        assert!(unique.contains("?openat") && unique.contains("?clone3"));
        assert_eq!(args[0], "-f");
    }

    /// strace's output `text`, of a command run in /r, imported into `dir`/t.fsbt.gz (the
    /// directory made first): the importer's report.
    fn imported(dir: &std::path::Path, text: &str) -> Report {
        std::fs::create_dir_all(dir).expect("temp dir");
        let strace = dir.join("strace.txt");
        std::fs::write(&strace, text).expect("strace file");
        run(&Options {
            strace,
            root: PathBuf::from("/r"),
            snapshot: None,
            out: dir.join("t.fsbt.gz"),
            header: serde_json::Map::new(),
            tracer_overhead_ns: 0,
            gap_overhead_ns: 0,
        })
        .expect("imports")
    }

    /// Thread 101 opens a file while thread 100's close of the same number is cut in two
    /// by strace: the kernel freed the number at the close's start, so the open's
    /// descriptor is the new file's, and the write on it is recorded (a recording under
    /// load once lost one write and fsync this way).
    #[test]
    fn a_close_cut_in_two_frees_its_number_at_its_start() {
        let dir = std::env::temp_dir().join(format!("fsbench-import-{}", std::process::id()));
        let report = imported(
            &dir,
            concat!(
                "100 1.0 clone(child_stack=NULL, flags=0x10f00) = 101 <0.000001>\n",
                "100 1.1 openat(-100</r>, \"/r/old\", 0x241, 0666) = 4</r/old> <0.000001>\n",
                "100 1.2 close(4</r/old> <unfinished ...>\n",
                "101 1.3 openat(-100</r>, \"/r/new\", 0x241, 0666) = 4</r/new> <0.000001>\n",
                "100 1.4 <... close resumed>) = 0 <0.2>\n",
                "101 1.5 write(4</r/new>, \"\"..., 10) = 10 <0.000001>\n",
                "101 1.6 fsync(4</r/new>) = 0 <0.000001>\n",
            ),
        );
        std::fs::remove_dir_all(&dir).expect("cleaned");
        assert_eq!(report.calls_by_kind.get("write"), Some(&1));
        assert_eq!(report.calls_by_kind.get("fsync"), Some(&1));
        assert_eq!(report.calls_by_kind.get("close"), Some(&1));
        assert!(
            !report
                .unrecorded
                .keys()
                .any(|k| k.starts_with("unknown-descriptor")),
            "{:?}",
            report.unrecorded
        );
    }

    /// A futex wait another thread ended is recorded as the waiter's wait (`w`), with its
    /// start and duration; a wake, and a wait its own timeout ended, are not. All three
    /// are counted as skipped calls of their thread, whose tracer cost is in its gap.
    #[test]
    fn futex_waits_are_recorded_as_waits_and_counted_as_skipped() {
        let dir = std::env::temp_dir().join(format!("fsbench-futex-{}", std::process::id()));
        let report = imported(
            &dir,
            concat!(
                "100 1.0 clone(child_stack=NULL, flags=0x3d0f00) = 101 <0.000001>\n",
                "100 1.1 futex(0x7f00, 0x80, 2, NULL <unfinished ...>\n",
                "101 1.2 futex(0x7f00, 0x81, 1) = 1 <0.000002>\n",
                "100 1.3 <... futex resumed>) = 0 <0.2>\n",
                "100 1.4 futex(0x7f08, 0x189, 0, {tv_sec=1, tv_nsec=0}, 0xffffffff) = -1 ETIMEDOUT (Connection timed out) <0.05>\n",
                "100 1.5 openat(-100</r>, \"/r/f\", 0x241, 0666) = 4</r/f> <0.000001>\n",
            ),
        );
        assert_eq!((report.waits, report.waited_s), (1, 0.2));
        let out = dir.join("t.fsbt.gz");
        let mut r = crate::trace::format::TraceReader::open(&out).expect("reads");
        assert_eq!(r.version, crate::trace::format::VERSION);
        let mut waits = Vec::new();
        let mut open_skipped = None;
        while let Some(rec) = r.next_record().expect("record") {
            match rec {
                Record::Wait {
                    tid,
                    start_ns,
                    dur_ns,
                } => waits.push((tid, start_ns, dur_ns)),
                Record::Call(c) if c.kind == Kind::Open => open_skipped = Some(c.skipped),
                _ => {}
            }
        }
        std::fs::remove_dir_all(&dir).expect("cleaned");
        // thread 0 (pid 100), from 0.1 s after the trace's first event, for 0.2 s
        assert_eq!(waits, vec![(0, 100_000_000, 200_000_000)]);
        // the clone, the wait and the timed-out wait before the open
        assert_eq!(open_skipped, Some(3));
    }

    #[test]
    fn offsets_by_pointer_read_as_strace_shows_them() {
        assert_eq!(offset(b"NULL"), -1);
        assert_eq!(offset(b"[5000]"), 5000);
        assert_eq!(offset(b" [10] => [4106]"), 10);
    }

    #[test]
    fn ids_are_reused_smallest_first() {
        let mut ids = Ids::default();
        assert_eq!((ids.take(), ids.take(), ids.take()), (0, 1, 2));
        ids.hold(1);
        assert!(!ids.release(1));
        assert!(ids.release(1));
        assert!(ids.release(0));
        assert_eq!(ids.take(), 0);
        assert_eq!(ids.take(), 1);
        assert_eq!(ids.take(), 3);
    }
}
