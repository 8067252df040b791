//! What measures the replayer's cost: a trace of many cheap calls (fstat of one cached
//! file) and the native loop making the same calls, both in this engine.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::trace::format::{Call, EntryType, Record, TraceWriter};
use crate::trace::kind::{Kind, MAX_INTS};

/// The file the fstat trace opens, in the tree's root.
pub const FSTAT_FILE: &str = "cached";

fn call(kind: Kind, start_ns: i64, result: i64, ints: &[i64]) -> Record {
    let mut all = [0i64; MAX_INTS];
    all[..ints.len()].copy_from_slice(ints);
    Record::Call(Call {
        tid: 0,
        start_ns,
        dur_ns: 300,
        skipped: 0,
        kind,
        result,
        ints: all,
        text: None,
    })
}

/// Write a trace of one thread: open the file, `calls` fstats of it, close it.
pub fn fstat_trace(out: &Path, calls: u64) -> Result<u64> {
    let header = serde_json::json!({"tracer": "synthetic", "command": ["fstat-loop", calls]});
    let mut w = TraceWriter::create(out, &header)?;
    w.write(&Record::Path {
        id: 0,
        parent: 0,
        path: b".".to_vec(),
    })?;
    w.write(&Record::Path {
        id: 1,
        parent: 0,
        path: FSTAT_FILE.as_bytes().to_vec(),
    })?;
    w.write(&Record::Thread {
        tid: 0,
        parent: None,
        at_ns: 0,
    })?;
    w.write(&call(
        Kind::Open,
        1000,
        0,
        &[1, i64::from(libc::O_RDONLY), 0],
    ))?;
    let mut t = 2000i64;
    for _ in 0..calls {
        w.write(&call(Kind::Fstat, t, 0, &[0]))?;
        t += 400;
    }
    w.write(&call(Kind::Close, t, 0, &[0]))?;
    w.write(&Record::Tree {
        path: 0,
        kind: EntryType::Dir,
        size: 0,
        mode: 0o755,
        target: None,
    })?;
    w.write(&Record::Tree {
        path: 1,
        kind: EntryType::File,
        size: 4096,
        mode: 0o644,
        target: None,
    })?;
    Ok(w.finish()?.calls)
}

#[derive(Debug, Serialize)]
pub struct LoopResult {
    pub calls: u64,
    pub seconds: f64,
    pub calls_per_s: f64,
}

/// fstat the file `dir/cached` (made if missing) `calls` times in a plain loop.
pub fn fstat_loop(dir: &Path, calls: u64) -> Result<LoopResult> {
    let path = dir.join(FSTAT_FILE);
    if !path.exists() {
        std::fs::write(&path, vec![0u8; 4096])
            .map_err(|e| Error::runtime(format!("create {}: {e}", path.display())))?;
    }
    let f = std::fs::File::open(&path)
        .map_err(|e| Error::runtime(format!("open {}: {e}", path.display())))?;
    let fd = f.as_raw_fd();
    // SAFETY: libc::stat is plain old data; fd is open for the whole loop.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let t0 = Instant::now();
    for _ in 0..calls {
        // SAFETY: as above.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(Error::runtime(format!(
                "fstat {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            )));
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    Ok(LoopResult {
        calls,
        seconds,
        calls_per_s: if seconds > 0.0 {
            (calls as f64 / seconds).round()
        } else {
            0.0
        },
    })
}
