//! `--sample N`: a seeded uniform sample of N problems of the whole input, as CPP-UT-Bench
//! evaluates 200 sampled pairs.
//!
//! Each kept problem (and, with `--judge-only-excluded`, each excluded C++ pair: the
//! paper's sample knows no execution filter) gets a key, the first draw of the SplitMix64 stream for
//! `sample/<problem id>` under the seed; the N problems with the smallest keys are the
//! sample (ties, which need equal 64-bit draws, go by id). A key depends on the seed and the
//! id alone, so the sample is the same whatever the order of the input, the shard or the
//! platform, and every subset of N problems is equally likely. Choosing it needs every id
//! before the first repository is packed, so the input is read twice: once for the ids
//! (held N at a time), once to pack; it must be a file, not a pipe.

use std::collections::{BinaryHeap, HashSet};
use std::io::BufRead;
use std::path::Path;

use clover_protocol::Language;
use serde::Deserialize;

use crate::rng::Rng;

/// Why the sample could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    #[error("--sample reads the input twice, so it needs an input file, not stdin; write the records to a file first")]
    NotAFile,
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The key that orders problem `id` for the sample under `seed`.
fn key(seed: u64, id: &str) -> u64 {
    Rng::for_key(seed, &format!("sample/{id}")).next_u64()
}

/// The `n` ids of `ids` with the smallest keys under `seed` (duplicates count once).
pub fn choose(ids: impl IntoIterator<Item = String>, seed: u64, n: usize) -> HashSet<String> {
    // A max-heap of the n smallest (key, id) seen so far: memory is n ids, not the input.
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

/// What the first pass reads of a record: unknown fields are skipped unparsed. A kept
/// problem's exclusion is written with an empty reason, not `null`, so it is read as the
/// protocol reads it.
#[derive(Deserialize)]
struct Head {
    id: String,
    #[serde(
        default,
        deserialize_with = "clover_protocol::exclusion_wire::deserialize"
    )]
    exclusion: Option<clover_protocol::Exclusion>,
    problem: ProblemHead,
}

#[derive(Deserialize)]
struct ProblemHead {
    language: Language,
}

/// The sample of the problems calibrate kept in the input file `input`, and with
/// `judge_only_excluded` of the C++ pairs it excluded too (the problems pack-context builds).
/// Lines that are not records are passed over here; the packing pass reports them.
pub fn sample_input(
    input: Option<&Path>,
    seed: u64,
    n: usize,
    judge_only_excluded: bool,
) -> Result<HashSet<String>, SampleError> {
    let path = match input {
        Some(p) if p != Path::new("-") => p,
        _ => return Err(SampleError::NotAFile),
    };
    let read_err = |source| SampleError::Read {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let mut ids = Vec::new();
    let mut chosen = HashSet::new();
    for line in std::io::BufReader::new(file).lines() {
        let line = line.map_err(read_err)?;
        if let Ok(head) = serde_json::from_str::<Head>(&line) {
            let judge_only = judge_only_excluded && head.problem.language == Language::Cpp;
            if head.exclusion.is_none() || judge_only {
                ids.push(head.id);
            }
        }
        // Choose as we go, so memory stays near n ids on any input.
        if ids.len() >= 4096 {
            chosen = choose(chosen.into_iter().chain(ids.drain(..)), seed, n);
        }
    }
    Ok(choose(chosen.into_iter().chain(ids), seed, n))
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
