//! `cargo xtask bench --cpp` (and the end of `cargo xtask bench`): a C++ candidate's cost with
//! the runner's faster builds against the build as it was, in the same run, interleaved
//! (`crates/clover-gtest/examples/gtest_bench.rs`), written to its own section of
//! `docs/BENCHMARKS.md`.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use crate::step;

const BEGIN: &str = "<!-- bench-cpp: begin -->";
const END: &str = "<!-- bench-cpp: end -->";
/// Measured rounds after the two warm-up rounds.
const ROUNDS: usize = 5;

pub fn run(root: &Path) -> Result<()> {
    // g++, GoogleTest and its samples, gcovr, mold.
    crate::setup::run(root)?;
    step("C++ candidates: today's build against the fast one");
    duct::cmd!(
        "cargo",
        "build",
        "--release",
        "--quiet",
        "-p",
        "clover-gtest",
        "--example",
        "gtest_bench"
    )
    .run()?;
    let samples = "/usr/src/googletest/googletest/samples";
    let out = duct::cmd!(
        root.join("target/release/examples/gtest_bench"),
        ROUNDS.to_string(),
        root.join("fixtures/cpp"),
        samples
    )
    .read()?;
    let v: serde_json::Value =
        serde_json::from_str(out.trim()).with_context(|| format!("gtest_bench said {out:?}"))?;
    let us = |v: &serde_json::Value, k: &str| v[k].as_f64().with_context(|| format!("no {k}"));
    let s = |x: f64| format!("{:.2} s", x / 1e6);

    let mut md = String::new();
    writeln!(md, "{BEGIN}")?;
    writeln!(md, "## C++ candidates: compile less\n")?;
    writeln!(
        md,
        "Measured by `cargo xtask bench --cpp` on {} (2 cores, shared). Each test file of \
         `fixtures/cpp` and GoogleTest samples 1, 2 and 4 is run as a candidate by \
         `GtestRun::run` (compile, link, run, coverage; the library under test cached) \
         through two caches: `FastBuild::NONE`, the build as it was (gcovr reads the \
         coverage), and `FastBuild::ALL` (the candidate's include prefix precompiled, \
         instrumentation of the repository's files only, `mold`, gcov's output read \
         directly). Two warm-up rounds, then {ROUNDS} rounds, the two builds interleaved \
         in alternating order; every pair read the same (outcome, each test's verdict, \
         covered and executable lines). Medians of every candidate run; {} precompiled \
         headers built.\n",
        crate::bench::hostname(),
        v["pch_builds"]
    )?;
    writeln!(
        md,
        "| candidates | fast build | as before | ratio | target |"
    )?;
    writeln!(md, "|---|---|---|---|---|")?;
    let mut row = |name: String, m: &serde_json::Value| -> Result<()> {
        let (fast, plain) = (us(m, "fast_us")?, us(m, "plain_us")?);
        writeln!(
            md,
            "| {name} | {} | {} | {:.2}× | ≤ 0.4× |",
            s(fast),
            s(plain),
            fast / plain
        )?;
        Ok(())
    };
    row(
        format!("all {} test files, median of every run", v["candidates"]),
        &v,
    )?;
    row("fixtures/cpp (6 test files)".into(), &v["fixture"])?;
    row("GoogleTest samples 1, 2, 4".into(), &v["samples"])?;
    writeln!(md, "{END}")?;
    print!("{md}");
    crate::docs::replace_section(root, BEGIN, END, &md)
}
