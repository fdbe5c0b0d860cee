//! The seeded random numbers behind every choice pack-context makes.
//!
//! SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014):
//! a 64-bit state advanced by a fixed odd constant and scrambled by two multiply-xorshift
//! rounds. It is written out here instead of taken from a crate so that the stream for a seed
//! is fixed forever, on every platform and in every version of clover: a dataset built today
//! can be rebuilt byte for byte. Everything below uses integer arithmetic only; no floating
//! point enters a choice.
//!
//! Each decision draws from its own generator, keyed by what it decides (for example
//! `context/<problem id>/targeted_test`), so a choice never depends on the order records
//! arrive in, on `--shard`, or on how many other choices were made before it.

use clover_protocol::{fnv1a64, SplitMix64};

/// A SplitMix64 generator ([`clover_protocol::SplitMix64`]) with pack-context's draws.
#[derive(Debug, Clone)]
pub struct Rng(SplitMix64);

impl Rng {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(SplitMix64::new(seed))
    }

    /// The generator for one named decision under a run's seed.
    pub fn for_key(seed: u64, key: &str) -> Self {
        // Mixing the key hash through one SplitMix64 step keeps nearby seeds and similar keys
        // from giving correlated streams.
        let mut r = Rng::new(seed ^ fnv1a64(key.as_bytes()));
        let mixed = r.next_u64();
        Rng::new(mixed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A uniform integer in `0..n` (`n > 0`), without modulo bias: draws that fall in the
    /// incomplete last stretch of the 64-bit range are rejected.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0) has no value to return");
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// Up to `k` distinct indices into `weights`, each draw picking a remaining index with
    /// probability proportional to its weight (sequential sampling without replacement).
    /// Zero weights are never picked. The indices come back in the order they were drawn.
    pub fn weighted_sample(&mut self, weights: &[u64], k: usize) -> Vec<usize> {
        self.weighted_draws(weights).take(k).collect()
    }

    /// All indices with a non-zero weight, in the order weighted draws without replacement
    /// pick them; lazy, so a caller that stops after a few draws pays for a few.
    pub fn weighted_draws(&mut self, weights: &[u64]) -> WeightedDraws<'_> {
        let remaining: Vec<(usize, u64)> = weights
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, w)| w > 0)
            .collect();
        let total = remaining.iter().map(|&(_, w)| w).sum();
        WeightedDraws {
            rng: self,
            remaining,
            total,
        }
    }
}

/// Weighted draws without replacement; see [`Rng::weighted_draws`].
#[derive(Debug)]
pub struct WeightedDraws<'r> {
    rng: &'r mut Rng,
    remaining: Vec<(usize, u64)>,
    total: u64,
}

impl Iterator for WeightedDraws<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.total == 0 {
            return None;
        }
        let mut r = self.rng.below(self.total);
        let pos = self
            .remaining
            .iter()
            .position(|&(_, w)| {
                if r < w {
                    true
                } else {
                    r -= w;
                    false
                }
            })
            .expect("r is below the total weight");
        let (index, w) = self.remaining.remove(pos);
        self.total -= w;
        Some(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_for_a_seed_never_changes() {
        // Reference values of SplitMix64 from seed 0 (as in the paper's reference code).
        let mut r = Rng::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn keys_give_independent_streams() {
        let a = Rng::for_key(7, "context/a").next_u64();
        let b = Rng::for_key(7, "context/b").next_u64();
        let a2 = Rng::for_key(8, "context/a").next_u64();
        assert_ne!(a, b);
        assert_ne!(a, a2);
        assert_eq!(a, Rng::for_key(7, "context/a").next_u64());
    }

    #[test]
    fn below_is_uniform_enough() {
        let mut r = Rng::new(42);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[r.below(6) as usize] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut v: Vec<u32> = (0..50).collect();
        Rng::new(3).shuffle(&mut v);
        let mut sorted = v.clone();
        sorted.sort();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
        assert_ne!(v, sorted);
    }

    #[test]
    fn weighted_sample_is_distinct_and_skips_zero_weights() {
        let mut r = Rng::new(1);
        let picked = r.weighted_sample(&[5, 0, 1, 3, 0, 2], 10);
        let mut sorted = picked.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 2, 3, 5]);
    }

    /// Single draws follow the weights: a chi-square test with a fixed seed (5 degrees of
    /// freedom; 20.5 is the 0.1% critical value).
    #[test]
    fn weighted_draws_are_proportional_to_weight() {
        let weights = [1u64, 2, 3, 4, 10, 20];
        let total: u64 = weights.iter().sum();
        let n = 40_000u64;
        let mut counts = [0u64; 6];
        let mut r = Rng::new(2024);
        for _ in 0..n {
            counts[r.weighted_sample(&weights, 1)[0]] += 1;
        }
        let chi2: f64 = weights
            .iter()
            .zip(counts)
            .map(|(&w, c)| {
                let expected = n as f64 * w as f64 / total as f64;
                (c as f64 - expected).powi(2) / expected
            })
            .sum();
        assert!(chi2 < 20.5, "chi2 {chi2}, counts {counts:?}");
    }
}
