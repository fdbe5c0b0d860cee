//! Seeded uniform samples of record ids: pack-context's `--sample N` (CPP-UT-Bench's 200
//! sampled pairs) and extract's `--sample N` (a suite too large to calibrate whole).
//!
//! Each id gets a key, the first draw of the SplitMix64 stream for `sample/<id>` under the
//! seed (the seed xor the id's FNV-1a hash, mixed through one SplitMix64 step, as every keyed
//! choice of clover is drawn); the N ids with the smallest keys are the sample (ties, which
//! need equal 64-bit draws, go by id). A key depends on the seed and the id alone, so the
//! sample is the same whatever the order of the input, the shard or the platform, and every
//! subset of N ids is equally likely.

use std::collections::{BinaryHeap, HashSet};

use crate::{fnv1a64, SplitMix64};

/// The key that orders `id` for the sample under `seed`.
pub fn key(seed: u64, id: &str) -> u64 {
    let key = format!("sample/{id}");
    let mixed = SplitMix64::new(seed ^ fnv1a64(key.as_bytes())).next_u64();
    SplitMix64::new(mixed).next_u64()
}

/// The `n` ids of `ids` with the smallest keys under `seed` (duplicates count once). Memory
/// is `n` ids, not the input.
pub fn choose(ids: impl IntoIterator<Item = String>, seed: u64, n: usize) -> HashSet<String> {
    // A max-heap of the n smallest (key, id) seen so far.
    let mut heap: BinaryHeap<(u64, String)> = BinaryHeap::with_capacity(n + 1);
    let mut seen: HashSet<String> = HashSet::new();
    for id in ids {
        let item = (key(seed, &id), id);
        if heap.len() == n && heap.peek().is_some_and(|top| item >= *top) {
            continue;
        }
        if !seen.insert(item.1.clone()) {
            continue;
        }
        heap.push(item);
        if heap.len() > n {
            if let Some((_, out)) = heap.pop() {
                seen.remove(&out);
            }
        }
    }
    heap.into_iter().map(|(_, id)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("repo/src/f{i}.cc")).collect()
    }

    #[test]
    fn same_seed_same_sample_in_any_order() {
        let all = ids(300);
        let a = choose(all.clone(), 7, 20);
        let mut reversed = all.clone();
        reversed.reverse();
        assert_eq!(a.len(), 20);
        assert_eq!(a, choose(reversed, 7, 20));
        // In two halves, the way sample_input folds a long input.
        let halves = choose(all[..150].to_vec(), 7, 20);
        assert_eq!(
            a,
            choose(halves.into_iter().chain(all[150..].to_vec()), 7, 20)
        );
        assert_ne!(
            a,
            choose(all.clone(), 8, 20),
            "another seed, another sample"
        );
        assert_eq!(choose(all.clone(), 7, 1000).len(), 300, "fewer than n: all");
        assert_eq!(
            choose(all[..3].iter().chain(&all[..3]).cloned(), 7, 5).len(),
            3
        );
    }

    /// Uniform: over many seeds each id is chosen about n/len of the time.
    #[test]
    fn every_problem_is_equally_likely() {
        let all = ids(50);
        let mut hits = vec![0u32; 50];
        for seed in 0..2000 {
            for id in choose(all.clone(), seed, 10) {
                let i: usize = id["repo/src/f".len()..id.len() - 3].parse().unwrap();
                hits[i] += 1;
            }
        }
        // Expected 400 each; binomial sd is about 18.
        assert!(hits.iter().all(|&h| (320..480).contains(&h)), "{hits:?}");
    }
}
