//! `clover doctor`'s command line.

use std::path::PathBuf;

use clap::Parser;

/// Checks what a clover run needs on this machine — the sandbox (root, namespaces, cgroups),
/// a Python interpreter with pytest, pytest-cov and coverage.py, the tokenizer model, a C++
/// compiler with GoogleTest and gcov — and says, for each missing piece, the one command that
/// fixes it. With --repo, only what that repository's runs need decides the exit status: 0
/// when a run can start, 1 when something it needs is missing.
#[derive(Debug, Parser)]
#[command(name = "clover-doctor", version)]
pub struct Cli {
    /// A repository folder (its clover.toml is used when it has one): its language decides
    /// what is required, its manifest's interpreter and compiler are the ones checked.
    #[arg(long, value_name = "DIR", value_parser = clover_protocol::resolved_path)]
    pub repo: Option<PathBuf>,
    /// The Python interpreter to check (default: the repository's, then $CLOVER_PYTHON, then
    /// python3 on PATH).
    #[arg(long, value_name = "PYTHON", value_parser = clover_protocol::resolved_path)]
    pub python: Option<PathBuf>,
    /// The C++ compiler to check (default: the repository's, then g++).
    #[arg(long, value_name = "CXX")]
    pub cxx: Option<String>,
    /// Fetch the tokenizer model (the Mistral-7B model from PyPI's mistral-common wheel,
    /// checked by sha256) into $CLOVER_DATA_DIR, or else `../share/clover` beside this
    /// program, where pack-context looks; needs the interpreter's pip.
    #[arg(long)]
    pub fetch_tokenizer: bool,
}
