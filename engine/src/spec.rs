//! The workload spec (JSON, `"schema": 1`): parsing, defaults and validation.
//!
//! [`parse`] gives a spec that has passed [`validate`]; [`Spec::normalize`] fills in
//! every default (flowop names, I/O sizes, the seed) so the effective spec echoed in the
//! results can be run again as it is.

use serde::{Deserialize, Serialize};
use std::collections::HashSet;

use crate::error::{Error, Result};

/// The schema version of specs this engine reads and of the results it writes.
pub const SCHEMA: u32 = 1;
/// fd numbers run from 1 to this (filebench's `fd=1`, `fd=2`...).
pub const MAX_FD: u8 = 8;
/// Largest I/O size of one call.
pub const MAX_IOSIZE: u64 = 256 << 20;
/// Largest file count of one fileset (entries are indexed by u32).
pub const MAX_FILES: u64 = 100_000_000;
/// Largest thread count of one group.
pub const MAX_THREADS: u32 = 4096;
/// O_DIRECT I/O sizes must be multiples of this, and offsets are aligned to it.
pub const DIRECT_ALIGN: u64 = 4096;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub schema: u32,
    /// A label, echoed in the results.
    #[serde(default)]
    pub name: String,
    /// Directory on the filesystem under test; each fileset lives in `dir/<fileset name>`.
    pub dir: String,
    /// Seed of every random choice (fileset sizes and layout, per-thread streams).
    /// Absent: one is drawn from the clock and reported.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Seconds run before measuring starts; nothing done in them is counted.
    #[serde(default)]
    pub warmup_s: f64,
    pub stop: Stop,
    /// After prepare and sync: `echo 3 > /proc/sys/vm/drop_caches` (needs root).
    #[serde(default)]
    pub drop_caches: bool,
    pub filesets: Vec<FilesetSpec>,
    pub groups: Vec<GroupSpec>,
}

/// When the measured phase ends: after `duration_s`, after `ops` flowops (all threads
/// together), or at whichever comes first when both are given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stop {
    #[serde(default)]
    pub duration_s: Option<f64>,
    #[serde(default)]
    pub ops: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesetSpec {
    pub name: String,
    /// Number of file slots (filebench's `entries`).
    pub count: u64,
    /// Mean number of entries per directory (filebench's `dirwidth`).
    #[serde(default = "default_dirwidth")]
    pub dirwidth: u64,
    /// File size distribution.
    pub size: SizeDist,
    /// Percentage of the slots created during prepare (filebench's `prealloc`).
    #[serde(default = "default_prealloc")]
    pub prealloc_pct: f64,
    /// Keep the files of an earlier prepare of the same fileset instead of making it anew.
    #[serde(default)]
    pub reuse: bool,
    /// How flowops pick a file: filebench's rotation (default) or uniformly at random.
    #[serde(default)]
    pub pick: PickOrder,
    /// Open its files read-only (filebench's `readonly` fileset attribute), else O_RDWR.
    #[serde(default)]
    pub readonly: bool,
}

/// How a flowop picks its file from a fileset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PickOrder {
    /// filebench's: the next idle entry after the last one picked, in index order (one
    /// rotor for existing entries, shared by open, stat, delete and rename, and one for
    /// free entries, used by create), wrapping around.
    #[default]
    Rotor,
    /// An idle entry drawn uniformly from the thread's random stream.
    Random,
}

fn default_dirwidth() -> u64 {
    20
}

fn default_prealloc() -> f64 {
    100.0
}

/// A size distribution in bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum SizeDist {
    Fixed {
        size: u64,
    },
    /// Gamma with this mean and shape (filebench's `cvar-gamma`, `gamma:1.5`); scale = mean/shape.
    Gamma {
        mean: f64,
        shape: f64,
    },
    /// Uniform on [min, max].
    Uniform {
        min: u64,
        max: u64,
    },
    /// Lognormal: ln(size) is normal with mean `mu` and standard deviation `sigma`
    /// (median e^mu, mean e^(mu + sigma^2/2)); the shape of file-size studies.
    Lognormal {
        mu: f64,
        sigma: f64,
    },
    /// Poisson with this mean (for small counts, e.g. a directory depth).
    Poisson {
        mean: f64,
    },
}

impl SizeDist {
    /// The distribution's mean (before the 1 TiB cap of a sample).
    pub fn mean(&self) -> f64 {
        match *self {
            SizeDist::Fixed { size } => size as f64,
            SizeDist::Gamma { mean, .. } | SizeDist::Poisson { mean } => mean,
            SizeDist::Uniform { min, max } => (min as f64 + max as f64) / 2.0,
            SizeDist::Lognormal { mu, sigma } => (mu + sigma * sigma / 2.0).exp(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    pub name: String,
    pub threads: u32,
    /// Executed in order, in a loop, by every thread of the group.
    pub flowops: Vec<FlowopSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    #[serde(alias = "createfile")]
    Create,
    #[serde(alias = "openfile")]
    Open,
    #[serde(alias = "closefile")]
    Close,
    #[serde(alias = "deletefile")]
    Delete,
    #[serde(alias = "statfile")]
    Stat,
    #[serde(alias = "readwholefile")]
    Readwhole,
    #[serde(alias = "writewholefile")]
    Writewhole,
    #[serde(alias = "appendfilerand")]
    Append,
    Randread,
    Randwrite,
    Fsync,
    Fdatasync,
    Readdir,
    Rename,
}

impl OpKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Create => "create",
            OpKind::Open => "open",
            OpKind::Close => "close",
            OpKind::Delete => "delete",
            OpKind::Stat => "stat",
            OpKind::Readwhole => "readwhole",
            OpKind::Writewhole => "writewhole",
            OpKind::Append => "append",
            OpKind::Randread => "randread",
            OpKind::Randwrite => "randwrite",
            OpKind::Fsync => "fsync",
            OpKind::Fdatasync => "fdatasync",
            OpKind::Readdir => "readdir",
            OpKind::Rename => "rename",
        }
    }

    /// Picks its file(s) from a fileset, so `fileset` is required.
    pub fn needs_fileset(self) -> bool {
        matches!(
            self,
            OpKind::Create | OpKind::Open | OpKind::Delete | OpKind::Readdir | OpKind::Rename
        )
    }

    /// Works on the thread's open fd (opening one from `fileset` if it has none).
    pub fn uses_fd(self) -> bool {
        matches!(
            self,
            OpKind::Readwhole
                | OpKind::Writewhole
                | OpKind::Append
                | OpKind::Randread
                | OpKind::Randwrite
                | OpKind::Fsync
                | OpKind::Fdatasync
        )
    }

    /// The default I/O size, for the ops that do data I/O.
    pub fn default_iosize(self) -> Option<u64> {
        match self {
            OpKind::Readwhole | OpKind::Writewhole => Some(1 << 20),
            OpKind::Randread | OpKind::Randwrite => Some(4096),
            OpKind::Append => Some(16 << 10),
            _ => None,
        }
    }

    /// May open its fd with, or switch it to, O_DIRECT.
    pub fn allows_direct(self) -> bool {
        matches!(self, OpKind::Create | OpKind::Open) || self.default_iosize().is_some()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowopSpec {
    pub op: OpKind,
    /// Unique within the group; default `<op><position>` (1-based).
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub fileset: Option<String>,
    /// Which of the thread's fds the flowop uses (1..=8), like filebench's `fd=1`.
    #[serde(default = "default_fd")]
    pub fd: u8,
    /// Bytes per I/O call (readwhole, writewhole, randread, randwrite), or the largest
    /// append (append: uniform on [1, iosize] unless `size` is given).
    #[serde(default)]
    pub iosize: Option<u64>,
    /// append only: the append size distribution instead of uniform on [1, iosize].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<SizeDist>,
    /// Use O_DIRECT for this flowop's I/O (the filesystem must support it).
    #[serde(default)]
    pub direct: bool,
}

fn default_fd() -> u8 {
    1
}

impl FlowopSpec {
    pub fn new(op: OpKind, name: &str) -> Self {
        FlowopSpec {
            op,
            name: Some(name.to_string()),
            fileset: None,
            fd: 1,
            iosize: None,
            size: None,
            direct: false,
        }
    }

    pub fn fileset(mut self, name: &str) -> Self {
        self.fileset = Some(name.to_string());
        self
    }

    pub fn fd(mut self, fd: u8) -> Self {
        self.fd = fd;
        self
    }

    pub fn iosize(mut self, iosize: u64) -> Self {
        self.iosize = Some(iosize);
        self
    }

    /// The name, which [`Spec::normalize`] guarantees to be set.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(self.op.as_str())
    }
}

/// Parse and validate a spec (JSON text).
pub fn parse(text: &str) -> Result<Spec> {
    let spec: Spec = serde_json::from_str(text).map_err(|e| Error::input(format!("spec: {e}")))?;
    validate(&spec)?;
    Ok(spec)
}

fn is_simple_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn finite_nonneg(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

pub fn validate_size(d: &SizeDist, what: &str) -> Result<()> {
    match *d {
        SizeDist::Fixed { size } => {
            if size > 1 << 40 {
                return Err(Error::input(format!(
                    "spec: {what}: size {size} is over 1 TiB"
                )));
            }
        }
        SizeDist::Gamma { mean, shape } => {
            if !(mean.is_finite() && mean > 0.0 && mean <= (1u64 << 40) as f64) {
                return Err(Error::input(format!(
                    "spec: {what}: gamma mean must be > 0 and at most 1 TiB, got {mean}"
                )));
            }
            if !(shape.is_finite() && shape > 0.0) {
                return Err(Error::input(format!(
                    "spec: {what}: gamma shape must be > 0, got {shape}"
                )));
            }
        }
        SizeDist::Uniform { min, max } => {
            if min > max || max > 1 << 40 {
                return Err(Error::input(format!(
                    "spec: {what}: uniform needs min <= max <= 1 TiB, got [{min}, {max}]"
                )));
            }
        }
        SizeDist::Lognormal { mu, sigma } => {
            // e^27.7 is 1 TiB: a median beyond it is nonsense
            if !(mu.is_finite() && (-10.0..=27.7).contains(&mu)) {
                return Err(Error::input(format!(
                    "spec: {what}: lognormal mu (ln of the median) must be between -10 and 27.7, got {mu}"
                )));
            }
            if !(sigma.is_finite() && sigma > 0.0 && sigma <= 10.0) {
                return Err(Error::input(format!(
                    "spec: {what}: lognormal sigma must be > 0 and at most 10, got {sigma}"
                )));
            }
        }
        SizeDist::Poisson { mean } => {
            if !(mean.is_finite() && mean > 0.0 && mean <= 1e12) {
                return Err(Error::input(format!(
                    "spec: {what}: poisson mean must be > 0 and at most 1e12, got {mean}"
                )));
            }
        }
    }
    Ok(())
}

/// Check everything that can be checked without touching the filesystem.
pub fn validate(spec: &Spec) -> Result<()> {
    let bad = |m: String| Err(Error::input(format!("spec: {m}")));
    if spec.schema != SCHEMA {
        return bad(format!(
            "schema {} is not supported (this engine reads schema {SCHEMA})",
            spec.schema
        ));
    }
    if spec.dir.trim().is_empty() {
        return bad("dir is empty".into());
    }
    if spec.dir.contains('\0') {
        return bad("dir contains a NUL byte".into());
    }
    if !finite_nonneg(spec.warmup_s) || spec.warmup_s > 86_400.0 {
        return bad(format!(
            "warmup_s must be between 0 and 86400, got {}",
            spec.warmup_s
        ));
    }
    match (spec.stop.duration_s, spec.stop.ops) {
        (None, None) => return bad("stop needs duration_s or ops (or both)".into()),
        (Some(d), _) if !(d.is_finite() && d > 0.0 && d <= 1e7) => {
            return bad(format!("stop.duration_s must be > 0 (and sane), got {d}"));
        }
        (_, Some(0)) => return bad("stop.ops must be > 0".into()),
        _ => {}
    }

    let mut fileset_names = HashSet::new();
    for (i, fs) in spec.filesets.iter().enumerate() {
        let at = format!("filesets[{i}]");
        if !is_simple_name(&fs.name) {
            return bad(format!(
                "{at}: name {:?} must be 1-64 characters of A-Z a-z 0-9 _ - . (it names a directory)",
                fs.name
            ));
        }
        if !fileset_names.insert(fs.name.as_str()) {
            return bad(format!("{at}: fileset name {:?} is used twice", fs.name));
        }
        let at = format!("fileset {:?}", fs.name);
        if fs.count == 0 || fs.count > MAX_FILES {
            return bad(format!(
                "{at}: count must be 1..={MAX_FILES}, got {}",
                fs.count
            ));
        }
        if fs.dirwidth == 0 {
            return bad(format!("{at}: dirwidth must be >= 1"));
        }
        if !(finite_nonneg(fs.prealloc_pct) && fs.prealloc_pct <= 100.0) {
            return bad(format!(
                "{at}: prealloc_pct must be between 0 and 100, got {}",
                fs.prealloc_pct
            ));
        }
        validate_size(&fs.size, &at)?;
    }

    if spec.groups.is_empty() {
        return bad("groups is empty: nothing to run".into());
    }
    let mut group_names = HashSet::new();
    for (gi, g) in spec.groups.iter().enumerate() {
        if g.name.is_empty() {
            return bad(format!("groups[{gi}]: name is empty"));
        }
        if !group_names.insert(g.name.as_str()) {
            return bad(format!(
                "groups[{gi}]: group name {:?} is used twice",
                g.name
            ));
        }
        let at = format!("group {:?}", g.name);
        if g.threads == 0 || g.threads > MAX_THREADS {
            return bad(format!(
                "{at}: threads must be 1..={MAX_THREADS}, got {}",
                g.threads
            ));
        }
        if g.flowops.is_empty() {
            return bad(format!("{at}: flowops is empty"));
        }
        let mut op_names = HashSet::new();
        for (oi, op) in g.flowops.iter().enumerate() {
            let default_name = format!("{}{}", op.op.as_str(), oi + 1);
            let name = op.name.clone().unwrap_or(default_name);
            if name.is_empty() {
                return bad(format!("{at}: flowops[{oi}]: name is empty"));
            }
            if !op_names.insert(name.clone()) {
                return bad(format!("{at}: flowop name {name:?} is used twice"));
            }
            let at = format!("{at}: flowop {name:?} ({})", op.op.as_str());
            validate_flowop(op, &at, &fileset_names)?;
        }
        check_fd_flow(g, &at)?;
    }
    Ok(())
}

fn validate_flowop(op: &FlowopSpec, at: &str, filesets: &HashSet<&str>) -> Result<()> {
    let bad = |m: String| Err(Error::input(format!("spec: {at}: {m}")));
    if op.fd == 0 || op.fd > MAX_FD {
        return bad(format!("fd must be 1..={MAX_FD}, got {}", op.fd));
    }
    match &op.fileset {
        Some(f) if !filesets.contains(f.as_str()) => {
            return bad(format!("fileset {f:?} is not defined"));
        }
        None if op.op.needs_fileset() => return bad("needs a fileset".into()),
        _ => {}
    }
    match (op.op.default_iosize(), op.iosize) {
        (None, Some(_)) => return bad("iosize has no meaning here".into()),
        (Some(_), Some(n)) if n == 0 || n > MAX_IOSIZE => {
            return bad(format!("iosize must be 1..={MAX_IOSIZE}, got {n}"));
        }
        _ => {}
    }
    if let Some(d) = &op.size {
        if op.op != OpKind::Append {
            return bad("size is only for append".into());
        }
        validate_size(d, at)?;
    }
    if op.direct {
        if !op.op.allows_direct() {
            return bad("direct has no meaning here".into());
        }
        // appends and whole-file writes round their sizes up instead
        if let Some(n) = op.iosize.or(op.op.default_iosize())
            && op.op != OpKind::Append
            && n % DIRECT_ALIGN != 0
        {
            return bad(format!(
                "with direct, iosize must be a multiple of {DIRECT_ALIGN}, got {n}"
            ));
        }
    }
    Ok(())
}

/// Walk the chain twice (it loops) tracking which fds are open, so that a flowop that
/// needs an fd nobody opened is an error now, not a failure in the middle of a run.
fn check_fd_flow(g: &GroupSpec, at: &str) -> Result<()> {
    let mut open = [false; MAX_FD as usize + 1];
    for _ in 0..2 {
        for (oi, op) in g.flowops.iter().enumerate() {
            let fd = op.fd as usize;
            match op.op {
                OpKind::Create | OpKind::Open => open[fd] = true,
                OpKind::Close => open[fd] = false,
                OpKind::Stat if op.fileset.is_none() && !open[fd] => {
                    return Err(Error::input(format!(
                        "spec: {at}: flowop {:?} (stat) has no fileset and fd {} is not open there",
                        op.name.clone().unwrap_or(format!("stat{}", oi + 1)),
                        op.fd
                    )));
                }
                k if k.uses_fd() && !open[fd] => {
                    if op.fileset.is_none() {
                        return Err(Error::input(format!(
                            "spec: {at}: flowop {:?} ({}) uses fd {}, which no earlier flowop opens; \
                             open it first or give the flowop a fileset to open a file from",
                            op.name
                                .clone()
                                .unwrap_or(format!("{}{}", k.as_str(), oi + 1)),
                            k.as_str(),
                            op.fd
                        )));
                    }
                    open[fd] = true;
                }
                _ => {}
            }
        }
    }
    Ok(())
}

impl Spec {
    /// Fill in every default so the spec is explicit: flowop names and I/O sizes, and
    /// the seed (from `fallback_seed` when absent).
    pub fn normalize(&mut self, fallback_seed: u64) {
        if self.seed.is_none() {
            self.seed = Some(fallback_seed);
        }
        for g in &mut self.groups {
            for (i, op) in g.flowops.iter_mut().enumerate() {
                if op.name.is_none() {
                    op.name = Some(format!("{}{}", op.op.as_str(), i + 1));
                }
                if op.iosize.is_none() {
                    op.iosize = op.op.default_iosize();
                }
            }
        }
    }

    pub fn seed_or_zero(&self) -> u64 {
        self.seed.unwrap_or(0)
    }

    pub fn uses_direct(&self) -> bool {
        self.groups
            .iter()
            .flat_map(|g| &g.flowops)
            .any(|op| op.direct)
    }

    pub fn fileset_index(&self, name: &str) -> Option<usize> {
        self.filesets.iter().position(|f| f.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minimal() -> serde_json::Value {
        serde_json::json!({
            "schema": 1,
            "dir": "/tmp/x",
            "stop": {"duration_s": 1},
            "filesets": [{"name": "fs", "count": 10, "size": {"type": "fixed", "size": 4096}}],
            "groups": [{"name": "g", "threads": 1, "flowops": [
                {"op": "open", "fileset": "fs"},
                {"op": "readwhole"},
                {"op": "close"}
            ]}]
        })
    }

    fn err_of(v: serde_json::Value) -> String {
        match parse(&v.to_string()) {
            Ok(_) => panic!("expected an error for {v}"),
            Err(e) => {
                assert_eq!(e.kind, crate::error::Kind::Input);
                e.msg
            }
        }
    }

    #[test]
    fn minimal_parses_with_defaults() {
        let mut s = parse(&minimal().to_string()).expect("valid");
        assert_eq!(s.filesets[0].dirwidth, 20);
        assert_eq!(s.filesets[0].prealloc_pct, 100.0);
        assert_eq!(s.groups[0].flowops[1].fd, 1);
        assert_eq!(s.seed, None);
        s.normalize(77);
        assert_eq!(s.seed, Some(77));
        let names: Vec<_> = s.groups[0].flowops.iter().map(|o| o.label()).collect();
        assert_eq!(names, ["open1", "readwhole2", "close3"]);
        assert_eq!(s.groups[0].flowops[1].iosize, Some(1 << 20));
        assert_eq!(s.groups[0].flowops[0].iosize, None);
        // the normalized spec round-trips
        let again = parse(&serde_json::to_string(&s).expect("ser")).expect("reparse");
        assert_eq!(again, s);
    }

    #[test]
    fn filebench_aliases() {
        let mut v = minimal();
        v["groups"][0]["flowops"][0]["op"] = "openfile".into();
        v["groups"][0]["flowops"][1]["op"] = "readwholefile".into();
        let s = parse(&v.to_string()).expect("aliases");
        assert_eq!(s.groups[0].flowops[0].op, OpKind::Open);
        assert_eq!(s.groups[0].flowops[1].op, OpKind::Readwhole);
    }

    #[test]
    fn gamma_and_uniform_sizes_parse() {
        let mut v = minimal();
        v["filesets"][0]["size"] =
            serde_json::json!({"type": "gamma", "mean": 16384, "shape": 1.5});
        parse(&v.to_string()).expect("gamma");
        v["filesets"][0]["size"] = serde_json::json!({"type": "uniform", "min": 1, "max": 10});
        parse(&v.to_string()).expect("uniform");
    }

    #[test]
    fn syntax_and_unknown_fields() {
        let e = parse("{not json").expect_err("syntax");
        assert!(e.msg.starts_with("spec: "), "{}", e.msg);
        let mut v = minimal();
        v["threds"] = 3.into();
        assert!(err_of(v).contains("unknown field `threds`"));
        let mut v = minimal();
        v["groups"][0]["flowops"][0]["op"] = "frobnicate".into();
        assert!(err_of(v).contains("unknown variant `frobnicate`"));
        let mut v = minimal();
        v["filesets"][0]["size"] = serde_json::json!({"type": "gamma", "mean": 1});
        assert!(err_of(v).contains("shape"));
    }

    #[test]
    fn validation_errors() {
        type Mutation = Box<dyn Fn(&mut serde_json::Value)>;
        let cases: Vec<(Mutation, &str)> = vec![
            (
                Box::new(|v| v["schema"] = 2.into()),
                "schema 2 is not supported",
            ),
            (Box::new(|v| v["dir"] = "".into()), "dir is empty"),
            (
                Box::new(|v| v["stop"] = serde_json::json!({})),
                "stop needs",
            ),
            (
                Box::new(|v| v["stop"]["duration_s"] = (-1.0).into()),
                "duration_s",
            ),
            (
                Box::new(|v| v["stop"] = serde_json::json!({"ops": 0})),
                "stop.ops",
            ),
            (Box::new(|v| v["warmup_s"] = (-1.0).into()), "warmup_s"),
            (
                Box::new(|v| v["filesets"][0]["name"] = "../x".into()),
                "must be 1-64",
            ),
            (
                Box::new(|v| v["filesets"][0]["count"] = 0.into()),
                "count must be",
            ),
            (
                Box::new(|v| v["filesets"][0]["dirwidth"] = 0.into()),
                "dirwidth",
            ),
            (
                Box::new(|v| v["filesets"][0]["prealloc_pct"] = 101.into()),
                "prealloc_pct",
            ),
            (
                Box::new(|v| {
                    v["filesets"][0]["size"] =
                        serde_json::json!({"type": "gamma", "mean": 0, "shape": 1.5})
                }),
                "gamma mean",
            ),
            (
                Box::new(|v| {
                    v["filesets"][0]["size"] =
                        serde_json::json!({"type": "uniform", "min": 5, "max": 1})
                }),
                "uniform needs",
            ),
            (
                Box::new(|v| {
                    v["filesets"][0]["size"] =
                        serde_json::json!({"type": "lognormal", "mu": 40, "sigma": 1})
                }),
                "lognormal mu",
            ),
            (
                Box::new(|v| {
                    v["filesets"][0]["size"] = serde_json::json!({"type": "poisson", "mean": -1})
                }),
                "poisson mean",
            ),
            (
                Box::new(|v| {
                    let first = v["filesets"][0].clone();
                    v["filesets"].as_array_mut().expect("a").push(first)
                }),
                "used twice",
            ),
            (
                Box::new(|v| v["groups"] = serde_json::json!([])),
                "groups is empty",
            ),
            (
                Box::new(|v| v["groups"][0]["threads"] = 0.into()),
                "threads must be",
            ),
            (
                Box::new(|v| v["groups"][0]["flowops"] = serde_json::json!([])),
                "flowops is empty",
            ),
            (
                Box::new(|v| v["groups"][0]["flowops"][0]["fileset"] = "nope".into()),
                "is not defined",
            ),
            (
                Box::new(|v| v["groups"][0]["flowops"][0] = serde_json::json!({"op": "create"})),
                "needs a fileset",
            ),
            (
                Box::new(|v| v["groups"][0]["flowops"][0]["fd"] = 9.into()),
                "fd must be",
            ),
            (
                Box::new(|v| v["groups"][0]["flowops"][0]["iosize"] = 4096.into()),
                "iosize has no meaning",
            ),
            (
                Box::new(|v| v["groups"][0]["flowops"][1]["iosize"] = 0.into()),
                "iosize must be",
            ),
            (
                Box::new(|v| {
                    v["groups"][0]["flowops"][1]["size"] =
                        serde_json::json!({"type": "fixed", "size": 1})
                }),
                "size is only for append",
            ),
            (
                Box::new(|v| v["groups"][0]["flowops"][2]["direct"] = true.into()),
                "direct has no meaning",
            ),
            (
                Box::new(|v| {
                    v["groups"][0]["flowops"][1]["direct"] = true.into();
                    v["groups"][0]["flowops"][1]["iosize"] = 1000.into();
                }),
                "multiple of 4096",
            ),
            (
                Box::new(|v| {
                    v["groups"][0]["flowops"][0]["name"] = "x".into();
                    v["groups"][0]["flowops"][1]["name"] = "x".into();
                }),
                "flowop name \"x\" is used twice",
            ),
            (
                Box::new(|v| v["groups"][0]["flowops"][1]["fd"] = 2.into()),
                "uses fd 2, which no earlier flowop opens",
            ),
            (
                Box::new(|v| {
                    v["groups"][0]["flowops"][1] = serde_json::json!({"op": "stat", "fd": 3})
                }),
                "has no fileset and fd 3 is not open",
            ),
        ];
        for (mutate, want) in cases {
            let mut v = minimal();
            mutate(&mut v);
            let msg = err_of(v);
            assert!(msg.contains(want), "wanted {want:?} in {msg:?}");
            assert!(!msg.contains('\n'));
        }
    }

    #[test]
    fn fd_opened_by_a_fileset_op_is_fine() {
        let mut v = minimal();
        // readwhole with its own fileset opens fd 1 itself
        v["groups"][0]["flowops"] = serde_json::json!([
            {"op": "randread", "fileset": "fs", "iosize": 4096},
            {"op": "append", "fileset": "fs", "fd": 2, "size": {"type": "gamma", "mean": 100, "shape": 2}},
            {"op": "stat", "fd": 2}
        ]);
        parse(&v.to_string()).expect("valid");
    }
}
