//! The C++ candidate bench behind `cargo xtask bench` (run as root, release build):
//!
//! ```text
//! gtest_bench N FIXTURE_DIR SAMPLES_DIR
//! ```
//!
//! Every test file of the C++ fixture and GoogleTest samples 1, 2 and 4, each run as a
//! candidate by `GtestRun::run` through two library caches: one building as before
//! [`FastBuild::NONE`], one with every speed-up ([`FastBuild::ALL`]). Both caches hold their
//! library (and the fast one its precompiled headers) after two warm-up rounds, so what is
//! measured is a candidate's own cost: compile, link, run, coverage. The two run interleaved,
//! in alternating order, one of each per candidate and round; every pair must read the same
//! (outcome, each test's verdict, covered and executable lines). Prints one JSON object:
//! medians in microseconds over every candidate run, and per set.

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;

use clover_gtest::{CppProject, FastBuild, GtestResult, GtestRun, LibraryCache};
use clover_sandbox::{Limits, Sandbox, WriteFile};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

fn reading(r: &GtestResult) -> String {
    let tests: Vec<String> = r
        .tests
        .iter()
        .map(|t| format!("{}.{}={:?}", t.classname, t.name, t.outcome))
        .collect();
    format!(
        "{:?} {tests:?} {:?} {:?}",
        r.outcome, r.coverage, r.executable
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [n, fixture, samples] = &args[..] else {
        panic!("usage: gtest_bench N FIXTURE_DIR SAMPLES_DIR");
    };
    let n: usize = n.parse().expect("a count");
    let sb = Sandbox::new().expect("the sandbox needs root");
    let cfg = clover_manifest::RepoConfig::resolve(None, None, Some(Path::new(fixture)))
        .expect("the fixture's manifest")
        .remove(0);
    let fixture = CppProject::from_config(&cfg);
    let samples = common::samples_project(Path::new(samples));
    let limits = Limits {
        wall: Duration::from_secs(600),
        cpu_secs: 600,
        ..Limits::default()
    };
    let candidate = |project, path: &str| GtestRun {
        project,
        test_file: WriteFile {
            path: path.into(),
            contents: std::fs::read(project.repo.join(path)).expect("the test file"),
        },
        filter: Vec::new(),
        limits: limits.clone(),
    };
    let mut runs: Vec<(&str, GtestRun)> = [
        "tests/ring_buffer_test.cc",
        "tests/tokenizer_test.cc",
        "tests/tokenizer_unittest.cc",
        "tests/histogram_unittest.cc",
        "tests/orphan_test.cc",
        "tests/small_vector_test.cc",
    ]
    .iter()
    .map(|t| ("fixture", candidate(&fixture, t)))
    .collect();
    runs.extend(
        [
            "sample1_unittest.cc",
            "sample2_unittest.cc",
            "sample4_unittest.cc",
        ]
        .iter()
        .map(|t| ("samples", candidate(&samples, t))),
    );
    let (plain_dir, fast_dir) = (
        tempfile::tempdir().expect("a folder"),
        tempfile::tempdir().expect("a folder"),
    );
    let plain = LibraryCache::new(plain_dir.path())
        .expect("a cache")
        .with_fast_build(FastBuild::NONE);
    let fast = LibraryCache::new(fast_dir.path())
        .expect("a cache")
        .with_fast_build(FastBuild::ALL);
    let timed = |run: &GtestRun, cache: &LibraryCache| {
        let t = Instant::now();
        let r = run.run(&sb, cache).expect("the run");
        (t.elapsed(), r)
    };
    // Per set: today's times and the fast ones.
    let mut times: Vec<(&str, Vec<Duration>, Vec<Duration>)> = Vec::new();
    const WARM_UP: usize = 2;
    for round in 0..WARM_UP + n {
        for (set, run) in &runs {
            let ((pt, p), (ft, f)) = if round % 2 == 0 {
                let p = timed(run, &plain);
                (p, timed(run, &fast))
            } else {
                let f = timed(run, &fast);
                (timed(run, &plain), f)
            };
            let name = run.test_file.path.display();
            assert_eq!(
                reading(&p),
                reading(&f),
                "{name}: the two builds read differently"
            );
            assert!(!p.tests.is_empty(), "{name}: {:?}", p.message);
            if round >= WARM_UP {
                assert!(f.precompiled_header, "{name}: {:?}", f.message);
                match times.iter_mut().find(|(s, ..)| s == set) {
                    Some((_, a, b)) => {
                        a.push(pt);
                        b.push(ft);
                    }
                    None => times.push((set, vec![pt], vec![ft])),
                }
            }
        }
    }
    let all_plain: Vec<Duration> = times.iter().flat_map(|(_, a, _)| a.clone()).collect();
    let all_fast: Vec<Duration> = times.iter().flat_map(|(_, _, b)| b.clone()).collect();
    let sets: Vec<String> = times
        .iter()
        .map(|(s, a, b)| {
            format!(
                "\"{s}\":{{\"plain_us\":{:.1},\"fast_us\":{:.1}}}",
                median(a.clone()),
                median(b.clone())
            )
        })
        .collect();
    println!(
        "{{\"n\":{n},\"candidates\":{},\"plain_us\":{:.1},\"fast_us\":{:.1},\"pch_builds\":{},{}}}",
        runs.len(),
        median(all_plain),
        median(all_fast),
        fast.precompiled_header_builds(),
        sets.join(",")
    );
}
