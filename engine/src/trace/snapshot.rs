//! The tree before the command runs: every entry under the root (path, type, size,
//! mode, a symlink's target), and with `--with-data` every regular file's contents. The
//! importer keeps, of it, what the command touched (the trace's starting tree).
//!
//! The file is gzip'd lines `PATH TYPE SIZE MODE TARGET|- DATA_OFFSET|-` (tab-separated,
//! PATH escaped as in a trace); the contents, when taken, are in `FILE.data`, one file
//! after another.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use crate::error::{Error, Result};
use crate::trace::format::{EntryType, escape, unescape};

/// One entry of the tree as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryType,
    pub size: u64,
    pub mode: u32,
    pub target: Option<Vec<u8>>,
    /// Where its contents start in the data file, when taken.
    pub data_offset: Option<u64>,
}

pub fn data_path(snapshot: &Path) -> PathBuf {
    let mut p = snapshot.as_os_str().to_owned();
    p.push(".data");
    PathBuf::from(p)
}

fn io_err(what: &str, p: &Path, e: std::io::Error) -> Error {
    Error::runtime(format!("{what} {}: {e}", p.display()))
}

/// Walk `root` (symlinks not followed, other filesystems' mounts included), write the
/// snapshot to `out`; returns the number of entries.
pub fn take(root: &Path, out: &Path, with_data: bool) -> Result<u64> {
    let file = File::create(out).map_err(|e| io_err("create", out, e))?;
    let mut w = GzEncoder::new(BufWriter::new(file), Compression::fast());
    let mut data = if with_data {
        let p = data_path(out);
        Some((
            BufWriter::new(File::create(&p).map_err(|e| io_err("create", &p, e))?),
            0u64,
        ))
    } else {
        None
    };
    let mut count = 0u64;
    let mut stack: Vec<(PathBuf, Vec<u8>)> = vec![(root.to_path_buf(), b".".to_vec())];
    let mut line = Vec::with_capacity(256);
    while let Some((abs, rel)) = stack.pop() {
        let meta = fs::symlink_metadata(&abs).map_err(|e| io_err("stat", &abs, e))?;
        let ft = meta.file_type();
        let kind = if ft.is_dir() {
            EntryType::Dir
        } else if ft.is_file() {
            EntryType::File
        } else if ft.is_symlink() {
            EntryType::Symlink
        } else {
            continue; // devices, fifos, sockets: never made by the replay
        };
        let target = if kind == EntryType::Symlink {
            Some(
                fs::read_link(&abs)
                    .map_err(|e| io_err("readlink", &abs, e))?
                    .as_os_str()
                    .as_bytes()
                    .to_vec(),
            )
        } else {
            None
        };
        let mut offset = None;
        if let (EntryType::File, Some((dw, at))) = (kind, data.as_mut()) {
            let mut f = File::open(&abs).map_err(|e| io_err("open", &abs, e))?;
            let n = std::io::copy(&mut f, dw).map_err(|e| io_err("copy", &abs, e))?;
            offset = Some(*at);
            *at += n;
        }
        line.clear();
        escape(&rel, &mut line);
        let size = if kind == EntryType::Dir {
            0
        } else {
            meta.len()
        };
        let _ = write!(
            line,
            "\t{}\t{size}\t{:o}\t",
            kind.code(),
            meta.permissions().mode() & 0o7777
        );
        match &target {
            Some(t) => escape(t, &mut line),
            None => line.push(b'-'),
        }
        match offset {
            Some(o) => {
                let _ = write!(line, "\t{o}");
            }
            None => line.extend_from_slice(b"\t-"),
        }
        line.push(b'\n');
        w.write_all(&line).map_err(|e| io_err("write", out, e))?;
        count += 1;
        let _ = meta.uid();
        if kind == EntryType::Dir {
            let mut names: Vec<_> = fs::read_dir(&abs)
                .map_err(|e| io_err("read directory", &abs, e))?
                .filter_map(|d| d.ok().map(|d| d.file_name()))
                .collect();
            names.sort();
            for name in names.into_iter().rev() {
                let mut r = if rel == b"." { Vec::new() } else { rel.clone() };
                if !r.is_empty() {
                    r.push(b'/');
                }
                r.extend_from_slice(name.as_bytes());
                stack.push((abs.join(&name), r));
            }
        }
    }
    w.finish()
        .and_then(|mut b| b.flush())
        .map_err(|e| io_err("write", out, e))?;
    if let Some((mut dw, _)) = data {
        dw.flush().map_err(|e| io_err("write", out, e))?;
    }
    Ok(count)
}

/// Read a snapshot back: relative path -> entry.
pub fn load(path: &Path) -> Result<HashMap<Vec<u8>, Entry>> {
    let file = File::open(path)
        .map_err(|e| Error::input(format!("read snapshot {}: {e}", path.display())))?;
    let mut input = BufReader::new(MultiGzDecoder::new(file));
    let mut map = HashMap::new();
    let mut line = Vec::new();
    let bad = || Error::input(format!("snapshot {} is corrupt", path.display()));
    loop {
        line.clear();
        let n = input.read_until(b'\n', &mut line).map_err(|_| bad())?;
        if n == 0 {
            break;
        }
        if line.pop() != Some(b'\n') {
            return Err(bad());
        }
        let f: Vec<&[u8]> = line.split(|b| *b == b'\t').collect();
        let [p, kind, size, mode, target, offset] = f[..] else {
            return Err(bad());
        };
        let num = |s: &[u8], radix: u32| {
            std::str::from_utf8(s)
                .ok()
                .and_then(|s| u64::from_str_radix(s, radix).ok())
        };
        let kind = match kind {
            b"f" => EntryType::File,
            b"d" => EntryType::Dir,
            b"l" => EntryType::Symlink,
            _ => return Err(bad()),
        };
        map.insert(
            unescape(p).ok_or_else(bad)?,
            Entry {
                kind,
                size: num(size, 10).ok_or_else(bad)?,
                mode: num(mode, 8).ok_or_else(bad)? as u32,
                target: if target == b"-" {
                    None
                } else {
                    Some(unescape(target).ok_or_else(bad)?)
                },
                data_offset: if offset == b"-" {
                    None
                } else {
                    Some(num(offset, 10).ok_or_else(bad)?)
                },
            },
        );
    }
    Ok(map)
}

/// Read `len` bytes of the contents at `offset` of the snapshot's data file.
pub fn read_data(data: &mut File, offset: u64, buf: &mut Vec<u8>, len: usize) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    buf.resize(len, 0);
    data.seek(SeekFrom::Start(offset))
        .and_then(|_| data.read_exact(buf))
        .map_err(|e| Error::runtime(format!("read snapshot data: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_and_loads_a_tree() {
        let dir = std::env::temp_dir().join(format!("fsbench-snap-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("root/a")).expect("mkdir");
        fs::write(dir.join("root/a/f"), b"hello").expect("write");
        std::os::unix::fs::symlink("a/f", dir.join("root/l")).expect("symlink");
        let snap = dir.join("snap.gz");
        assert_eq!(take(&dir.join("root"), &snap, true).expect("take"), 4);
        let map = load(&snap).expect("load");
        assert_eq!(map[&b"."[..]].kind, EntryType::Dir);
        let f = &map[&b"a/f"[..]];
        assert_eq!((f.kind, f.size), (EntryType::File, 5));
        assert_eq!(map[&b"l"[..]].target.as_deref(), Some(&b"a/f"[..]));
        let mut data = File::open(data_path(&snap)).expect("data");
        let mut buf = Vec::new();
        read_data(&mut data, f.data_offset.expect("taken"), &mut buf, 5).expect("read");
        assert_eq!(buf, b"hello");
        fs::remove_dir_all(&dir).expect("clean");
    }
}
