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
    assert!(
        dur >= want * 0.99 && dur < want + 1.5,
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
