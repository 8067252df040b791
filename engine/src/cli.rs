//! The command line. [`main`] returns what goes to stdout (JSON) or the error for stderr.

use std::io::Read;

use crate::churn;
use crate::dist::mix64;
use crate::error::{Error, Result};
use crate::personalities::{self, Options, Scale};
use crate::spec::{self, Spec};
use crate::trace::{bench, check, import, replay, snapshot};
use crate::{runner, stats};

pub const USAGE: &str = "\
usage: fsbench-engine run SPEC.json|-        prepare, run, print results JSON
       fsbench-engine prepare SPEC.json|-    only make the filesets, print the prepare JSON
       fsbench-engine personality NAME [--scale tiny|quick|full] [--dir DIR]
                      [--threads N] [--duration S] [--warmup S] [--seed N]
                      [--fileset-bytes N]
                                             print the spec JSON of a built-in personality
       fsbench-engine churn SPEC.json|-      age the filesystem of the spec's dir: create
                                             and delete files to a target fullness, having
                                             written a volume; continues an earlier churn
       fsbench-engine trace snapshot DIR -o SNAPSHOT [--with-data]
                                             the tree before a recorded command runs
       fsbench-engine trace import --strace FILE --root DIR -o TRACE [--snapshot SNAPSHOT]
                      [--header JSON] [--overhead-ns N] [--gap-overhead-ns N]
                                             strace's output -> a trace
       fsbench-engine trace strace-args      strace's options for a recording, as JSON
       fsbench-engine trace check TRACE      refuse a bad trace, or print what it holds
       fsbench-engine trace fstat-trace --calls N -o TRACE
                                             a trace of N fstats of one cached file
       fsbench-engine trace fstat-loop --calls N --dir DIR
                                             the same calls in a plain loop (its rate)
       fsbench-engine trace strace-gaps --strace FILE --calls N
                                             strace's cost per call of that loop run under
                                             it: in the gap before a call, in its duration
       fsbench-engine replay prepare SPEC.json|-
                                             check a trace, make its starting tree
       fsbench-engine replay run SPEC.json|- replay a prepared trace, print results JSON
       fsbench-engine list                   personalities, scales and churn profiles, as JSON
       fsbench-engine --version | --help
personalities: fileserver, varmail, webserver (filebench's defaults)
churn profiles: default, small, large
";

fn read_text(path: &str) -> Result<String> {
    Ok(if path == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| Error::input(format!("read spec from stdin: {e}")))?;
        s
    } else {
        std::fs::read_to_string(path).map_err(|e| Error::input(format!("read spec {path}: {e}")))?
    })
}

fn read_spec(path: &str) -> Result<Spec> {
    let mut spec = spec::parse(&read_text(path)?)?;
    spec.normalize(clock_seed());
    Ok(spec)
}

fn clock_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    mix64(nanos ^ (u64::from(std::process::id()) << 32))
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String> {
    let mut s = serde_json::to_string_pretty(v)
        .map_err(|e| Error::runtime(format!("serialize JSON: {e}")))?;
    s.push('\n');
    Ok(s)
}

fn one_arg<'a>(cmd: &str, rest: &'a [String]) -> Result<&'a str> {
    match rest {
        [p] => Ok(p.as_str()),
        [] => Err(Error::input(format!(
            "{cmd} needs a spec file (or - for stdin); see --help"
        ))),
        _ => Err(Error::input(format!(
            "{cmd} takes one spec file, got {} arguments",
            rest.len()
        ))),
    }
}

fn parse_num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T> {
    v.parse()
        .map_err(|_| Error::input(format!("{flag}: {v:?} is not a valid number")))
}

fn personality(rest: &[String]) -> Result<String> {
    let mut name: Option<&str> = None;
    let mut opts = Options::default();
    let mut i = 0;
    while i < rest.len() {
        let arg = rest[i].as_str();
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg, None),
        };
        if !flag.starts_with("--") {
            if name.is_some() {
                return Err(Error::input(format!("unexpected argument {arg:?}")));
            }
            name = Some(arg);
            i += 1;
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                rest.get(i)
                    .cloned()
                    .ok_or_else(|| Error::input(format!("{flag} needs a value")))?
            }
        };
        match flag {
            "--scale" => opts.scale = Scale::parse(&value)?,
            "--dir" => opts.dir = value,
            "--threads" => {
                let t: u32 = parse_num(flag, &value)?;
                if t == 0 || t > spec::MAX_THREADS {
                    return Err(Error::input(format!(
                        "--threads must be 1..={}",
                        spec::MAX_THREADS
                    )));
                }
                opts.threads = Some(t);
            }
            "--duration" => opts.duration_s = Some(parse_num(flag, &value)?),
            "--warmup" => opts.warmup_s = Some(parse_num(flag, &value)?),
            "--seed" => opts.seed = Some(parse_num(flag, &value)?),
            "--fileset-bytes" => {
                let b: u64 = parse_num(flag, &value)?;
                if b == 0 {
                    return Err(Error::input("--fileset-bytes must be at least 1"));
                }
                opts.fileset_bytes = Some(b);
            }
            _ => return Err(Error::input(format!("unknown option {flag}; see --help"))),
        }
        i += 1;
    }
    let Some(name) = name else {
        return Err(Error::input(format!(
            "personality needs a name: {}",
            personalities::NAMES.join(", ")
        )));
    };
    to_json(&personalities::build(name, &opts)?)
}

/// `--name value` options and positional arguments.
fn options(
    rest: &[String],
    flags: &[&str],
) -> Result<(std::collections::HashMap<String, String>, Vec<String>)> {
    let mut opts = std::collections::HashMap::new();
    let mut pos = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i];
        if let Some(name) = a
            .strip_prefix("--")
            .or_else(|| a.strip_prefix('-').filter(|n| *n == "o"))
        {
            if flags.contains(&name) {
                opts.insert(name.to_string(), String::new());
            } else {
                i += 1;
                let v = rest
                    .get(i)
                    .ok_or_else(|| Error::input(format!("{a} needs a value")))?;
                opts.insert(name.to_string(), v.clone());
            }
        } else {
            pos.push(a.clone());
        }
        i += 1;
    }
    Ok((opts, pos))
}

fn trace_command(rest: &[String]) -> Result<String> {
    let Some(sub) = rest.first() else {
        return Err(Error::input("trace needs a command; see --help"));
    };
    let (o, pos) = options(&rest[1..], &["with-data"])?;
    let need = |k: &str| {
        o.get(k)
            .cloned()
            .ok_or_else(|| Error::input(format!("trace {sub} needs --{k}")))
    };
    let out = || need("o").map(std::path::PathBuf::from);
    let num = |k: &str, default: u64| -> Result<u64> {
        o.get(k)
            .map_or(Ok(default), |v| parse_num(&format!("--{k}"), v))
    };
    match sub.as_str() {
        "snapshot" => {
            let [root] = &pos[..] else {
                return Err(Error::input("trace snapshot needs the directory"));
            };
            let n = snapshot::take(
                std::path::Path::new(root),
                &out()?,
                o.contains_key("with-data"),
            )?;
            to_json(&serde_json::json!({"entries": n}))
        }
        "import" => {
            let header = match o.get("header") {
                Some(h) => match serde_json::from_str(h) {
                    Ok(serde_json::Value::Object(m)) => m,
                    _ => return Err(Error::input("--header must be a JSON object")),
                },
                None => serde_json::Map::new(),
            };
            let opts = import::Options {
                strace: need("strace")?.into(),
                root: need("root")?.into(),
                snapshot: o.get("snapshot").map(Into::into),
                out: out()?,
                header,
                tracer_overhead_ns: num("overhead-ns", 0)?,
                gap_overhead_ns: num("gap-overhead-ns", 0)?,
            };
            to_json(&import::run(&opts)?)
        }
        "strace-args" => to_json(&serde_json::json!({"argv": import::strace_args()})),
        "check" => {
            let [t] = &pos[..] else {
                return Err(Error::input("trace check needs the trace"));
            };
            to_json(&check::check(std::path::Path::new(t))?)
        }
        "fstat-trace" => {
            let calls = bench::fstat_trace(&out()?, num("calls", 1_000_000)?)?;
            to_json(&serde_json::json!({"calls": calls}))
        }
        "fstat-loop" => to_json(&bench::fstat_loop(
            std::path::Path::new(&need("dir")?),
            num("calls", 1_000_000)?,
        )?),
        "strace-gaps" => to_json(&bench::strace_gaps(
            std::path::Path::new(&need("strace")?),
            num("calls", 20_000)?,
        )?),
        other => Err(Error::input(format!(
            "unknown trace command {other:?}; see --help"
        ))),
    }
}

/// Run the command line `args` (without the program name).
pub fn main(args: &[String]) -> Result<String> {
    let Some(cmd) = args.first() else {
        return Err(Error::input("no command; see --help"));
    };
    let rest = &args[1..];
    match cmd.as_str() {
        "run" => {
            let spec = read_spec(one_arg(cmd, rest)?)?;
            to_json(&runner::run(&spec)?)
        }
        "prepare" => {
            let spec = read_spec(one_arg(cmd, rest)?)?;
            to_json(&runner::prepare_only(&spec)?)
        }
        "churn" => {
            let spec = churn::parse(&read_text(one_arg(cmd, rest)?)?)?;
            to_json(&churn::run(&spec)?)
        }
        "personality" => personality(rest),
        "trace" => trace_command(rest),
        "replay" => {
            let (sub, spec_path) = match rest {
                [sub, p] => (sub.as_str(), p.as_str()),
                _ => {
                    return Err(Error::input(
                        "replay needs prepare|run and a spec file (or -)",
                    ));
                }
            };
            let spec = replay::parse_spec(&read_text(spec_path)?)?;
            match sub {
                "prepare" => to_json(&replay::prepare(&spec)?),
                "run" => to_json(&replay::run(&spec)?),
                other => Err(Error::input(format!("unknown replay command {other:?}"))),
            }
        }
        "list" => to_json(&serde_json::json!({
            "schema": spec::SCHEMA,
            "engine": stats::ENGINE,
            "personalities": personalities::NAMES,
            "scales": ["tiny", "quick", "full"],
            "churn_profiles": churn::spec::PROFILE_NAMES,
        })),
        "--version" | "-V" | "version" => Ok(format!(
            "{} {}\n",
            stats::ENGINE.name,
            stats::ENGINE.version
        )),
        "--help" | "-h" | "help" => Ok(USAGE.to_string()),
        other => Err(Error::input(format!(
            "unknown command {other:?}; see --help"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn personality_flags() {
        let out = main(&args(&[
            "personality",
            "varmail",
            "--scale=tiny",
            "--dir",
            "/mnt/t",
            "--threads",
            "3",
            "--seed",
            "5",
            "--duration",
            "1.5",
            "--fileset-bytes=1638400",
        ]))
        .expect("ok");
        let s = spec::parse(&out).expect("prints a valid spec");
        assert_eq!(s.filesets[0].count, 100, "1600 KiB of 16 KiB files");
        assert_eq!(s.dir, "/mnt/t");
        assert_eq!(s.groups[0].threads, 3);
        assert_eq!(s.seed, Some(5));
        assert_eq!(s.stop.duration_s, Some(1.5));
    }

    #[test]
    fn bad_command_lines() {
        for (a, want) in [
            (vec![], "no command"),
            (vec!["frob"], "unknown command"),
            (vec!["run"], "needs a spec file"),
            (vec!["run", "a", "b"], "takes one spec file"),
            (vec!["churn"], "needs a spec file"),
            (
                vec!["churn", "/nonexistent/churn.json"],
                "read spec /nonexistent/churn.json",
            ),
            (
                vec!["run", "/nonexistent/spec.json"],
                "read spec /nonexistent/spec.json",
            ),
            (vec!["personality"], "needs a name"),
            (vec!["personality", "nope"], "unknown personality"),
            (
                vec!["personality", "varmail", "--threads", "x"],
                "not a valid number",
            ),
            (
                vec!["personality", "varmail", "--threads", "0"],
                "--threads must be",
            ),
            (vec!["personality", "varmail", "--scale"], "needs a value"),
            (
                vec!["personality", "varmail", "--bogus", "1"],
                "unknown option",
            ),
            (
                vec!["personality", "varmail", "--duration", "-3"],
                "duration_s",
            ),
            (
                vec!["personality", "varmail", "--fileset-bytes", "0"],
                "--fileset-bytes must be",
            ),
        ] {
            let e = main(&args(&a)).expect_err("should fail");
            assert!(e.msg.contains(want), "{a:?}: {e}");
            assert_eq!(e.exit_code(), 2);
        }
    }
}
