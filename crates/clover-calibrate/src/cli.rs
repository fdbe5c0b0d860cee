//! The command line of `clover-calibrate`, here rather than in `main.rs` so the `clover` front
//! command can build its completions and man pages from it; `main.rs` parses it and does the
//! run.

use std::path::PathBuf;

use clap::Parser;
use clover_manifest::RepoArgs;
use clover_protocol::StageArgs;

/// Run each problem's ground truth in the sandbox; add coverage, context tiers, unique blocks
/// and targets
#[derive(Debug, Parser)]
#[command(version)]
pub struct Cli {
    #[command(flatten)]
    pub stage: StageArgs,
    #[command(flatten)]
    pub repos: RepoArgs,
    /// The Python interpreter with pytest and pytest-cov (default: the manifest's, else
    /// $CLOVER_PYTHON, else python3)
    #[arg(long, value_name = "PATH", value_parser = clover_protocol::resolved_path)]
    pub python: Option<PathBuf>,
    /// Runs of each ground truth; a problem whose outcome or lines change is flaky
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// One pytest process per problem (the slow cross-check) instead of one per test file
    #[arg(long)]
    pub per_test: bool,
    /// Runs each group in a fresh interpreter instead of a fork of a warm pytest worker (one
    /// per repository, interpreter and setting); the records are the same
    #[arg(long)]
    pub cold: bool,
    /// Test files calibrated at once (default: the number of cores)
    #[arg(long, short)]
    pub jobs: Option<usize>,
    /// Wall-clock limit of one pytest process, in seconds (default: the manifest's)
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Memory limit of one pytest process, in MiB (default: the manifest's)
    #[arg(long, value_name = "MB")]
    pub memory: Option<u64>,
    /// Write the kept/excluded summary as JSON here (default: OUTPUT.summary.json with -o); for
    /// C++ it also counts the test files this run compiled (`test_builds`)
    #[arg(long, value_name = "FILE", value_parser = clover_protocol::resolved_path)]
    pub summary: Option<PathBuf>,
    /// Run each kept problem's ground truth against at most K mutants of its focal code (its
    /// targets' bodies and unique blocks; a C++ problem's focal source) and write the ones it
    /// kills to the mutants sidecar; K is 20 when not given
    #[arg(
        long,
        value_name = "K",
        num_args = 0..=1,
        default_missing_value = "20",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub mutants: Option<u32>,
    /// The seed of the mutant samples, mixed with each problem id
    #[arg(long, value_name = "N", default_value_t = 0, requires = "mutants")]
    pub mutants_seed: u64,
    /// Write the mutants sidecar here (default: OUTPUT.mutants.jsonl with -o)
    #[arg(long, value_name = "FILE", requires = "mutants", value_parser = clover_protocol::resolved_path)]
    pub mutants_out: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutants_without_a_value_take_the_default_k() {
        let k = |argv: &[&str]| Cli::try_parse_from(argv).map(|c| c.mutants);
        assert_eq!(
            k(&["calibrate", "--mutants"]).unwrap(),
            Some(clover_mutate::DEFAULT_MAX_MUTANTS as u32)
        );
        assert_eq!(k(&["calibrate", "--mutants", "5"]).unwrap(), Some(5));
        assert_eq!(k(&["calibrate"]).unwrap(), None);
        assert!(k(&["calibrate", "--mutants", "0"]).is_err());
        assert!(
            k(&["calibrate", "--mutants-seed", "3"]).is_err(),
            "needs --mutants"
        );
    }
}
