//! What a C++ mutant run costs against a plain candidate run (run as root):
//!
//! ```text
//! mutant_bench N FIXTURE_DIR
//! ```
//!
//! For each test file of the C++ fixture paired with its source, the test file runs `N + 2`
//! times as a candidate (`GtestRun::run`: compile, link, run, coverage; the first two build
//! the library and the precompiled header and are not counted), `N` times as a candidate with
//! mutants (`GtestRun::run_keeping_object`: the same run, its test object read back for the
//! harness), then is compiled once into a mutant harness anew (`GtestRun::mutant_harness`,
//! what a candidate with mutants paid on top of its run before runs kept their object), and
//! runs against up to five mutants of its source (the first spaced
//! comparison and arithmetic operators swapped for their counterpart), `N` times each
//! (`MutantHarness::run`: the source recompiled, linked, run to the first failing test, no
//! coverage; a wall-clock limit of 20 s, since a mutant may loop forever). Prints one JSON
//! object: medians in seconds per set and over all (runs that hit the limit are counted apart,
//! not in the medians), and their ratio; and what a passing candidate costs before its first
//! mutant run: its run and a harness compiled anew (`compile_twice_secs`) against its run
//! keeping its object (`compile_once_secs`). Timings are printed, never asserted.

use std::path::Path;
use std::time::{Duration, Instant};

use clover_gtest::{CppProject, GtestRun, LibraryCache, Replacement};
use clover_sandbox::{Limits, Sandbox, WriteFile};

/// The fixture's test files and the sources they test.
const PAIRS: &[(&str, &str)] = &[
    ("tests/histogram_unittest.cc", "src/histogram.cc"),
    ("tests/ring_buffer_test.cc", "src/ring_buffer.cc"),
    ("tests/tokenizer_test.cc", "src/tokenizer.cc"),
];

/// Operators swapped for a mutant, spaced so that no `#include <...>` or `->` matches.
const SWAPS: &[(&str, &str)] = &[
    (" < ", " <= "),
    (" > ", " >= "),
    (" == ", " != "),
    (" + ", " - "),
    (" - ", " + "),
];

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [n, fixture] = &args[..] else {
        panic!("usage: mutant_bench N FIXTURE_DIR");
    };
    let n: usize = n.parse().expect("a count");
    let sb = Sandbox::new().expect("the sandbox needs root");
    let cfg = clover_manifest::RepoConfig::resolve(None, None, Some(Path::new(fixture)))
        .expect("the fixture's manifest")
        .remove(0);
    let project = CppProject::from_config(&cfg);
    let limits = Limits {
        wall: Duration::from_secs(600),
        cpu_secs: 600,
        ..Limits::default()
    };
    let cache_dir = tempfile::tempdir().expect("a cache folder");
    let cache = LibraryCache::new(cache_dir.path()).expect("the cache");
    let (mut all_plain, mut all_mutant, mut sets) = (Vec::new(), Vec::new(), Vec::new());
    let (mut all_keeping, mut all_harness) = (Vec::new(), Vec::new());
    for &(test, source) in PAIRS {
        let run = GtestRun {
            project: &project,
            test_file: WriteFile {
                path: test.into(),
                contents: std::fs::read(project.repo.join(test)).expect("the test file"),
            },
            filter: Vec::new(),
            limits: limits.clone(),
        };
        let mut plain = Vec::new();
        for i in 0..n + 2 {
            let started = Instant::now();
            let r = run.run(&sb, &cache).expect("a run");
            assert_eq!(r.outcome, clover_protocol::Outcome::Passed, "{test}");
            if i >= 2 {
                plain.push(started.elapsed());
            }
        }
        let mut keeping = Vec::new();
        for _ in 0..n {
            let started = Instant::now();
            let (r, kept) = run.run_keeping_object(&sb, &cache).expect("a run");
            assert_eq!(r.outcome, clover_protocol::Outcome::Passed, "{test}");
            assert!(kept.is_some(), "{test}: the run kept no object");
            keeping.push(started.elapsed());
        }
        let started = Instant::now();
        let harness = run
            .mutant_harness(&sb, &cache)
            .expect("a build")
            .expect("the test file compiles");
        let harness_secs = started.elapsed().as_secs_f64();
        let text = std::fs::read_to_string(project.repo.join(source)).expect("the source");
        let mutants: Vec<String> = SWAPS
            .iter()
            .filter_map(|(from, to)| {
                let at = text.find(from)?;
                Some(format!("{}{to}{}", &text[..at], &text[at + from.len()..]))
            })
            .collect();
        let mutant_limits = Limits {
            wall: Duration::from_secs(20),
            cpu_secs: 20,
            ..limits.clone()
        };
        let (mut mutant, mut killed, mut timeouts) = (Vec::new(), 0, 0);
        for m in &mutants {
            for _ in 0..n {
                let started = Instant::now();
                let r = harness
                    .run(
                        &sb,
                        Some(Replacement {
                            source: Path::new(source),
                            text: m.as_bytes(),
                        }),
                        &mutant_limits,
                    )
                    .expect("a mutant run");
                killed += usize::from(r.outcome != clover_protocol::Outcome::Passed);
                match r.outcome {
                    clover_protocol::Outcome::Timeout => timeouts += 1,
                    _ => mutant.push(started.elapsed()),
                }
            }
        }
        sets.push(serde_json::json!({
            "test": test,
            "plain_secs": median(plain.clone()),
            "harness_secs": harness_secs,
            "compile_twice_secs": median(plain.clone()) + harness_secs,
            "compile_once_secs": median(keeping.clone()),
            "mutants": mutants.len(),
            "mutant_secs": median(mutant.clone()),
            "mutant_runs_not_passing": killed,
            "mutant_runs_timed_out": timeouts,
        }));
        eprintln!("{}", sets.last().expect("just pushed"));
        all_plain.extend(plain);
        all_mutant.extend(mutant);
        all_keeping.extend(keeping);
        all_harness.push(Duration::from_secs_f64(harness_secs));
    }
    let (plain, mutant) = (median(all_plain), median(all_mutant));
    let (keeping, harness) = (median(all_keeping), median(all_harness));
    println!(
        "{}",
        serde_json::json!({
            "plain_secs": plain,
            "mutant_secs": mutant,
            "ratio": mutant / plain,
            "harness_secs": harness,
            "compile_twice_secs": plain + harness,
            "compile_once_secs": keeping,
            "sets": sets,
        })
    );
}
