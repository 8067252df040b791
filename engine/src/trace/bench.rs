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

/// What strace recorded of a loop that makes nothing but fstats (`fstat-loop` run under
/// the recording's options): between one call's recorded end and the next one's start
/// the loop itself spends well under a microsecond, so the recorded gap is strace's cost
/// that lands before a call; the recorded duration holds the rest. A recording subtracts
/// the gap part from every recorded gap (`import --gap-overhead-ns`), or a replay with
/// the recorded timing waits for strace as well as for the program.
#[derive(Debug, Serialize)]
pub struct StraceGaps {
    /// The loop's calls found (the last `calls` fstats of the output).
    pub calls: u64,
    pub gap_ns: u64,
    pub duration_ns: u64,
}

pub fn strace_gaps(strace_out: &Path, calls: u64) -> Result<StraceGaps> {
    use crate::trace::straceline::{Body, parse_call, parse_line};
    let text = std::fs::read(strace_out)
        .map_err(|e| Error::runtime(format!("read {}: {e}", strace_out.display())))?;
    let mut seen: Vec<(i64, i64)> = Vec::new();
    for line in text.split(|b| *b == b'\n') {
        let Some(l) = parse_line(line) else { continue };
        let Body::Call(call) = l.body else { continue };
        let Some(p) = parse_call(call) else { continue };
        if p.name == b"newfstatat" || p.name == b"fstat" {
            seen.push((l.ts_ns, i64::try_from(p.dur_ns).unwrap_or(i64::MAX)));
        }
    }
    let take = usize::try_from(calls).unwrap_or(usize::MAX).min(seen.len());
    let last = &seen[seen.len() - take..];
    if last.len() < 2 {
        return Err(Error::runtime(format!(
            "{}: {} fstat calls, not the loop's {calls}",
            strace_out.display(),
            seen.len()
        )));
    }
    let gaps: i64 = last
        .windows(2)
        .map(|w| (w[1].0 - (w[0].0 + w[0].1)).max(0))
        .sum();
    let durations: i64 = last.iter().map(|c| c.1).sum();
    let n = last.len() as i64;
    Ok(StraceGaps {
        calls: n as u64,
        gap_ns: (gaps / (n - 1)) as u64,
        duration_ns: (durations / n) as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strace_gaps_are_the_loop_s_last_calls_between_end_and_next_start() {
        let dir = std::env::temp_dir().join(format!("fsbench-gaps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("s.txt");
        // The loader's own fstat (left out: not among the last 3), then three of the loop:
        // starts 10 us apart, each 4 us long, so each gap is 6 us.
        let text = "7 100.000000000 newfstatat(3</lib/x.so>, \"\", {...}, 0x1000) = 0 <0.000900000>\n\
                    7 100.000100000 newfstatat(3</tmp/cached>, \"\", {...}, 0x1000) = 0 <0.000004000>\n\
                    7 100.000110000 newfstatat(3</tmp/cached>, \"\", {...}, 0x1000) = 0 <0.000004000>\n\
                    7 100.000120000 newfstatat(3</tmp/cached>, \"\", {...}, 0x1000) = 0 <0.000004000>\n\
                    7 100.000200000 write(1</dev/null>, \"\"..., 10) = 10 <0.000002000>\n\
                    7 100.000300000 +++ exited with 0 +++\n";
        std::fs::write(&out, text).unwrap();
        let got = strace_gaps(&out, 3).unwrap();
        assert_eq!((got.calls, got.gap_ns, got.duration_ns), (3, 6_000, 4_000));
        assert!(strace_gaps(&out, 1).is_err()); // one call has no gap
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
