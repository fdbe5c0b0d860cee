//! `clover-sandbox-run`: run a candidate test file in the sandbox and print its result.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Parser;
use clover_protocol::{RecordKind, RunResult, SCHEMA_VERSION};
use clover_sandbox::pytest::PytestRun;
use clover_sandbox::{Limits, Sandbox, WriteFile};

/// Runs a pytest file inside the sandbox and prints one result record (JSON) on stdout.
#[derive(Debug, Parser)]
#[command(name = "clover-sandbox-run", version)]
struct Args {
    /// The repository; it is never written.
    #[arg(long)]
    repo: PathBuf,
    /// The test file. Inside the repository it runs where it is; elsewhere pass --at.
    #[arg(long)]
    test_file: PathBuf,
    /// Where to put the test file, relative to the repository.
    #[arg(long)]
    at: Option<PathBuf>,
    /// Wall-clock limit in seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Memory limit in MiB.
    #[arg(long, default_value_t = 2048)]
    memory: u64,
    /// The Python interpreter (with pytest and pytest-cov), e.g. a venv's bin/python.
    #[arg(long)]
    python: Option<PathBuf>,
    /// Source folders to measure coverage of (relative to the repository); repeatable.
    #[arg(long = "cov")]
    cov: Vec<String>,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("clover-sandbox-run: {e:#}");
        std::process::exit(2);
    }
}

fn host_python() -> anyhow::Result<PathBuf> {
    // The PATH entry may be a shim script (pyenv); ask the interpreter where it really is.
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .context("no python3 on PATH; pass --python")?;
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn run(args: Args) -> anyhow::Result<()> {
    let repo = args
        .repo
        .canonicalize()
        .with_context(|| format!("cannot open the repository {}", args.repo.display()))?;
    let test = args
        .test_file
        .canonicalize()
        .with_context(|| format!("cannot open the test file {}", args.test_file.display()))?;
    let (rel, files) = match (&args.at, test.strip_prefix(&repo)) {
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
    let python = match args.python {
        Some(p) => p,
        None => host_python()?,
    };
    let sandbox = Sandbox::new()?;
    let limits = Limits {
        wall: Duration::from_secs(args.timeout),
        memory_bytes: args.memory << 20,
        cpu_secs: args.timeout,
        ..Limits::default()
    };
    let cov_sources = if args.cov.is_empty() {
        vec![".".to_string()]
    } else {
        args.cov
    };
    let run = PytestRun {
        repo: repo.clone(),
        python,
        targets: vec![rel.to_string_lossy().into_owned()],
        files,
        cov_sources,
        cov_contexts: false,
        env: Vec::new(),
        limits,
    };
    let r = run.run(&sandbox)?;
    let result = RunResult {
        kind: RecordKind::RunResult,
        schema_version: SCHEMA_VERSION,
        id: rel.to_string_lossy().into_owned(),
        instance_id: String::new(),
        model: String::new(),
        task: None,
        setting: String::new(),
        repo: repo
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        outcome: r.outcome,
        tests: r.tests,
        coverage: r.coverage,
        limit_hit: r.run.limit_hit,
        exit_code: r.run.exit.code(),
        signal: r.run.exit.signal(),
        candidate: None,
        answer: None,
        message: r.message,
        stdout_tail: r.run.stdout.tail(4096),
        stderr_tail: r.run.stderr.tail(4096),
        scoring: Default::default(),
        duration_secs: r.run.duration.as_secs_f64(),
    };
    println!("{}", serde_json::to_string(&result)?);
    Ok(())
}
