//! `clover-sandbox-run`: run candidate tests in the sandbox.
//!
//! Streaming mode (the pipeline stage): responses in, one result per response out.
//! Direct mode (`--test-file`): one pytest file, one result record on stdout.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Parser;
use clover_gtest::LibraryCache;
use clover_manifest::RepoConfig;
use clover_protocol::{diag, finish_main, Outcome, RunResult, StageIo, Usage};
use clover_pytest::PytestRun;
use clover_pytest::{check_python, InterpreterError};
use clover_sandbox::{Limits, Sandbox, WriteFile};
use clover_sandbox_run::cli::Cli;
use clover_sandbox_run::mutation::Sidecar;
use clover_sandbox_run::{run_responses, unrun_result, ResponseRunner, TAIL_BYTES};
use clover_screen::Screen;

const TOOL: &str = "clover-sandbox-run";

fn main() -> ExitCode {
    let cli = Cli::parse();
    finish_main(TOOL, run(cli))
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    if cli.test_file.is_some() {
        direct(cli)?;
        return Ok(clover_protocol::exit::OK);
    }
    let mut repos = cli.repos.resolve().map_err(Usage::from_error)?;
    for r in repos.values_mut() {
        if let Some(t) = cli.timeout {
            r.timeout_secs = t;
        }
        if let Some(m) = cli.memory {
            r.memory_mb = m;
        }
        if let Some(c) = cli.cpus {
            r.cpus = c;
        }
    }
    let python = default_python(&cli.python);
    let sandbox = Sandbox::new()?;
    let cache = cli
        .cache_dir
        .clone()
        .unwrap_or_else(LibraryCache::default_dir);
    let mut runner = ResponseRunner::new(&sandbox, repos, python, &cache)?
        .with_screen(cli.screen == "on")
        .with_report_record(cli.report_record == "on")
        .with_equivalent_mutant(cli.equivalent_mutant == "on")
        .with_witness(cli.witness == "on")
        .with_machinery_watch(cli.machinery_watch == "on")
        .with_cold(cli.cold);
    if let Some(path) = &cli.mutation {
        runner = runner.with_mutation(Sidecar::read(path).map_err(Usage::from_error)?);
    }
    let jobs = cli
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut io = StageIo::open(TOOL, &cli.stage).context("opening input and output")?;
    let summary = run_responses(&mut io, &runner, jobs, cli.stage.on_error)?;
    if summary.incomplete > 0 {
        diag!(
            "{TOOL}: warning: {} C++ source(s) missed the response to a chunk; their results \
             have outcome `error` and say which chunks",
            summary.incomplete
        );
    }
    let outcomes: Vec<String> = summary
        .outcomes
        .iter()
        .map(|(k, v)| format!("{v} {k}"))
        .collect();
    diag!(
        "{TOOL}: {} result(s) ({}), {} response(s) reported, {} already done",
        summary.written,
        if outcomes.is_empty() {
            "none".into()
        } else {
            outcomes.join(", ")
        },
        summary.failed,
        summary.skipped
    );
    if cli.mutation.is_some() {
        let m = &summary.mutants;
        diag!(
            "{TOOL}: mutation: {} of {} kept mutant(s) killed, {} mutant run(s) in {:.1} s, {} \
             of them cold (no warm worker could serve them)",
            m.killed,
            m.kept,
            m.run,
            m.secs,
            m.cold
        );
    }
    if runner.reused() > 0 {
        diag!(
            "{TOOL}: {} result(s) reuse the run of an identical candidate of another response",
            runner.reused()
        );
    }
    Ok(io.finish()?)
}

/// The interpreter for repositories whose manifest names none (and that have no `.venv` or
/// `venv` detection found): `--python`, then `$CLOVER_PYTHON`, then `python3` on `PATH`. Both
/// modes resolve it the same way.
fn default_python(flag: &Option<PathBuf>) -> Option<PathBuf> {
    flag.clone()
        .or_else(|| {
            // A relative path means what it means in the shell, as a flag's does.
            let p = std::env::var("CLOVER_PYTHON").ok()?;
            Some(clover_protocol::resolved_path(&p).unwrap_or(p.into()))
        })
        .or_else(|| host_python().ok())
}

fn host_python() -> anyhow::Result<PathBuf> {
    // The PATH entry may be a shim script (pyenv); ask the interpreter where it really is.
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .context("no python3 on PATH; pass --python")?;
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// One pytest file, one result record on stdout.
fn direct(cli: Cli) -> anyhow::Result<()> {
    let [repo] = cli.repos.repo.as_slice() else {
        bail!("direct mode (--test-file) needs exactly one --repo DIR");
    };
    let test_file = cli.test_file.as_deref().expect("direct mode");
    let repo = repo
        .canonicalize()
        .with_context(|| format!("cannot open the repository {}", repo.display()))
        .map_err(Usage::from_error)?;
    let test = test_file
        .canonicalize()
        .with_context(|| format!("cannot open the test file {}", test_file.display()))?;
    let (rel, files) = match (&cli.at, test.strip_prefix(&repo)) {
        (Some(at), _) => {
            let contents = std::fs::read(&test)?;
            (
                at.clone(),
                vec![WriteFile {
                    path: at.clone(),
                    contents,
                }],
            )
        }
        (None, Ok(rel)) => (rel.to_path_buf(), Vec::new()),
        (None, Err(_)) => bail!(
            "{} is outside the repository; pass --at with the path it should have inside it",
            test.display()
        ),
    };
    // As in streaming mode: the manifest's or the detected virtual environment's interpreter
    // first (a folder detection cannot describe simply has none).
    let configured = RepoConfig::resolve(None, None, Some(&repo))
        .ok()
        .and_then(|mut c| c.pop())
        .and_then(|c| c.python);
    let python = configured
        .or_else(|| default_python(&cli.python))
        .context("no Python interpreter: pass --python or set CLOVER_PYTHON")?;
    if cli.screen == "on" {
        let text = std::fs::read_to_string(&test)
            .with_context(|| format!("cannot read the test file {}", test.display()))?;
        let found = Screen::default().python(&text);
        if !found.is_empty() {
            let mut result = direct_result(&repo, &rel);
            result.outcome = Outcome::Rejected;
            result.message = Some(clover_sandbox_run::rejection(&found));
            println!("{}", serde_json::to_string(&result)?);
            return Ok(());
        }
    }
    let sandbox = Sandbox::new()?;
    let tools = check_python(&sandbox, &python, &repo).map_err(|e| match e {
        InterpreterError::Unusable { .. } => Usage(e.to_string()).into(),
        e => anyhow::Error::from(e),
    })?;
    let timeout = cli.timeout.unwrap_or(60);
    let limits = Limits {
        wall: Duration::from_secs(timeout),
        memory_bytes: cli.memory.unwrap_or(2048) << 20,
        cpu_secs: timeout,
        cpus: cli.cpus.unwrap_or(clover_manifest::DEFAULT_CPUS),
        ..Limits::default()
    };
    let cov_sources = if cli.cov.is_empty() {
        vec![".".to_string()]
    } else {
        cli.cov
    };
    let mut run = PytestRun {
        repo: repo.clone(),
        python,
        targets: vec![rel.to_string_lossy().into_owned()],
        files,
        cov_sources,
        cov_only: None,
        cov_contexts: false,
        witness: Vec::new(),
        env: Vec::new(),
        limits,
    };
    run.measure_with_sysmon(&tools);
    let r = run.run(&sandbox)?;
    let result = RunResult {
        outcome: r.outcome,
        tests: r.tests,
        coverage: r.coverage,
        limit_hit: r.run.limit_hit,
        exit_code: r.run.exit.code(),
        signal: r.run.exit.signal(),
        message: r.message,
        stdout_tail: r.run.stdout.tail(TAIL_BYTES),
        stderr_tail: r.run.stderr.tail(TAIL_BYTES),
        duration_secs: r.run.duration.as_secs_f64(),
        ..direct_result(&repo, &rel)
    };
    println!("{}", serde_json::to_string(&result)?);
    Ok(())
}

/// Direct mode's result before anything ran: named by the file's path in the repository.
fn direct_result(repo: &Path, rel: &Path) -> RunResult {
    RunResult {
        repo: repo_name(repo),
        ..unrun_result(rel.to_string_lossy().into_owned(), Outcome::Error)
    }
}

fn repo_name(repo: &Path) -> String {
    repo.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
