//! The command line of `clover-sandbox-run`, here rather than in `main.rs` so the `clover`
//! front command can build its completions and man pages from it; `main.rs` parses it and
//! does the run.

use std::path::PathBuf;

use clap::Parser;
use clover_manifest::RepoArgs;
use clover_protocol::StageArgs;

/// Runs candidate tests inside the sandbox. Reads responses (JSON Lines) and writes one result
/// per response, in input order; or, with --test-file, runs one pytest file and prints its
/// result.
#[derive(Debug, Parser)]
#[command(name = "clover-sandbox-run", version)]
pub struct Cli {
    #[command(flatten)]
    pub stage: StageArgs,
    /// The repositories responses name (never written). Direct mode takes one `--repo`.
    #[command(flatten)]
    pub repos: RepoArgs,
    /// Runs at once (default: the number of cores).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// The Python interpreter (with pytest and pytest-cov) for repositories whose manifest
    /// names none; default $CLOVER_PYTHON, then python3 on PATH.
    #[arg(long, value_name = "PYTHON", value_parser = clover_protocol::resolved_path)]
    pub python: Option<PathBuf>,
    /// Wall-clock limit in seconds (overrides the manifest; direct mode default 60).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Memory limit in MiB (overrides the manifest; direct mode default 2048).
    #[arg(long, value_name = "MIB")]
    pub memory: Option<u64>,
    /// CPU share of one run, in cores (overrides the manifest; default 1; 0: no cap).
    #[arg(long, value_name = "CORES", value_parser = parse_cpus)]
    pub cpus: Option<f64>,
    /// Where built C++ libraries under test are cached.
    #[arg(long, value_name = "DIR", value_parser = clover_protocol::resolved_path)]
    pub cache_dir: Option<PathBuf>,
    /// Runs every Python candidate in a fresh interpreter instead of a fork of a warm worker
    /// (one per repository, interpreter and setting, which has imported pytest and coverage
    /// and configured pytest once). The verdicts are the same; cold runs are slower.
    #[arg(long)]
    pub cold: bool,
    /// Calibrate's mutants sidecar (`clover calibrate --mutants`, OUTPUT.mutants.jsonl): each
    /// candidate that passes is run again against every kept mutant of its instance's focus
    /// (Task II: its target's body; Task III: its blocks; C++: the focal source, only it
    /// recompiled), each in a fresh view with the mutated file over the original, stopping at
    /// the first failing test; the result's `mutation` says how many it killed. Task I has no
    /// pass.
    #[arg(long, value_name = "SIDECAR", conflicts_with = "test_file", value_parser = clover_protocol::resolved_path)]
    pub mutation: Option<PathBuf>,
    /// Direct mode: the test file to run. Inside the repository it runs where it is;
    /// elsewhere pass --at.
    #[arg(long, value_name = "PATH", value_parser = clover_protocol::resolved_path)]
    pub test_file: Option<PathBuf>,
    /// Direct mode: where to put the test file, relative to the repository.
    #[arg(long, value_name = "PATH", requires = "test_file")]
    pub at: Option<PathBuf>,
    /// Direct mode: source folders to measure coverage of (relative to the repository);
    /// repeatable.
    #[arg(long = "cov", value_name = "DIR", requires = "test_file")]
    pub cov: Vec<String>,
    /// The screen for reward hacking: a Python candidate with a construct no honest unit
    /// test needs (pytest hooks, `os._exit`, tracing, frames, …) is not run and gets outcome
    /// `rejected`. `off` is for research on the screen itself.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    pub screen: String,
    /// clover's record of a C++ run: a listener linked into every test binary sends each
    /// failure and the counts through a pipe only the host reads, before GoogleTest writes
    /// its report; a report the record does not vouch for gets outcome `forged`
    /// (docs/THREAT-MODEL.md). `off` is for comparison.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    pub report_record: String,
    /// With `--mutation`: each passing Python candidate also runs against an equivalent
    /// mutant of its focus (a change of the code's bytes, not of what it does), unseen among
    /// the others; a candidate that kills it fingerprints the code or tells a mutant's run
    /// from the plain one, earns no kill and gets outcome `forged`. `off` is for comparison.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    pub equivalent_mutant: String,
    /// A Python run's witness of the code its scoring reads: every statement of those files'
    /// function bodies notes that it ran, apart from coverage.py, and a run whose coverage
    /// claims a line that never ran gets outcome `forged` (docs/THREAT-MODEL.md). `off` is
    /// for comparison.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    pub witness: String,
    /// clover's pytest plugin watches pytest's own machinery during a Python run: a hook
    /// implementation registered by the run, a function or class a verdict travels through
    /// replaced, or a call that raised reported passed gets outcome `forged`. `off` is for
    /// comparison.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    pub machinery_watch: String,
}

/// `--cpus`: a number of cores, 0 or more.
fn parse_cpus(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(c) if c.is_finite() && c >= 0.0 => Ok(c),
        _ => Err(format!(
            "`{s}` is not a number of cores (0 or more; 0: no cap)"
        )),
    }
}
