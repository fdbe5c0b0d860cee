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

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clover_manifest::RepoConfig;
use clover_protocol::{Instance, RecordReader, RunResult, Task, DEFAULT_MAX_LINE_BYTES};

use crate::{corpus, setup, step};

const BEGIN: &str = "<!-- bench-corpus: begin -->";
const END: &str = "<!-- bench-corpus: end -->";

/// CLOVER's instances per model (its three tasks over every setting), and the cores of the
/// machine the projection assumes.
const CLOVER_INSTANCES: usize = 5312;
const CLOVER_CORES: usize = 2;
/// The settings whose instances are answered and run.
const RUN_SETTINGS: &[&str] = &["po"];
/// The oracle and the trivial baseline (copy the other operand in Task I, `assert True`
/// elsewhere).
const MODELS: &[&str] = &["oracle", "copy-operand"];
/// The oracle's headline metric must reach this on every task of every package.
const ORACLE_TARGET: f64 = 0.95;
/// Records given to sandbox-run for the memory comparison (1×), and the copies (10×).
const FLAT_RECORDS: usize = 24;
const FLAT_COPIES: usize = 10;
/// Peak memory at 10× may be at most this many times the peak at 1×.
const FLAT_TARGET: f64 = 1.2;
/// calibrate of a Python package may take at most this many times one bare `pytest --cov`
/// of its whole suite (issue 18).
const CALIBRATE_TARGET: f64 = 1.5;
/// Interleaved bare/sandboxed runs of each Python suite.
const SUITE_RUNS: usize = 3;

/// What one stage process cost.
#[derive(Debug, Clone, Copy, Default)]
struct Measured {
    secs: f64,
    /// `ru_maxrss` of `wait4`: the largest process of the tree, in KiB.
    tree_kib: u64,
    /// The stage process alone: its `VmHWM`, sampled, in KiB.
    own_kib: u64,
    /// CPU of the stage and every process it started, sandboxed ones included (`None` where
    /// the machine has no cgroup v1 `cpuacct` hierarchy to count them in).
    cpu: Option<Cpu>,
}

/// CPU seconds, in user space and in the kernel.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    user: f64,
    system: f64,
}

/// A cgroup v1 `cpuacct` group made for one measured process, below this process's own: the
/// process enters it before it execs, and whatever it starts stays counted there (the
/// sandbox's cgroups are of other hierarchies, or below this one). `wait4`'s resource usage
/// cannot say this: a sandboxed process is reaped by its own pid 1, not by the stage.
struct CpuGroup {
    dir: PathBuf,
}

impl CpuGroup {
    fn new() -> Option<CpuGroup> {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = clover_sandbox::cgroup_v1(&mountinfo, &own, "cpuacct")?
            .own?
            .join(format!("clover-bench-{}-{seq}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        Some(CpuGroup { dir })
    }

    /// Makes `command` enter the group between its fork and its exec.
    fn enter(&self, command: &mut Command) -> Result<()> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::process::CommandExt;
        let procs = std::ffi::CString::new(self.dir.join("cgroup.procs").as_os_str().as_bytes())?;
        // SAFETY: between fork and exec the closure only makes system calls (open, write,
        // close) on memory allocated before the fork.
        unsafe {
            command.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // "0": the writing process itself.
                let r = libc::write(fd, b"0".as_ptr().cast(), 1);
                let e = std::io::Error::last_os_error();
                libc::close(fd);
                if r == 1 {
                    Ok(())
                } else {
                    Err(e)
                }
            });
        }
        Ok(())
    }

    /// What the group's processes spent so far (nanoseconds in `cpuacct.usage_user` and
    /// `cpuacct.usage_sys`).
    fn read(&self) -> Option<Cpu> {
        let ns = |f: &str| -> Option<f64> {
            let text = std::fs::read_to_string(self.dir.join(f)).ok()?;
            Some(text.trim().parse::<u64>().ok()? as f64 / 1e9)
        };
        Some(Cpu {
            user: ns("cpuacct.usage_user")?,
            system: ns("cpuacct.usage_sys")?,
        })
    }
}

impl Drop for CpuGroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// One stage process of the run.
struct StageRun {
    stage: String,
    subject: String,
    cost: Measured,
}

/// A Python or C++ package of the corpus and what its first two stages said.
struct Package {
    name: String,
    language: &'static str,
    problems: usize,
    kept: u64,
    excluded: BTreeMap<String, u64>,
    /// Wall seconds of calibrate `--runs 1` of the same problems (Python only): what one run
    /// of the suite costs calibrate, against one bare run.
    one_run_secs: Option<f64>,
}

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

/// Runs `program args…` (stdout discarded, stderr passed through) and measures it. A stage
/// that reports bad records (exit 3) still counts; any other failure stops the benchmark.
fn measure(program: &Path, args: &[&str]) -> Result<Measured> {
    let group = CpuGroup::new();
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    if let Some(g) = &group {
        g.enter(&mut command)?;
    }
    let started = Instant::now();
    let child = command
        .spawn()
        .with_context(|| format!("cannot start {}", program.display()))?;
    let pid = child.id() as libc::pid_t;
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let status = format!("/proc/{pid}/status");
            let mut peak = 0;
            while !stop.load(Ordering::Relaxed) {
                if let Some(kib) = vm_hwm_kib(&status) {
                    peak = peak.max(kib);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            peak
        })
    };
    // Wait for the exit without reaping, so that the pid cannot be reused while the sampler
    // still reads it; then reap with the tree's resource usage.
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter; pid is our unreaped child.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("waitid");
        }
    }
    let secs = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let own_kib = sampler.join().expect("the sampler does not panic");
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter; pid is our exited, unreaped child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("wait4");
        }
    }
    drop(child);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    if code != 0 && code != 3 {
        bail!("{} failed with exit code {code}", program.display());
    }
    Ok(Measured {
        secs,
        tree_kib: usage.ru_maxrss.max(0) as u64,
        own_kib,
        cpu: group.and_then(|g| g.read()),
    })
}

/// The `VmHWM` line of a `/proc/PID/status` file (absent once the process has exited).
fn vm_hwm_kib(status: &str) -> Option<u64> {
    let text = std::fs::read_to_string(status).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn count_lines(path: &Path) -> Result<usize> {
    let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    Ok(BufReader::new(f).split(b'\n').count())
}

fn concat(parts: &[String], to: &Path) -> Result<()> {
    let mut out = BufWriter::new(std::fs::File::create(to)?);
    for p in parts {
        std::io::copy(&mut std::fs::File::open(p)?, &mut out)?;
    }
    out.flush()?;
    Ok(())
}

/// The name of a task as the wire and score's tables write it.
fn task_name(task: Task) -> String {
    serde_json::to_value(task)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// Instances built: (repo, task) → setting → count.
type Built = BTreeMap<(String, String), BTreeMap<String, usize>>;

/// What a model's answer to an instance is run and scored by, whatever its setting: the
/// problem, task and format, the reference, the text around the answer, the scoring facts.
fn run_identity(i: &Instance) -> (String, Task, String, String, String, String, String) {
    (
        i.problem_id.clone(),
        i.task,
        i.answer_format.clone(),
        i.reference.clone(),
        i.exec.prefix.clone(),
        i.exec.suffix.clone(),
        serde_json::to_string(&i.scoring).unwrap_or_default(),
    )
}

/// Copies the instances of `RUN_SETTINGS` from `from` to `to`, and each instance of another
/// setting whose [`run_identity`] none copied before has (the second number); counts every
/// instance built.
fn keep_settings(from: &Path, to: &Path) -> Result<(Built, usize)> {
    let read = || -> Result<Vec<(String, Instance)>> {
        let input = BufReader::new(std::fs::File::open(from)?);
        input
            .lines()
            .enumerate()
            .map(|(n, line)| {
                let line = line?;
                let i: Instance = serde_json::from_str(&line)
                    .with_context(|| format!("{}:{}: not an instance", from.display(), n + 1))?;
                Ok((line, i))
            })
            .collect()
    };
    let instances = read()?;
    let run = |i: &Instance| RUN_SETTINGS.contains(&i.setting.as_str());
    let mut seen: std::collections::HashSet<_> = instances
        .iter()
        .filter(|(_, i)| run(i))
        .map(|(_, i)| run_identity(i))
        .collect();
    let mut built = Built::new();
    let mut elsewhere = 0;
    let mut out = BufWriter::new(std::fs::File::create(to)?);
    for (line, i) in &instances {
        *built
            .entry((i.repo.clone(), task_name(i.task)))
            .or_default()
            .entry(i.setting.clone())
            .or_default() += 1;
        if run(i) {
            writeln!(out, "{line}")?;
        } else if seen.insert(run_identity(i)) {
            elsewhere += 1;
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    Ok((built, elsewhere))
}

/// A package's task in one answer format: (repo, task, format). The format is score's
/// `answer_format` (`part`, `full`), empty for a task asked in one format (Task I, C++).
type ScoreKey = (String, String, String);

/// One task of one package in one answer format in score's report, over the run settings.
#[derive(Default)]
struct Score {
    metric: String,
    /// The oracle's instances over every setting run.
    n: u64,
    /// model → headline metric pooled over the settings run.
    by_model: BTreeMap<String, f64>,
    /// setting → the oracle's headline metric there and its instances. The target holds in
    /// each: a pooled figure would hide a setting the oracle fails in.
    oracle_by_setting: BTreeMap<String, (f64, u64)>,
}

impl Score {
    /// The setting where the oracle scores lowest (the first in setting order on a tie).
    fn worst_setting(&self) -> Option<(&str, f64, u64)> {
        let mut settings: Vec<(&String, &(f64, u64))> = self.oracle_by_setting.iter().collect();
        settings.sort_by(|a, b| clover_score::setting_order(a.0, b.0));
        settings
            .into_iter()
            .fold(None, |worst, (s, &(v, n))| match worst {
                Some((_, w, _)) if w <= v => worst,
                _ => Some((s.as_str(), v, n)),
            })
    }

    /// Whether the oracle reaches the target in every setting run (and was run at all).
    fn oracle_meets_target(&self) -> bool {
        !self.oracle_by_setting.is_empty()
            && self
                .oracle_by_setting
                .values()
                .all(|&(v, _)| v >= ORACLE_TARGET)
    }
}

/// score's per-repository rows: (repo, task, format) → Score, pooled over settings with each
/// setting's oracle figure kept.
fn read_scores(report: &Path) -> Result<BTreeMap<ScoreKey, Score>> {
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report)?)?;
    // (repo, task, format, model) → (Σ n·value, Σ n)
    let mut sums: BTreeMap<(ScoreKey, String), (f64, u64)> = BTreeMap::new();
    let mut out: BTreeMap<ScoreKey, Score> = BTreeMap::new();
    for row in json["rows"]
        .as_array()
        .context("score's JSON has no rows")?
    {
        let repo = row["repo"].as_str().unwrap_or("");
        if repo == clover_score::ALL_REPOS {
            continue;
        }
        let task: Task = serde_json::from_value(row["task"].clone())?;
        let metric = clover_score::headline_metric(task);
        let (Some(v), Some(n)) = (row["metrics"][metric].as_f64(), row["n"].as_u64()) else {
            continue;
        };
        let model = row["model"].as_str().unwrap_or("").to_string();
        let key = (
            repo.to_string(),
            task_name(task),
            row["answer_format"].as_str().unwrap_or("").to_string(),
        );
        let s = sums.entry((key.clone(), model.clone())).or_default();
        s.0 += v * n as f64;
        s.1 += n;
        let score = out.entry(key).or_default();
        score.metric = metric.into();
        if model == MODELS[0] {
            let setting = row["setting"].as_str().unwrap_or("").to_string();
            score.oracle_by_setting.insert(setting, (v, n));
        }
    }
    for ((key, model), (sum, n)) in sums {
        let s = out.entry(key).or_default();
        if model == MODELS[0] {
            s.n = n;
        }
        s.by_model.insert(model, sum / n.max(1) as f64);
    }
    Ok(out)
}

/// `repo task [format]`: a score's cell as the misses name it.
fn score_name((repo, task, format): &ScoreKey) -> String {
    if format.is_empty() {
        format!("{repo} {task}")
    } else {
        format!("{repo} {task} {format}")
    }
}

/// The oracle's results that do not count as a success, by score's own verdict.
fn oracle_failures(results: &Path) -> Result<Vec<String>> {
    let f = std::fs::File::open(results)?;
    let mut reader = RecordReader::new(
        BufReader::new(f),
        &results.display().to_string(),
        DEFAULT_MAX_LINE_BYTES,
    );
    let mut out = Vec::new();
    while let Some(r) = reader.next_record::<RunResult>() {
        let (_, r) = r?;
        let Some(task) = r.task else { continue };
        if clover_score::verdict(&r, task).success {
            continue;
        }
        let message = r
            .message
            .as_deref()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        let limit = r
            .limit_hit
            .map(|l| format!(", limit {l:?}"))
            .unwrap_or_default();
        out.push(format!(
            "{} [{}, {:?}{limit}]: {message}",
            r.id,
            task_name(task),
            r.outcome
        ));
    }
    Ok(out)
}

/// Per repository: runs and the sum of their `duration_secs` (both models).
fn run_durations(results: &[String]) -> Result<BTreeMap<String, (usize, f64)>> {
    let mut out: BTreeMap<String, (usize, f64)> = BTreeMap::new();
    for path in results {
        let mut reader = RecordReader::new(
            BufReader::new(std::fs::File::open(path)?),
            path,
            DEFAULT_MAX_LINE_BYTES,
        );
        while let Some(r) = reader.next_record::<RunResult>() {
            let (_, r) = r?;
            let e = out.entry(r.repo).or_default();
            e.0 += 1;
            e.1 += r.duration_secs;
        }
    }
    Ok(out)
}

/// One package's suite, bare and sandboxed.
struct Suite {
    name: String,
    target: String,
    bare_secs: f64,
    sandboxed_secs: f64,
}

impl Suite {
    /// A suite's medians as `sandbox_bench` prints them (microseconds).
    fn measured(name: &str, target: String, v: &serde_json::Value) -> Result<Suite> {
        Ok(Suite {
            name: name.to_string(),
            target,
            bare_secs: v["bare_us"].as_f64().context("no bare time")? / 1e6,
            sandboxed_secs: v["sandbox_us"].as_f64().context("no sandbox time")? / 1e6,
        })
    }
}

/// Each selected package's tests bare and sandboxed: a Python package's whole suite; a C++
/// package's test files that extract paired with a source (built, run and measured).
fn suite_overheads(
    root: &Path,
    manifest: &Path,
    work: &Path,
    selected: &[String],
) -> Result<Vec<Suite>> {
    let mut out = Vec::new();
    for cfg in RepoConfig::resolve(Some(manifest), None, None)? {
        if !selected.contains(&cfg.name) {
            continue;
        }
        if cfg.language == clover_protocol::Language::Cpp {
            let tests = cpp_test_files(&work.join(format!("{}-problems.jsonl", cfg.name)))?;
            if tests.is_empty() {
                continue;
            }
            step(&format!("{}: the test files bare and sandboxed", cfg.name));
            let mut args = vec![
                "gtest".to_string(),
                SUITE_RUNS.to_string(),
                manifest.display().to_string(),
                cfg.name.clone(),
            ];
            args.extend(tests.iter().cloned());
            let v = crate::bench::sandbox_bench(root, &args)?;
            out.push(Suite::measured(&cfg.name, tests.join(" "), &v)?);
            continue;
        }
        let python = cfg
            .python
            .clone()
            .context("the corpus names each interpreter")?;
        let target = cfg
            .test_dirs
            .first()
            .map_or(".".into(), |d| d.display().to_string());
        // coverage.py takes folders or importable names, not module files.
        let src = cfg.source_dirs.first().map_or(".".into(), |d| {
            let s = d.display().to_string();
            s.strip_suffix(".py").map_or(s.clone(), String::from)
        });
        step(&format!("{}: the suite bare and sandboxed", cfg.name));
        let v = crate::bench::sandbox_bench(
            root,
            &[
                "pytest".into(),
                SUITE_RUNS.to_string(),
                cfg.root.display().to_string(),
                python.display().to_string(),
                target.clone(),
                src,
            ],
        )?;
        out.push(Suite::measured(&cfg.name, target, &v)?);
    }
    Ok(out)
}

/// The distinct test files of a C++ package's problems, in order of first appearance.
fn cpp_test_files(problems: &Path) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let mut reader = RecordReader::new(
        BufReader::new(std::fs::File::open(problems)?),
        &problems.display().to_string(),
        DEFAULT_MAX_LINE_BYTES,
    );
    while let Some(r) = reader.next_record::<clover_protocol::Problem>() {
        let (_, p) = r?;
        if let Some(cpp) = p.cpp {
            if !out.contains(&cpp.test_path) {
                out.push(cpp.test_path);
            }
        }
    }
    Ok(out)
}

/// Peak memory of one stage at 1× and at 10× the records.
struct Flat {
    stage: &'static str,
    what: String,
    records: usize,
    one: Measured,
    ten: Measured,
}

impl Flat {
    fn ratio(&self) -> f64 {
        self.ten.own_kib as f64 / self.one.own_kib.max(1) as f64
    }
}

fn flat_memory(bin: &Path, manifest: &str, work: &Path, results: &[String]) -> Result<Vec<Flat>> {
    let mut out = Vec::new();
    // sandbox-run: the first Task I responses of the oracle, each a real pytest run.
    let responses = work.join(format!("responses-{}.jsonl", MODELS[0]));
    let mut picked = Vec::new();
    for line in BufReader::new(std::fs::File::open(&responses)?).lines() {
        let line = line?;
        if line.contains("\"task\":\"assertion_cloze\"") {
            picked.push(line);
            if picked.len() == FLAT_RECORDS {
                break;
            }
        }
    }
    let records = picked.len();
    let picked_file = work.join("flat-responses.jsonl");
    std::fs::write(&picked_file, picked.join("\n") + "\n")?;
    drop(picked);
    let mut runs = Vec::new();
    for copies in [1, FLAT_COPIES] {
        let input = work.join(format!("flat-responses-{copies}x.jsonl"));
        write_copies(std::slice::from_ref(&picked_file), copies, &input)?;
        let o = input.with_extension("results.jsonl");
        let (i, o_s) = (input.display().to_string(), o.display().to_string());
        step(&format!("clover-sandbox-run {i} ({copies}×)"));
        #[rustfmt::skip]
        runs.push(measure(&bin.join("clover-sandbox-run"), &[&i, "--manifest", manifest, "-o", &o_s])?);
        let (got, want) = (count_lines(&o)?, count_lines(&input)?);
        anyhow::ensure!(got == want, "{o_s} holds {got} results, not {want}");
    }
    out.push(Flat {
        stage: "sandbox-run",
        what: "oracle responses of Task I".into(),
        records,
        one: runs[0],
        ten: runs[1],
    });

    // score: every result of the run.
    let inputs: Vec<PathBuf> = results.iter().map(PathBuf::from).collect();
    let mut records = 0;
    for r in &inputs {
        records += count_lines(r)?;
    }
    let mut runs = Vec::new();
    for copies in [1, FLAT_COPIES] {
        let input = work.join(format!("flat-results-{copies}x.jsonl"));
        write_copies(&inputs, copies, &input)?;
        let o = input.with_extension("score.json").display().to_string();
        let i = input.display().to_string();
        step(&format!("clover-score {i} ({copies}×)"));
        #[rustfmt::skip]
        runs.push(measure(&bin.join("clover-score"), &[&i, "--by-repo", "--format", "json", "-o", &o])?);
    }
    out.push(Flat {
        stage: "score",
        what: "run results of both models".into(),
        records,
        one: runs[0],
        ten: runs[1],
    });
    Ok(out)
}

/// Writes `copies` copies of the record lines of `inputs`, streaming; copy `c > 0` gets `~c`
/// after its `id` and `instance_id`, so every record is new to the stage and the bytes are
/// otherwise the same.
fn write_copies(inputs: &[PathBuf], copies: usize, to: &Path) -> Result<()> {
    let mut out = BufWriter::new(std::fs::File::create(to)?);
    for c in 0..copies {
        for input in inputs {
            for line in BufReader::new(std::fs::File::open(input)?).lines() {
                let mut line = line?;
                if c > 0 {
                    let v: serde_json::Value = serde_json::from_str(&line)?;
                    for key in ["id", "instance_id"] {
                        let Some(old) = v[key].as_str() else { continue };
                        let from = format!("\"{key}\":{}", serde_json::to_string(old)?);
                        let to = format!(
                            "\"{key}\":{}",
                            serde_json::to_string(&format!("{old}~{c}"))?
                        );
                        line = line.replacen(&from, &to, 1);
                    }
                }
                writeln!(out, "{line}")?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// Everything the section says.
struct Figures {
    names: Vec<String>,
    packages: Vec<Package>,
    built: Built,
    /// Instances of other settings than `RUN_SETTINGS` run because their candidate or
    /// scoring facts are not any run setting's.
    elsewhere: usize,
    runs: Vec<StageRun>,
    pipeline_secs: f64,
    scores: BTreeMap<ScoreKey, Score>,
    failures: Vec<String>,
    durations: BTreeMap<String, (usize, f64)>,
    suites: Vec<Suite>,
    flat: Vec<Flat>,
    warm_cold: Vec<WarmCold>,
    mutation: crate::bench_corpus_mutation::MutationPass,
    /// This command's own peak: the floor of every `wait4` figure.
    xtask_kib: u64,
    total_secs: f64,
}

/// One model's responses through sandbox-run warm (the default) and `--cold`.
struct WarmCold {
    model: String,
    warm: Measured,
    cold: Measured,
    /// Python results, and the Σ of their run seconds either way.
    python: usize,
    warm_python_secs: f64,
    cold_python_secs: f64,
    /// Warm results that ran cold, and why (the first few).
    fell_back: usize,
    why: Vec<String>,
    /// Results whose outcome, tests or coverage differ between the two, by id.
    differ: Vec<String>,
}

impl WarmCold {
    fn compare(model: &str, warm: Measured, cold: Measured, w: &str, c: &str) -> Result<WarmCold> {
        let (w, c) = (
            read_records::<RunResult>(Path::new(w))?,
            read_records::<RunResult>(Path::new(c))?,
        );
        let mut out = WarmCold {
            model: model.into(),
            warm,
            cold,
            python: 0,
            warm_python_secs: 0.0,
            cold_python_secs: 0.0,
            fell_back: 0,
            why: Vec::new(),
            differ: Vec::new(),
        };
        let cold_by_id: BTreeMap<&str, &RunResult> = c.iter().map(|r| (r.id.as_str(), r)).collect();
        // What the scoring reads: the outcome, each test's name and outcome, the lines.
        let verdict = |r: &RunResult| {
            let tests: Vec<_> = r
                .tests
                .iter()
                .map(|t| (t.classname.clone(), t.name.clone(), t.outcome))
                .collect();
            (r.outcome, tests, r.coverage.clone())
        };
        for r in &w {
            let Some(k) = cold_by_id.get(r.id.as_str()) else {
                out.differ.push(format!("{} (no cold result)", r.id));
                continue;
            };
            if verdict(r) != verdict(k) {
                out.differ.push(r.id.clone());
            }
            if r.task != Some(Task::CppUnitTest) {
                out.python += 1;
                out.warm_python_secs += r.duration_secs;
                out.cold_python_secs += k.duration_secs;
            }
            if let Some(m) = r
                .message
                .as_deref()
                .and_then(|m| m.split("ran cold: ").nth(1))
            {
                out.fell_back += 1;
                if out.why.len() < 3 {
                    out.why.push(m.trim_end_matches(')').to_string());
                }
            }
        }
        Ok(out)
    }
}

/// Every record of a JSON Lines file, in its order.
pub(crate) fn read_records<T: clover_protocol::Record>(path: &Path) -> Result<Vec<T>> {
    let mut reader = RecordReader::open(Some(path), DEFAULT_MAX_LINE_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = Vec::new();
    while let Some(r) = reader.next_record::<T>() {
        out.push(r?.1);
    }
    Ok(out)
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

impl Figures {
    /// The targets this run missed, one line each.
    fn missed(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (key, s) in &self.scores {
            let name = score_name(key);
            if s.oracle_by_setting.is_empty() {
                out.push(format!(
                    "{name}: the oracle scores nothing (want ≥ {} {} in every setting)",
                    pct(ORACLE_TARGET),
                    s.metric
                ));
            }
            for (setting, &(v, n)) in &s.oracle_by_setting {
                if v < ORACLE_TARGET {
                    out.push(format!(
                        "{name} {setting}: the oracle scores {} {} on {n} instance(s) (want ≥ {})",
                        pct(v),
                        s.metric,
                        pct(ORACLE_TARGET)
                    ));
                }
            }
        }
        for wc in &self.warm_cold {
            if !wc.differ.is_empty() {
                out.push(format!(
                    "{}: {} result(s) differ between the warm and the cold path: {}",
                    wc.model,
                    wc.differ.len(),
                    wc.differ
                        .iter()
                        .take(5)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        out.extend(self.mutation.missed());
        for p in &self.packages {
            if let Some(r) = self
                .calibrate_ratio(&p.name)
                .filter(|&r| r > CALIBRATE_TARGET)
            {
                out.push(format!(
                    "{}: calibrate takes {r:.2}× one bare `pytest --cov` of its suite (want ≤ {CALIBRATE_TARGET}×)",
                    p.name
                ));
            }
        }
        for f in &self.flat {
            if f.ratio() > FLAT_TARGET {
                out.push(format!(
                    "{}: peak memory {} at {}× vs {} at 1× ({:.2}×, want ≤ {FLAT_TARGET}×)",
                    f.stage,
                    mib(f.ten.own_kib),
                    FLAT_COPIES,
                    mib(f.one.own_kib),
                    f.ratio()
                ));
            }
        }
        out
    }

    /// A Python package's calibrate (`--runs 3`, every problem) against one bare run of its
    /// whole suite under `pytest --cov` (the suites' table).
    fn calibrate_ratio(&self, name: &str) -> Option<f64> {
        let p = self.packages.iter().find(|p| p.name == name)?;
        if p.language != "Python" {
            return None;
        }
        let suite = self.suites.iter().find(|s| s.name == name)?;
        let c = self
            .runs
            .iter()
            .find(|r| r.stage == "calibrate" && r.subject == name)?;
        Some(c.cost.secs / suite.bare_secs.max(1e-9))
    }

    fn command(&self) -> String {
        let mut c = "cargo xtask bench --corpus".to_string();
        for n in &self.names {
            c.push(' ');
            c.push_str(n);
        }
        c
    }

    fn section(&self) -> Result<String> {
        let mut md = String::new();
        writeln!(md, "{BEGIN}")?;
        writeln!(md, "## The whole pipeline on the corpus\n")?;
        writeln!(
            md,
            "Measured by `{}` on {} ({} cores, shared with other work): {:.1} min in all, \
             of which the pipeline's stages {:.1} min.",
            self.command(),
            crate::bench::hostname(),
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            self.total_secs / 60.0,
            self.pipeline_secs / 60.0
        )?;
        writeln!(
            md,
            "Each package is extracted and calibrated (`--runs 3`) alone; pack-context (seed 0, \
             default settings and caps) runs once over the joined calibrated records; the \
             oracle and the `copy-operand` baseline answer the instances of {}, and the {} \
             instance(s) of other settings whose candidate (reference, prefix, suffix) or \
             scoring facts none of those has: neither reads the context, so every other \
             instance of every setting runs a candidate file already run, scored by the same \
             facts; sandbox-run runs once per model, score once over both.\n",
            RUN_SETTINGS
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(" and "),
            self.elsewhere
        )?;

        writeln!(md, "### Problems\n")?;
        writeln!(
            md,
            "| package | language | problems extracted | kept by calibrate | excluded (reason: count) | runs in sandbox-run | Σ run seconds |"
        )?;
        writeln!(md, "|---|---|---:|---:|---|---:|---:|")?;
        for p in &self.packages {
            let excluded = if p.excluded.is_empty() {
                "—".to_string()
            } else {
                p.excluded
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let (n, secs) = self.durations.get(&p.name).copied().unwrap_or_default();
            writeln!(
                md,
                "| {} | {} | {} | {} | {excluded} | {n} | {secs:.0} |",
                p.name, p.language, p.problems, p.kept
            )?;
        }

        writeln!(md, "\n### Warm and cold runs\n")?;
        writeln!(
            md,
            "sandbox-run ran each model's responses twice: warm (the default: a fork of a warm \
             pytest worker per candidate) and `--cold` (a fresh interpreter per candidate). \
             Outcome, tests and coverage must agree record for record. Σ run seconds are the \
             Python results' own `duration_secs`; CLOVER scale projects the warm time per \
             Python candidate to the paper's 5,312 instances on {CLOVER_CORES} cores.\n"
        )?;
        writeln!(
            md,
            "| model | Python results | Σ run s warm | Σ run s cold | warm / cold | stage wall warm / cold | stage CPU warm / cold (user + system, C++ included) | CLOVER scale | ran cold | results that differ |"
        )?;
        writeln!(md, "|---|---:|---:|---:|---:|---|---|---:|---|---:|")?;
        for wc in &self.warm_cold {
            let ratio = wc.warm_python_secs / wc.cold_python_secs.max(1e-9);
            let per = wc.warm_python_secs / (wc.python.max(1) as f64);
            let projected = per * CLOVER_INSTANCES as f64 / CLOVER_CORES as f64;
            let fell = if wc.fell_back == 0 {
                "0".to_string()
            } else {
                format!("{} ({})", wc.fell_back, wc.why.join("; "))
            };
            let cpu = wc
                .warm
                .cpu
                .zip(wc.cold.cpu)
                .map_or("—".to_string(), |(w, c)| {
                    let (w, c) = (w.user + w.system, c.user + c.system);
                    format!("{w:.0} s / {c:.0} s ({:.1}× less)", c / w.max(1e-9))
                });
            writeln!(
                md,
                "| {} | {} | {:.1} | {:.1} | {:.3}× ({:.1}× fewer) | {:.0} s / {:.0} s | {cpu} | {:.1} min | {fell} | {} |",
                wc.model,
                wc.python,
                wc.warm_python_secs,
                wc.cold_python_secs,
                ratio,
                1.0 / ratio.max(1e-9),
                wc.warm.secs,
                wc.cold.secs,
                projected / 60.0,
                wc.differ.len()
            )?;
        }

        self.mutation.section(&mut md)?;

        writeln!(md, "\n### Instances per task and setting\n")?;
        let mut settings: Vec<&String> = self.built.values().flat_map(|s| s.keys()).collect();
        settings.sort_by(|a, b| clover_score::setting_order(a, b));
        settings.dedup();
        write!(md, "| package | task |")?;
        for s in &settings {
            write!(md, " {s} |")?;
        }
        writeln!(md, " all |")?;
        writeln!(md, "|---|---|{}---:|", "---:|".repeat(settings.len()))?;
        let mut totals: BTreeMap<&String, usize> = BTreeMap::new();
        for p in &self.packages {
            for ((repo, task), by) in self.built.iter().filter(|((r, _), _)| *r == p.name) {
                write!(md, "| {repo} | {task} |")?;
                for s in &settings {
                    let n = by.get(*s).copied().unwrap_or(0);
                    *totals.entry(s).or_default() += n;
                    write!(md, " {n} |")?;
                }
                writeln!(md, " {} |", by.values().sum::<usize>())?;
            }
        }
        write!(md, "| all | all |")?;
        for s in &settings {
            write!(md, " {} |", totals.get(s).copied().unwrap_or(0))?;
        }
        writeln!(md, " {} |", totals.values().sum::<usize>())?;
        let packed: Vec<&String> = self.packages.iter().map(|p| &p.name).collect();
        let none: Vec<&str> = packed
            .iter()
            .filter(|n| !self.built.keys().any(|(r, _)| r == **n))
            .map(|n| n.as_str())
            .collect();
        if !none.is_empty() {
            writeln!(md, "\nNo instances at all: {}.", none.join(", "))?;
        }

        writeln!(md, "\n### Scores\n")?;
        writeln!(
            md,
            "Headline metric of each task in each answer format (score's own: RER for Task \
             I, success rate for II and III, and for C++ the success rate too: the file passes \
             and covers every focal line the ground truth covers), pooled over the settings \
             run; the oracle's lowest setting beside it. Tasks II and III are asked `part` \
             (the test's body) and `full` (the file up to the test's end), scored apart as the \
             paper reports them; Task I and C++ have one format (—). Target: the oracle ≥ {} \
             in every setting of every task and answer format of every package (✗ marks a \
             row with a setting below it).\n",
            pct(ORACLE_TARGET)
        )?;
        writeln!(
            md,
            "| package | task | answer format | metric | instances run | oracle | oracle's lowest setting | baseline (copy-operand) |"
        )?;
        writeln!(md, "|---|---|---|---|---:|---:|---|---:|")?;
        for p in &self.packages {
            for ((repo, task, format), s) in
                self.scores.iter().filter(|((r, _, _), _)| *r == p.name)
            {
                let get = |m: &str| s.by_model.get(m).map_or("—".into(), |v| pct(*v));
                let mark = if s.oracle_meets_target() { "" } else { " ✗" };
                let worst = s.worst_setting().map_or("—".into(), |(setting, v, n)| {
                    format!("{setting}: {} of {n}", pct(v))
                });
                writeln!(
                    md,
                    "| {repo} | {task} | {} | {} | {} | {}{mark} | {worst} | {} |",
                    if format.is_empty() { "—" } else { format },
                    s.metric,
                    s.n,
                    get(MODELS[0]),
                    get(MODELS[1])
                )?;
            }
        }
        if !self.failures.is_empty() {
            const SHOWN: usize = 40;
            writeln!(
                md,
                "\nOracle results that are not a success ({}{}):\n",
                self.failures.len(),
                if self.failures.len() > SHOWN {
                    format!(", the first {SHOWN}")
                } else {
                    String::new()
                }
            )?;
            for f in self.failures.iter().take(SHOWN) {
                writeln!(md, "- {}", f.replace('|', "\\|"))?;
            }
        }

        writeln!(md, "\n### Time and memory per stage\n")?;
        writeln!(
            md,
            "Peak memory two ways: the largest process of the stage's tree (`wait4`'s \
             `ru_maxrss`, pytest, compilers and sandbox supervisors included), and the stage \
             process alone (its `VmHWM`, sampled every 10 ms). The kernel charges a spawned \
             process with its parent's peak until it execs, so no tree figure here is below \
             this command's own peak ({}); a figure near it means the tree stayed under it. \
             Times and peaks over several processes are sums and maxima.\n",
            mib(self.xtask_kib)
        )?;
        writeln!(
            md,
            "| stage | processes | wall time | peak RSS, tree | peak RSS, stage alone |"
        )?;
        writeln!(md, "|---|---:|---:|---:|---:|")?;
        let mut order: Vec<(&str, &str)> = Vec::new();
        for r in &self.runs {
            let key = if r.stage == "generate" || r.stage == "sandbox-run" {
                (r.stage.as_str(), r.subject.as_str())
            } else {
                (r.stage.as_str(), "")
            };
            if !order.contains(&key) {
                order.push(key);
            }
        }
        for (stage, subject) in order {
            let rs: Vec<&StageRun> = self
                .runs
                .iter()
                .filter(|r| r.stage == stage && (subject.is_empty() || r.subject == subject))
                .collect();
            let name = if subject.is_empty() {
                stage.to_string()
            } else {
                format!("{stage} ({subject})")
            };
            writeln!(
                md,
                "| {name} | {} | {:.1} s | {} | {} |",
                rs.len(),
                rs.iter().map(|r| r.cost.secs).sum::<f64>(),
                mib(rs.iter().map(|r| r.cost.tree_kib).max().unwrap_or(0)),
                mib(rs.iter().map(|r| r.cost.own_kib).max().unwrap_or(0)),
            )?;
        }
        writeln!(
            md,
            "\nextract and calibrate per package. calibrate runs the suite `--runs` times (3 by \
             default, to find the problems whose lines change from run to run), on the cores \
             there are; the same problems calibrated with `--runs 1`, beside it, are what one run \
             of the suite costs it. CPU is that of calibrate and of every process it started, \
             sandboxed ones included, counted in a cgroup v1 `cpuacct` group made for the stage \
             (— where the machine has no such hierarchy). calibrate runs each test in a fork of \
             its own (what makes per-test coverage exact): the fork, the copy-on-write faults of \
             the pages the test's process writes and its exit are kernel time, which a bare run \
             hardly has. The system CPU over the cores against the wall time the target allows \
             ({CALIBRATE_TARGET}× the bare run): at 1× or more, the kernel's share alone is more \
             than the target allows the whole stage.\n"
        )?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        writeln!(
            md,
            "| package | extract | calibrate | calibrate / one bare `pytest --cov` of the suite (target ≤ {CALIBRATE_TARGET}×) | one run (`--runs 1`) / the same bare run | calibrate CPU, user / system | its system CPU over {cores} cores / {CALIBRATE_TARGET}× the bare run | calibrate peak RSS, tree | stage alone |"
        )?;
        writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")?;
        for p in &self.packages {
            let get = |stage: &str| {
                self.runs
                    .iter()
                    .find(|r| r.stage == stage && r.subject == p.name)
                    .map(|r| r.cost)
                    .unwrap_or_default()
            };
            let (e, c) = (get("extract"), get("calibrate"));
            let ratio = self
                .calibrate_ratio(&p.name)
                .map_or("—".to_string(), |r| format!("{r:.2}×"));
            let once = p
                .one_run_secs
                .zip(self.suites.iter().find(|s| s.name == p.name))
                .map_or("—".to_string(), |(secs, s)| {
                    format!("{secs:.1} s, {:.2}×", secs / s.bare_secs.max(1e-9))
                });
            let cpu = c.cpu.map_or("—".to_string(), |cpu| {
                format!("{:.1} s / {:.1} s", cpu.user, cpu.system)
            });
            let kernel = c
                .cpu
                .zip(self.suites.iter().find(|s| s.name == p.name))
                .filter(|_| p.language == "Python")
                .map_or("—".to_string(), |(cpu, s)| {
                    format!(
                        "{:.2}×",
                        cpu.system / cores as f64 / (CALIBRATE_TARGET * s.bare_secs).max(1e-9)
                    )
                });
            writeln!(
                md,
                "| {} | {:.2} s | {:.1} s | {ratio} | {once} | {cpu} | {kernel} | {} | {} |",
                p.name,
                e.secs,
                c.secs,
                mib(c.tree_kib),
                mib(c.own_kib)
            )?;
        }

        writeln!(md, "\n### Sandbox overhead on whole suites\n")?;
        writeln!(
            md,
            "Each Python package's suite (`pytest --cov` of its test folder), bare in the \
             repository and in the sandbox (`sandbox_bench pytest`); each C++ package's paired \
             test files, built with the library under test (`--coverage`, the library from its \
             sources both ways), run and measured with gcovr, bare in a copy of the \
             repository with the sandbox's own commands and through `GtestRun` with an empty \
             library cache (`sandbox_bench gtest`; sandbox-run itself builds a library once). \
             Interleaved, medians of {SUITE_RUNS}.\n"
        )?;
        writeln!(md, "| package | tests | bare | sandboxed | ratio |")?;
        writeln!(md, "|---|---|---:|---:|---:|")?;
        for s in &self.suites {
            writeln!(
                md,
                "| {} | `{}` | {:.2} s | {:.2} s | {:.2}× |",
                s.name,
                s.target,
                s.bare_secs,
                s.sandboxed_secs,
                s.sandboxed_secs / s.bare_secs
            )?;
        }
        let bare: f64 = self.suites.iter().map(|s| s.bare_secs).sum();
        let sand: f64 = self.suites.iter().map(|s| s.sandboxed_secs).sum();
        if !self.suites.is_empty() {
            writeln!(
                md,
                "| all | | {bare:.2} s | {sand:.2} s | {:.2}× |",
                sand / bare
            )?;
        }

        writeln!(md, "\n### Memory against the number of records\n")?;
        writeln!(
            md,
            "The same records, then {FLAT_COPIES} copies of each with new ids. Target: the \
             stage alone ≤ {FLAT_TARGET}× its 1× peak. What grows is the reader's table of \
             the ids seen (16 bytes a record, to catch a duplicate id).\n"
        )?;
        writeln!(
            md,
            "| stage | input | records 1× | peak 1×, stage alone | peak {FLAT_COPIES}×, stage alone | ratio | peak 1× / {FLAT_COPIES}×, tree | wall 1× / {FLAT_COPIES}× |"
        )?;
        writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|")?;
        for f in &self.flat {
            writeln!(
                md,
                "| {} | {} | {} | {} | {} | {:.2}× | {} / {} | {:.1} s / {:.1} s |",
                f.stage,
                f.what,
                f.records,
                mib(f.one.own_kib),
                mib(f.ten.own_kib),
                f.ratio(),
                mib(f.one.tree_kib),
                mib(f.ten.tree_kib),
                f.one.secs,
                f.ten.secs
            )?;
        }
        writeln!(md, "{END}")?;
        Ok(md)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clover_protocol::{ExecSpec, RecordKind, SCHEMA_VERSION};

    fn instance(id: &str, repo: &str, task: Task, setting: &str) -> String {
        serde_json::to_string(&Instance {
            kind: RecordKind::Instance,
            schema_version: SCHEMA_VERSION,
            id: id.into(),
            problem_id: format!("{repo}/p"),
            repo: repo.into(),
            task,
            setting: setting.into(),
            answer_format: "code".into(),
            prompt: "p".into(),
            messages: Vec::new(),
            prompt_tokens: 1,
            context_files: Vec::new(),
            reference: "r".into(),
            exec: ExecSpec::default(),
            scoring: BTreeMap::new(),
        })
        .unwrap()
    }

    #[test]
    fn every_instance_is_counted_and_only_the_run_settings_and_new_candidates_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let lines = [
            instance("a#1", "a", Task::AssertionCloze, "po"),
            // The same candidate and facts as a#1's: its po result is its result.
            instance("a#2", "a", Task::AssertionCloze, "4k"),
            instance("a#3", "a", Task::AssertionCloze, "po"),
            // No po instance of b's problem: run.
            instance("b#1", "b", Task::CoverageTest, "8k"),
            // Another reference than a's po instances: run.
            instance("a#4", "a", Task::AssertionCloze, "16k")
                .replace(r#""reference":"r""#, r#""reference":"r2""#),
        ];
        let from = dir.path().join("in.jsonl");
        let to = dir.path().join("out.jsonl");
        std::fs::write(&from, lines.join("\n") + "\n").unwrap();
        let (built, elsewhere) = keep_settings(&from, &to).unwrap();
        let a = &built[&("a".to_string(), "assertion_cloze".to_string())];
        assert_eq!((a["po"], a["4k"], a["16k"]), (2, 1, 1));
        assert_eq!(built[&("b".into(), "coverage_test".into())]["8k"], 1);
        assert_eq!(built.len(), 2);
        assert_eq!(elsewhere, 2);
        let kept = std::fs::read_to_string(&to).unwrap();
        assert_eq!(
            kept,
            format!("{}\n{}\n{}\n{}\n", lines[0], lines[2], lines[3], lines[4])
        );

        std::fs::write(&from, "{not json\n").unwrap();
        let e = keep_settings(&from, &to).unwrap_err().to_string();
        assert!(e.ends_with("in.jsonl:1: not an instance"), "{e}");
    }

    #[test]
    fn scores_are_pooled_over_settings_and_never_over_answer_formats() {
        let dir = tempfile::tempdir().unwrap();
        let row =
            |repo: &str, model: &str, task: &str, format: &str, setting: &str, n: u64, v: f64| {
                serde_json::json!({"model": model, "task": task, "answer_format": format,
                "setting": setting, "repo": repo, "n": n,
                "metrics": {"rer": v, "em": 0.0, "success_rate": v}})
            };
        let report = serde_json::json!({"rows": [
            row("a", "oracle", "assertion_cloze", "", "po", 1, 1.0),
            row("a", "oracle", "assertion_cloze", "", "4k", 3, 0.5),
            row("a", "copy-operand", "assertion_cloze", "", "po", 4, 0.25),
            row("a", "oracle", "targeted_test", "part", "po", 2, 1.0),
            row("a", "oracle", "targeted_test", "full", "po", 2, 0.5),
            // The pooled rows of every repository are not a package.
            row(clover_score::ALL_REPOS, "oracle", "assertion_cloze", "", "po", 9, 0.0),
        ], "utilization": []});
        let path = dir.path().join("score.json");
        std::fs::write(&path, report.to_string()).unwrap();
        let scores = read_scores(&path).unwrap();
        let key =
            |task: &str, format: &str| ("a".to_string(), task.to_string(), format.to_string());
        assert_eq!(scores.len(), 3);
        let s = &scores[&key("assertion_cloze", "")];
        assert_eq!((s.metric.as_str(), s.n), ("rer", 4));
        assert_eq!(s.by_model["oracle"], 0.625);
        assert_eq!(s.by_model["copy-operand"], 0.25);
        // The pooled 62.5% hides nothing: each setting is kept, and the lowest is named.
        assert_eq!(s.oracle_by_setting["po"], (1.0, 1));
        assert_eq!(s.worst_setting(), Some(("4k", 0.5, 3)));
        assert!(!s.oracle_meets_target());
        // part and full are apart: full's 50% is not averaged into part's 100%.
        let part = &scores[&key("targeted_test", "part")];
        let full = &scores[&key("targeted_test", "full")];
        assert_eq!(
            (part.metric.as_str(), part.by_model["oracle"]),
            ("success_rate", 1.0)
        );
        assert_eq!(full.by_model["oracle"], 0.5);
        assert!(part.oracle_meets_target() && !full.oracle_meets_target());
    }

    #[test]
    fn copies_get_new_ids_and_keep_every_other_byte() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("in.jsonl");
        let lines = [
            r#"{"kind":"response","id":"x#1@m","instance_id":"x#1","text":"id x#1"}"#,
            r#"{"kind":"response","id":"x#2@m","instance_id":"x#2","text":""}"#,
        ];
        std::fs::write(&from, lines.join("\n") + "\n").unwrap();
        let to = dir.path().join("out.jsonl");
        write_copies(&[from], 3, &to).unwrap();
        let out = std::fs::read_to_string(&to).unwrap();
        let out: Vec<&str> = out.lines().collect();
        assert_eq!(out.len(), 6);
        assert_eq!(out[..2], lines[..]);
        assert_eq!(
            out[4],
            r#"{"kind":"response","id":"x#1@m~2","instance_id":"x#1~2","text":"id x#1"}"#
        );
        let ids: std::collections::BTreeSet<&str> =
            out.iter().map(|l| l.split('"').nth(7).unwrap()).collect();
        assert_eq!(ids.len(), 6, "{ids:?}");
    }

    #[test]
    fn the_test_files_of_cpp_problems_are_listed_once_each() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../crates/clover-pack-context/tests/data/calibrated_cpp.jsonl");
        let dir = tempfile::tempdir().unwrap();
        let problems = dir.path().join("problems.jsonl");
        let mut out = String::new();
        let mut want: Vec<String> = Vec::new();
        for line in std::fs::read_to_string(data).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let c: clover_protocol::CalibratedProblem = serde_json::from_value(v.clone()).unwrap();
            let test = c.problem.cpp.unwrap().test_path;
            if !want.contains(&test) {
                want.push(test);
            }
            // Each problem twice, the second under another id: a test file shared by
            // problems is listed once.
            let mut again = v["problem"].clone();
            again["id"] = format!("{}~2", again["id"].as_str().unwrap()).into();
            out.push_str(&format!("{}\n{again}\n", v["problem"]));
        }
        std::fs::write(&problems, out).unwrap();
        assert!(want.len() >= 3, "{want:?}");
        assert_eq!(cpp_test_files(&problems).unwrap(), want);
    }

    /// One package `a`: Task I, Task II `part` in two settings (the oracle scoring `po_part`
    /// and `8k_part` there) and Task II `full`.
    fn figures(po_part: f64, k8_part: f64, one_kib: u64, ten_kib: u64) -> Figures {
        let cost = |own_kib| Measured {
            secs: 1.0,
            tree_kib: 4096,
            own_kib,
            cpu: None,
        };
        let mut scores = BTreeMap::new();
        // (task, format, metric, the oracle per setting)
        type Cell<'a> = (&'a str, &'a str, &'a str, &'a [(&'a str, f64)]);
        let cells: [Cell; 3] = [
            ("assertion_cloze", "", "rer", &[("po", 1.0)]),
            (
                "targeted_test",
                "part",
                "success_rate",
                &[("po", po_part), ("8k", k8_part)],
            ),
            ("targeted_test", "full", "success_rate", &[("po", 1.0)]),
        ];
        for (task, format, metric, settings) in cells {
            let oracle_by_setting: BTreeMap<String, (f64, u64)> = settings
                .iter()
                .map(|(s, v)| (s.to_string(), (*v, 10)))
                .collect();
            let n = 10 * settings.len() as u64;
            let pooled = settings.iter().map(|(_, v)| v).sum::<f64>() / settings.len() as f64;
            scores.insert(
                ("a".to_string(), task.to_string(), format.to_string()),
                Score {
                    metric: metric.into(),
                    n,
                    by_model: [("oracle".into(), pooled), ("copy-operand".into(), 0.1)].into(),
                    oracle_by_setting,
                },
            );
        }
        Figures {
            names: vec!["a".into()],
            packages: vec![Package {
                name: "a".into(),
                language: "Python",
                problems: 12,
                kept: 11,
                excluded: [("failed".to_string(), 1)].into(),
                one_run_secs: Some(1.0),
            }],
            built: [(
                ("a".to_string(), "assertion_cloze".to_string()),
                [("po".to_string(), 10)].into(),
            )]
            .into(),
            elsewhere: 0,
            runs: vec![StageRun {
                stage: "calibrate".into(),
                subject: "a".into(),
                cost: cost(2048),
            }],
            pipeline_secs: 60.0,
            scores,
            failures: vec!["a#1 [assertion_cloze, Failed]: a | b".into()],
            durations: BTreeMap::new(),
            warm_cold: Vec::new(),
            suites: Vec::new(),
            flat: vec![Flat {
                stage: "score",
                what: "results".into(),
                records: 5,
                one: cost(one_kib),
                ten: cost(ten_kib),
            }],
            mutation: Default::default(),
            xtask_kib: 1024,
            total_secs: 120.0,
        }
    }

    #[test]
    fn a_missed_target_is_named_and_marked() {
        assert!(figures(0.95, 1.0, 1000, 1200).missed().is_empty());
        let md = figures(0.95, 1.0, 1000, 1200).section().unwrap();
        assert!(
            md.contains(
                "| a | assertion_cloze | — | rer | 10 | 100.0% | po: 100.0% of 10 | 10.0% |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| a | targeted_test | part | success_rate | 20 | 97.5% | po: 95.0% of 10 | 10.0% |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| a | targeted_test | full | success_rate | 10 | 100.0% | po: 100.0% of 10 | 10.0% |"
            ),
            "{md}"
        );

        // One setting of one format below the target fails the run, though the row's pooled
        // figure (95.5%) reaches it.
        let f = figures(1.0, 0.91, 1000, 1300);
        let missed = f.missed();
        assert_eq!(missed.len(), 2, "{missed:?}");
        assert_eq!(
            missed[0],
            "a targeted_test part 8k: the oracle scores 91.0% success_rate on 10 instance(s) (want ≥ 95.0%)"
        );
        assert!(missed[1].starts_with("score: peak memory"), "{}", missed[1]);
        let md = f.section().unwrap();
        assert!(md.starts_with(BEGIN) && md.trim_end().ends_with(END));
        assert!(
            md.contains(
                "| a | targeted_test | part | success_rate | 20 | 95.5% ✗ | 8k: 91.0% of 10 | 10.0% |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| a | targeted_test | full | success_rate | 10 | 100.0% | po: 100.0% of 10 | 10.0% |"
            ),
            "{md}"
        );
        assert!(md.contains("| a | Python | 12 | 11 | failed: 1 |"), "{md}");
        // A `|` in a failure's message does not break the table.
        assert!(md.contains("a \\| b"), "{md}");
        assert!(md.contains("`cargo xtask bench --corpus a`"), "{md}");

        // A format the oracle has no score in is a miss too.
        let mut f = figures(1.0, 1.0, 1000, 1000);
        let s = f
            .scores
            .get_mut(&(
                "a".to_string(),
                "targeted_test".to_string(),
                "full".to_string(),
            ))
            .unwrap();
        s.oracle_by_setting.clear();
        s.by_model.remove("oracle");
        assert_eq!(
            f.missed(),
            ["a targeted_test full: the oracle scores nothing (want ≥ 95.0% success_rate in every setting)"]
        );
        assert!(f
            .section()
            .unwrap()
            .contains("| a | targeted_test | full | success_rate | 10 | — ✗ | — | 10.0% |"));
    }

    #[test]
    fn calibrate_is_set_against_one_bare_run_of_the_suite_with_three_runs_and_with_one() {
        let mut f = figures(1.0, 1.0, 1000, 1000);
        f.packages[0].one_run_secs = Some(0.6);
        f.suites.push(Suite {
            name: "a".into(),
            target: "tests".into(),
            bare_secs: 0.5,
            sandboxed_secs: 0.5,
        });
        // Three runs took 1.0 s: 2× the bare run, a miss; the one run's 1.2× is said beside it.
        assert_eq!(
            f.missed(),
            ["a: calibrate takes 2.00× one bare `pytest --cov` of its suite (want ≤ 1.5×)"]
        );
        let md = f.section().unwrap();
        assert!(
            md.contains("| a | 0.00 s | 1.0 s | 2.00× | 0.6 s, 1.20× | — | — |"),
            "{md}"
        );
        f.packages[0].one_run_secs = None;
        assert!(f.section().unwrap().contains("| 2.00× | — |"));
        // With its CPU counted: the kernel's share over the cores against 1.5 × the bare run.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        f.runs[0].cost.cpu = Some(Cpu {
            user: 1.25,
            system: 0.75 * cores,
        });
        let md = f.section().unwrap();
        assert!(md.contains("| 2.00× | — | 1.2 s / "), "{md}");
        assert!(md.contains(" | 1.00× | "), "{md}");
    }

    #[test]
    fn warm_and_cold_are_set_side_by_side_in_run_seconds_and_in_cpu() {
        let mut f = figures(1.0, 1.0, 1000, 1000);
        let spent = |secs, user, system| Measured {
            secs,
            cpu: Some(Cpu { user, system }),
            ..Default::default()
        };
        f.warm_cold.push(WarmCold {
            model: "oracle".into(),
            warm: spent(10.0, 12.0, 8.0),
            cold: spent(60.0, 110.0, 10.0),
            python: 100,
            warm_python_secs: 10.0,
            cold_python_secs: 80.0,
            fell_back: 0,
            why: Vec::new(),
            differ: Vec::new(),
        });
        let md = f.section().unwrap();
        assert!(
            md.contains("| oracle | 100 | 10.0 | 80.0 | 0.125× (8.0× fewer) | 10 s / 60 s | 20 s / 120 s (6.0× less) |"),
            "{md}"
        );
        f.warm_cold[0].cold.cpu = None;
        assert!(f.section().unwrap().contains("| 10 s / 60 s | — |"));
    }

    #[test]
    fn a_measured_stage_counts_the_cpu_of_the_processes_it_starts() {
        let Some(probe) = CpuGroup::new() else {
            eprintln!("no cgroup v1 cpuacct hierarchy here: nothing to count in");
            return;
        };
        drop(probe);
        // The shell leaves a process that spins and that it never reaps (an orphan): `wait4`
        // of the shell does not count it, the group does.
        let m = measure(
            Path::new("/bin/sh"),
            &[
                "-c",
                "(timeout 0.5 sh -c 'while :; do :; done' &); sleep 0.7",
            ],
        )
        .unwrap();
        let cpu = m.cpu.expect("counted in the group");
        assert!(cpu.user + cpu.system > 0.1, "{cpu:?}");
    }
}
