//! A small fixed PRNG, so a seed means the same sample on every platform and every build (no
//! `rand`, whose algorithms may change between versions, no `HashMap` order). Strings hash with
//! `--shard`'s FNV-1a ([`clover_protocol::fnv1a64`]), fixed by its definition too.

use clover_protocol::fnv1a64;
pub use clover_protocol::SplitMix64;

/// The mutants' draws from [`SplitMix64`].
pub trait Draws {
    /// Fisher–Yates.
    fn shuffle<T>(&mut self, items: &mut [T]);
}

impl Draws for SplitMix64 {
    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            // A number below i + 1; the modulo's bias is below 2^-40 for any list we shuffle.
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// The seed of one problem's sample: the run's seed mixed with the problem id, so problems
/// draw independently and adding a problem changes no other's mutants.
pub fn problem_seed(seed: u64, problem_id: &str) -> u64 {
    SplitMix64::new(seed ^ fnv1a64(problem_id.as_bytes())).next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_gives_the_reference_sequence() {
        // The first outputs for seed 0 of the reference C implementation (prng.di.unimi.it).
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn shuffle_is_a_permutation_fixed_by_the_seed() {
        let mut a: Vec<u32> = (0..50).collect();
        let mut b = a.clone();
        SplitMix64::new(7).shuffle(&mut a);
        SplitMix64::new(7).shuffle(&mut b);
        assert_eq!(a, b);
        assert_ne!(a, (0..50).collect::<Vec<_>>());
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
    }
}
