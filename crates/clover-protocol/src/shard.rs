//! Stable hash partitions of record ids for `--shard K/N`.
//!
//! A record belongs to shard `fnv1a64(id) mod N`, where `fnv1a64` is the 64-bit FNV-1a hash of
//! the id's UTF-8 bytes (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`). The hash is
//! fixed by this definition, not by a library or platform, so every machine of a Slurm array or
//! a Kubernetes Indexed Job computes the same split on every run. `K` counts from 0, as array
//! and completion indices do.

use std::fmt;
use std::str::FromStr;

/// The 64-bit FNV-1a hash of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014):
/// a 64-bit state advanced by a fixed odd constant and scrambled by two multiply-xorshift
/// rounds. Written out here rather than taken from a crate so that the stream for a seed is
/// fixed forever, on every platform and in every version of clover: pack-context's choices,
/// the mutants' samples and score's bootstrap rebuild byte for byte. Each user draws its
/// integers from it in its own way (and keeps that way: changing it changes its outputs).
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// One of `count` shards, written `index/count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// The shard that holds `id`.
    pub fn of(id: &str, count: u32) -> u32 {
        (fnv1a64(id.as_bytes()) % u64::from(count)) as u32
    }

    /// Whether this shard holds `id`.
    pub fn contains(&self, id: &str) -> bool {
        Shard::of(id, self.count) == self.index
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| format!("shard `{s}` is not of the form K/N, e.g. 0/4"))?;
        let index: u32 = k
            .trim()
            .parse()
            .map_err(|_| format!("shard index `{k}` is not a number"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("shard count `{n}` is not a number"))?;
        if count == 0 {
            return Err("shard count must be at least 1".into());
        }
        if index >= count {
            return Err(format!(
                "shard index {index} is out of range: indices run from 0 to {}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_published_vectors() {
        // Test vectors from the FNV reference (Fowler, Noll, Vo).
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn shards_partition_ids_exactly() {
        let ids: Vec<String> = (0..5000)
            .map(|i| format!("repo/tests/test_{i}.py::t"))
            .collect();
        for n in [1u32, 2, 3, 7, 16] {
            let mut seen = vec![0u32; ids.len()];
            let mut sizes = vec![0usize; n as usize];
            for k in 0..n {
                let shard = Shard { index: k, count: n };
                for (i, id) in ids.iter().enumerate() {
                    if shard.contains(id) {
                        seen[i] += 1;
                        sizes[k as usize] += 1;
                    }
                }
            }
            assert!(
                seen.iter().all(|&c| c == 1),
                "every id in exactly one of {n} shards"
            );
            let expected = ids.len() / n as usize;
            for s in sizes {
                assert!(
                    s.abs_diff(expected) < expected / 5 + 30,
                    "{n} shards balanced: {s} vs {expected}"
                );
            }
        }
    }

    #[test]
    fn the_split_is_fixed() {
        // Pinned values, computed independently (a few lines of Python): a change here would
        // move records between the shards of a running job.
        assert_eq!(
            fnv1a64(b"pyfix/tests/test_core.py::test_add"),
            0x9d75b63925f6bc7f
        );
        assert_eq!(Shard::of("pyfix/tests/test_core.py::test_add", 4), 3);
        assert_eq!(Shard::of("pyfix/tests/test_core.py::test_add", 7), 1);
        assert_eq!(Shard::of("cppfix/src/tokenizer.cc", 4), 2);
        assert_eq!(Shard::of("cppfix/src/tokenizer.cc", 7), 5);
    }

    #[test]
    fn parses_and_rejects() {
        assert_eq!(
            "2/5".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 5 }
        );
        assert!("5/5".parse::<Shard>().is_err());
        assert!("1/0".parse::<Shard>().is_err());
        assert!("x/2".parse::<Shard>().is_err());
        assert!("3".parse::<Shard>().is_err());
    }
}
