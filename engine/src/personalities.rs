//! Built-in personalities: filebench's fileserver, varmail and webserver, with its
//! defaults and flowop sequences (workloads/*.f), at three scales.

use crate::error::{Error, Result};
use crate::spec::{
    FilesetSpec, FlowopSpec, GroupSpec, OpKind, PickOrder, SCHEMA, SizeDist, Spec, Stop,
};

pub const NAMES: [&str; 3] = ["fileserver", "varmail", "webserver"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// For tests: ~1% of the files (at least 50), at most 4 threads, 2 s.
    Tiny,
    /// filebench's defaults, 20 s.
    Quick,
    /// The main fileset grown to twice the machine's memory, 60 s.
    Full,
}

impl Scale {
    pub fn parse(s: &str) -> Result<Scale> {
        match s {
            "tiny" => Ok(Scale::Tiny),
            "quick" => Ok(Scale::Quick),
            "full" => Ok(Scale::Full),
            _ => Err(Error::input(format!(
                "unknown scale {s:?} (tiny, quick or full)"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scale::Tiny => "tiny",
            Scale::Quick => "quick",
            Scale::Full => "full",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub scale: Scale,
    pub dir: String,
    pub threads: Option<u32>,
    pub duration_s: Option<f64>,
    pub warmup_s: Option<f64>,
    pub seed: Option<u64>,
    /// Memory size used by `full` (default: MemTotal from /proc/meminfo).
    pub mem_bytes: Option<u64>,
    /// The main fileset's size in bytes, at any scale: its file count becomes
    /// ceil(bytes / mean file size) (filebench's `$nfiles` x `$meanfilesize`).
    pub fileset_bytes: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            scale: Scale::Quick,
            dir: "/tmp".into(),
            threads: None,
            duration_s: None,
            warmup_s: None,
            seed: None,
            mem_bytes: None,
            fileset_bytes: None,
        }
    }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

fn gamma(mean: u64) -> SizeDist {
    SizeDist::Gamma {
        mean: mean as f64,
        shape: 1.5,
    }
}

fn fileset(name: &str, count: u64, dirwidth: u64, mean: u64, prealloc: f64) -> FilesetSpec {
    FilesetSpec {
        name: name.into(),
        count,
        dirwidth,
        size: gamma(mean),
        prealloc_pct: prealloc,
        reuse: false,
        pick: PickOrder::Rotor,
        readonly: false,
    }
}

fn op(kind: OpKind, name: &str) -> FlowopSpec {
    FlowopSpec::new(kind, name)
}

const BIG: &str = "bigfileset";

/// filebench fileserver.f: 10,000 files of 128 KiB (gamma 1.5) in dirs of 20, 80%
/// preallocated, 50 threads.
fn fileserver() -> (Vec<FilesetSpec>, GroupSpec) {
    let flowops = vec![
        op(OpKind::Create, "createfile1").fileset(BIG).fd(1),
        op(OpKind::Writewhole, "wrtfile1").fd(1).iosize(MIB),
        op(OpKind::Close, "closefile1").fd(1),
        op(OpKind::Open, "openfile1").fileset(BIG).fd(1),
        op(OpKind::Append, "appendfilerand1").fd(1).iosize(16 * KIB),
        op(OpKind::Close, "closefile2").fd(1),
        op(OpKind::Open, "openfile2").fileset(BIG).fd(1),
        op(OpKind::Readwhole, "readfile1").fd(1).iosize(MIB),
        op(OpKind::Close, "closefile3").fd(1),
        op(OpKind::Delete, "deletefile1").fileset(BIG),
        op(OpKind::Stat, "statfile1").fileset(BIG),
    ];
    (
        vec![fileset(BIG, 10_000, 20, 128 * KIB, 80.0)],
        GroupSpec {
            name: "filereader".into(),
            threads: 50,
            flowops,
        },
    )
}

/// filebench varmail.f: 1,000 files of 16 KiB (gamma 1.5) in one directory, 80%
/// preallocated, 16 threads, fsync after every append.
fn varmail() -> (Vec<FilesetSpec>, GroupSpec) {
    let flowops = vec![
        op(OpKind::Delete, "deletefile1").fileset(BIG),
        op(OpKind::Create, "createfile2").fileset(BIG).fd(1),
        op(OpKind::Append, "appendfilerand2").fd(1).iosize(16 * KIB),
        op(OpKind::Fsync, "fsyncfile2").fd(1),
        op(OpKind::Close, "closefile2").fd(1),
        op(OpKind::Open, "openfile3").fileset(BIG).fd(1),
        op(OpKind::Readwhole, "readfile3").fd(1).iosize(MIB),
        op(OpKind::Append, "appendfilerand3").fd(1).iosize(16 * KIB),
        op(OpKind::Fsync, "fsyncfile3").fd(1),
        op(OpKind::Close, "closefile3").fd(1),
        op(OpKind::Open, "openfile4").fileset(BIG).fd(1),
        op(OpKind::Readwhole, "readfile4").fd(1).iosize(MIB),
        op(OpKind::Close, "closefile4").fd(1),
    ];
    (
        vec![fileset(BIG, 1_000, 1_000_000, 16 * KIB, 80.0)],
        GroupSpec {
            name: "filereader".into(),
            threads: 16,
            flowops,
        },
    )
}

/// filebench webserver.f: 1,000 files of 16 KiB (gamma 1.5) in dirs of 20, all
/// preallocated, 100 threads each reading 10 whole files then appending to one shared
/// log file (kept open on fd 2).
fn webserver() -> (Vec<FilesetSpec>, GroupSpec) {
    let mut flowops = Vec::with_capacity(31);
    for k in 1..=10 {
        flowops.push(op(OpKind::Open, &format!("openfile{k}")).fileset(BIG).fd(1));
        flowops.push(
            op(OpKind::Readwhole, &format!("readfile{k}"))
                .fd(1)
                .iosize(MIB),
        );
        flowops.push(op(OpKind::Close, &format!("closefile{k}")).fd(1));
    }
    flowops.push(
        op(OpKind::Append, "appendlog")
            .fileset("logfiles")
            .fd(2)
            .iosize(16 * KIB),
    );
    let mut pages = fileset(BIG, 1_000, 20, 16 * KIB, 100.0);
    pages.readonly = true; // filebench: `prealloc=100,readonly`
    (
        vec![pages, fileset("logfiles", 1, 20, 16 * KIB, 100.0)],
        GroupSpec {
            name: "filereader".into(),
            threads: 100,
            flowops,
        },
    )
}

fn mean_size(d: &SizeDist) -> f64 {
    d.mean()
}

/// The spec of personality `name` at the given options.
pub fn build(name: &str, opts: &Options) -> Result<Spec> {
    let (mut filesets, mut group) = match name {
        "fileserver" => fileserver(),
        "varmail" => varmail(),
        "webserver" => webserver(),
        _ => {
            return Err(Error::input(format!(
                "unknown personality {name:?} (one of: {})",
                NAMES.join(", ")
            )));
        }
    };
    let (duration, warmup) = match opts.scale {
        Scale::Tiny => {
            group.threads = group.threads.min(4);
            for f in filesets.iter_mut().filter(|f| f.name == BIG) {
                f.count = f.count.div_ceil(100).max(50);
            }
            (2.0, 0.5)
        }
        Scale::Quick => (20.0, 2.0),
        Scale::Full => {
            let mem = match opts.mem_bytes {
                Some(m) => m,
                None => crate::sys::mem_total().map_err(|e| {
                    Error::runtime(format!("read MemTotal from /proc/meminfo: {e}"))
                })?,
            };
            for f in filesets.iter_mut().filter(|f| f.name == BIG) {
                let want = (2.0 * mem as f64 / mean_size(&f.size)).ceil() as u64;
                f.count = f.count.max(want).min(crate::spec::MAX_FILES);
            }
            (60.0, 5.0)
        }
    };
    if let Some(bytes) = opts.fileset_bytes {
        for f in filesets.iter_mut().filter(|f| f.name == BIG) {
            f.count = ((bytes as f64 / mean_size(&f.size)).ceil() as u64).max(1);
        }
    }
    if let Some(t) = opts.threads {
        group.threads = t;
    }
    let spec = Spec {
        schema: SCHEMA,
        name: format!("{name}-{}", opts.scale.as_str()),
        dir: opts.dir.clone(),
        seed: Some(opts.seed.unwrap_or(1)),
        warmup_s: opts.warmup_s.unwrap_or(warmup),
        stop: Stop {
            duration_s: Some(opts.duration_s.unwrap_or(duration)),
            ops: None,
        },
        drop_caches: false,
        filesets,
        groups: vec![group],
    };
    crate::spec::validate(&spec)?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick(name: &str) -> Spec {
        build(name, &Options::default()).expect("builds")
    }

    #[test]
    fn filebench_defaults() {
        let f = quick("fileserver");
        assert_eq!(f.filesets[0].count, 10_000);
        assert_eq!(f.filesets[0].dirwidth, 20);
        assert_eq!(
            f.filesets[0].size,
            SizeDist::Gamma {
                mean: 131072.0,
                shape: 1.5
            }
        );
        assert_eq!(f.filesets[0].prealloc_pct, 80.0);
        assert_eq!(f.groups[0].threads, 50);
        assert_eq!(f.groups[0].flowops.len(), 11);
        assert_eq!(f.stop.duration_s, Some(20.0));

        let v = quick("varmail");
        assert_eq!(v.filesets[0].count, 1_000);
        assert_eq!(v.filesets[0].dirwidth, 1_000_000);
        assert_eq!(v.groups[0].threads, 16);
        let kinds: Vec<_> = v.groups[0].flowops.iter().map(|o| o.op).collect();
        assert_eq!(
            kinds[..4],
            [
                OpKind::Delete,
                OpKind::Create,
                OpKind::Append,
                OpKind::Fsync
            ]
        );

        let w = quick("webserver");
        assert_eq!(w.filesets.len(), 2);
        assert_eq!(w.filesets[0].prealloc_pct, 100.0);
        assert_eq!(w.groups[0].threads, 100);
        assert_eq!(w.groups[0].flowops.len(), 31);
        let log = &w.groups[0].flowops[30];
        assert_eq!(
            (log.op, log.fd, log.fileset.as_deref()),
            (OpKind::Append, 2, Some("logfiles"))
        );
    }

    #[test]
    fn scales_and_overrides() {
        let tiny = build(
            "fileserver",
            &Options {
                scale: Scale::Tiny,
                dir: "/x".into(),
                ..Options::default()
            },
        )
        .expect("tiny");
        assert_eq!(tiny.filesets[0].count, 100);
        assert_eq!(tiny.groups[0].threads, 4);
        assert_eq!(tiny.dir, "/x");
        assert!(tiny.stop.duration_s.expect("duration") <= 3.0);

        let full = build(
            "fileserver",
            &Options {
                scale: Scale::Full,
                mem_bytes: Some(24 << 30),
                threads: Some(8),
                duration_s: Some(90.0),
                seed: Some(9),
                ..Options::default()
            },
        )
        .expect("full");
        // 2 x 24 GiB / 128 KiB
        assert_eq!(full.filesets[0].count, 393_216);
        assert_eq!(full.groups[0].threads, 8);
        assert_eq!(full.stop.duration_s, Some(90.0));
        assert_eq!(full.seed, Some(9));

        let web = build(
            "webserver",
            &Options {
                scale: Scale::Full,
                mem_bytes: Some(1 << 30),
                ..Options::default()
            },
        )
        .expect("full web");
        assert_eq!(web.filesets[0].count, 131_072);
        assert_eq!(web.filesets[1].count, 1, "the log stays one file");
    }

    #[test]
    fn fileset_bytes_sizes_the_main_fileset_at_any_scale() {
        for scale in [Scale::Tiny, Scale::Quick, Scale::Full] {
            let f = build(
                "fileserver",
                &Options {
                    scale,
                    mem_bytes: Some(1 << 30),
                    fileset_bytes: Some(512 << 20),
                    ..Options::default()
                },
            )
            .expect("builds");
            // 512 MiB / 128 KiB
            assert_eq!(f.filesets[0].count, 4096, "{scale:?}");
        }
        let w = build(
            "webserver",
            &Options {
                fileset_bytes: Some(100_000),
                ..Options::default()
            },
        )
        .expect("web");
        assert_eq!(w.filesets[0].count, 7, "ceil(100000 / 16 KiB)");
        assert_eq!(w.filesets[1].count, 1, "the log stays one file");
    }

    #[test]
    fn unknown_names() {
        assert!(build("mailserver", &Options::default()).is_err());
        assert!(Scale::parse("huge").is_err());
    }
}
