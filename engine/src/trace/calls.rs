//! The system calls a replay makes: one per recorded call, on paths relative to the
//! replay's directory (`*at` calls on its descriptor) and on the real descriptors
//! behind the trace's ids. Each returns the call's result, or -errno.

use std::ffi::CString;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;

use libc::{c_int, c_void};

use crate::sys::AlignedBuf;
use crate::trace::kind::Kind;
use crate::trace::replay::{Op, Tables, filled};

/// The largest buffer of one call; a larger recorded size is cut to it.
pub const MAX_IO: usize = 256 << 20;

/// A replay thread's buffers: one to read into, one of the synthetic fill to write from.
#[derive(Default)]
pub struct Buffers {
    read: Option<AlignedBuf>,
    write: Option<AlignedBuf>,
    path: Vec<u8>,
}

impl Buffers {
    /// The absolute path of `rel` under the replay's directory, for the calls that have
    /// no `*at` form (truncate, the xattr calls).
    fn absolute(
        &mut self,
        root: &[u8],
        rel: Option<&std::sync::Arc<CString>>,
    ) -> *const libc::c_char {
        self.path.clear();
        self.path.extend_from_slice(root);
        if let Some(r) = rel {
            self.path.push(b'/');
            self.path.extend_from_slice(r.as_bytes());
        }
        self.path.push(0);
        self.path.as_ptr().cast()
    }

    fn read(&mut self, len: usize) -> &mut [u8] {
        let len = len.min(MAX_IO);
        if self.read.as_ref().is_none_or(|b| b.len() < len) {
            self.read = Some(AlignedBuf::new(len.max(1 << 16)));
        }
        match self.read.as_mut() {
            Some(b) => &mut b.as_mut_slice()[..len],
            None => &mut [],
        }
    }

    fn write(&mut self, len: usize) -> &[u8] {
        let len = len.min(MAX_IO);
        if self.write.as_ref().is_none_or(|b| b.len() < len) {
            self.write = Some(filled(len.max(1 << 16)));
        }
        match self.write.as_ref() {
            Some(b) => &b.as_slice()[..len],
            None => &[],
        }
    }
}

#[inline]
/// The one buffer of a vectored call (readv, preadv, writev, pwritev): the trace records
/// its total size, replayed as a single iovec.
fn one_iovec(base: *mut u8, len: usize) -> libc::iovec {
    libc::iovec {
        iov_base: base.cast::<c_void>(),
        iov_len: len,
    }
}

fn ret(r: i64) -> i64 {
    if r < 0 {
        -i64::from(
            io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        )
    } else {
        r
    }
}

const NUL: &std::ffi::CStr = c"";

fn fd_of(t: &Tables, id: i64) -> RawFd {
    t.fds
        .get(id as usize)
        .map_or(-1, |a| a.load(Ordering::Acquire))
}

/// A descriptor the replay opened (`r`, or -errno) kept under the id the recording gave
/// its result, closing one an earlier call left there; closed at once when the recorded
/// call failed (nothing of the trace refers to it). Gives back `r`.
fn bind(t: &Tables, recorded: i64, r: i64) -> i64 {
    if r >= 0 {
        // SAFETY: the descriptors closed are the replay's own, each held in one place.
        unsafe {
            if recorded >= 0 {
                let old = t.fds[recorded as usize].swap(r as c_int, Ordering::AcqRel);
                if old >= 0 {
                    libc::close(old);
                }
            } else {
                libc::close(r as c_int);
            }
        }
    }
    r
}

/// A copy in the kernel (copy_file_range, sendfile) until it has moved the bytes the
/// recording's call moved: the kernel may copy less per call on another filesystem (xfs
/// shares whole blocks first), where the program would have called again. `call` gets
/// the bytes still to move; the offsets it passes by pointer move with each call.
fn whole_copy(recorded: i64, asked: i64, mut call: impl FnMut(usize) -> i64) -> i64 {
    if recorded <= 0 {
        return ret(call(asked.max(0) as usize));
    }
    let mut moved = 0;
    while moved < recorded {
        let r = ret(call((recorded - moved) as usize));
        if r <= 0 {
            return if moved > 0 { moved } else { r };
        }
        moved += r;
    }
    moved
}

/// An offset passed by pointer: -1 (recorded as NULL) is the descriptor's own offset.
fn offset_ptr(off: &mut i64) -> *mut i64 {
    if *off >= 0 { off } else { std::ptr::null_mut() }
}

fn follow(flag: i64) -> c_int {
    if flag != 0 {
        0
    } else {
        libc::AT_SYMLINK_NOFOLLOW
    }
}

/// Make the call `op` and give back its result (or -errno).
pub fn execute(op: &Op, t: &Tables, b: &mut Buffers) -> i64 {
    let n = &op.ints;
    let root = t.root;
    let p = op.path.as_ref().map_or(NUL.as_ptr(), |c| c.as_ptr());
    let p2 = op.path2.as_ref().map_or(NUL.as_ptr(), |c| c.as_ptr());
    let text = op.text.as_ref().map_or(NUL.as_ptr(), |c| c.as_ptr());
    let fd = || fd_of(t, n[0]);
    let size = |i: usize| n[i].clamp(0, MAX_IO as i64) as usize;
    // SAFETY (every call below): paths and names are NUL-terminated strings that live
    // through the call; buffers are valid for the lengths given; descriptors are the
    // replay's own (a stale or -1 one only makes the call fail with EBADF).
    unsafe {
        match op.kind {
            Kind::Open => {
                let r = libc::openat(
                    root,
                    p,
                    n[1] as c_int | libc::O_CLOEXEC,
                    n[2] as libc::c_uint,
                );
                bind(t, op.result, ret(i64::from(r)))
            }
            Kind::Close => {
                let real = t.fds[n[0] as usize].swap(-1, Ordering::AcqRel);
                ret(i64::from(libc::close(real)))
            }
            Kind::Read => {
                let buf = b.read(size(1));
                ret(libc::read(fd(), buf.as_mut_ptr().cast::<c_void>(), buf.len()) as i64)
            }
            Kind::Readv => {
                let buf = b.read(size(1));
                let iov = one_iovec(buf.as_mut_ptr(), buf.len());
                ret(libc::readv(fd(), &iov, 1) as i64)
            }
            Kind::Pread => {
                let buf = b.read(size(1));
                ret(libc::pread(fd(), buf.as_mut_ptr().cast::<c_void>(), buf.len(), n[2]) as i64)
            }
            Kind::Preadv => {
                let buf = b.read(size(1));
                let iov = one_iovec(buf.as_mut_ptr(), buf.len());
                ret(libc::preadv(fd(), &iov, 1, n[2]) as i64)
            }
            Kind::Write => {
                let buf = b.write(size(1));
                ret(libc::write(fd(), buf.as_ptr().cast::<c_void>(), buf.len()) as i64)
            }
            Kind::Writev => {
                let buf = b.write(size(1));
                let iov = one_iovec(buf.as_ptr().cast_mut(), buf.len());
                ret(libc::writev(fd(), &iov, 1) as i64)
            }
            Kind::Pwrite => {
                let buf = b.write(size(1));
                ret(libc::pwrite(fd(), buf.as_ptr().cast::<c_void>(), buf.len(), n[2]) as i64)
            }
            Kind::Pwritev => {
                let buf = b.write(size(1));
                let iov = one_iovec(buf.as_ptr().cast_mut(), buf.len());
                ret(libc::pwritev(fd(), &iov, 1, n[2]) as i64)
            }
            Kind::CopyFileRange => {
                let (mut from_off, mut to_off) = (n[1], n[3]);
                whole_copy(op.result, n[4], |left| {
                    libc::copy_file_range(
                        fd(),
                        offset_ptr(&mut from_off),
                        fd_of(t, n[2]),
                        offset_ptr(&mut to_off),
                        left,
                        0,
                    ) as i64
                })
            }
            Kind::Sendfile => {
                let mut from_off = n[2];
                whole_copy(op.result, n[3], |left| {
                    libc::sendfile(fd(), fd_of(t, n[1]), offset_ptr(&mut from_off), left) as i64
                })
            }
            Kind::Lseek => ret(libc::lseek(fd(), n[1], n[2] as c_int)),
            Kind::Fsync => ret(i64::from(libc::fsync(fd()))),
            Kind::Fdatasync => ret(i64::from(libc::fdatasync(fd()))),
            Kind::SyncFileRange => ret(i64::from(libc::sync_file_range(
                fd(),
                n[1],
                n[2],
                n[3] as libc::c_uint,
            ))),
            Kind::Sync => {
                libc::sync();
                0
            }
            Kind::Syncfs => ret(i64::from(libc::syncfs(fd()))),
            Kind::Mkdir => ret(i64::from(libc::mkdirat(root, p, n[1] as libc::mode_t))),
            Kind::Rmdir => ret(i64::from(libc::unlinkat(root, p, libc::AT_REMOVEDIR))),
            Kind::Unlink => ret(i64::from(libc::unlinkat(root, p, 0))),
            Kind::Rename => ret(libc::syscall(
                libc::SYS_renameat2,
                root,
                p,
                root,
                p2,
                n[2] as libc::c_uint,
            )),
            Kind::Link => ret(i64::from(libc::linkat(root, p, root, p2, 0))),
            Kind::Symlink => ret(i64::from(libc::symlinkat(text, root, p))),
            Kind::Truncate => {
                let a = b.absolute(&t.root_path, op.path.as_ref());
                ret(i64::from(libc::truncate(a, n[1])))
            }
            Kind::Ftruncate => ret(i64::from(libc::ftruncate(fd(), n[1]))),
            Kind::Fallocate => ret(i64::from(libc::fallocate(fd(), n[1] as c_int, n[2], n[3]))),
            // the kernel fills the stat buffer and nothing reads it: not zeroed first
            Kind::Stat => {
                let mut st = MaybeUninit::<libc::stat>::uninit();
                ret(i64::from(libc::fstatat(
                    root,
                    p,
                    st.as_mut_ptr(),
                    follow(n[1]),
                )))
            }
            Kind::Fstat => {
                let mut st = MaybeUninit::<libc::stat>::uninit();
                ret(i64::from(libc::fstat(fd(), st.as_mut_ptr())))
            }
            Kind::Access => ret(i64::from(libc::faccessat(root, p, n[1] as c_int, 0))),
            Kind::Readlink => {
                let buf = b.read(size(1));
                ret(libc::readlinkat(root, p, buf.as_mut_ptr().cast(), buf.len()) as i64)
            }
            Kind::Getdents => {
                let buf = b.read(size(1));
                ret(libc::syscall(
                    libc::SYS_getdents64,
                    fd(),
                    buf.as_mut_ptr().cast::<c_void>(),
                    buf.len(),
                ))
            }
            Kind::Getxattr => {
                let p = b.absolute(&t.root_path, op.path.as_ref());
                let buf = b.read(size(2));
                let (ptr, len) = (buf.as_mut_ptr().cast::<c_void>(), buf.len());
                ret(if n[1] != 0 {
                    libc::getxattr(p, text, ptr, len)
                } else {
                    libc::lgetxattr(p, text, ptr, len)
                } as i64)
            }
            Kind::Fgetxattr => {
                let buf = b.read(size(1));
                ret(libc::fgetxattr(fd(), text, buf.as_mut_ptr().cast(), buf.len()) as i64)
            }
            Kind::Setxattr => {
                let p = b.absolute(&t.root_path, op.path.as_ref());
                let buf = b.write(size(2));
                let (ptr, len) = (buf.as_ptr().cast::<c_void>(), buf.len());
                ret(i64::from(if n[1] != 0 {
                    libc::setxattr(p, text, ptr, len, n[3] as c_int)
                } else {
                    libc::lsetxattr(p, text, ptr, len, n[3] as c_int)
                }))
            }
            Kind::Fsetxattr => {
                let buf = b.write(size(1));
                ret(i64::from(libc::fsetxattr(
                    fd(),
                    text,
                    buf.as_ptr().cast(),
                    buf.len(),
                    n[2] as c_int,
                )))
            }
            Kind::Listxattr => {
                let p = b.absolute(&t.root_path, op.path.as_ref());
                let buf = b.read(size(2));
                let (ptr, len) = (buf.as_mut_ptr().cast(), buf.len());
                ret(if n[1] != 0 {
                    libc::listxattr(p, ptr, len)
                } else {
                    libc::llistxattr(p, ptr, len)
                } as i64)
            }
            Kind::Flistxattr => {
                let buf = b.read(size(1));
                ret(libc::flistxattr(fd(), buf.as_mut_ptr().cast(), buf.len()) as i64)
            }
            Kind::Removexattr => ret(i64::from(if n[1] != 0 {
                let p = b.absolute(&t.root_path, op.path.as_ref());
                libc::removexattr(p, text)
            } else {
                let p = b.absolute(&t.root_path, op.path.as_ref());
                libc::lremovexattr(p, text)
            })),
            Kind::Fremovexattr => ret(i64::from(libc::fremovexattr(fd(), text))),
            Kind::Mmap => {
                let flags = n[3] as c_int & !(libc::MAP_FIXED | libc::MAP_FIXED_NOREPLACE);
                let len = n[1].max(0) as usize;
                let addr = libc::mmap(std::ptr::null_mut(), len, n[2] as c_int, flags, fd(), n[4]);
                if addr == libc::MAP_FAILED {
                    return ret(-1);
                }
                if op.result >= 0 {
                    let slot = &t.maps[op.result as usize];
                    slot.0.store(addr as usize, Ordering::Release);
                    slot.1.store(len, Ordering::Release);
                } else {
                    libc::munmap(addr, len);
                }
                0
            }
            Kind::Munmap => {
                let slot = &t.maps[n[0] as usize];
                let addr = slot.0.swap(0, Ordering::AcqRel);
                let len = slot.1.load(Ordering::Acquire);
                if addr == 0 {
                    return -i64::from(libc::EINVAL);
                }
                ret(i64::from(libc::munmap(addr as *mut c_void, len)))
            }
            Kind::Msync => {
                let slot = &t.maps[n[0] as usize];
                let addr = slot.0.load(Ordering::Acquire);
                let len = slot.1.load(Ordering::Acquire);
                let off = (n[1].max(0) as usize).min(len);
                if addr == 0 {
                    return -i64::from(libc::EINVAL);
                }
                let span = (n[2].max(0) as usize).min(len - off);
                ret(i64::from(libc::msync(
                    (addr + off) as *mut c_void,
                    span,
                    n[3] as c_int,
                )))
            }
            Kind::Dup => {
                let r = libc::fcntl(fd(), libc::F_DUPFD_CLOEXEC, 0);
                bind(t, op.result, ret(i64::from(r)))
            }
            Kind::Chmod => ret(i64::from(libc::fchmodat(root, p, n[1] as libc::mode_t, 0))),
            Kind::Fchmod => ret(i64::from(libc::fchmod(fd(), n[1] as libc::mode_t))),
            Kind::Chown => ret(i64::from(libc::fchownat(
                root,
                p,
                n[1] as libc::uid_t,
                n[2] as libc::gid_t,
                follow(n[3]),
            ))),
            Kind::Fchown => ret(i64::from(libc::fchown(
                fd(),
                n[1] as libc::uid_t,
                n[2] as libc::gid_t,
            ))),
            Kind::Utimes => ret(i64::from(libc::utimensat(
                root,
                p,
                std::ptr::null(),
                follow(n[1]),
            ))),
            Kind::Futimes => ret(i64::from(libc::futimens(fd(), std::ptr::null()))),
        }
    }
}

fn cvt(r: c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

pub fn mkdirat(dir: RawFd, p: &CString, mode: u32) -> io::Result<()> {
    // SAFETY: a valid NUL-terminated path.
    cvt(unsafe { libc::mkdirat(dir, p.as_ptr(), mode) })
}

pub fn symlinkat(target: &CString, dir: RawFd, p: &CString) -> io::Result<()> {
    // SAFETY: valid NUL-terminated strings.
    cvt(unsafe { libc::symlinkat(target.as_ptr(), dir, p.as_ptr()) })
}

pub fn chmodat(dir: RawFd, p: &CString, mode: u32) -> io::Result<()> {
    // SAFETY: a valid NUL-terminated path.
    cvt(unsafe { libc::fchmodat(dir, p.as_ptr(), mode, 0) })
}

/// A file of `size` bytes of `fill` (repeated), with `mode`.
pub fn make_file(dir: RawFd, p: &CString, size: u64, mode: u32, fill: &[u8]) -> io::Result<()> {
    // SAFETY: a valid NUL-terminated path.
    let fd = unsafe {
        libc::openat(
            dir,
            p.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut at = 0u64;
    let mut r = Ok(());
    while at < size {
        let n = (size - at).min(fill.len() as u64) as usize;
        match crate::sys::pwrite_all(fd, &fill[..n], at) {
            Ok(_) => at += n as u64,
            Err(e) => {
                r = Err(e);
                break;
            }
        }
    }
    // SAFETY: fd is ours.
    if r.is_ok() {
        r = cvt(unsafe { libc::fchmod(fd, mode) });
    }
    // SAFETY: fd is ours, closed once.
    unsafe { libc::close(fd) };
    r
}

/// Write recorded contents into a starting-tree file.
pub fn write_at(dir: RawFd, p: &CString, offset: u64, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: a valid NUL-terminated path.
    let fd = unsafe { libc::openat(dir, p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let r = crate::sys::pwrite_all(fd, bytes, offset).map(drop);
    // SAFETY: fd is ours, closed once.
    unsafe { libc::close(fd) };
    r
}
