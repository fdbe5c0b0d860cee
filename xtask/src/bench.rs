//! `cargo xtask bench`: speed and overhead as ratios against a baseline measured in the same
//! run, written to `docs/BENCHMARKS.md`. The machines are shared and noisy, so no figure here
//! is an absolute time to compare across runs; each is set beside its baseline, interleaved.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::docs::Row;
use crate::step;

pub fn run(root: &Path) -> Result<()> {
    // What the measurements need (the test Python, the tokenizer, bubblewrap as a baseline).
    let env = crate::setup::run(root)?;
    step("cargo build --release");
    duct::cmd!("cargo", "build", "--release", "--workspace", "--bins").run()?;
    let mut rows = vec![jsonl_read(root)?];
    rows.extend(crate::bench_calibrate::rows(root)?);
    rows.extend(sandbox_rows(root)?);
    rows.extend(mutation_rows(
        root,
        &root.join("target/release/clover"),
        &env,
    )?);

    let mut md = String::new();
    writeln!(md, "{BEGIN}")?;
    writeln!(md, "## Speed and overhead\n")?;
    writeln!(
        md,
        "Measured by `cargo xtask bench` on {} (2 cores). Every figure is a ratio against a",
        hostname()
    )?;
    writeln!(
        md,
        "baseline measured in the same run, interleaved, medians of repeated runs.\n"
    )?;
    writeln!(md, "| measurement | clover | baseline | ratio | target |")?;
    writeln!(md, "|---|---|---|---|---|")?;
    for r in &rows {
        let ratio = if r.ratio.is_finite() {
            format!("{:.2}×", r.ratio)
        } else {
            "—".into()
        };
        writeln!(
            md,
            "| {} | {} | {} | {ratio} | {} |",
            r.name, r.measured, r.baseline, r.target
        )?;
    }
    writeln!(md, "{END}")?;
    print!("{md}");
    crate::docs::replace_section(root, BEGIN, END, &md)
}

const BEGIN: &str = "<!-- bench: begin -->";
const END: &str = "<!-- bench: end -->";

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("Linux {}", s.trim()))
        .unwrap_or_else(|_| "this machine".into())
}

/// Median of `n` timings of `f`.
fn median(n: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[n / 2]
}

/// Reading run results through the checked record reader against parsing the same lines as
/// untyped JSON: the price of line numbers, kind checks and duplicate detection.
fn jsonl_read(_root: &Path) -> Result<Row> {
    use clover_protocol::*;
    let n = 20_000;
    let mut data = Vec::new();
    for i in 0..n {
        let r = RunResult {
            kind: RecordKind::RunResult,
            schema_version: SCHEMA_VERSION,
            id: format!("pyfix/tests/test_money.py::test_{i}@oracle"),
            instance_id: format!("pyfix/tests/test_money.py::test_{i}"),
            model: "oracle".into(),
            task: Some(Task::AssertionCloze),
            setting: "po".into(),
            repo: "pyfix".into(),
            outcome: Outcome::Passed,
            tests: vec![],
            coverage: vec![FileCoverage {
                path: "src/ledger/money.py".into(),
                lines: LineRanges::from_lines((1..200).step_by(3)),
            }],
            limit_hit: None,
            exit_code: Some(0),
            signal: None,
            candidate: Some("assert parse('1.00') == 100\n".into()),
            answer: Some("100".into()),
            message: None,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            scoring: Default::default(),
            duration_secs: 0.5,
            mutation: Default::default(),
        };
        serde_json::to_writer(&mut data, &r)?;
        data.push(b'\n');
    }
    let ours = median(7, || {
        let mut reader = RecordReader::new(&data[..], "bench", DEFAULT_MAX_LINE_BYTES);
        let mut count = 0;
        while let Some(r) = reader.next_record::<RunResult>() {
            r.expect("valid");
            count += 1;
        }
        assert_eq!(count, n);
    });
    let base = median(7, || {
        let count = data
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .inspect(|l| {
                serde_json::from_slice::<serde_json::Value>(l).expect("valid");
            })
            .count();
        assert_eq!(count, n);
    });
    let mb = data.len() as f64 / 1e6;
    Ok(Row {
        name: format!("read {n} run results ({mb:.1} MB) as typed, checked records"),
        measured: format!("{:.0} MB/s", mb / ours.as_secs_f64()),
        baseline: format!(
            "{:.0} MB/s untyped serde_json::Value",
            mb / base.as_secs_f64()
        ),
        ratio: ours.as_secs_f64() / base.as_secs_f64(),
        target: "≤ 1.5×: the reader is never the bottleneck".into(),
    })
}

/// The sandbox, measured by `crates/clover-sandbox-run/examples/sandbox_bench.rs` (it needs root
/// and runs the variants interleaved): the cost of starting a run, beside a bare fork+exec
/// and beside bubblewrap when it is installed; and a whole pytest file, sandboxed and bare.
fn sandbox_rows(root: &Path) -> Result<Vec<Row>> {
    use anyhow::Context;
    step("sandbox: spawn overhead and a pytest file, sandboxed and bare");
    let fixture = root.join("fixtures/python");
    let measure = |args: Vec<String>| sandbox_bench(root, &args);
    let us = |v: &serde_json::Value, k: &str| v[k].as_f64();
    let ms = |x: f64| format!("{:.2} ms", x / 1000.0);

    let n = 300;
    let spawn = measure(vec![
        "spawn".into(),
        n.to_string(),
        fixture.display().to_string(),
    ])?;
    let bare = us(&spawn, "bare_us").context("no bare time")?;
    let sandbox = us(&spawn, "sandbox_us").context("no sandbox time")?;
    let mut rows = vec![Row {
        name: format!("sandbox spawn: `/bin/true` in a new sandbox, median of {n}"),
        measured: format!("{} ({} over bare)", ms(sandbox), ms(sandbox - bare)),
        baseline: format!("{} bare fork+exec", ms(bare)),
        ratio: sandbox / bare,
        target: "≤ 1.5 ms over bare".into(),
    }];
    // The median above is the latency of one run when the pool of prepared supervisors has
    // had time to refill; back to back every run pays for a preparation itself.
    let bare_b2b = us(&spawn, "bare_b2b_us").context("no back-to-back bare time")?;
    let sandbox_b2b = us(&spawn, "sandbox_b2b_us").context("no back-to-back time")?;
    rows.push(Row {
        name: "sandbox spawn back to back: bursts of 20 runs of `/bin/true`, time per run".into(),
        measured: format!(
            "{} ({} over bare)",
            ms(sandbox_b2b),
            ms(sandbox_b2b - bare_b2b)
        ),
        baseline: format!("{} bare fork+exec", ms(bare_b2b)),
        ratio: sandbox_b2b / bare_b2b,
        target: "none: throughput of empty runs; a real run (a pytest file) takes ≥ 100× longer"
            .into(),
    });
    rows.push(match us(&spawn, "bwrap_us") {
        Some(bwrap) => Row {
            name: "sandbox spawn overhead against bubblewrap's (same isolation kinds)".into(),
            measured: format!("{} over bare", ms(sandbox - bare)),
            baseline: format!("{} over bare (bwrap {})", ms(bwrap - bare), ms(bwrap)),
            ratio: (sandbox - bare) / (bwrap - bare),
            target: "< 1× (bubblewrap ≈ 3.4 ms on this machine type)".into(),
        },
        None => Row {
            name: "sandbox spawn overhead against bubblewrap's".into(),
            measured: format!("{} over bare", ms(sandbox - bare)),
            baseline: "not measured: bubblewrap is not installed (`apt-get install bubblewrap`)"
                .into(),
            ratio: f64::NAN,
            target: "< 1×".into(),
        },
    });

    let python = std::env::var_os("CLOVER_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target/clover-venv/bin/python"));
    anyhow::ensure!(
        python.exists(),
        "no test Python at {}: run `cargo xtask setup`",
        python.display()
    );
    let runs = 9;
    let test_file = "tests/test_money.py";
    // One test file of the fixture: `pytest` (sandboxed and bare) or `warm` (warm and cold).
    let file_args = |mode: &str| {
        vec![
            mode.to_string(),
            runs.to_string(),
            fixture.display().to_string(),
            python.display().to_string(),
            test_file.into(),
            "src/ledger".into(),
        ]
    };
    let py = measure(file_args("pytest"))?;
    let bare = us(&py, "bare_us").context("no bare time")?;
    let sandbox = us(&py, "sandbox_us").context("no sandbox time")?;
    rows.push(Row {
        name: format!(
            "pytest + coverage of fixtures/python/{test_file}, sandboxed, median of {runs}"
        ),
        measured: ms(sandbox),
        baseline: format!("{} the same command bare", ms(bare)),
        ratio: sandbox / bare,
        target: "≤ 1.1×".into(),
    });
    let warm = measure(file_args("warm"))?;
    let cold = us(&warm, "cold_us").context("no cold time")?;
    let hot = us(&warm, "warm_us").context("no warm time")?;
    let own = us(&warm, "own_us").context("no test time")?;
    rows.push(Row {
        name: format!(
            "a Python candidate (fixtures/python/{test_file}) in a warm worker against a cold \
             run, median of {runs}, verdicts and coverage equal"
        ),
        measured: format!(
            "{} ({} over the tests' own {})",
            ms(hot),
            ms(hot - own),
            ms(own)
        ),
        baseline: format!("{} cold", ms(cold)),
        ratio: hot / cold,
        target: "≤ 60 ms over the tests' own time; ≥ 10× fewer seconds than cold".into(),
    });
    Ok(rows)
}

/// The mutation pass (issue 20): the Python fixture's problem-only oracle responses of Tasks
/// II and III through `sandbox-run`, plain and with `--mutation` (calibrate's sidecar of at
/// most 5 mutants a problem; two calibration runs, so the fixture's flaky test is left out),
/// one after the other; the seconds per mutant run are each distinct pass's own
/// (`RunResult::mutation`), over its runs.
pub fn mutation_rows(root: &Path, clover: &Path, env: &crate::setup::Env) -> Result<Vec<Row>> {
    use anyhow::Context;
    step("mutation: sandbox-run --mutation against sandbox-run of the same responses");
    let dir = root.join("target/bench-mutation");
    std::fs::create_dir_all(&dir)?;
    let file = |name: &str| dir.join(name).display().to_string();
    let repo = root.join("fixtures/python").display().to_string();
    let python = env.python.display().to_string();
    let tokenizer = env.tokenizer.display().to_string();
    let (problems, calibrated, instances, responses) = (
        file("problems.jsonl"),
        file("calibrated.jsonl"),
        file("instances.jsonl"),
        file("responses.jsonl"),
    );
    let mutants = format!("{calibrated}.mutants.jsonl");
    // Exit 3 is a stage's "some records were reported": the others went on, as the demo
    // takes it.
    let clover_run = |args: &[&str]| -> Result<std::time::Duration> {
        let t = Instant::now();
        let out = duct::cmd(clover, args)
            .stderr_capture()
            .unchecked()
            .run()
            .with_context(|| format!("clover {}", args.join(" ")))?;
        anyhow::ensure!(
            matches!(out.status.code(), Some(0 | 3)),
            "clover {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(t.elapsed())
    };
    clover_run(&["extract", "--repo", &repo, "-o", &problems])?;
    clover_run(&[
        "calibrate",
        &problems,
        "--repo",
        &repo,
        "--python",
        &python,
        "--runs",
        "2",
        "--mutants",
        "5",
        "-o",
        &calibrated,
    ])?;
    clover_run(&[
        "pack-context",
        &calibrated,
        "--repo",
        &repo,
        "--tokenizer",
        &tokenizer,
        "--settings",
        "po",
        "--seed",
        "0",
        "--cloze-per-repo",
        "0",
        "-o",
        &instances,
    ])?;
    clover_run(&[
        "generate", &instances, "--model", "oracle", "-o", &responses,
    ])?;
    let run = |name: &str, extra: &[&str]| -> Result<(f64, Vec<serde_json::Value>)> {
        let out = file(name);
        let mut args = vec![
            "sandbox-run",
            &responses,
            "--repo",
            &repo,
            "--python",
            &python,
        ];
        args.extend_from_slice(extra);
        args.extend(["-o", &out]);
        let secs = clover_run(&args)?.as_secs_f64();
        let results = std::fs::read_to_string(&out)?
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        Ok((secs, results))
    };
    let (plain, plain_results) = run("plain.jsonl", &[])?;
    let (with, results) = run("mutation.jsonl", &["--mutation", &mutants])?;
    // Responses with the same candidate and focus share one pass: count each once.
    let mut passes = std::collections::BTreeMap::new();
    for r in &results {
        let key = (r["candidate"].to_string(), r["scoring"].to_string());
        passes.insert(key, r["mutation"].clone());
    }
    let field = |m: &serde_json::Value, k: &str| m[k].as_f64().unwrap_or(0.0).max(0.0);
    let runs: f64 = passes.values().map(|m| field(m, "run")).sum();
    let cold: f64 = passes.values().map(|m| field(m, "cold")).sum();
    let pass_secs: f64 = passes.values().map(|m| field(m, "duration_secs")).sum();
    let killed: f64 = results
        .iter()
        .map(|r| field(&r["mutation"], "killed"))
        .sum();
    let kept: f64 = results.iter().map(|r| field(&r["mutation"], "kept")).sum();
    let per_candidate = plain_results
        .iter()
        .map(|r| field(r, "duration_secs"))
        .sum::<f64>()
        / plain_results.len().max(1) as f64;
    let per_mutant = pass_secs / runs.max(1.0);
    Ok(vec![
        Row {
            name: format!(
                "mutation pass: sandbox-run --mutation of {} po oracle responses of the Python \
                 fixture (Tasks II, III; ≤ 5 mutants a problem, {killed:.0} of {kept:.0} killed)",
                results.len()
            ),
            measured: format!("{with:.1} s"),
            baseline: format!("{plain:.1} s plain sandbox-run of the same responses"),
            ratio: with / plain,
            target: "≤ 3×".into(),
        },
        Row {
            name: format!(
                "one mutant run ({runs:.0} distinct, {cold:.0} cold; the fixture's conftest \
                 imports the mutated package, so a mutant of a function body is patched into a \
                 fork of the configured worker, one of code run at import runs per run)"
            ),
            measured: format!("{per_mutant:.2} s"),
            baseline: format!("{per_candidate:.2} s a candidate's plain run (result's seconds)"),
            ratio: per_mutant / per_candidate,
            target: "none: a patched fork costs about what a candidate does".into(),
        },
    ])
}

/// Runs `crates/clover-sandbox-run/examples/sandbox_bench.rs` (built first, release) with `args`
/// and returns the JSON object it prints.
pub fn sandbox_bench(root: &Path, args: &[String]) -> Result<serde_json::Value> {
    use anyhow::Context;
    duct::cmd!(
        "cargo",
        "build",
        "--release",
        "--quiet",
        "-p",
        "clover-sandbox-run",
        "--example",
        "sandbox_bench"
    )
    .run()?;
    let bench = root.join("target/release/examples/sandbox_bench");
    let out = duct::cmd(&bench, args).read()?;
    serde_json::from_str(out.trim()).with_context(|| format!("sandbox_bench said {out:?}"))
}
