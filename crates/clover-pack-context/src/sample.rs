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

use std::collections::HashSet;
use std::io::BufRead;
use std::path::Path;

use clover_protocol::sample::choose;
use clover_protocol::Language;
use serde::Deserialize;

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
