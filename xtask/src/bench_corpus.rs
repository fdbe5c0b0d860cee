//! `cargo xtask bench --corpus`: the whole pipeline on every package of the corpus, with the
//! oracle and a trivial baseline, timed and measured stage by stage, into `docs/BENCHMARKS.md`.
//!
//! Each package is extracted and calibrated on its own (so its problems, exclusions and times
//! are its own); the calibrated records are joined in corpus order and go through one
//! pack-context, one generate and one sandbox-run per model, and one score, the way a user
//! runs a benchmark. Every stage is a release binary run as a child process: its wall time,
//! its CPU in user space and in the kernel (counted, with everything it starts, in a cgroup v1
//! `cpuacct` group of its own where the machine has that hierarchy), and its peak resident
//! memory two ways — `wait4`'s `ru_maxrss`, the largest process of the
//! stage's tree (pytest and compilers included), and the stage process alone (`VmHWM`,
//! sampled while it runs).
//!
//! pack-context builds every default setting (their counts are reported), but only the
//! instances of `RUN_SETTINGS` are answered and run, with any instance of another setting
//! whose candidate or scoring facts none of them has: neither the oracle nor the baseline
//! reads the context, so every other instance would run a candidate file already run, with
//! the same facts to score it by.
//!
//! The oracle's `po` responses of Tasks II and III and of C++ also go through the mutation
//! pass (`bench_corpus_mutation`): calibrate judges the mutants of the problems they answer,
//! and sandbox-run runs them plain and with `--mutation`.
//!
//! Also measured in the same run: each Python package's whole suite bare and sandboxed
//! (`sandbox_bench pytest`, interleaved), and the peak memory of sandbox-run and score on 1×
//! and 10× the records (copies with new ids), which must stay flat.
//!
//! This is a measurement, not a test: it writes what it saw, then fails if a target was
//! missed, naming the records.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::bench_corpus_report::{Figures, Package, StageRun, WarmCold, BEGIN, END};
use crate::bench_flat::flat_memory;
use crate::bench_measure::{concat, count_lines, measure, vm_hwm_kib, Measured};
use crate::bench_scores::{keep_settings, oracle_failures, read_scores, run_durations, MODELS};
use crate::bench_suites::suite_overheads;
use crate::{corpus, setup, step};

pub fn run(root: &Path, names: &[String], build: bool) -> Result<()> {
    let started = Instant::now();
    let env = setup::run(root)?;
    if build {
        step("cargo build --release --bins");
        duct::cmd!("cargo", "build", "--release", "--workspace", "--bins").run()?;
    }
    let selected = select(root, names)?;
    let manifest = root.join("target/corpus/clover.toml");
    let bin = root.join("target/release");
    let work = root.join("target/bench-corpus");
    if work.exists() {
        std::fs::remove_dir_all(&work)?;
    }
    std::fs::create_dir_all(&work)?;
    let m = manifest.display().to_string();
    let file = |name: &str| work.join(name).display().to_string();
    let mut runs: Vec<StageRun> = Vec::new();
    let mut stage = |stage: &str, subject: &str, args: &[&str]| -> Result<Measured> {
        step(&format!("clover-{stage} {}", args.join(" ")));
        let cost = measure(&bin.join(format!("clover-{stage}")), args)?;
        runs.push(StageRun {
            stage: stage.into(),
            subject: subject.into(),
            cost,
        });
        Ok(cost)
    };

    // extract and calibrate, package by package.
    let mut packages = Vec::new();
    let mut calibrated = Vec::new();
    for name in &selected {
        let problems = file(&format!("{name}-problems.jsonl"));
        let cal = file(&format!("{name}-calibrated.jsonl"));
        stage(
            "extract",
            name,
            &["--manifest", &m, "--name", name, "-q", "-o", &problems],
        )?;
        stage(
            "calibrate",
            name,
            &[&problems, "--manifest", &m, "-o", &cal],
        )?;
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{cal}.summary.json"))?)
                .context("calibrate's summary")?;
        let counts = summary[name.as_str()]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let count = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
        let language = if corpus::CPP_REPOS.iter().any(|r| r.name == name) {
            "C++"
        } else {
            "Python"
        };
        // The default runs the suite three times (a problem whose lines change is flaky); the
        // same problems once, beside it, is what one run of the suite costs calibrate. Not a
        // stage of the pipeline: its output is dropped.
        let one_run_secs = if language == "Python" {
            let once = file(&format!("{name}-calibrated-once.jsonl"));
            step(&format!("clover-calibrate {name} --runs 1"));
            #[rustfmt::skip]
            let cost = measure(&bin.join("clover-calibrate"), &[&problems, "--manifest", &m, "--runs", "1", "-o", &once])?;
            Some(cost.secs)
        } else {
            None
        };
        packages.push(Package {
            name: name.clone(),
            language,
            problems: count_lines(Path::new(&problems))?,
            kept: counts.get("kept").map_or(0, count),
            excluded: counts
                .iter()
                .filter_map(|(k, v)| Some((k.strip_prefix("excluded_")?.to_string(), count(v))))
                .collect(),
            one_run_secs,
        });
        calibrated.push(cal);
    }
    let joined = file("calibrated.jsonl");
    concat(&calibrated, Path::new(&joined))?;

    // pack-context over the whole corpus, then the run settings only.
    let instances = file("instances.jsonl");
    let tokenizer = env.tokenizer.display().to_string();
    #[rustfmt::skip]
    stage("pack-context", "corpus", &[&joined, "--manifest", &m, "--tokenizer", &tokenizer, "--seed", "0", "-o", &instances])?;
    let to_run = file("instances-run.jsonl");
    let (built, elsewhere) = keep_settings(Path::new(&instances), Path::new(&to_run))?;

    let mut results = Vec::new();
    let mut warm_cold = Vec::new();
    for model in MODELS {
        let responses = file(&format!("responses-{model}.jsonl"));
        let result = file(&format!("results-{model}.jsonl"));
        #[rustfmt::skip]
        stage("generate", model, &[&to_run, "--model", model, "-o", &responses])?;
        #[rustfmt::skip]
        let warm = stage("sandbox-run", model, &[&responses, "--manifest", &m, "-o", &result])?;
        // The same responses through the cold path: the records must agree, and the warm
        // path's time is set beside the cold one's.
        let cold_result = file(&format!("results-{model}-cold.jsonl"));
        #[rustfmt::skip]
        let cold = stage("sandbox-run", &format!("{model} --cold"), &[&responses, "--manifest", &m, "--cold", "-o", &cold_result])?;
        warm_cold.push(WarmCold::compare(model, warm, cold, &result, &cold_result)?);
        results.push(result);
    }
    // The mutation pass over the oracle's responses of the tasks that have one.
    let mutation = {
        let mut timed = |name: &str, subject: &str, args: &[&str]| -> Result<f64> {
            Ok(stage(name, subject, args)?.secs)
        };
        crate::bench_corpus_mutation::run(
            &work,
            &m,
            Path::new(&joined),
            Path::new(&file("responses-oracle.jsonl")),
            &mut timed,
        )?
    };
    let report = file("score.json");
    let mut score_args: Vec<&str> = results.iter().map(String::as_str).collect();
    score_args.extend(["--by-repo", "--format", "json", "-o", &report]);
    stage("score", "corpus", &score_args)?;
    let pipeline_secs: f64 = runs.iter().map(|r| r.cost.secs).sum();

    let scores = read_scores(Path::new(&report))?;
    let failures = oracle_failures(Path::new(&results[0]))?;
    let durations = run_durations(&results)?;

    let suites = suite_overheads(root, &manifest, &work, &selected)?;
    let flat = flat_memory(&bin, &m, &work, &results)?;

    let figures = Figures {
        names: names.to_vec(),
        packages,
        built,
        elsewhere,
        runs,
        pipeline_secs,
        scores,
        failures,
        durations,
        suites,
        flat,
        warm_cold,
        mutation,
        xtask_kib: vm_hwm_kib("/proc/self/status").unwrap_or(0),
        total_secs: started.elapsed().as_secs_f64(),
    };
    let md = figures.section()?;
    print!("{md}");
    crate::docs::replace_section(root, BEGIN, END, &md)?;
    let missed = figures.missed();
    if !missed.is_empty() {
        bail!(
            "targets missed (the section is written):\n  {}",
            missed.join("\n  ")
        );
    }
    Ok(())
}

/// The corpus packages to run, in corpus order (Python first), made ready.
fn select(root: &Path, names: &[String]) -> Result<Vec<String>> {
    let python: Vec<&str> = corpus::PACKAGES.iter().map(|p| p.name).collect();
    let cpp: Vec<&str> = corpus::CPP_REPOS.iter().map(|r| r.name).collect();
    for n in names {
        if !python.contains(&n.as_str()) && !cpp.contains(&n.as_str()) {
            bail!(
                "no corpus package named `{n}`; there are: {}",
                python
                    .iter()
                    .chain(&cpp)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let wanted = |n: &&str| names.is_empty() || names.iter().any(|w| w == n);
    let python: Vec<String> = python
        .into_iter()
        .filter(wanted)
        .map(String::from)
        .collect();
    let cpp: Vec<String> = cpp.into_iter().filter(wanted).map(String::from).collect();
    if !python.is_empty() {
        corpus::ensure(root, &python)?;
    }
    if !cpp.is_empty() {
        corpus::ensure_cpp(root, &cpp)?;
    }
    Ok(python.into_iter().chain(cpp).collect())
}
