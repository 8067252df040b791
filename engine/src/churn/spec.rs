//! The churn spec (JSON, `"schema": 1`) and the aging profiles.
//!
//! [`parse`] reads and validates a spec, expanding a named profile into its parameters,
//! so the effective spec echoed in the output says exactly what ran.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::spec::{SCHEMA, SizeDist, validate_size};

/// Deepest directory a file is put in (deeper draws are cut to this).
pub const MAX_DEPTH: u64 = 32;
/// Largest `dirwidth` of a profile.
pub const MAX_DIRWIDTH: u64 = 1_000_000;
/// Smallest `capacity_bytes`.
pub const MIN_CAPACITY: u64 = 1 << 20;
/// Default half-width of the band around the target fullness.
pub const DEFAULT_BAND: f64 = 0.01;
/// Default `age_bias` of a custom profile (and of every named one).
pub const DEFAULT_AGE_BIAS: f64 = 2.0;
/// The named profiles.
pub const PROFILE_NAMES: [&str; 3] = ["default", "small", "large"];

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// What the churn creates, and which files it deletes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// A label: the name of a named profile, or whatever a custom one says ("custom").
    #[serde(default = "custom_name")]
    pub name: String,
    /// File sizes in bytes.
    pub size: SizeDist,
    /// A drawn size above this is drawn again (default: no limit but 1 TiB). The churn
    /// also limits sizes to 1/16 of the capacity, so one file never swings the fullness
    /// by more than ~6%.
    #[serde(default)]
    pub max_size: Option<u64>,
    /// Directory depth of a new file below `dir` (0: in `dir` itself); cut at 32.
    pub depth: SizeDist,
    /// Files per directory that the tree grows to hold (directories are added as the
    /// files at a depth grow).
    #[serde(default = "default_dirwidth")]
    pub dirwidth: u64,
    /// Deletion bias toward old files: the deleted file is the one at rank
    /// floor(n * u^age_bias) in creation order (oldest first), u uniform on [0, 1).
    /// 1 is uniform; 2 gives the oldest quarter of the files half of the deletions.
    #[serde(default = "default_age_bias")]
    pub age_bias: f64,
}

fn custom_name() -> String {
    "custom".into()
}

fn default_dirwidth() -> u64 {
    20
}

fn default_age_bias() -> f64 {
    DEFAULT_AGE_BIAS
}

/// A named profile (see README.md, "Churn profiles", for the sources).
pub fn named_profile(name: &str) -> Option<Profile> {
    let lognormal = |median: f64, sigma: f64| SizeDist::Lognormal {
        mu: median.ln(),
        sigma,
    };
    let (size, max_size, depth) = match name {
        // ln(size) fitted (mean and variance) to Geriatrix's "agrawal" size profile, the
        // files-by-size histogram of Agrawal et al. (FAST'07, 2004 data): median 4.8 KiB,
        // mean 112 kB, 1.6% of the files over 1 MiB. Depth Poisson like Impressions'
        // files-per-depth model (Agrawal et al., FAST'09), mean 4 below the churn dir:
        // 80% of the files at depths 2-6.
        "default" => (
            SizeDist::Lognormal {
                mu: 8.5,
                sigma: 2.5,
            },
            64 * MIB,
            4.0,
        ),
        // small-file trees (mail spools, source trees): median 8 KiB, 96% in 1-64 KiB
        "small" => (lognormal(8.0 * KIB as f64, 1.0), MIB, 4.0),
        // streaming stores (media, backups): median 4 MiB, 91% in 1-64 MiB, shallow
        "large" => (lognormal(4.0 * MIB as f64, 1.0), 256 * MIB, 2.0),
        _ => return None,
    };
    Some(Profile {
        name: name.to_string(),
        size,
        max_size: Some(max_size),
        depth: SizeDist::Poisson { mean: depth },
        dirwidth: 20,
        age_bias: DEFAULT_AGE_BIAS,
    })
}

/// The effective spec of one churn call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChurnSpec {
    pub schema: u32,
    pub dir: String,
    pub seed: u64,
    pub profile: Profile,
    pub fullness: f64,
    pub band: f64,
    pub write_bytes: u64,
    pub max_seconds: Option<f64>,
    pub fsync_every: u64,
    pub capacity_bytes: Option<u64>,
}

/// The spec as written: `profile` is a name or an object.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    schema: u32,
    dir: String,
    seed: u64,
    #[serde(default)]
    profile: Option<serde_json::Value>,
    fullness: f64,
    #[serde(default)]
    band: Option<f64>,
    write_bytes: u64,
    #[serde(default)]
    max_seconds: Option<f64>,
    #[serde(default)]
    fsync_every: u64,
    #[serde(default)]
    capacity_bytes: Option<u64>,
}

fn bad<T>(m: String) -> Result<T> {
    Err(Error::input(format!("spec: {m}")))
}

/// Parse and validate a churn spec (JSON text).
pub fn parse(text: &str) -> Result<ChurnSpec> {
    let raw: RawSpec =
        serde_json::from_str(text).map_err(|e| Error::input(format!("spec: {e}")))?;
    let profile = match raw.profile {
        None => named_profile("default").ok_or_else(|| Error::input("no default profile"))?,
        Some(serde_json::Value::String(name)) => match named_profile(&name) {
            Some(p) => p,
            None => {
                return bad(format!(
                    "unknown profile {name:?}; the named profiles are {}",
                    PROFILE_NAMES.join(", ")
                ));
            }
        },
        Some(v @ serde_json::Value::Object(_)) => {
            serde_json::from_value(v).map_err(|e| Error::input(format!("spec: profile: {e}")))?
        }
        Some(other) => {
            return bad(format!(
                "profile must be a name ({}) or an object, got {other}",
                PROFILE_NAMES.join(", ")
            ));
        }
    };
    let spec = ChurnSpec {
        schema: raw.schema,
        dir: raw.dir,
        seed: raw.seed,
        profile,
        fullness: raw.fullness,
        band: raw.band.unwrap_or(DEFAULT_BAND),
        write_bytes: raw.write_bytes,
        max_seconds: raw.max_seconds,
        fsync_every: raw.fsync_every,
        capacity_bytes: raw.capacity_bytes,
    };
    validate(&spec)?;
    Ok(spec)
}

pub fn validate_profile(p: &Profile) -> Result<()> {
    validate_size(&p.size, "profile.size")?;
    validate_size(&p.depth, "profile.depth")?;
    match p.depth {
        SizeDist::Fixed { size: d } | SizeDist::Uniform { min: d, .. } if d > MAX_DEPTH => {
            return bad(format!(
                "profile.depth: depths run from 0 to {MAX_DEPTH}, got {d}"
            ));
        }
        _ => {}
    }
    if p.max_size == Some(0) {
        return bad("profile.max_size must be >= 1".into());
    }
    if p.dirwidth == 0 || p.dirwidth > MAX_DIRWIDTH {
        return bad(format!(
            "profile.dirwidth must be 1..={MAX_DIRWIDTH}, got {}",
            p.dirwidth
        ));
    }
    if !(p.age_bias.is_finite() && p.age_bias > 0.0 && p.age_bias <= 64.0) {
        return bad(format!(
            "profile.age_bias must be > 0 and at most 64, got {}",
            p.age_bias
        ));
    }
    if p.name.is_empty() || p.name.len() > 64 {
        return bad("profile.name must be 1-64 characters".into());
    }
    Ok(())
}

/// Check everything that can be checked without touching the filesystem.
pub fn validate(s: &ChurnSpec) -> Result<()> {
    if s.schema != SCHEMA {
        return bad(format!(
            "schema {} is not supported (this engine reads schema {SCHEMA})",
            s.schema
        ));
    }
    if s.dir.trim().is_empty() {
        return bad("dir is empty".into());
    }
    if s.dir.contains('\0') {
        return bad("dir contains a NUL byte".into());
    }
    if !(s.fullness.is_finite() && s.fullness > 0.0 && s.fullness < 1.0) {
        return bad(format!(
            "fullness must be a fraction between 0 and 1 (e.g. 0.8), got {}",
            s.fullness
        ));
    }
    if !(s.band.is_finite() && s.band > 0.0 && s.band <= 0.25) {
        return bad(format!(
            "band must be > 0 and at most 0.25 (a fraction of the capacity), got {}",
            s.band
        ));
    }
    if s.fullness - s.band <= 0.0 || s.fullness + s.band >= 1.0 {
        return bad(format!(
            "fullness {} +- band {} must stay between 0 and 1",
            s.fullness, s.band
        ));
    }
    if let Some(m) = s.max_seconds
        && !(m.is_finite() && m > 0.0 && m <= 1e7)
    {
        return bad(format!("max_seconds must be > 0 (and sane), got {m}"));
    }
    if let Some(c) = s.capacity_bytes
        && c < MIN_CAPACITY
    {
        return bad(format!(
            "capacity_bytes must be at least {MIN_CAPACITY} (1 MiB), got {c}"
        ));
    }
    validate_profile(&s.profile)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::{Sampler, rng_for};
    use serde_json::{Value, json};

    fn minimal() -> Value {
        json!({"schema": 1, "dir": "/mnt/t/churn", "seed": 1, "fullness": 0.8,
               "write_bytes": 1000000})
    }

    fn err_of(v: Value) -> String {
        let e = parse(&v.to_string()).expect_err("should fail");
        assert_eq!(e.exit_code(), 2);
        e.msg
    }

    #[test]
    fn defaults_and_named_profiles() {
        let s = parse(&minimal().to_string()).expect("valid");
        assert_eq!(s.profile, named_profile("default").expect("default"));
        assert_eq!(s.band, DEFAULT_BAND);
        assert_eq!(
            (s.fsync_every, s.max_seconds, s.capacity_bytes),
            (0, None, None)
        );
        for name in PROFILE_NAMES {
            let mut v = minimal();
            v["profile"] = json!(name);
            let s = parse(&v.to_string()).expect("named profile");
            assert_eq!(s.profile.name, name);
            validate_profile(&s.profile).expect("valid profile");
            // the expanded profile, as echoed, is a valid custom profile
            let mut v = minimal();
            v["profile"] = serde_json::to_value(&s.profile).expect("json");
            assert_eq!(parse(&v.to_string()).expect("echo").profile, s.profile);
        }
        let mut v = minimal();
        v["profile"] = json!({"size": {"type": "fixed", "size": 4096},
                              "depth": {"type": "uniform", "min": 1, "max": 3}});
        let p = parse(&v.to_string()).expect("custom").profile;
        assert_eq!(
            (p.name.as_str(), p.dirwidth, p.age_bias),
            ("custom", 20, 2.0)
        );
    }

    #[test]
    fn bad_specs() {
        type Mutation = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(Mutation, &str)> = vec![
            (Box::new(|v| v["schema"] = json!(2)), "schema 2"),
            (Box::new(|v| v["bogus"] = json!(1)), "unknown field `bogus`"),
            (
                Box::new(|v| {
                    v.as_object_mut().map(|o| o.remove("seed"));
                }),
                "missing field `seed`",
            ),
            (Box::new(|v| v["dir"] = json!(" ")), "dir is empty"),
            (Box::new(|v| v["fullness"] = json!(1.2)), "fullness must be"),
            (Box::new(|v| v["fullness"] = json!(0)), "fullness must be"),
            (Box::new(|v| v["band"] = json!(0)), "band must be"),
            (
                Box::new(|v| v["fullness"] = json!(0.995)),
                "must stay between",
            ),
            (Box::new(|v| v["max_seconds"] = json!(-1)), "max_seconds"),
            (
                Box::new(|v| v["capacity_bytes"] = json!(1000)),
                "capacity_bytes",
            ),
            (
                Box::new(|v| v["profile"] = json!("huge")),
                "unknown profile \"huge\"",
            ),
            (
                Box::new(|v| v["profile"] = json!(3)),
                "profile must be a name",
            ),
            (
                Box::new(|v| {
                    v["profile"] = json!({"size": {"type": "fixed", "size": 1},
                                          "depth": {"type": "fixed", "size": 1}, "x": 1})
                }),
                "profile: unknown field `x`",
            ),
            (
                Box::new(|v| {
                    v["profile"] = json!({"size": {"type": "lognormal", "mu": 9, "sigma": 0},
                                          "depth": {"type": "fixed", "size": 1}})
                }),
                "lognormal sigma",
            ),
            (
                Box::new(|v| {
                    v["profile"] = json!({"size": {"type": "fixed", "size": 1},
                                          "depth": {"type": "fixed", "size": 40}})
                }),
                "depths run from 0 to 32",
            ),
            (
                Box::new(|v| {
                    v["profile"] = json!({"size": {"type": "fixed", "size": 1},
                                          "depth": {"type": "poisson", "mean": 0}})
                }),
                "poisson mean",
            ),
            (
                Box::new(|v| {
                    v["profile"] = json!({"size": {"type": "fixed", "size": 1},
                                          "depth": {"type": "fixed", "size": 1},
                                          "dirwidth": 0})
                }),
                "dirwidth",
            ),
            (
                Box::new(|v| {
                    v["profile"] = json!({"size": {"type": "fixed", "size": 1},
                                          "depth": {"type": "fixed", "size": 1},
                                          "age_bias": 0})
                }),
                "age_bias",
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

    fn draws(d: &SizeDist, n: usize, seed: u64) -> Vec<u64> {
        let s = Sampler::new(d).expect("sampler");
        let mut r = rng_for(seed, 1, 0);
        let mut v: Vec<u64> = (0..n).map(|_| s.sample(&mut r)).collect();
        v.sort_unstable();
        v
    }

    fn frac(v: &[u64], f: impl Fn(u64) -> bool) -> f64 {
        v.iter().filter(|&&x| f(x)).count() as f64 / v.len() as f64
    }

    #[test]
    fn profile_distributions() {
        let n = 100_000;
        let p = named_profile("default").expect("default");
        let s = draws(&p.size, n, 7);
        let median = s[n / 2] as f64;
        assert!((4_000.0..6_000.0).contains(&median), "median {median}");
        // a heavy tail: ~1.6% over 1 MiB, a few past 16 MiB
        let big = frac(&s, |x| x > MIB);
        assert!((0.01..0.025).contains(&big), "over 1 MiB: {big}");
        assert!(s[n - 1] > 16 * MIB, "largest {}", s[n - 1]);
        let d = draws(&p.depth, n, 8);
        let mid = frac(&d, |x| (2..=6).contains(&x));
        assert!((0.77..0.83).contains(&mid), "depth 2-6: {mid}");

        let small = draws(&named_profile("small").expect("small").size, n, 9);
        let in_range = frac(&small, |x| (KIB..=64 * KIB).contains(&x));
        assert!(in_range > 0.94, "small: {in_range} in 1-64 KiB");
        let large = draws(&named_profile("large").expect("large").size, n, 10);
        let mib = frac(&large, |x| (MIB..=64 * MIB).contains(&x));
        assert!(mib > 0.9, "large: {mib} in 1-64 MiB");
        assert!((3.8e6..4.6e6).contains(&(large[n / 2] as f64)));
    }

    #[test]
    fn profile_draws_are_deterministic() {
        let p = named_profile("default").expect("default");
        assert_eq!(draws(&p.size, 1000, 3), draws(&p.size, 1000, 3));
        assert_ne!(draws(&p.size, 1000, 3), draws(&p.size, 1000, 4));
        assert_eq!(named_profile("default"), named_profile("default"));
        assert!(named_profile("nope").is_none());
    }
}
