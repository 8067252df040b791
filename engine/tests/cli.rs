//! Integration tests: the real binary on a real filesystem (a directory under /var/tmp).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_fsbench-engine");

/// A directory under /var/tmp (a disk filesystem, unlike a tmpfs /tmp), removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let base = std::env::var_os("FSBENCH_ENGINE_TEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/var/tmp"));
        let p = base.join(format!(
            "fsbench-engine-test-{}-{}-{tag}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn str(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn engine(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn engine");
    {
        let mut si = child.stdin.take().expect("stdin");
        if let Some(text) = stdin {
            si.write_all(text.as_bytes()).expect("write stdin");
        }
    }
    child.wait_with_output().expect("wait engine")
}

fn ok_json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "engine failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// A failure: the exit code, and the one stderr line; nothing on stdout.
fn failure(out: &Output) -> (i32, String) {
    assert!(!out.status.success());
    assert!(
        out.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "one stderr line: {err:?}");
    assert!(err.starts_with("fsbench-engine: error: "), "{err}");
    (out.status.code().unwrap_or(-1), err)
}

fn personality(name: &str, dir: &str, extra: &[&str]) -> Value {
    let mut args = vec!["personality", name, "--scale", "tiny", "--dir", dir];
    args.extend_from_slice(extra);
    ok_json(&engine(&args, None))
}

fn run_spec(spec: &Value) -> Output {
    engine(&["run", "-"], Some(&spec.to_string()))
}

fn check_summary(s: &Value, what: &str) {
    for k in ["ops", "skipped", "bytes_read", "bytes_written"] {
        assert!(s[k].is_u64(), "{what}: {k} in {s}");
    }
    for k in ["ops_per_s", "mb_per_s"] {
        assert!(s[k].as_f64().is_some_and(|x| x >= 0.0), "{what}: {k}");
    }
    let l = &s["latency_us"];
    let v: Vec<f64> = ["p50", "p95", "p99", "p99_9", "max"]
        .iter()
        .map(|k| l[*k].as_f64().expect("latency number"))
        .collect();
    assert!(
        v.windows(2).all(|w| w[0] <= w[1]),
        "{what}: percentiles ordered: {l}"
    );
    assert!(l["mean"].as_f64().is_some_and(|m| m >= 0.0));
    if s["ops"].as_u64() > Some(0) {
        assert!(v[0] > 0.0, "{what}: p50 > 0");
    }
}

fn check_result(r: &Value, name: &str, flowops: usize) {
    assert_eq!(r["schema"], 1);
    assert_eq!(r["engine"]["name"], "fsbench-engine");
    assert!(r["engine"]["version"].is_string());
    assert!(r["seed"].is_u64());
    assert_eq!(r["spec"]["schema"], 1);
    assert_eq!(r["spec"]["seed"], r["seed"]);
    let p = &r["prepare"];
    assert!(p["files"].as_u64() > Some(0), "{name}: prepared files");
    assert!(p["bytes"].as_u64() > Some(0));
    assert!(p["seconds"].as_f64().is_some());
    assert!(p["sync_seconds"].as_f64().is_some());
    assert_eq!(p["drop_caches"], false);
    let m = &r["measured"];
    let dur = m["duration_s"].as_f64().expect("duration");
    let want = r["spec"]["stop"]["duration_s"]
        .as_f64()
        .expect("spec duration");
    // the phase ends at the deadline: an operation still in flight then is not counted,
    // and does not stretch the phase (it did by up to the slowest thread's last op)
    assert!(
        (dur - want).abs() < 1e-6,
        "{name}: measured {dur} for {want}"
    );
    assert_eq!(m["warmup_s"], r["spec"]["warmup_s"]);
    assert_eq!(m["stopped_by"], "duration");

    let total = &r["total"];
    check_summary(total, name);
    assert!(total["ops"].as_u64() > Some(0), "{name}: ops > 0");
    assert!(total["mb_per_s"].as_f64() > Some(0.0));

    let groups = r["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 1);
    let ops = groups[0]["flowops"].as_array().expect("flowops");
    assert_eq!(ops.len(), flowops);
    let mut sum = 0;
    for f in ops {
        let fname = f["name"].as_str().expect("name");
        assert!(f["op"].is_string());
        check_summary(f, fname);
        assert!(f["ops"].as_u64() > Some(0), "{name}: {fname} ran");
        sum += f["ops"].as_u64().unwrap_or(0);
    }
    assert_eq!(total["ops"].as_u64(), Some(sum));

    let ts = r["timeseries"]["ops_per_s"].as_array().expect("series");
    assert_eq!(
        ts.len(),
        want.ceil() as usize,
        "{name}: one point per second"
    );
    assert!(ts.iter().all(|x| x.as_f64().is_some_and(|v| v > 0.0)));
    assert_eq!(r["timeseries"]["interval_s"], 1.0);
    check_series(r, name, ts.len());
}

/// MB/s and latency percentiles a second, as many as ops/s, adding up to the totals.
fn check_series(r: &Value, name: &str, n: usize) {
    let s = &r["timeseries"];
    let nums = |v: &Value| -> Vec<Option<f64>> {
        v.as_array()
            .expect("a series")
            .iter()
            .map(|x| x.as_f64())
            .collect()
    };
    let ops = nums(&s["ops_per_s"]);
    let mb = nums(&s["mb_per_s"]);
    let p50 = nums(&s["latency_us"]["p50"]);
    let p99 = nums(&s["latency_us"]["p99"]);
    assert_eq!((mb.len(), p50.len(), p99.len()), (n, n, n), "{name}: {s}");
    assert!(
        mb.iter().all(|x| x.is_some_and(|v| v >= 0.0)),
        "{name}: {s}"
    );
    for i in 0..n {
        // every second had operations here: each has its percentiles, ordered
        let (lo, hi) = (p50[i].expect("p50"), p99[i].expect("p99"));
        assert!(lo > 0.0 && lo <= hi, "{name}: second {i}: {s}");
    }
    // the seconds' MB add up to the total (the last second's rate is over its length)
    let dur = r["measured"]["duration_s"].as_f64().expect("duration");
    let last_len = |i: usize| {
        if i + 1 == n {
            (dur - i as f64).clamp(0.001, 1.0)
        } else {
            1.0
        }
    };
    let mb_sum: f64 = mb
        .iter()
        .enumerate()
        .map(|(i, v)| v.unwrap_or(0.0) * last_len(i))
        .sum();
    let total = r["total"]["mb_per_s"].as_f64().expect("total") * dur;
    assert!(
        (mb_sum - total).abs() <= 0.01 * total.max(1.0),
        "{name}: {mb_sum} MB by second, {total} in all"
    );
    let ops_sum: f64 = ops
        .iter()
        .enumerate()
        .map(|(i, v)| v.unwrap_or(0.0) * last_len(i))
        .sum();
    let total_ops = r["total"]["ops"].as_f64().expect("ops");
    assert!(
        (ops_sum - total_ops).abs() <= 0.01 * total_ops + 1.0,
        "{name}: {ops_sum} ops by second, {total_ops} in all"
    );
}

#[test]
fn fileserver_tiny() {
    let d = TempDir::new("fileserver");
    let spec = personality("fileserver", d.str(), &[]);
    let r = ok_json(&run_spec(&spec));
    check_result(&r, "fileserver", 11);
    assert_eq!(r["prepare"]["files"], 80, "80% of 100");
    assert!(d.path().join("bigfileset").is_dir());
}

#[test]
fn varmail_tiny() {
    let d = TempDir::new("varmail");
    let spec = personality("varmail", d.str(), &["--threads", "3"]);
    let r = ok_json(&run_spec(&spec));
    check_result(&r, "varmail", 13);
    assert_eq!(r["measured"]["threads"], 3);
    // one directory: every file directly under the fileset root
    let root = d.path().join("bigfileset");
    assert!(std::fs::read_dir(&root).expect("root").all(|e| {
        e.map(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
            .unwrap_or(false)
    }));
}

#[test]
fn webserver_tiny() {
    let d = TempDir::new("webserver");
    let spec = personality("webserver", d.str(), &[]);
    let r = ok_json(&run_spec(&spec));
    check_result(&r, "webserver", 31);
    let ops = r["groups"][0]["flowops"].as_array().expect("flowops");
    let log = ops.last().expect("appendlog");
    assert_eq!(log["name"], "appendlog");
    assert!(log["bytes_written"].as_u64() > Some(0));
    // the log grew by what was appended (plus the warm-up's appends)
    let log_files: Vec<_> = std::fs::read_dir(d.path().join("logfiles"))
        .expect("log dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('f'))
        .collect();
    assert_eq!(log_files.len(), 1);
    let len = log_files[0].metadata().expect("stat").len();
    assert!(len >= log["bytes_written"].as_u64().unwrap_or(0));
}

/// (path, size) of every file under `root`, sorted.
fn listing(root: &Path) -> Vec<(String, u64)> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, u64)>) {
        for e in std::fs::read_dir(dir).expect("read_dir") {
            let e = e.expect("entry");
            let p = e.path();
            let md = e.metadata().expect("metadata");
            if md.is_dir() {
                walk(base, &p, out);
            } else {
                let rel = p
                    .strip_prefix(base)
                    .expect("prefix")
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, md.len()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

#[test]
fn same_seed_same_fileset() {
    let (a, b, c) = (
        TempDir::new("seed-a"),
        TempDir::new("seed-b"),
        TempDir::new("seed-c"),
    );
    let prep = |d: &TempDir, seed: &str| {
        let spec = personality("fileserver", d.str(), &["--seed", seed]);
        let r = ok_json(&engine(&["prepare", "-"], Some(&spec.to_string())));
        assert_eq!(r["schema"], 1);
        assert_eq!(r["seed"].as_u64(), seed.parse().ok());
        assert_eq!(r["prepare"]["files"], 80);
        listing(&d.path().join("bigfileset"))
    };
    let la = prep(&a, "42");
    let lb = prep(&b, "42");
    assert_eq!(la.len(), 81, "80 files and the marker");
    assert_eq!(la, lb, "same seed, same names and sizes");
    assert!(
        la.iter().any(|(n, _)| n.contains('/')),
        "files sit in subdirectories"
    );
    let lc = prep(&c, "43");
    assert_ne!(la, lc, "another seed, another fileset");
}

fn micro_spec(dir: &str) -> Value {
    json!({
        "schema": 1,
        "dir": dir,
        "seed": 3,
        "stop": {"ops": 5000},
        "filesets": [{"name": "data", "count": 4, "dirwidth": 2,
                      "size": {"type": "fixed", "size": 65536}}],
        "groups": [{"name": "io", "threads": 2, "flowops": [
            {"op": "randread", "fileset": "data", "iosize": 4096},
            {"op": "randwrite", "iosize": 4096, "direct": true},
            {"op": "fdatasync"},
            {"op": "stat", "fileset": "data"},
            {"op": "readdir", "fileset": "data"},
            {"op": "rename", "fileset": "data"}
        ]}]
    })
}

#[test]
fn op_count_stop_direct_io_and_the_other_flowops() {
    let d = TempDir::new("ops");
    let mut spec = micro_spec(d.str());
    // one of the four files is free, so rename has somewhere to go
    spec["filesets"][0]["prealloc_pct"] = json!(75);
    let r = ok_json(&run_spec(&spec));
    assert_eq!(r["measured"]["stopped_by"], "ops");
    assert_eq!(r["total"]["ops"], 5000);
    let ops = r["groups"][0]["flowops"].as_array().expect("flowops");
    let names: Vec<_> = ops
        .iter()
        .map(|o| o["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        [
            "randread1",
            "randwrite2",
            "fdatasync3",
            "stat4",
            "readdir5",
            "rename6"
        ]
    );
    assert_eq!(
        ops[1]["bytes_written"].as_u64(),
        ops[1]["ops"].as_u64().map(|n| n * 4096)
    );
    assert!(ops.iter().all(|o| o["ops"].as_u64() > Some(0)));
    // the effective spec has every default filled in
    assert_eq!(r["spec"]["groups"][0]["flowops"][2]["name"], "fdatasync3");
    assert_eq!(r["spec"]["groups"][0]["flowops"][0]["fd"], 1);
    assert_eq!(r["spec"]["filesets"][0]["prealloc_pct"], 75.0);
}

#[test]
fn reuse_keeps_the_files() {
    let d = TempDir::new("reuse");
    let mut spec = micro_spec(d.str());
    ok_json(&engine(&["prepare", "-"], Some(&spec.to_string())));
    let marker = d.path().join("data").join("keepme");
    std::fs::write(&marker, "x").expect("write");
    spec["filesets"][0]["reuse"] = json!(true);
    spec["groups"][0]["flowops"] = json!([{"op": "randread", "fileset": "data"}]);
    spec["stop"] = json!({"ops": 100});
    let r = ok_json(&run_spec(&spec));
    assert_eq!(r["prepare"]["filesets"][0]["reused"], true);
    assert_eq!(r["prepare"]["files"], 4);
    assert!(marker.exists(), "reuse did not remake the fileset");
    // without reuse the fileset is made anew
    spec["filesets"][0]["reuse"] = json!(false);
    let r = ok_json(&run_spec(&spec));
    assert_eq!(r["prepare"]["filesets"][0]["reused"], false);
    assert!(!marker.exists());
}

#[test]
fn spec_errors_are_one_line_exit_2() {
    let d = TempDir::new("errors");
    let (code, err) = failure(&engine(&["run", "-"], Some("{\"schema\": 1,")));
    assert_eq!(code, 2);
    assert!(err.contains("spec: "), "{err}");
    let mut spec = micro_spec(d.str());
    spec["schema"] = json!(2);
    let (code, err) = failure(&run_spec(&spec));
    assert_eq!(code, 2);
    assert!(err.contains("schema 2 is not supported"), "{err}");
    let mut spec = micro_spec(d.str());
    spec["groups"][0]["flowops"][0]["fileset"] = json!("missing");
    let (code, err) = failure(&run_spec(&spec));
    assert_eq!(code, 2);
    assert!(err.contains("fileset \"missing\" is not defined"), "{err}");
    let (code, _) = failure(&engine(&["run", "/nonexistent/spec.json"], None));
    assert_eq!(code, 2);
    let (code, _) = failure(&engine(&["personality", "bogus"], None));
    assert_eq!(code, 2);
    let (code, _) = failure(&engine(&["frobnicate"], None));
    assert_eq!(code, 2);
    assert!(
        !d.path().join("data").exists(),
        "a bad spec touches nothing"
    );
}

#[test]
fn runtime_errors_are_one_line_exit_1() {
    let d = TempDir::new("rt");
    // a directory that fsbench-engine did not make is never removed
    std::fs::create_dir_all(d.path().join("data")).expect("mkdir");
    std::fs::write(d.path().join("data").join("precious"), "x").expect("write");
    let (code, err) = failure(&run_spec(&micro_spec(d.str())));
    assert_eq!(code, 1);
    assert!(err.contains("was not made by fsbench-engine"), "{err}");
    assert!(d.path().join("data").join("precious").exists());
    // dir is a file
    let f = d.path().join("plainfile");
    std::fs::write(&f, "x").expect("write");
    let (code, err) = failure(&run_spec(&micro_spec(f.to_str().expect("utf-8"))));
    assert_eq!(code, 1);
    assert!(err.contains("plainfile"), "{err}");
}

#[test]
fn cli_basics() {
    let out = engine(&["--version"], None);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("fsbench-engine "));
    let l = ok_json(&engine(&["list"], None));
    assert_eq!(
        l["personalities"],
        json!(["fileserver", "varmail", "webserver"])
    );
    let out = engine(&["--help"], None);
    assert!(String::from_utf8_lossy(&out.stdout).contains("personality NAME"));
    // a spec file path works as well as stdin; a printed personality is a valid spec
    let d = TempDir::new("file");
    let spec_path = d.path().join("spec.json");
    let spec = personality(
        "webserver",
        d.str(),
        &["--duration", "0.5", "--warmup", "0"],
    );
    assert_eq!(spec["schema"], 1);
    std::fs::write(&spec_path, spec.to_string()).expect("write spec");
    let r = ok_json(&engine(&["run", spec_path.to_str().expect("utf-8")], None));
    assert!(r["total"]["ops"].as_u64() > Some(0));
    assert_eq!(
        r["timeseries"]["ops_per_s"].as_array().map(|a| a.len()),
        Some(1)
    );
}

// Ignored by a plain `cargo test`, and counted so ("1 ignored"), never passed silently:
// `make test` runs as root and adds --include-ignored.
#[test]
#[ignore = "needs root to write /proc/sys/vm/drop_caches: cargo test -- --include-ignored"]
fn drop_caches_after_prepare() {
    assert!(
        std::fs::OpenOptions::new()
            .write(true)
            .open("/proc/sys/vm/drop_caches")
            .is_ok(),
        "/proc/sys/vm/drop_caches is not writable: run this test as root"
    );
    let d = TempDir::new("drop");
    let mut spec = micro_spec(d.str());
    spec["drop_caches"] = json!(true);
    let r = ok_json(&engine(&["prepare", "-"], Some(&spec.to_string())));
    assert_eq!(r["prepare"]["drop_caches"], true);
    assert_eq!(r["prepare"]["files"], 4);
}

#[test]
fn a_chain_that_never_finds_a_file_fails_instead_of_spinning() {
    let d = TempDir::new("empty");
    let mut spec = micro_spec(d.str());
    spec["filesets"][0]["prealloc_pct"] = json!(0);
    spec["groups"][0]["flowops"] = json!([{"op": "delete", "fileset": "data"}]);
    let (code, err) = failure(&run_spec(&spec));
    assert_eq!(code, 1);
    assert!(err.contains("found no file to work on"), "{err}");
    // with a duration it is just a run where everything was skipped
    spec["stop"] = json!({"duration_s": 0.3});
    let r = ok_json(&run_spec(&spec));
    assert_eq!(r["total"]["ops"], 0);
    assert!(r["total"]["skipped"].as_u64() > Some(0));
}

#[test]
fn direct_whole_file_ops() {
    let d = TempDir::new("direct");
    let spec = json!({
        "schema": 1,
        "dir": d.str(),
        "seed": 11,
        "stop": {"ops": 600},
        "filesets": [{"name": "data", "count": 20, "prealloc_pct": 50,
                      "size": {"type": "gamma", "mean": 20000, "shape": 1.5}}],
        "groups": [{"name": "g", "threads": 2, "flowops": [
            {"op": "create", "fileset": "data", "direct": true},
            {"op": "writewhole", "iosize": 8192, "direct": true},
            {"op": "append", "iosize": 5000, "direct": true},
            {"op": "fsync"},
            {"op": "readwhole", "iosize": 4096, "direct": true},
            {"op": "close"},
            {"op": "delete", "fileset": "data"}
        ]}]
    });
    let r = ok_json(&run_spec(&spec));
    assert_eq!(r["total"]["ops"], 600);
    let ops = r["groups"][0]["flowops"].as_array().expect("flowops");
    // O_DIRECT writes are whole 4 KiB blocks
    for k in [1, 2] {
        let (n, w) = (ops[k]["ops"].as_u64(), ops[k]["bytes_written"].as_u64());
        assert!(n > Some(0));
        assert_eq!(w.map(|w| w % 4096), Some(0), "{}", ops[k]["name"]);
    }
    assert!(ops[4]["bytes_read"].as_u64() > Some(0));
}

// ---- churn ----

const MIB: u64 = 1 << 20;

fn churn(spec: &Value) -> Output {
    engine(&["churn", "-"], Some(&spec.to_string()))
}

fn churn_spec(dir: &Path, seed: u64, write_bytes: u64) -> Value {
    json!({
        "schema": 1,
        "dir": dir.to_str().expect("utf-8"),
        "seed": seed,
        "profile": "default",
        "fullness": 0.8,
        "write_bytes": write_bytes,
        "capacity_bytes": 16 * MIB
    })
}

/// The churn's files (not its state file), sorted.
fn churn_files(dir: &Path) -> Vec<(String, u64)> {
    listing(dir)
        .into_iter()
        .filter(|(n, _)| !n.starts_with(".churn-state"))
        .collect()
}

/// What a call says about the files must be what is on disk; fullness within the band.
fn check_churn(r: &Value, dir: &Path) {
    assert_eq!(r["schema"], 1);
    assert_eq!(r["engine"]["name"], "fsbench-engine");
    let files = churn_files(dir);
    assert_eq!(r["files"].as_u64(), Some(files.len() as u64), "live files");
    assert_eq!(
        r["live_bytes"].as_u64(),
        Some(files.iter().map(|(_, s)| s).sum::<u64>())
    );
    let by_depth: u64 = r["files_by_depth"]
        .as_array()
        .expect("files_by_depth")
        .iter()
        .map(|v| v.as_u64().unwrap_or(0))
        .sum();
    assert_eq!(r["files"].as_u64(), Some(by_depth));
    assert!(files.iter().all(|(n, _)| {
        let name = n.rsplit('/').next().unwrap_or("");
        name.starts_with('f') && name[1..].parse::<u64>().is_ok()
    }));
    let (full, target, band) = (
        r["fullness"].as_f64().expect("fullness"),
        r["target_fullness"].as_f64().expect("target"),
        r["band"].as_f64().expect("band"),
    );
    if r["reached"] == true {
        assert!((full - target).abs() <= band, "fullness {full}");
        assert_eq!(r["stopped_by"], "reached");
        assert!(r["written_bytes"].as_u64() >= r["spec"]["write_bytes"].as_u64());
    }
    for k in [
        "block_size",
        "total_bytes",
        "free_bytes",
        "avail_bytes",
        "used_bytes",
    ] {
        assert!(r["fs"][k].is_u64(), "fs.{k}");
    }
    assert!(r["seconds"].as_f64().is_some_and(|s| s >= 0.0));
}

#[test]
fn churn_bad_specs_are_one_line_exit_2() {
    let d = TempDir::new("churn-bad");
    let dir = d.path().join("aged");
    let good = churn_spec(&dir, 1, MIB);
    type Mutation = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(Mutation, &str)> = vec![
        (Box::new(|v| v["frob"] = json!(1)), "unknown field `frob`"),
        (
            Box::new(|v| {
                v.as_object_mut().map(|o| o.remove("seed"));
            }),
            "missing field `seed`",
        ),
        (Box::new(|v| v["fullness"] = json!(80)), "fullness must be"),
        (
            Box::new(|v| v["profile"] = json!("tiny")),
            "unknown profile",
        ),
        (
            Box::new(|v| v["profile"] = json!({"size": {"type": "gamma", "mean": 0, "shape": 1}})),
            "profile: missing field `depth`",
        ),
        (Box::new(|v| v["write_bytes"] = json!(-5)), "expected u64"),
        (Box::new(|v| v["schema"] = json!(3)), "schema 3"),
    ];
    for (mutate, want) in cases {
        let mut spec = good.clone();
        mutate(&mut spec);
        let (code, err) = failure(&churn(&spec));
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(want), "wanted {want:?} in {err}");
    }
    let (code, err) = failure(&engine(&["churn", "-"], Some("{\"schema\": 1")));
    assert_eq!(code, 2);
    assert!(err.contains("spec: "), "{err}");
    let (code, _) = failure(&engine(&["churn"], None));
    assert_eq!(code, 2);
    assert!(!dir.exists(), "a bad spec touches nothing");
    let l = ok_json(&engine(&["list"], None));
    assert_eq!(l["churn_profiles"], json!(["default", "small", "large"]));
}

#[test]
fn churn_same_seed_same_files() {
    let (a, b, c) = (
        TempDir::new("churn-a"),
        TempDir::new("churn-b"),
        TempDir::new("churn-c"),
    );
    let age = |d: &TempDir, seed: u64| {
        let dir = d.path().join("aged");
        for w in [8 * MIB, 24 * MIB] {
            let r = ok_json(&churn(&churn_spec(&dir, seed, w)));
            check_churn(&r, &dir);
            assert_eq!(r["reached"], true);
        }
        let state = std::fs::read_to_string(dir.join(".churn-state.json")).expect("state");
        (churn_files(&dir), state)
    };
    let (la, sa) = age(&a, 42);
    let (lb, sb) = age(&b, 42);
    assert!(la.len() > 50, "{} files", la.len());
    assert!(
        la.iter().any(|(n, _)| n.matches('/').count() >= 3),
        "deep files"
    );
    assert_eq!(la, lb, "same seed and calls, same names and sizes");
    assert_eq!(sa, sb, "and the same state");
    let (lc, _) = age(&c, 43);
    assert_ne!(la, lc, "another seed, other files");
}

#[test]
fn churn_continues_over_calls() {
    let d = TempDir::new("churn-steps");
    let dir = d.path().join("aged");
    let state_path = dir.join(".churn-state.json");
    let mut prev: Option<Value> = None;
    for k in 1..=3u64 {
        let r = ok_json(&churn(&churn_spec(&dir, 5, k * 16 * MIB)));
        check_churn(&r, &dir);
        assert_eq!(r["reached"], true);
        assert_eq!(r["calls"], k);
        assert_eq!(r["measured_by"], "capacity_bytes");
        assert_eq!(r["capacity_bytes"], 16 * MIB);
        assert_eq!(r["spec"]["profile"]["name"], "default");
        assert_eq!(r["max_file_size"], MIB, "1/16 of the capacity");
        let w = r["written_bytes"].as_u64().expect("written");
        assert!(
            w >= k * 16 * MIB && w < k * 16 * MIB + 8 * MIB,
            "written {w}"
        );
        for key in ["written_bytes", "created", "deleted", "enospc_events"] {
            let was = prev.as_ref().map_or(0, |p| p[key].as_u64().unwrap_or(0));
            assert_eq!(
                r[key].as_u64(),
                r[format!("{key}_call")].as_u64().map(|c| c + was),
                "{key} is cumulative"
            );
        }
        if k > 1 {
            assert!(r["deleted_call"].as_u64() > Some(100), "it churned");
        }
        let st: Value = serde_json::from_str(&std::fs::read_to_string(&state_path).expect("state"))
            .expect("state JSON");
        assert_eq!(st["calls"], k);
        assert_eq!(st["in_progress"], false);
        assert_eq!(st["written_bytes"], r["written_bytes"]);
        assert_eq!(
            st["files"].as_array().map(|f| f.len() as u64),
            r["files"].as_u64()
        );
        prev = Some(r);
    }
    let prev = prev.expect("three calls");

    // the volume is reached and the fullness in the band: nothing to do
    let r = ok_json(&churn(&churn_spec(&dir, 5, 48 * MIB)));
    assert_eq!(r["reached"], true);
    assert_eq!(
        (r["written_bytes_call"].as_u64(), r["created_call"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(r["deleted_call"], 0);
    assert_eq!(r["written_bytes"], prev["written_bytes"]);
    assert_eq!(r["calls"], 4);

    // another seed, or another profile, is another churn
    let (code, err) = failure(&churn(&churn_spec(&dir, 6, 64 * MIB)));
    assert_eq!(code, 2);
    assert!(err.contains("seed 6 differs from the seed 5"), "{err}");
    let mut spec = churn_spec(&dir, 5, 64 * MIB);
    spec["profile"] = json!("small");
    let (code, err) = failure(&churn(&spec));
    assert_eq!(code, 2);
    assert!(err.contains("profile"), "{err}");

    // max_seconds stops a long call (not reached), keeping the state consistent
    let mut spec = churn_spec(&dir, 5, 1 << 40);
    spec["max_seconds"] = json!(0.1);
    let r = ok_json(&churn(&spec));
    check_churn(&r, &dir);
    assert_eq!(r["reached"], false);
    assert_eq!(r["stopped_by"], "max_seconds");
    assert!(r["seconds"].as_f64() < Some(5.0));
    assert!(r["written_bytes_call"].as_u64() > Some(0));

    // a call that did not finish leaves a state the next call refuses
    let text = std::fs::read_to_string(&state_path).expect("state");
    std::fs::write(
        &state_path,
        text.replace("\"in_progress\":false", "\"in_progress\":true"),
    )
    .expect("write");
    let (code, err) = failure(&churn(&churn_spec(&dir, 5, 1 << 40)));
    assert_eq!(code, 1);
    assert!(err.contains("did not finish"), "{err}");

    // a directory with files but no state is not the churn's
    let other = d.path().join("someone");
    std::fs::create_dir_all(&other).expect("mkdir");
    std::fs::write(other.join("precious"), "x").expect("write");
    let (code, err) = failure(&churn(&churn_spec(&other, 5, MIB)));
    assert_eq!(code, 1);
    assert!(
        err.contains("is not empty and has no .churn-state.json"),
        "{err}"
    );
    assert!(other.join("precious").exists());
}

/// A tmpfs mounted on a fresh directory, unmounted (and the directory removed) on drop,
/// also when the test fails.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(tag: &str, size: &str) -> Self {
        let d = TempDir::new(tag);
        let p = d.0.clone();
        std::mem::forget(d); // Tmpfs removes it, after unmounting
        let t = Tmpfs(p);
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size}"),
                "fsbench-churn",
            ])
            .arg(&t.0)
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "mount tmpfs: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// (f_blocks - f_bfree) / f_blocks of `p`, from stat(1).
fn statfs_fullness(p: &Path) -> f64 {
    let out = Command::new("stat")
        .args(["-f", "-c", "%b %f"])
        .arg(p)
        .output()
        .expect("run stat -f");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .split_whitespace()
        .map(|x| x.parse().expect("number"))
        .collect();
    (v[0] - v[1]) / v[0]
}

#[test]
#[ignore = "needs root: mounts a tmpfs"]
fn churn_ages_a_tmpfs_to_fullness() {
    let uid = Command::new("id").arg("-u").output().expect("run id -u");
    assert_eq!(
        String::from_utf8_lossy(&uid.stdout).trim(),
        "0",
        "mounting a tmpfs needs root: run this test as root"
    );
    let size = 64 * MIB;
    let mounts = [
        Tmpfs::mount("churn-fs-a", "64m"),
        Tmpfs::mount("churn-fs-b", "64m"),
    ];
    let mut listings = Vec::new();
    for m in &mounts {
        let dir = m.0.join("aged");
        let mut spec = json!({"schema": 1, "dir": dir.to_str().expect("utf-8"),
                              "seed": 7, "fullness": 0.8});
        for k in 1..=3u64 {
            spec["write_bytes"] = json!(k * size);
            let r = ok_json(&churn(&spec));
            check_churn(&r, &dir);
            assert_eq!(r["reached"], true, "call {k}: {r}");
            assert_eq!(r["measured_by"], "statfs");
            assert_eq!(r["fs"]["total_bytes"], size);
            assert_eq!(r["capacity_bytes"], size);
            assert_eq!(r["calls"], k);
            let full = statfs_fullness(&m.0);
            assert!((full - 0.8).abs() <= 0.01, "call {k}: statfs says {full}");
            assert!((r["fullness"].as_f64().expect("fullness") - full).abs() < 0.001);
            let w = r["written_bytes"].as_u64().expect("written");
            assert!(
                w >= k * size && w < k * size + size / 4,
                "call {k}: wrote {w}"
            );
        }
        listings.push(churn_files(&dir));
    }
    assert!(listings[0].len() > 100);
    assert_eq!(
        listings[0], listings[1],
        "the same churn on two tmpfs: the same files"
    );

    // out of inodes long before the target: a runtime error in the OS's words
    let few = Tmpfs::mount("churn-fs-inodes", "64m,nr_inodes=40");
    let dir = few.0.join("aged");
    let spec = json!({"schema": 1, "dir": dir.to_str().expect("utf-8"), "seed": 7,
                      "fullness": 0.8, "profile": "small", "write_bytes": size});
    let (code, err) = failure(&churn(&spec));
    assert_eq!(code, 1);
    assert!(
        err.contains("No space left on device below the target"),
        "{err}"
    );
    assert!(
        err.contains("0 inodes free") && err.contains(dir.to_str().expect("utf-8")),
        "{err}"
    );
}
