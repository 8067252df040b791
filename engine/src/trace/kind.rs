//! The calls a trace holds: one kind per replayed system call family, each with its
//! operands (a path id, a descriptor id, a mapping id, integers, at most one string).

/// What an operand of a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// A path id (`p` record), relative to the trace's tree.
    Path,
    /// A descriptor id: made by `open` or `dup`, given back by `close` or a release.
    Fd,
    /// A mapping id, made by `mmap`.
    Map,
    /// An integer (a size, an offset, flags, a mode).
    Int,
    /// A string (a symlink's target, an xattr's name).
    Text,
}

use Operand::{Fd, Int, Map, Path, Text};

macro_rules! kinds {
    ($($variant:ident $name:literal [$($op:ident),*]),* $(,)?) => {
        /// A replayed call.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Kind { $($variant),* }

        impl Kind {
            pub const ALL: &'static [Kind] = &[$(Kind::$variant),*];

            pub fn name(self) -> &'static str {
                match self { $(Kind::$variant => $name),* }
            }

            /// The operands of its record, in order.
            pub fn operands(self) -> &'static [Operand] {
                match self { $(Kind::$variant => &[$($op),*]),* }
            }

            pub fn from_name(s: &str) -> Option<Kind> {
                match s { $($name => Some(Kind::$variant),)* _ => None }
            }
        }
    };
}

kinds! {
    // open/openat/openat2/creat: path, flags, mode -> a descriptor id
    Open "open" [Path, Int, Int],
    Close "close" [Fd],
    // read: descriptor, size asked -> bytes read; readv: the iovecs' total length
    Read "read" [Fd, Int],
    Readv "readv" [Fd, Int],
    Pread "pread" [Fd, Int, Int],
    Preadv "preadv" [Fd, Int, Int],
    Write "write" [Fd, Int],
    Writev "writev" [Fd, Int],
    Pwrite "pwrite" [Fd, Int, Int],
    Pwritev "pwritev" [Fd, Int, Int],
    // descriptor, offset, whence -> the new offset
    Lseek "lseek" [Fd, Int, Int],
    Fsync "fsync" [Fd],
    Fdatasync "fdatasync" [Fd],
    // descriptor, offset, length, flags
    SyncFileRange "sync_file_range" [Fd, Int, Int, Int],
    Sync "sync" [],
    Syncfs "syncfs" [Fd],
    // path, mode
    Mkdir "mkdir" [Path, Int],
    Rmdir "rmdir" [Path],
    Unlink "unlink" [Path],
    // from, to, renameat2 flags
    Rename "rename" [Path, Path, Int],
    Link "link" [Path, Path],
    // target (as the program gave it), the link's path
    Symlink "symlink" [Text, Path],
    Truncate "truncate" [Path, Int],
    Ftruncate "ftruncate" [Fd, Int],
    // descriptor, mode, offset, length
    Fallocate "fallocate" [Fd, Int, Int, Int],
    // path, follow (1) or not (0): stat, lstat, newfstatat, statx
    Stat "stat" [Path, Int],
    Fstat "fstat" [Fd],
    // path, mode
    Access "access" [Path, Int],
    // path, buffer size -> bytes
    Readlink "readlink" [Path, Int],
    // directory descriptor, buffer size -> bytes
    Getdents "getdents" [Fd, Int],
    // path, follow, name, size
    Getxattr "getxattr" [Path, Int, Text, Int],
    Fgetxattr "fgetxattr" [Fd, Text, Int],
    // path, follow, name, size, flags
    Setxattr "setxattr" [Path, Int, Text, Int, Int],
    Fsetxattr "fsetxattr" [Fd, Text, Int, Int],
    // path, follow, size
    Listxattr "listxattr" [Path, Int, Int],
    Flistxattr "flistxattr" [Fd, Int],
    // path, follow, name
    Removexattr "removexattr" [Path, Int, Text],
    Fremovexattr "fremovexattr" [Fd, Text],
    // descriptor, length, prot, flags, offset -> a mapping id
    Mmap "mmap" [Fd, Int, Int, Int, Int],
    Munmap "munmap" [Map],
    // mapping, offset in it, length, flags
    Msync "msync" [Map, Int, Int, Int],
    // descriptor -> a new descriptor id (dup, dup2, dup3, fcntl F_DUPFD)
    Dup "dup" [Fd],
    // path, mode
    Chmod "chmod" [Path, Int],
    Fchmod "fchmod" [Fd, Int],
    // path, uid, gid, follow
    Chown "chown" [Path, Int, Int, Int],
    Fchown "fchown" [Fd, Int, Int],
    // path, follow: utimensat/utimes (the replay sets the current time)
    Utimes "utimes" [Path, Int],
    Futimes "futimes" [Fd],
}

impl Kind {
    /// Its result is a count of bytes moved (compared, and added to the kind's bytes).
    pub fn moves_bytes(self) -> bool {
        matches!(
            self,
            Kind::Read
                | Kind::Readv
                | Kind::Pread
                | Kind::Preadv
                | Kind::Write
                | Kind::Writev
                | Kind::Pwrite
                | Kind::Pwritev
                | Kind::Getdents
        )
    }

    /// Its successful result is a new id (descriptor or mapping), not a value to compare.
    pub fn makes_id(self) -> bool {
        matches!(self, Kind::Open | Kind::Dup | Kind::Mmap)
    }

    /// Its successful result is a value the replay must give back the same (bytes, an
    /// offset, a length); else success is 0.
    pub fn compares_value(self) -> bool {
        self.moves_bytes()
            || matches!(
                self,
                Kind::Lseek | Kind::Readlink | Kind::Getxattr | Kind::Fgetxattr
            )
            || matches!(self, Kind::Listxattr | Kind::Flistxattr)
    }

    pub fn writes_data(self) -> bool {
        matches!(
            self,
            Kind::Write | Kind::Writev | Kind::Pwrite | Kind::Pwritev
        )
    }

    /// The number of integer slots its record has (operands other than text).
    pub fn int_count(self) -> usize {
        self.operands().iter().filter(|o| **o != Text).count()
    }
}

/// The most operands of any kind other than its text.
pub const MAX_INTS: usize = 5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_fit() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_name(k.name()), Some(*k));
            assert!(k.int_count() <= MAX_INTS, "{k:?}");
            assert!(
                k.operands().iter().filter(|o| **o == Text).count() <= 1,
                "{k:?}"
            );
        }
        assert_eq!(Kind::from_name("frob"), None);
    }
}
