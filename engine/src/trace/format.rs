//! The trace file (version 2; version 1 had no `w` lines): a gzip stream of lines, one
//! record each, fields separated by tabs. docs/replay.md describes it for people; this
//! module writes and reads it.
//!
//! ```text
//! fsbench-trace  2  {header JSON}                 first line
//! p  ID  PARENT  PATH                             a path, relative to the tree ("." is its root)
//! n  TID  PARENT_TID|-  DT                        a thread starts (a process: its first thread)
//! c  TID  DT  DUR  SKIP  KIND  RESULT  OPERANDS   a call
//! r  TID  FD                                      the original released a descriptor implicitly
//! w  TID  DT  DUR                                 a thread waited for another (futex)
//! x  TID  DT                                      a thread ended
//! t  PATH  TYPE  SIZE  MODE  [TARGET]             the starting tree: an entry as it was
//! d  PATH  OFFSET  HEX                            its contents (recorded --with-data)
//! u  WHAT  COUNT                                  what was seen and not recorded
//! end  CALLS  PATHS  THREADS                      the trailer: the trace is complete
//! ```
//!
//! DT is nanoseconds since the previous timed record (`n`, `c`, `w`, `x`), which may be
//! negative (a call is written when it ends, at its start time); DUR and SKIP (traced
//! calls of the thread that are not in the trace, since its previous call) as written by
//! the importer. Strings are bytes, with `\\`, tab, newline and other control bytes
//! written `\xHH`.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path as FsPath;

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use crate::error::{Error, Result};
use crate::trace::kind::{Kind, MAX_INTS, Operand};

pub const MAGIC: &str = "fsbench-trace";
/// The version this engine writes; it reads this one and version 1 (no waits).
pub const VERSION: u32 = 2;
const READS: [&str; 2] = ["1", "2"];

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub tid: u32,
    /// Nanoseconds since the trace's start.
    pub start_ns: i64,
    pub dur_ns: u64,
    /// Traced calls of this thread that are not in the trace since its previous call
    /// (outside the tree, not replayed): their tracer overhead is in the gap before it.
    pub skipped: u32,
    pub kind: Kind,
    /// The original's result: >= 0, or -errno. For open, dup and mmap the new id.
    pub result: i64,
    /// The integer operands in order (ids included), the rest 0.
    pub ints: [i64; MAX_INTS],
    pub text: Option<Vec<u8>>,
}

/// A starting tree entry's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryType {
    File,
    Dir,
    Symlink,
}

impl EntryType {
    pub fn code(self) -> &'static str {
        match self {
            EntryType::File => "f",
            EntryType::Dir => "d",
            EntryType::Symlink => "l",
        }
    }

    fn parse(s: &[u8]) -> Option<Self> {
        match s {
            b"f" => Some(EntryType::File),
            b"d" => Some(EntryType::Dir),
            b"l" => Some(EntryType::Symlink),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Path {
        id: u32,
        parent: u32,
        path: Vec<u8>,
    },
    Thread {
        tid: u32,
        parent: Option<u32>,
        at_ns: i64,
    },
    Call(Call),
    Release {
        tid: u32,
        fd: u32,
    },
    /// The thread was blocked from `start_ns` for `dur_ns` in a call that waits for
    /// another thread of its process (a futex wait): not replayed, and not think time.
    Wait {
        tid: u32,
        start_ns: i64,
        dur_ns: u64,
    },
    Exit {
        tid: u32,
        at_ns: i64,
    },
    Tree {
        path: u32,
        kind: EntryType,
        size: u64,
        mode: u32,
        target: Option<Vec<u8>>,
    },
    Data {
        path: u32,
        offset: u64,
        bytes: Vec<u8>,
    },
    Unrecorded {
        what: String,
        count: u64,
    },
}

/// What the trailer counts, checked against what was read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub calls: u64,
    pub paths: u64,
    pub threads: u64,
}

pub fn escape(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        if b < 0x20 || b == 0x7f || b == b'\\' {
            out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
        } else {
            out.push(b);
        }
    }
}

pub fn unescape(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\\' {
            if s.get(i + 1) != Some(&b'x') || i + 4 > s.len() {
                return None;
            }
            let hex = std::str::from_utf8(&s[i + 2..i + 4]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 4;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Writes a trace, streaming; [`TraceWriter::finish`] writes the trailer.
pub struct TraceWriter {
    out: GzEncoder<BufWriter<File>>,
    line: Vec<u8>,
    last_ns: i64,
    counts: Counts,
}

impl TraceWriter {
    pub fn create(path: &FsPath, header: &serde_json::Value) -> Result<Self> {
        let file = File::create(path)
            .map_err(|e| Error::runtime(format!("create {}: {e}", path.display())))?;
        let mut w = TraceWriter {
            out: GzEncoder::new(BufWriter::with_capacity(1 << 20, file), Compression::fast()),
            line: Vec::with_capacity(256),
            last_ns: 0,
            counts: Counts::default(),
        };
        let head = format!("{MAGIC}\t{VERSION}\t{header}\n");
        w.put(head.as_bytes())?;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.out
            .write_all(bytes)
            .map_err(|e| Error::runtime(format!("write trace: {e}")))
    }

    fn delta(&mut self, at_ns: i64) -> i64 {
        let d = at_ns - self.last_ns;
        self.last_ns = at_ns;
        d
    }

    fn flush_line(&mut self) -> Result<()> {
        self.line.push(b'\n');
        let line = std::mem::take(&mut self.line);
        let r = self.put(&line);
        self.line = line;
        self.line.clear();
        r
    }

    pub fn write(&mut self, rec: &Record) -> Result<()> {
        use std::io::Write as _;
        self.line.clear();
        match rec {
            Record::Path { id, parent, path } => {
                let _ = write!(self.line, "p\t{id}\t{parent}\t");
                escape(path, &mut self.line);
                self.counts.paths += 1;
            }
            Record::Thread { tid, parent, at_ns } => {
                let dt = self.delta(*at_ns);
                match parent {
                    Some(p) => {
                        let _ = write!(self.line, "n\t{tid}\t{p}\t{dt}");
                    }
                    None => {
                        let _ = write!(self.line, "n\t{tid}\t-\t{dt}");
                    }
                }
                self.counts.threads += 1;
            }
            Record::Call(c) => {
                let dt = self.delta(c.start_ns);
                let _ = write!(
                    self.line,
                    "c\t{}\t{dt}\t{}\t{}\t{}\t{}",
                    c.tid,
                    c.dur_ns,
                    c.skipped,
                    c.kind.name(),
                    c.result
                );
                let mut ints = c.ints.iter();
                for op in c.kind.operands() {
                    self.line.push(b'\t');
                    if *op == Operand::Text {
                        escape(c.text.as_deref().unwrap_or_default(), &mut self.line);
                    } else {
                        let _ = write!(self.line, "{}", ints.next().copied().unwrap_or(0));
                    }
                }
                self.counts.calls += 1;
            }
            Record::Release { tid, fd } => {
                let _ = write!(self.line, "r\t{tid}\t{fd}");
            }
            Record::Wait {
                tid,
                start_ns,
                dur_ns,
            } => {
                let dt = self.delta(*start_ns);
                let _ = write!(self.line, "w\t{tid}\t{dt}\t{dur_ns}");
            }
            Record::Exit { tid, at_ns } => {
                let dt = self.delta(*at_ns);
                let _ = write!(self.line, "x\t{tid}\t{dt}");
            }
            Record::Tree {
                path,
                kind,
                size,
                mode,
                target,
            } => {
                let _ = write!(self.line, "t\t{path}\t{}\t{size}\t{mode:o}", kind.code());
                if let Some(t) = target {
                    self.line.push(b'\t');
                    escape(t, &mut self.line);
                }
            }
            Record::Data {
                path,
                offset,
                bytes,
            } => {
                let _ = write!(self.line, "d\t{path}\t{offset}\t");
                for b in bytes {
                    let _ = write!(self.line, "{b:02x}");
                }
            }
            Record::Unrecorded { what, count } => {
                let _ = write!(self.line, "u\t{what}\t{count}");
            }
        }
        self.flush_line()
    }

    /// Write the trailer and close the stream: a trace without it is truncated.
    pub fn finish(mut self) -> Result<Counts> {
        let c = self.counts;
        let end = format!("end\t{}\t{}\t{}\n", c.calls, c.paths, c.threads);
        self.put(end.as_bytes())?;
        let inner = self
            .out
            .finish()
            .map_err(|e| Error::runtime(format!("write trace: {e}")))?;
        let file = inner
            .into_inner()
            .map_err(|e| Error::runtime(format!("write trace: {}", e.error())))?;
        file.sync_all()
            .map_err(|e| Error::runtime(format!("write trace: {e}")))?;
        Ok(c)
    }
}

/// Reads a trace, streaming, refusing what is not a complete trace of a version it reads. Every
/// refusal is an input error (exit 2) of one line.
pub struct TraceReader {
    input: BufReader<MultiGzDecoder<File>>,
    line: Vec<u8>,
    lineno: u64,
    last_ns: i64,
    seen: Counts,
    ended: bool,
    /// The kind of the last call read.
    last_kind: Kind,
    pub version: u32,
    pub header: serde_json::Value,
}

fn bad(lineno: u64, what: &str) -> Error {
    Error::input(format!("trace: line {lineno}: {what}"))
}

fn truncated() -> Error {
    Error::input("trace is truncated (no trailer): record it again")
}

impl TraceReader {
    pub fn open(path: &FsPath) -> Result<Self> {
        let file = File::open(path)
            .map_err(|e| Error::input(format!("read trace {}: {e}", path.display())))?;
        let mut r = TraceReader {
            input: BufReader::with_capacity(1 << 18, MultiGzDecoder::new(file)),
            line: Vec::with_capacity(256),
            lineno: 0,
            last_ns: 0,
            seen: Counts::default(),
            ended: false,
            last_kind: Kind::Open,
            version: VERSION,
            header: serde_json::Value::Null,
        };
        if !r.read_line()? {
            return Err(Error::input(format!(
                "{} is empty or not a gzip stream: not an fsbench trace",
                path.display()
            )));
        }
        let mut parts = r.line.splitn(3, |b| *b == b'\t');
        if parts.next() != Some(MAGIC.as_bytes()) {
            return Err(Error::input(format!(
                "{} is not an fsbench trace",
                path.display()
            )));
        }
        let version = parts.next().and_then(|v| std::str::from_utf8(v).ok());
        let Some(version) = version.filter(|v| READS.contains(v)) else {
            return Err(Error::input(format!(
                "trace version {} is not supported (this engine reads versions 1 to {VERSION})",
                version.unwrap_or("?")
            )));
        };
        r.version = version.parse().unwrap_or(VERSION);
        r.header = parts
            .next()
            .and_then(|h| serde_json::from_slice(h).ok())
            .ok_or_else(|| bad(1, "the header is not JSON"))?;
        Ok(r)
    }

    /// Read one line into `self.line` (without its newline); false at the end.
    fn read_line(&mut self) -> Result<bool> {
        self.line.clear();
        match self.input.read_until(b'\n', &mut self.line) {
            Ok(0) => Ok(false),
            Ok(_) => {
                self.lineno += 1;
                if self.line.last() != Some(&b'\n') {
                    return Err(truncated());
                }
                self.line.pop();
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(truncated()),
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => Err(Error::input(format!(
                "trace is corrupt ({e}): record it again"
            ))),
            Err(e) => Err(Error::input(format!("read trace: {e}"))),
        }
    }

    pub fn counts(&self) -> Counts {
        self.seen
    }

    /// The next record; None after the trailer (checked against what was read).
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        if self.ended {
            return Ok(None);
        }
        if !self.read_line()? {
            return Err(truncated());
        }
        let n = self.lineno;
        let line = std::mem::take(&mut self.line);
        let r = self.parse(&line, n);
        self.line = line;
        r
    }

    fn parse(&mut self, line: &[u8], n: u64) -> Result<Option<Record>> {
        let mut f = Fields {
            rest: Some(line),
            n,
        };
        let tag = f.raw().unwrap_or_default();
        let rec = match tag {
            b"c" => {
                let tid = f.id("thread")?;
                let dt = f.int("time")?;
                let dur = f.int("duration")?;
                let skipped = f.id("skipped")?;
                let kind_s = f.raw().unwrap_or_default();
                // a trace's calls come in runs of one kind: the last one is tried first
                let kind = Some(self.last_kind)
                    .filter(|k| k.name().as_bytes() == kind_s)
                    .or_else(|| std::str::from_utf8(kind_s).ok().and_then(Kind::from_name))
                    .ok_or_else(|| {
                        bad(
                            n,
                            &format!("unknown call {:?}", String::from_utf8_lossy(kind_s)),
                        )
                    })?;
                self.last_kind = kind;
                let result = f.int("result")?;
                let mut ints = [0i64; MAX_INTS];
                let mut text = None;
                let mut k = 0;
                for op in kind.operands() {
                    if *op == Operand::Text {
                        text = Some(f.text(kind)?);
                        continue;
                    }
                    let v = f.int(kind.name())?;
                    if matches!(op, Operand::Path | Operand::Fd | Operand::Map)
                        && u32::try_from(v).is_err()
                    {
                        return Err(bad(n, &format!("{}: id {v} out of range", kind.name())));
                    }
                    ints[k] = v;
                    k += 1;
                }
                if dur < 0 {
                    return Err(bad(n, "negative duration"));
                }
                self.last_ns += dt;
                self.seen.calls += 1;
                Record::Call(Call {
                    tid,
                    start_ns: self.last_ns,
                    dur_ns: dur as u64,
                    skipped,
                    kind,
                    result,
                    ints,
                    text,
                })
            }
            b"p" => {
                let id = f.id("path id")?;
                let parent = f.id("parent id")?;
                let path = unescape(f.raw().unwrap_or_default())
                    .ok_or_else(|| bad(n, "bad escape in a path"))?;
                self.seen.paths += 1;
                Record::Path { id, parent, path }
            }
            b"n" => {
                let tid = f.id("thread")?;
                let parent = match f.raw() {
                    Some(b"-") => None,
                    Some(s) => Some(
                        std::str::from_utf8(s)
                            .ok()
                            .and_then(|s| s.parse::<u32>().ok())
                            .ok_or_else(|| bad(n, "parent thread is not a number"))?,
                    ),
                    None => return Err(bad(n, "thread record without its parent")),
                };
                self.last_ns += f.int("time")?;
                self.seen.threads += 1;
                Record::Thread {
                    tid,
                    parent,
                    at_ns: self.last_ns,
                }
            }
            b"r" => Record::Release {
                tid: f.id("thread")?,
                fd: f.id("descriptor")?,
            },
            b"w" => {
                let tid = f.id("thread")?;
                self.last_ns += f.int("time")?;
                let dur = f.int("duration")?;
                Record::Wait {
                    tid,
                    start_ns: self.last_ns,
                    dur_ns: u64::try_from(dur).map_err(|_| bad(n, "negative duration"))?,
                }
            }
            b"x" => {
                let tid = f.id("thread")?;
                self.last_ns += f.int("time")?;
                Record::Exit {
                    tid,
                    at_ns: self.last_ns,
                }
            }
            b"t" => {
                let path = f.id("path id")?;
                let kind = EntryType::parse(f.raw().unwrap_or_default())
                    .ok_or_else(|| bad(n, "unknown tree entry type"))?;
                let size = u64::try_from(f.int("size")?).map_err(|_| bad(n, "negative size"))?;
                let mode = f
                    .raw()
                    .and_then(|s| std::str::from_utf8(s).ok())
                    .and_then(|s| u32::from_str_radix(s, 8).ok())
                    .ok_or_else(|| bad(n, "mode is not octal"))?;
                let target = match f.raw() {
                    Some(t) => Some(unescape(t).ok_or_else(|| bad(n, "bad escape"))?),
                    None => None,
                };
                if (kind == EntryType::Symlink) != target.is_some() {
                    return Err(bad(n, "a symlink entry has a target, and only it"));
                }
                Record::Tree {
                    path,
                    kind,
                    size,
                    mode,
                    target,
                }
            }
            b"d" => {
                let path = f.id("path id")?;
                let offset = u64::try_from(f.int("offset")?).map_err(|_| bad(n, "bad offset"))?;
                let hex = f.raw().unwrap_or_default();
                if !hex.len().is_multiple_of(2) {
                    return Err(bad(n, "odd hex data"));
                }
                let bytes = hex
                    .chunks(2)
                    .map(|p| {
                        std::str::from_utf8(p)
                            .ok()
                            .and_then(|s| u8::from_str_radix(s, 16).ok())
                    })
                    .collect::<Option<Vec<u8>>>()
                    .ok_or_else(|| bad(n, "bad hex data"))?;
                Record::Data {
                    path,
                    offset,
                    bytes,
                }
            }
            b"u" => {
                let what = String::from_utf8_lossy(f.raw().unwrap_or_default()).into_owned();
                let count = u64::try_from(f.int("count")?).map_err(|_| bad(n, "bad count"))?;
                Record::Unrecorded { what, count }
            }
            b"end" => {
                let want = Counts {
                    calls: f.int("calls")? as u64,
                    paths: f.int("paths")? as u64,
                    threads: f.int("threads")? as u64,
                };
                if want != self.seen {
                    return Err(Error::input(format!(
                        "trace is corrupt: its trailer counts {} calls, {} paths, {} threads, \
                         the file holds {}, {}, {}",
                        want.calls,
                        want.paths,
                        want.threads,
                        self.seen.calls,
                        self.seen.paths,
                        self.seen.threads
                    )));
                }
                self.ended = true;
                if self.read_line()? {
                    return Err(bad(self.lineno, "data after the trailer"));
                }
                return Ok(None);
            }
            other => {
                return Err(bad(
                    n,
                    &format!("unknown record {:?}", String::from_utf8_lossy(other)),
                ));
            }
        };
        Ok(Some(rec))
    }
}

/// The tab-separated fields of one line, read in one pass: a number is parsed where it
/// is scanned (finding each tab first, then parsing, went over every byte twice).
struct Fields<'a> {
    /// What follows the last field read; None after the line's last field.
    rest: Option<&'a [u8]>,
    n: u64,
}

impl<'a> Fields<'a> {
    fn raw(&mut self) -> Option<&'a [u8]> {
        let s = self.rest?;
        match s.iter().position(|b| *b == b'\t') {
            Some(i) => {
                self.rest = Some(&s[i + 1..]);
                Some(&s[..i])
            }
            None => {
                self.rest = None;
                Some(s)
            }
        }
    }

    #[inline]
    fn int(&mut self, what: &str) -> Result<i64> {
        if let Some(s) = self.rest
            && let Some((v, used)) = leading_i64(s)
        {
            match s.get(used) {
                None => {
                    self.rest = None;
                    return Ok(v);
                }
                Some(b'\t') => {
                    self.rest = Some(&s[used + 1..]);
                    return Ok(v);
                }
                Some(_) => {}
            }
        }
        Err(no_number(self.n, what))
    }

    fn id(&mut self, what: &str) -> Result<u32> {
        let v = self.int(what)?;
        u32::try_from(v).map_err(|_| bad(self.n, &format!("{what} {v} is out of range")))
    }

    fn text(&mut self, kind: Kind) -> Result<Vec<u8>> {
        let n = self.n;
        let raw = self
            .raw()
            .ok_or_else(|| bad(n, &format!("{} has too few operands", kind.name())))?;
        unescape(raw).ok_or_else(|| bad(n, "bad escape"))
    }
}

#[cold]
fn no_number(n: u64, what: &str) -> Error {
    bad(n, &format!("{what}: a number is missing"))
}

/// The decimal integer `s` starts with, as `str::parse::<i64>` reads one (an optional
/// sign, digits, no overflow), and the bytes it takes; straight from the bytes: the
/// replayer's reader parses several a call, and checking each as UTF-8 first and then
/// parsing it cost a tenth of a replay's CPU.
#[inline]
fn leading_i64(s: &[u8]) -> Option<(i64, usize)> {
    let (negative, start) = match s.first()? {
        b'-' => (true, 1),
        b'+' => (false, 1),
        _ => (false, 0),
    };
    let mut v: i64 = 0;
    let mut i = start;
    while let Some(&b) = s.get(i) {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.checked_mul(10)?;
        v = if negative {
            v.checked_sub(i64::from(d))?
        } else {
            v.checked_add(i64::from(d))?
        };
        i += 1;
    }
    (i > start).then_some((v, i))
}

/// A path as a trace may name it: relative to the tree and normalised ("." the root
/// itself; no "..", no ".", no empty component, no leading "/").
pub fn path_inside(path: &[u8]) -> bool {
    if path == b"." {
        return true;
    }
    !path.is_empty()
        && !path.contains(&0)
        && path
            .split(|b| *b == b'/')
            .all(|c| !c.is_empty() && c != b"." && c != b"..")
}

/// The parent of a relative path ("." for a top-level name).
pub fn parent_of(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|b| *b == b'/') {
        Some(i) => &path[..i],
        None => b".",
    }
}

/// Whether a symlink at `link` with this target stays inside the tree when followed.
pub fn target_inside(link: &[u8], target: &[u8]) -> bool {
    if target.is_empty() || target.starts_with(b"/") || target.contains(&0) {
        return false;
    }
    let base = parent_of(link);
    let mut depth: i64 = if base == b"." {
        0
    } else {
        base.split(|b| *b == b'/').count() as i64
    };
    for c in target.split(|b| *b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => depth += 1,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_read_as_str_parse_reads_them() {
        let whole = |s: &[u8]| leading_i64(s).and_then(|(v, used)| (used == s.len()).then_some(v));
        let cases: [&[u8]; 14] = [
            b"0",
            b"7",
            b"-1",
            b"+42",
            b"1234567890",
            b"-9223372036854775808",
            b"9223372036854775807",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"",
            b"-",
            b"12a",
            b" 1",
            b"1.5",
        ];
        for s in cases {
            let reference = std::str::from_utf8(s)
                .ok()
                .and_then(|t| t.parse::<i64>().ok());
            assert_eq!(whole(s), reference, "{:?}", String::from_utf8_lossy(s));
        }
        assert_eq!(whole(b"\xff1"), None);
        // a number ends where a non-digit begins
        assert_eq!(leading_i64(b"-12\t3"), Some((-12, 3)));
        assert_eq!(leading_i64(b"-\t3"), None);
    }

    /// Fields read as the line split at its tabs reads: empty fields kept, a number only
    /// where the whole field is one, and the next field after it.
    #[test]
    fn fields_read_as_the_line_split_at_tabs() {
        let lines: [&[u8]; 6] = [
            b"c\t0\t-12\t\t7",
            b"",
            b"\t",
            b"5\t12a\t3",
            b"x\t+4",
            b"-\t9",
        ];
        for line in lines {
            let split: Vec<&[u8]> = line.split(|b| *b == b'\t').collect();
            let fields = || Fields {
                rest: Some(line),
                n: 1,
            };
            let mut f = fields();
            let raw: Vec<&[u8]> = std::iter::from_fn(|| f.raw()).collect();
            assert_eq!(raw, split);
            for (i, field) in split.iter().enumerate() {
                let mut f = fields();
                for _ in 0..i {
                    f.raw();
                }
                let want = std::str::from_utf8(field)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok());
                assert_eq!(f.int("x").ok(), want, "{line:?} field {i}");
                if want.is_some() {
                    assert_eq!(f.raw(), split.get(i + 1).copied());
                }
            }
        }
    }

    #[test]
    fn escapes_round_trip() {
        let raw = b"a\tb\nc\\d\x01\xffe".to_vec();
        let mut out = Vec::new();
        escape(&raw, &mut out);
        assert!(!out.contains(&b'\t') && !out.contains(&b'\n'));
        assert_eq!(unescape(&out), Some(raw));
        assert_eq!(unescape(b"\\q"), None);
    }

    #[test]
    fn paths_inside_the_tree() {
        for ok in [&b"."[..], b"a", b"a/b", b"a b/c.d"] {
            assert!(path_inside(ok), "{ok:?}");
        }
        for no in [
            &b""[..],
            b"/etc",
            b"..",
            b"a/../b",
            b"a//b",
            b"a/",
            b"./a",
            b"a/.",
        ] {
            assert!(!path_inside(no), "{no:?}");
        }
        assert_eq!(parent_of(b"a/b/c"), b"a/b");
        assert_eq!(parent_of(b"c"), b".");
        assert!(target_inside(b"a/l", b"../b"));
        assert!(target_inside(b"a/l", b"c/../d"));
        assert!(!target_inside(b"l", b"../x"));
        assert!(!target_inside(b"a/l", b"../../x"));
        assert!(!target_inside(b"a/l", b"/etc/passwd"));
    }
}
