//! `clover env`'s command line.

use std::path::PathBuf;

use clap::Parser;

/// Builds a repository's test environment as the CLOVER paper's §2.2 does — an interpreter of
/// the chosen Python version, the project and every test dependency its files name
/// (requirements files, test extras, dependency groups, tox and nox deps), with uv — runs its
/// suite once in the sandbox without network, and writes what it did as one `environment`
/// record: the interpreter, the sources, what could not be resolved and why, the pins, the
/// suite's counts. A second run with the same inputs does nothing. Exit status: 0 when the
/// environment is usable (its suite passes a significant number of tests), 1 when a step
/// failed or the suite is not usable, 2 for bad usage.
#[derive(Debug, Parser)]
#[command(name = "clover-env", version)]
pub struct Cli {
    /// The repository folder (default, with --recipe: SRC/NAME, fetched from its source
    /// distribution when it is not there).
    #[arg(long, value_name = "DIR", value_parser = clover_protocol::resolved_path)]
    pub repo: Option<PathBuf>,
    /// A recipe (`benchmarks/clover/recipe.toml`): its entry NAME says what detection cannot
    /// find, pins the source and the cutoff.
    #[arg(long, value_name = "FILE", value_parser = clover_protocol::resolved_path, requires = "name")]
    pub recipe: Option<PathBuf>,
    /// The repository's name (default: its folder's); with --recipe, its entry.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// With --recipe: where fetched repositories are unpacked.
    #[arg(long, value_name = "DIR", default_value = ".", value_parser = clover_protocol::resolved_path)]
    pub src: PathBuf,
    /// With --recipe: where source distributions are downloaded (default: CACHE/downloads).
    #[arg(long, value_name = "DIR", value_parser = clover_protocol::resolved_path)]
    pub downloads: Option<PathBuf>,
    /// The Python to build with: a version (3.10: python3.10 on PATH, or a pyenv build) or a
    /// path (default: the recipe's, else python3).
    #[arg(long, value_name = "PY")]
    pub python: Option<String>,
    /// Where environments live (default: $CLOVER_ENV_CACHE, else ~/.cache/clover/envs).
    #[arg(long, value_name = "DIR", value_parser = clover_protocol::resolved_path)]
    pub cache: Option<PathBuf>,
    /// The installer (default: $CLOVER_UV, else uv on PATH).
    #[arg(long, value_name = "UV", value_parser = clover_protocol::resolved_path)]
    pub uv: Option<PathBuf>,
    /// Only packages uploaded before this day (YYYY-MM-DD) or instant (RFC 3339) are
    /// installed (default: the recipe's cutoff; none without a recipe).
    #[arg(long, value_name = "DATE")]
    pub exclude_newer: Option<String>,
    /// The suite's time budget: the session ends between two tests once it is spent.
    #[arg(long, value_name = "SECS", default_value_t = 900)]
    pub suite_budget: u64,
    /// Do not run the suite.
    #[arg(long)]
    pub no_suite: bool,
    /// Write the record to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE", value_parser = clover_protocol::resolved_path)]
    pub output: Option<PathBuf>,
    /// Also write a clover.toml for the repository, with the environment's interpreter.
    #[arg(long, value_name = "FILE", value_parser = clover_protocol::resolved_path)]
    pub manifest_out: Option<PathBuf>,
}
