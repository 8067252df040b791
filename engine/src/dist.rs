//! Random numbers: the generator, seed derivation, and size distributions.
//!
//! The generator is xoshiro256++ (`rand::rngs::Xoshiro256PlusPlus`): a named algorithm,
//! so a seed gives the same stream on every platform and with every future build that
//! keeps this Cargo.lock.

use rand::Rng;
pub use rand::SeedableRng;
use rand_distr::{Distribution, Gamma, LogNormal, Poisson};

use crate::error::{Error, Result};
use crate::spec::SizeDist;

pub type FastRng = rand::rngs::Xoshiro256PlusPlus;

/// Largest size a distribution yields (1 TiB), so a gamma tail can't ask for the absurd.
pub const MAX_SAMPLE: u64 = 1 << 40;

/// SplitMix64's finalizer: a good 64-bit mixer.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// An independent seed for stream (`domain`, `index`) of a run seeded with `seed`.
pub fn derive_seed(seed: u64, domain: u64, index: u64) -> u64 {
    mix64(mix64(seed ^ mix64(domain)) ^ index)
}

pub fn rng_for(seed: u64, domain: u64, index: u64) -> FastRng {
    FastRng::seed_from_u64(derive_seed(seed, domain, index))
}

/// Uniform on [0, n) for n > 0 (Lemire's multiply; bias under 2^-64 * n, irrelevant here).
#[inline]
pub fn below<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

/// A size distribution ready to sample.
#[derive(Debug, Clone)]
pub enum Sampler {
    Fixed(u64),
    Uniform { min: u64, span: u64 },
    Gamma { g: Gamma<f64>, mean: f64 },
    Lognormal { d: LogNormal<f64>, mean: f64 },
    Poisson { d: Poisson<f64>, mean: f64 },
}

/// A real sample rounded to the nearest integer, within [0, MAX_SAMPLE].
#[inline]
fn round_clamp(x: f64) -> u64 {
    let x = x.round();
    if x >= MAX_SAMPLE as f64 {
        MAX_SAMPLE
    } else if x > 0.0 {
        x as u64
    } else {
        0
    }
}

impl Sampler {
    pub fn new(dist: &SizeDist) -> Result<Self> {
        Ok(match *dist {
            SizeDist::Fixed { size } => Sampler::Fixed(size.min(MAX_SAMPLE)),
            SizeDist::Uniform { min, max } => {
                let max = max.min(MAX_SAMPLE);
                let min = min.min(max);
                Sampler::Uniform {
                    min,
                    span: max - min + 1,
                }
            }
            SizeDist::Gamma { mean, shape } => {
                let g = Gamma::new(shape, mean / shape).map_err(|e| {
                    Error::input(format!(
                        "spec: gamma(mean {mean}, shape {shape}) is not valid: {e}"
                    ))
                })?;
                Sampler::Gamma { g, mean }
            }
            SizeDist::Lognormal { mu, sigma } => {
                let d = LogNormal::new(mu, sigma).map_err(|e| {
                    Error::input(format!(
                        "spec: lognormal(mu {mu}, sigma {sigma}) is not valid: {e}"
                    ))
                })?;
                Sampler::Lognormal {
                    d,
                    mean: dist.mean(),
                }
            }
            SizeDist::Poisson { mean } => {
                let d = Poisson::new(mean).map_err(|e| {
                    Error::input(format!("spec: poisson(mean {mean}) is not valid: {e}"))
                })?;
                Sampler::Poisson { d, mean }
            }
        })
    }

    /// Uniform on [1, max]: filebench's `appendfilerand` size.
    pub fn up_to(max: u64) -> Self {
        Sampler::Uniform {
            min: 1,
            span: max.max(1),
        }
    }

    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match self {
            Sampler::Fixed(n) => *n,
            Sampler::Uniform { min, span } => min + below(rng, *span),
            Sampler::Gamma { g, .. } => round_clamp(g.sample(rng)),
            Sampler::Lognormal { d, .. } => round_clamp(d.sample(rng)),
            Sampler::Poisson { d, .. } => round_clamp(d.sample(rng)),
        }
    }

    /// The distribution's mean (for sizing filesets).
    pub fn mean(&self) -> f64 {
        match self {
            Sampler::Fixed(n) => *n as f64,
            Sampler::Uniform { min, span } => *min as f64 + (*span as f64 - 1.0) / 2.0,
            Sampler::Gamma { mean, .. }
            | Sampler::Lognormal { mean, .. }
            | Sampler::Poisson { mean, .. } => *mean,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(s: &Sampler, n: usize, seed: u64) -> (f64, f64, u64, u64) {
        let mut rng = FastRng::seed_from_u64(seed);
        let xs: Vec<u64> = (0..n).map(|_| s.sample(&mut rng)).collect();
        let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
        let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n as f64;
        let min = xs.iter().copied().min().unwrap_or(0);
        let max = xs.iter().copied().max().unwrap_or(0);
        (mean, var, min, max)
    }

    #[test]
    fn fixed_is_fixed() {
        let s = Sampler::new(&SizeDist::Fixed { size: 4096 }).expect("fixed");
        assert_eq!(stats(&s, 1000, 1), (4096.0, 0.0, 4096, 4096));
        assert_eq!(s.mean(), 4096.0);
    }

    #[test]
    fn gamma_mean_and_variance() {
        // filebench fileserver: mean 128 KiB, shape 1.5 -> variance = mean^2 / shape
        let mean = 131072.0;
        let shape = 1.5;
        let s = Sampler::new(&SizeDist::Gamma { mean, shape }).expect("gamma");
        assert!((s.mean() - mean).abs() < 1e-6);
        let (m, v, min, _) = stats(&s, 200_000, 7);
        assert!((m / mean - 1.0).abs() < 0.02, "mean {m}");
        let want_var = mean * mean / shape;
        assert!((v / want_var - 1.0).abs() < 0.05, "var {v} want {want_var}");
        assert!(min < 5000, "gamma 1.5 reaches small sizes, min {min}");
    }

    #[test]
    fn gamma_shape_changes_spread() {
        let wide = Sampler::new(&SizeDist::Gamma {
            mean: 16384.0,
            shape: 0.5,
        })
        .expect("wide");
        let narrow = Sampler::new(&SizeDist::Gamma {
            mean: 16384.0,
            shape: 50.0,
        })
        .expect("narrow");
        let (mw, vw, _, _) = stats(&wide, 100_000, 3);
        let (mn, vn, _, _) = stats(&narrow, 100_000, 3);
        assert!((mw / 16384.0 - 1.0).abs() < 0.03);
        assert!((mn / 16384.0 - 1.0).abs() < 0.03);
        assert!(vw > 50.0 * vn);
    }

    #[test]
    fn uniform_bounds() {
        let s = Sampler::new(&SizeDist::Uniform { min: 10, max: 20 }).expect("uniform");
        let (m, _, min, max) = stats(&s, 100_000, 5);
        assert_eq!((min, max), (10, 20));
        assert!((m - 15.0).abs() < 0.1);
        let a = Sampler::up_to(16384);
        let (m, _, min, max) = stats(&a, 100_000, 5);
        assert!(min >= 1 && max <= 16384);
        assert!((m / 8192.5 - 1.0).abs() < 0.02);
        let one = Sampler::new(&SizeDist::Uniform { min: 3, max: 3 }).expect("degenerate");
        assert_eq!(stats(&one, 100, 1).2, 3);
    }

    #[test]
    fn same_seed_same_stream() {
        let s = Sampler::new(&SizeDist::Gamma {
            mean: 1000.0,
            shape: 1.5,
        })
        .expect("gamma");
        let draw = |seed| {
            let mut r = rng_for(seed, 1, 2);
            (0..100).map(|_| s.sample(&mut r)).collect::<Vec<_>>()
        };
        assert_eq!(draw(42), draw(42));
        assert_ne!(draw(42), draw(43));
        assert_ne!(derive_seed(1, 2, 3), derive_seed(1, 2, 4));
        assert_ne!(derive_seed(1, 2, 3), derive_seed(1, 3, 3));
    }

    #[test]
    fn lognormal_median_and_mean() {
        // median e^mu, mean e^(mu + sigma^2 / 2)
        let (mu, sigma) = (10.0f64, 0.5f64);
        let s = Sampler::new(&SizeDist::Lognormal { mu, sigma }).expect("lognormal");
        let want_mean = (mu + sigma * sigma / 2.0).exp();
        assert!((s.mean() / want_mean - 1.0).abs() < 1e-12);
        let mut r = FastRng::seed_from_u64(11);
        let mut xs: Vec<u64> = (0..100_000).map(|_| s.sample(&mut r)).collect();
        xs.sort_unstable();
        let median = xs[xs.len() / 2] as f64;
        assert!((median / mu.exp() - 1.0).abs() < 0.02, "median {median}");
        let (m, _, _, _) = stats(&s, 100_000, 12);
        assert!((m / want_mean - 1.0).abs() < 0.02, "mean {m}");
    }

    #[test]
    fn poisson_mean_and_variance() {
        let s = Sampler::new(&SizeDist::Poisson { mean: 4.0 }).expect("poisson");
        let (m, v, min, max) = stats(&s, 100_000, 13);
        assert!((m - 4.0).abs() < 0.05, "mean {m}");
        assert!((v - 4.0).abs() < 0.15, "variance {v}");
        assert_eq!(min, 0);
        assert!((10..30).contains(&max), "max {max}");
    }

    #[test]
    fn below_is_in_range() {
        let mut r = FastRng::seed_from_u64(9);
        let mut seen = [false; 7];
        for _ in 0..10_000 {
            let x = below(&mut r, 7);
            assert!(x < 7);
            seen[x as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(below(&mut r, 1), 0);
    }
}
