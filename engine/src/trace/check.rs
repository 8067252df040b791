//! Reading a whole trace to refuse what cannot be replayed (truncated, another version,
//! a path outside its tree, an id used before it is made) and to count what it holds:
//! calls and bytes per kind, the starting tree, what was not recorded.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::trace::format::{EntryType, Record, TraceReader, parent_of, path_inside, target_inside};
use crate::trace::import::TreeCounts;
use crate::trace::kind::{Kind, Operand};

/// Descriptor ids a trace may use (the importer reuses the smallest free one, so this
/// bounds the descriptors open at once).
pub const MAX_FD_IDS: u32 = 1 << 20;
/// Mapping ids likewise.
pub const MAX_MAP_IDS: u32 = 1 << 16;

#[derive(Debug, Default, Clone, Serialize)]
pub struct KindCount {
    pub calls: u64,
    /// Bytes the original moved (read, written, listed), for the kinds that move bytes.
    pub bytes: u64,
    /// Calls whose original result was an error.
    pub failed: u64,
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub version: u32,
    pub header: serde_json::Value,
    pub calls: u64,
    pub threads: u64,
    pub paths: u64,
    /// From the first recorded event to the last, as recorded (under the tracer).
    pub span_s: f64,
    pub kinds: BTreeMap<&'static str, KindCount>,
    /// Waits for other threads (`w` records), and their recorded seconds in all.
    pub waits: u64,
    pub waited_s: f64,
    pub tree: TreeCounts,
    pub unrecorded: BTreeMap<String, u64>,
}

/// Checks records one by one as they stream, keeping the path table.
#[derive(Default)]
pub struct Validator {
    pub paths: Vec<Vec<u8>>,
    parents: Vec<u32>,
    threads: u64,
}

fn refuse(msg: String) -> Error {
    Error::input(format!("trace: {msg}"))
}

impl Validator {
    /// The id of a known path's parent directory (the root's is its own).
    pub fn parent(&self, id: i64) -> u32 {
        self.parents.get(id as usize).copied().unwrap_or(0)
    }

    fn path(&self, id: i64) -> Result<&[u8]> {
        self.paths
            .get(id as usize)
            .map(Vec::as_slice)
            .ok_or_else(|| refuse(format!("path id {id} is used before it is named")))
    }

    fn thread(&self, tid: u32) -> Result<()> {
        if u64::from(tid) >= self.threads {
            return Err(refuse(format!("thread {tid} acts before it starts")));
        }
        Ok(())
    }

    pub fn see(&mut self, rec: &Record) -> Result<()> {
        match rec {
            Record::Path { id, parent, path } => {
                if *id as usize != self.paths.len() {
                    return Err(refuse(format!("path id {id} is out of order")));
                }
                if !path_inside(path) {
                    return Err(refuse(format!(
                        "names a path outside its tree: {:?}",
                        String::from_utf8_lossy(path)
                    )));
                }
                let parent_ok = if path == b"." {
                    parent == id
                } else {
                    self.paths
                        .get(*parent as usize)
                        .is_some_and(|p| p.as_slice() == parent_of(path))
                };
                if !parent_ok {
                    return Err(refuse(format!(
                        "path {:?} names a wrong parent",
                        String::from_utf8_lossy(path)
                    )));
                }
                self.paths.push(path.clone());
                self.parents.push(*parent);
            }
            Record::Thread { tid, parent, .. } => {
                if u64::from(*tid) != self.threads {
                    return Err(refuse(format!("thread {tid} is out of order")));
                }
                if let Some(p) = parent {
                    self.thread(*p)?;
                }
                self.threads += 1;
            }
            Record::Call(c) => {
                self.thread(c.tid)?;
                let mut ints = c.ints.iter();
                let mut first_path: Option<&[u8]> = None;
                for op in c.kind.operands() {
                    if *op == Operand::Text {
                        continue;
                    }
                    let v = *ints.next().unwrap_or(&0);
                    match op {
                        Operand::Path => {
                            let p = self.path(v)?;
                            first_path.get_or_insert(p);
                        }
                        Operand::Fd if v >= i64::from(MAX_FD_IDS) => {
                            return Err(refuse(format!("descriptor id {v} is over {MAX_FD_IDS}")));
                        }
                        Operand::Map if v >= i64::from(MAX_MAP_IDS) => {
                            return Err(refuse(format!("mapping id {v} is over {MAX_MAP_IDS}")));
                        }
                        _ => {}
                    }
                }
                if c.kind.makes_id() && c.result >= 0 {
                    let max = if c.kind == Kind::Mmap {
                        MAX_MAP_IDS
                    } else {
                        MAX_FD_IDS
                    };
                    if c.result >= i64::from(max) {
                        return Err(refuse(format!("id {} is over {max}", c.result)));
                    }
                }
                if c.kind == Kind::Symlink {
                    let link = first_path.unwrap_or(b".");
                    let target = c.text.as_deref().unwrap_or_default();
                    if !target_inside(link, target) {
                        return Err(refuse(format!(
                            "names a path outside its tree: symlink {:?} -> {:?}",
                            String::from_utf8_lossy(link),
                            String::from_utf8_lossy(target)
                        )));
                    }
                }
            }
            Record::Release { tid, fd } => {
                self.thread(*tid)?;
                if *fd >= MAX_FD_IDS {
                    return Err(refuse(format!("descriptor id {fd} is over {MAX_FD_IDS}")));
                }
            }
            Record::Exit { tid, .. } | Record::Wait { tid, .. } => self.thread(*tid)?,
            Record::Tree {
                path, kind, target, ..
            } => {
                let p = self.path(i64::from(*path))?.to_vec();
                if *kind == EntryType::Symlink
                    && !target_inside(&p, target.as_deref().unwrap_or_default())
                {
                    return Err(refuse(format!(
                        "names a path outside its tree: symlink {:?}",
                        String::from_utf8_lossy(&p)
                    )));
                }
            }
            Record::Data { path, .. } => {
                self.path(i64::from(*path))?;
            }
            Record::Unrecorded { .. } => {}
        }
        Ok(())
    }
}

/// Read the whole trace at `path`; refuse it, or say what it holds.
pub fn check(path: &Path) -> Result<Summary> {
    let mut r = TraceReader::open(path)?;
    let mut v = Validator::default();
    let mut kinds: BTreeMap<&'static str, KindCount> = BTreeMap::new();
    let mut tree = TreeCounts::default();
    let mut unrecorded = BTreeMap::new();
    let (mut first, mut last) = (None::<i64>, 0i64);
    let (mut waits, mut waited_ns) = (0u64, 0u64);
    while let Some(rec) = r.next_record()? {
        v.see(&rec)?;
        let mut at = |t: i64| {
            first.get_or_insert(t);
            last = last.max(t);
        };
        match &rec {
            Record::Call(c) => {
                at(c.start_ns);
                at(c.start_ns + c.dur_ns as i64);
                let k = kinds.entry(c.kind.name()).or_default();
                k.calls += 1;
                if c.result < 0 && !(c.kind == Kind::Mmap && c.result < -4095) {
                    k.failed += 1;
                } else if c.kind.moves_bytes() {
                    k.bytes += c.result as u64;
                }
            }
            Record::Thread { at_ns, .. } | Record::Exit { at_ns, .. } => at(*at_ns),
            Record::Wait {
                start_ns, dur_ns, ..
            } => {
                at(*start_ns);
                waits += 1;
                waited_ns += dur_ns;
            }
            Record::Tree { kind, size, .. } => match kind {
                EntryType::File => {
                    tree.files += 1;
                    tree.bytes += size;
                }
                EntryType::Dir => tree.dirs += 1,
                EntryType::Symlink => tree.symlinks += 1,
            },
            Record::Data { bytes, .. } => tree.data_bytes += bytes.len() as u64,
            Record::Unrecorded { what, count } => {
                *unrecorded.entry(what.clone()).or_insert(0) += count;
            }
            _ => {}
        }
    }
    let counts = r.counts();
    Ok(Summary {
        version: r.version,
        header: r.header,
        calls: counts.calls,
        threads: counts.threads,
        paths: counts.paths,
        span_s: first.map_or(0.0, |f| (last - f) as f64 / 1e9),
        kinds,
        waits,
        waited_s: waited_ns as f64 / 1e9,
        tree,
        unrecorded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::{Call, TraceWriter};
    use crate::trace::kind::MAX_INTS;
    use std::io::Write;

    fn write(path: &Path, name: &[u8]) {
        let mut w = TraceWriter::create(path, &serde_json::json!({"command": ["x"]})).expect("w");
        w.write(&Record::Path {
            id: 0,
            parent: 0,
            path: b".".to_vec(),
        })
        .expect("p");
        w.write(&Record::Path {
            id: 1,
            parent: 0,
            path: name.to_vec(),
        })
        .expect("p");
        w.write(&Record::Thread {
            tid: 0,
            parent: None,
            at_ns: 0,
        })
        .expect("n");
        for i in 0..5000 {
            let mut ints = [0i64; MAX_INTS];
            ints[0] = 1;
            ints[1] = 1;
            w.write(&Record::Call(Call {
                tid: 0,
                start_ns: i * 100,
                dur_ns: 50,
                skipped: 0,
                kind: Kind::Stat,
                result: 0,
                ints,
                text: None,
            }))
            .expect("c");
        }
        w.finish().expect("finish");
    }

    #[test]
    fn a_good_trace_is_counted_and_bad_ones_refused_in_one_line() {
        let dir = std::env::temp_dir().join(format!("fsbench-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let good = dir.join("good.gz");
        write(&good, b"a");
        let s = check(&good).expect("a good trace");
        assert_eq!((s.calls, s.threads, s.paths), (5000, 1, 2));
        assert_eq!(s.kinds["stat"].calls, 5000);

        let refusal = |p: &Path| {
            let e = check(p).expect_err("refused");
            assert_eq!(e.exit_code(), 2, "{e}");
            assert!(!e.to_string().contains('\n'));
            e.to_string()
        };
        // truncated: the gzip stream cut in half
        let bytes = std::fs::read(&good).expect("read");
        let cut = dir.join("cut.gz");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("cut");
        assert!(refusal(&cut).contains("truncated"), "{}", refusal(&cut));
        // truncated at a line: a whole gzip stream without the trailer
        let lines = dir.join("lines.gz");
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&lines).expect("create"),
            flate2::Compression::fast(),
        );
        gz.write_all(b"fsbench-trace\t1\t{}\np\t0\t0\t.\n")
            .expect("write");
        gz.finish().expect("finish");
        assert!(refusal(&lines).contains("truncated"));
        // another version (one this engine does not know)
        let v3 = dir.join("v3.gz");
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&v3).expect("create"),
            flate2::Compression::fast(),
        );
        gz.write_all(b"fsbench-trace\t3\t{}\nend\t0\t0\t0\n")
            .expect("write");
        gz.finish().expect("finish");
        assert!(refusal(&v3).contains("version 3 is not supported"));
        // a path outside the tree
        let out = dir.join("outside.gz");
        write(&out, b"../etc/passwd");
        assert!(refusal(&out).contains("outside its tree"));
        std::fs::remove_dir_all(&dir).expect("clean");
    }
}
