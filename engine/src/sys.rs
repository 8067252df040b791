//! Thin, allocation-free wrappers over the system calls the flowops make.
//!
//! Paths are relative to a directory fd (`*at` calls) and live in a reused [`CPath`].

use std::alloc::{self, Layout};
use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;
use std::ptr::NonNull;

use libc::{c_int, c_void};

#[inline]
fn cvt(r: c_int) -> io::Result<c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

#[inline]
fn cvt_size(r: isize) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// A NUL-terminated relative path in a buffer that is reused from op to op.
#[derive(Debug, Default, Clone)]
pub struct CPath {
    buf: Vec<u8>,
}

impl CPath {
    pub fn with_capacity(n: usize) -> Self {
        CPath {
            buf: Vec::with_capacity(n),
        }
    }

    pub fn clear(&mut self) {
        self.buf.clear();
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    pub fn push_u64(&mut self, mut v: u64) {
        let mut tmp = [0u8; 20];
        let mut i = tmp.len();
        loop {
            i -= 1;
            tmp[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.buf.extend_from_slice(&tmp[i..]);
    }

    /// The path so far, without the terminator.
    pub fn as_bytes(&self) -> &[u8] {
        match self.buf.last() {
            Some(0) => &self.buf[..self.buf.len() - 1],
            _ => &self.buf,
        }
    }

    pub fn terminate(&mut self) {
        if self.buf.last() != Some(&0) {
            self.buf.push(0);
        }
    }

    fn c_str(&self) -> io::Result<&CStr> {
        CStr::from_bytes_with_nul(&self.buf)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad path buffer"))
    }

    pub fn display(&self) -> String {
        String::from_utf8_lossy(self.as_bytes()).into_owned()
    }
}

pub fn openat(dir: RawFd, path: &CPath, flags: c_int, mode: u32) -> io::Result<RawFd> {
    let p = path.c_str()?;
    // SAFETY: p is a valid NUL-terminated string for the duration of the call.
    cvt(unsafe { libc::openat(dir, p.as_ptr(), flags | libc::O_CLOEXEC, mode) })
}

pub fn close(fd: RawFd) -> io::Result<()> {
    // SAFETY: the caller owns fd and never uses it again.
    cvt(unsafe { libc::close(fd) }).map(drop)
}

#[inline]
pub fn pread(fd: RawFd, buf: &mut [u8], off: u64) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of buf.len() bytes.
    cvt_size(unsafe { libc::pread(fd, buf.as_mut_ptr().cast::<c_void>(), buf.len(), off as i64) })
}

/// pwrite all of `buf` at `off` (retrying short writes); returns bytes written.
pub fn pwrite_all(fd: RawFd, mut buf: &[u8], mut off: u64) -> io::Result<u64> {
    let total = buf.len() as u64;
    while !buf.is_empty() {
        // SAFETY: buf is valid for reads of buf.len() bytes.
        let n = cvt_size(unsafe {
            libc::pwrite(fd, buf.as_ptr().cast::<c_void>(), buf.len(), off as i64)
        })?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "pwrite wrote 0 bytes",
            ));
        }
        buf = &buf[n..];
        off += n as u64;
    }
    Ok(total)
}

pub fn unlinkat(dir: RawFd, path: &CPath) -> io::Result<()> {
    let p = path.c_str()?;
    // SAFETY: valid NUL-terminated path.
    cvt(unsafe { libc::unlinkat(dir, p.as_ptr(), 0) }).map(drop)
}

pub fn renameat(dir: RawFd, from: &CPath, to: &CPath) -> io::Result<()> {
    let a = from.c_str()?;
    let b = to.c_str()?;
    // SAFETY: valid NUL-terminated paths.
    cvt(unsafe { libc::renameat(dir, a.as_ptr(), dir, b.as_ptr()) }).map(drop)
}

/// mkdirat; an existing directory is fine.
pub fn mkdirat(dir: RawFd, path: &CPath) -> io::Result<()> {
    let p = path.c_str()?;
    // SAFETY: valid NUL-terminated path.
    match cvt(unsafe { libc::mkdirat(dir, p.as_ptr(), 0o755) }) {
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
        r => r.map(drop),
    }
}

fn zeroed_stat() -> libc::stat {
    // SAFETY: libc::stat is plain old data; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

/// Size of the file at `path` (stat, following no symlink).
pub fn fstatat_size(dir: RawFd, path: &CPath) -> io::Result<u64> {
    let p = path.c_str()?;
    let mut st = zeroed_stat();
    // SAFETY: valid path, st is a valid out-pointer.
    cvt(unsafe { libc::fstatat(dir, p.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st.st_size as u64)
}

/// Size and allocated bytes (`st_blocks` * 512) of the file at `path`, not following a
/// symlink.
pub fn fstatat_alloc(dir: RawFd, path: &CPath) -> io::Result<(u64, u64)> {
    let p = path.c_str()?;
    let mut st = zeroed_stat();
    // SAFETY: valid path, st is a valid out-pointer.
    cvt(unsafe { libc::fstatat(dir, p.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok((st.st_size as u64, st.st_blocks as u64 * 512))
}

/// Allocated bytes (`st_blocks` * 512) of an open file.
pub fn fstat_alloc(fd: RawFd) -> io::Result<u64> {
    let mut st = zeroed_stat();
    // SAFETY: st is a valid out-pointer.
    cvt(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st.st_blocks as u64 * 512)
}

/// What statvfs says about a filesystem, in bytes (counts of `f_frsize` blocks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FsStat {
    /// The fundamental block size (`f_frsize`).
    pub block_size: u64,
    /// `f_blocks` * block size.
    pub total_bytes: u64,
    /// `f_bfree` * block size (free for root).
    pub free_bytes: u64,
    /// `f_bavail` * block size (free for everyone else).
    pub avail_bytes: u64,
    /// total - free: what fullness counts.
    pub used_bytes: u64,
    pub inodes: u64,
    pub inodes_free: u64,
}

impl FsStat {
    /// (f_blocks - f_bfree) / f_blocks.
    pub fn fullness(&self) -> f64 {
        if self.total_bytes == 0 {
            0.0
        } else {
            self.used_bytes as f64 / self.total_bytes as f64
        }
    }
}

pub fn fstatvfs(fd: RawFd) -> io::Result<FsStat> {
    // SAFETY: libc::statvfs is plain old data; all-zero is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: st is a valid out-pointer.
    cvt(unsafe { libc::fstatvfs(fd, &mut st) })?;
    let bs = if st.f_frsize > 0 {
        st.f_frsize as u64
    } else {
        st.f_bsize as u64
    };
    let blocks = st.f_blocks as u64;
    let bfree = (st.f_bfree as u64).min(blocks);
    Ok(FsStat {
        block_size: bs,
        total_bytes: blocks * bs,
        free_bytes: bfree * bs,
        avail_bytes: st.f_bavail as u64 * bs,
        used_bytes: (blocks - bfree) * bs,
        inodes: st.f_files as u64,
        inodes_free: st.f_ffree as u64,
    })
}

pub fn fstat_size(fd: RawFd) -> io::Result<u64> {
    let mut st = zeroed_stat();
    // SAFETY: st is a valid out-pointer.
    cvt(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st.st_size as u64)
}

pub fn lseek_end(fd: RawFd) -> io::Result<u64> {
    // SAFETY: plain syscall on an fd.
    let r = unsafe { libc::lseek(fd, 0, libc::SEEK_END) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as u64)
    }
}

pub fn fsync(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syscall on an fd.
    cvt(unsafe { libc::fsync(fd) }).map(drop)
}

pub fn fdatasync(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syscall on an fd.
    cvt(unsafe { libc::fdatasync(fd) }).map(drop)
}

pub fn syncfs(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syscall on an fd.
    cvt(unsafe { libc::syncfs(fd) }).map(drop)
}

/// Turn O_DIRECT on or off for an open fd.
pub fn set_direct(fd: RawFd, on: bool) -> io::Result<()> {
    // SAFETY: fcntl with integer arguments.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    let new = if on {
        flags | libc::O_DIRECT
    } else {
        flags & !libc::O_DIRECT
    };
    // SAFETY: as above.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, new) }).map(drop)
}

/// Count the entries of the directory at `path` (without `.` and `..`), reading it with
/// getdents64 into `buf` (no allocation).
pub fn count_dir_entries(dir: RawFd, path: &CPath, buf: &mut [u8]) -> io::Result<u64> {
    let fd = openat(dir, path, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    let r = count_entries_fd(fd, buf);
    let c = close(fd);
    let n = r?;
    c?;
    Ok(n)
}

fn count_entries_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<u64> {
    let mut count = 0u64;
    loop {
        // SAFETY: buf is valid for writes of buf.len() bytes.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                fd,
                buf.as_mut_ptr().cast::<c_void>(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        if n == 0 {
            return Ok(count);
        }
        // struct linux_dirent64 { u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
        let mut pos = 0;
        while pos + 19 < n {
            let reclen = u16::from_ne_bytes([buf[pos + 16], buf[pos + 17]]) as usize;
            if reclen == 0 {
                break;
            }
            let name = &buf[pos + 19..(pos + reclen).min(n)];
            let is_dot = name.starts_with(b".\0") || name.starts_with(b"..\0");
            if !is_dot {
                count += 1;
            }
            pos += reclen;
        }
    }
}

/// User and system CPU seconds of this process so far, all its threads (live or ended).
/// Give the calling thread a descriptor table of its own (a copy of the one it shared).
pub fn unshare_files() -> io::Result<()> {
    // SAFETY: unshare takes flags only; CLONE_FILES affects the calling thread alone.
    cvt(unsafe { libc::unshare(libc::CLONE_FILES) }).map(|_| ())
}

pub fn cpu_self() -> (f64, f64) {
    // SAFETY: libc::rusage is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid out-pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

/// `echo 3 > /proc/sys/vm/drop_caches`.
pub fn drop_caches() -> io::Result<()> {
    std::fs::write("/proc/sys/vm/drop_caches", b"3")
}

/// Total memory in bytes, from /proc/meminfo.
pub fn mem_total() -> io::Result<u64> {
    let text = std::fs::read_to_string("/proc/meminfo")?;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("MemTotal:") {
            let kib: u64 = rest
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad MemTotal line"))?;
            return Ok(kib * 1024);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        "no MemTotal in /proc/meminfo",
    ))
}

/// A heap buffer aligned for O_DIRECT.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out &[u8].
unsafe impl Sync for AlignedBuf {}

pub const BUF_ALIGN: usize = 4096;

impl AlignedBuf {
    pub fn new(len: usize) -> Self {
        let len = len.max(BUF_ALIGN).next_multiple_of(BUF_ALIGN);
        let layout = match Layout::from_size_align(len, BUF_ALIGN) {
            Ok(l) => l,
            Err(_) => panic!("buffer of {len} bytes is too large"),
        };
        // SAFETY: layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        AlignedBuf { ptr, layout }
    }

    pub fn len(&self) -> usize {
        self.layout.size()
    }

    pub fn is_empty(&self) -> bool {
        self.layout.size() == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for layout.size() initialized bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() bytes and uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in new().
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpath_builds_paths() {
        let mut p = CPath::with_capacity(8);
        p.push(b"d");
        p.push_u64(0);
        p.push(b"/f");
        p.push_u64(18446744073709551615);
        p.terminate();
        p.terminate();
        assert_eq!(p.display(), "d0/f18446744073709551615");
        assert!(p.c_str().is_ok());
    }

    #[test]
    fn aligned_buffer() {
        let mut b = AlignedBuf::new(100);
        assert_eq!(b.len(), 4096);
        assert_eq!(b.as_slice().as_ptr() as usize % BUF_ALIGN, 0);
        b.as_mut_slice()[4095] = 1;
        assert_eq!(b.as_slice()[4095], 1);
    }

    #[test]
    fn statvfs_of_var_tmp() {
        let f = std::fs::File::open("/var/tmp").expect("open /var/tmp");
        let st = fstatvfs(std::os::fd::AsRawFd::as_raw_fd(&f)).expect("statvfs");
        assert!(st.block_size >= 512 && st.total_bytes > 0);
        assert_eq!(st.used_bytes + st.free_bytes, st.total_bytes);
        assert!((0.0..=1.0).contains(&st.fullness()));
    }

    #[test]
    fn meminfo_reads() {
        assert!(mem_total().expect("meminfo") > 1 << 20);
    }
}
