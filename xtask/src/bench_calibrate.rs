//! Benchmarks of the dataset-building stages on real packages: calibrate's per-test coverage
//! against the run it replaces (one plain `pytest --cov` of the same file) and against its own
//! per-test path; extract's throughput against pytest's own collection of the same tests; and
//! pack-context against calibrate on the same problems (it must never be the slow stage).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::corpus;
use crate::docs::Row;

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
        .filter(|l| {
            serde_json::from_str::<clover_protocol::Problem>(l)
                .is_ok_and(|p| p.python.is_some_and(|py| py.test_file == TEST_FILE))
        })
        .map(str::to_string)
        .collect();
    let n = problems.len();
    anyhow::ensure!(
        n > 0,
        "{PACKAGE} has no problem of {TEST_FILE} to calibrate"
    );
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

    // pack-context over what calibrate just wrote, with the real tokenizer.
    let calibrated = work.join("calibrated.jsonl");
    calibrate(false)?;
    let instances = work.join("instances.jsonl");
    let tokenizer = root.join("target/clover-data/tokenizer.model.v1");
    let mut pack = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        duct::cmd!(
            bin.join("clover-pack-context"),
            &calibrated,
            "--manifest",
            &manifest,
            "--tokenizer",
            &tokenizer,
            "--seed",
            "0",
            "-o",
            &instances
        )
        .stderr_null()
        .run()?;
        pack.push(t.elapsed());
    }
    let pack = median(pack);
    let text = std::fs::read_to_string(&instances)?;
    let count = text.lines().count();
    let tokens: u64 = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("prompt_tokens").and_then(|t| t.as_u64()))
        .sum();

    let mut rows = extract_rows(root, &bin, &manifest, &work)?;
    rows.push(Row {
        name: format!("pack-context of the {n} calibrated problems: {count} instances, {tokens} prompt tokens"),
        measured: format!("{} ({:.0} instances/s, {:.2} M tokens/s)", secs(pack), count as f64 / pack.as_secs_f64(), tokens as f64 / 1e6 / pack.as_secs_f64()),
        baseline: format!("{} calibrate of the same problems", secs(fast)),
        ratio: pack.as_secs_f64() / fast.as_secs_f64(),
        target: "≪ 1×: never the slow stage".into(),
    });
    rows.extend(vec![
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
    ]);
    Ok(rows)
}

/// extract over the largest corpus package against pytest collecting the same tests.
fn extract_rows(root: &Path, bin: &Path, manifest: &Path, work: &Path) -> Result<Vec<Row>> {
    const LARGEST: &str = "click";
    let ready = corpus::ensure(root, &[LARGEST.to_string()])?;
    let pkg = ready.first().context("click is not ready")?;
    let out = work.join("click-problems.jsonl");
    let mut ours = Vec::new();
    let mut collect = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        duct::cmd!(
            bin.join("clover-extract"),
            "--manifest",
            manifest,
            "--name",
            LARGEST,
            "-q",
            "-o",
            &out
        )
        .stderr_null()
        .run()?;
        ours.push(t.elapsed());
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
            "--collect-only",
            "tests"
        )
        .dir(&pkg.dir)
        .stdout_null()
        .stderr_null()
        .unchecked()
        .run()?;
        collect.push(t.elapsed());
    }
    let (ours, collect) = (median(ours), median(collect));
    let bytes: u64 = walk_py(&pkg.dir);
    let problems = std::fs::read_to_string(&out)?.lines().count();
    Ok(vec![Row {
        name: format!(
            "extract {LARGEST} ({problems} problems, {:.1} MB of Python in the package)",
            bytes as f64 / 1e6
        ),
        measured: format!(
            "{} ({:.1} MB/s)",
            secs(ours),
            bytes as f64 / 1e6 / ours.as_secs_f64()
        ),
        baseline: format!(
            "{} `pytest --collect-only` of the same tests",
            secs(collect)
        ),
        ratio: ours.as_secs_f64() / collect.as_secs_f64(),
        target: "well under 1 s; never the slow stage".into(),
    }])
}

/// Bytes of Python source under `dir`, environments and caches left out.
fn walk_py(dir: &Path) -> u64 {
    let mut total = 0;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if path.is_dir() {
            if !name.starts_with('.') && !clover_manifest::PRUNED_DIRS.contains(&name.as_str()) {
                total += walk_py(&path);
            }
        } else if name.ends_with(".py") {
            total += e.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
    total
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}
