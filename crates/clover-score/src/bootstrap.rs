//! Percentile bootstrap intervals over instances, seeded so a report is byte-reproducible.
//!
//! A row's interval resamples its results (one per instance) with replacement `replicates`
//! times and takes each metric's 2.5th and 97.5th percentile over the replicates. The random
//! stream of a row depends on the seed and the row's own key only, so adding a model or a
//! repository to the input never moves another row's interval.

use std::collections::BTreeMap;

use clover_protocol::{SplitMix64, Task};

use crate::metrics::{Tally, Verdict};

/// How intervals are drawn: `replicates` resamples (0: no intervals) from `seed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bootstrap {
    pub replicates: u32,
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            replicates: 1000,
            seed: 0,
        }
    }
}

/// A uniform index below `n` (> 0) from `rng`, by Lemire's multiply-shift; its bias, below
/// n / 2^64, is far under anything a benchmark of this size can show.
pub(crate) fn below(rng: &mut SplitMix64, n: usize) -> usize {
    ((u128::from(rng.next_u64()) * n as u128) >> 64) as usize
}

impl Bootstrap {
    /// The 95% interval of every metric of `task` over `verdicts`, keyed like
    /// [`Tally::metrics`]. `key` names the row (its random stream). A metric some replicate
    /// lacks (a C++ focal share when no resampled result has one) is read over the replicates
    /// that have it; with no replicates or no verdicts there are no intervals.
    pub fn intervals(
        &self,
        key: &str,
        task: Task,
        verdicts: &[Verdict],
    ) -> BTreeMap<String, (f64, f64)> {
        let mut out = BTreeMap::new();
        if self.replicates == 0 || verdicts.is_empty() {
            return out;
        }
        let mut rng = SplitMix64::new(self.seed ^ clover_protocol::fnv1a64(key.as_bytes()));
        let mut draws: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for _ in 0..self.replicates {
            let mut tally = Tally::default();
            for _ in 0..verdicts.len() {
                tally.add(&verdicts[below(&mut rng, verdicts.len())]);
            }
            for (name, v) in tally.metrics(task) {
                draws.entry(name).or_default().push(v);
            }
        }
        for (name, mut values) in draws {
            values.sort_by(f64::total_cmp);
            out.insert(name, percentile_interval(&values));
        }
        out
    }
}

/// The 2.5th and 97.5th percentiles of sorted `values` (nearest rank: the smallest value with
/// at least that share of values at or below it).
fn percentile_interval(sorted: &[f64]) -> (f64, f64) {
    let rank = |p: f64| {
        let k = (p * sorted.len() as f64).ceil() as usize;
        sorted[k.clamp(1, sorted.len()) - 1]
    };
    (rank(0.025), rank(0.975))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passed(executed: bool) -> Verdict {
        Verdict {
            executed,
            ..Verdict::default()
        }
    }

    /// The generator's published first outputs for seed 0 (the reference C code's), so the
    /// stream never changes under a report.
    #[test]
    fn splitmix_matches_its_reference_outputs() {
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
        let mut r = SplitMix64::new(7);
        assert!((0..1000).all(|_| below(&mut r, 3) < 3));
    }

    #[test]
    fn the_same_seed_and_key_give_the_same_interval() {
        let v: Vec<Verdict> = (0..20).map(|i| passed(i % 3 == 0)).collect();
        let b = Bootstrap::default();
        let a = b.intervals("m/coverage_test/po/*", Task::CoverageTest, &v);
        assert_eq!(
            a,
            b.intervals("m/coverage_test/po/*", Task::CoverageTest, &v)
        );
        let (lo, hi) = a["execution_rate"];
        // 7 of 20 passed: the interval holds the estimate and is no wider than [0, 1].
        assert!(
            (0.0..0.35).contains(&lo) && 0.35 < hi && hi <= 1.0,
            "{lo} {hi}"
        );
        // With 1000 replicates the interval of a rate over 20 results is steady across
        // seeds: the percentiles fall on the same multiples of 1/20.
        assert_eq!(
            Bootstrap { seed: 99, ..b }.intervals("another/row", Task::CoverageTest, &v),
            a
        );
    }

    /// Known small cases: a constant sample has a point interval; two results, one passing,
    /// resample to all-fail and all-pass a quarter of the time each, so the interval is [0, 1].
    #[test]
    fn known_small_cases() {
        let b = Bootstrap::default();
        let all = vec![passed(true); 5];
        assert_eq!(
            b.intervals("k", Task::CoverageTest, &all)["execution_rate"],
            (1.0, 1.0)
        );
        let one = vec![passed(false)];
        assert_eq!(
            b.intervals("k", Task::CoverageTest, &one)["execution_rate"],
            (0.0, 0.0)
        );
        let two = vec![passed(false), passed(true)];
        assert_eq!(
            b.intervals("k", Task::CoverageTest, &two)["execution_rate"],
            (0.0, 1.0)
        );
        assert!(Bootstrap {
            replicates: 0,
            seed: 0
        }
        .intervals("k", Task::CoverageTest, &two)
        .is_empty());
        assert!(b.intervals("k", Task::CoverageTest, &[]).is_empty());
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=40).map(f64::from).collect();
        // 2.5% of 40 is rank 1, 97.5% is rank 39.
        assert_eq!(percentile_interval(&v), (1.0, 39.0));
        assert_eq!(percentile_interval(&[0.5]), (0.5, 0.5));
    }
}
