//! Benchmarks of calibrate's per-test coverage on a real test file, against the run it
//! replaces: one plain `pytest --cov` of the same file, and calibrate's own per-test path.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::bench::Row;
use crate::corpus;

/// The corpus package and test file measured: toolz's itertoolz tests (51 test functions).
const PACKAGE: &str = "toolz";
const TEST_FILE: &str = "toolz/tests/test_itertoolz.py";

pub fn rows(root: &Path) -> Result<Vec<Row>> {
    let ready = corpus::ensure(root, &[PACKAGE.to_string()])?;
    let pkg = ready.first().context("toolz is not ready")?;
    let manifest = root.join("target/corpus/clover.toml");
    let bin = root.join("target/release");
    let work = root.join("target/bench");
    std::fs::create_dir_all(&work)?;

    // The problems of the one test file.
    let all = work.join("toolz-problems.jsonl");
    duct::cmd!(
        bin.join("clover-extract"),
        "--manifest",
        &manifest,
        "--name",
        PACKAGE,
        "-o",
        &all
    )
    .stderr_null()
    .run()?;
    let problems: Vec<String> = std::fs::read_to_string(&all)?
        .lines()
        .filter(|l| l.contains(&format!("\"test_file\":\"{TEST_FILE}\"")))
        .map(str::to_string)
        .collect();
    let n = problems.len();
    let input = work.join("toolz-itertoolz-problems.jsonl");
    std::fs::write(&input, problems.join("\n") + "\n")?;

    let calibrate = |per_test: bool| -> Result<Duration> {
        let out = work.join("calibrated.jsonl");
        let mut args: Vec<String> = vec![
            "--manifest".into(),
            manifest.display().to_string(),
            "--runs".into(),
            "1".into(),
            input.display().to_string(),
            "-o".into(),
            out.display().to_string(),
        ];
        if per_test {
            args.push("--per-test".into());
        }
        let t = Instant::now();
        duct::cmd(bin.join("clover-calibrate"), &args)
            .stderr_null()
            .run()?;
        Ok(t.elapsed())
    };
    // The baseline: what a person runs to get coverage of the file, without a sandbox and
    // without the network (unshare -n), with no per-test attribution.
    let plain = || -> Result<Duration> {
        let t = Instant::now();
        duct::cmd!(
            "unshare",
            "-n",
            &pkg.python,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            format!("--cov={PACKAGE}"),
            "--cov-report=",
            TEST_FILE
        )
        .dir(&pkg.dir)
        .env("COVERAGE_FILE", work.join("plain.coverage"))
        .stdout_null()
        .run()?;
        Ok(t.elapsed())
    };
    let mut fast = Vec::new();
    let mut base = Vec::new();
    for _ in 0..5 {
        base.push(plain()?);
        fast.push(calibrate(false)?);
    }
    let slow = calibrate(true)?;
    let (fast, base) = (median(fast), median(base));
    Ok(vec![
        Row {
            name: format!("calibrate per-test coverage of {PACKAGE}/{TEST_FILE} ({n} problems, 1 run, sandboxed)"),
            measured: secs(fast),
            baseline: format!("{} plain `pytest --cov` of the file, bare", secs(base)),
            ratio: fast.as_secs_f64() / base.as_secs_f64(),
            target: "≤ 1.5×".into(),
        },
        Row {
            name: format!("calibrate fast path vs its per-test path on the same {n} problems"),
            measured: secs(fast),
            baseline: format!("{} one pytest process per problem", secs(slow)),
            ratio: fast.as_secs_f64() / slow.as_secs_f64(),
            target: "≤ 0.1× (≥ 10× faster)".into(),
        },
    ])
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}
