//! The command line of `clover-extract`, here rather than in `main.rs` so the `clover` front
//! command can build its completions and man pages from it; `main.rs` parses it and does the
//! run.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use clover_protocol::{OnError, Shard};

/// Extract benchmark problems from a repository: one per Python test function, or one per C++
/// source paired with its GoogleTest file
#[derive(Debug, Parser)]
#[command(version)]
pub struct Cli {
    /// The repository folder (its clover.toml is used when it has one; otherwise the layout
    /// is detected)
    #[arg(long, value_name = "DIR", conflicts_with = "manifest", value_parser = clover_protocol::resolved_path)]
    pub repo: Option<PathBuf>,
    /// A manifest naming one or more repositories
    #[arg(long, value_name = "FILE", value_parser = clover_protocol::resolved_path)]
    pub manifest: Option<PathBuf>,
    /// The repository to take from the manifest (default: all of them), or the name to give a
    /// detected repository
    #[arg(long, value_name = "REPO")]
    pub name: Option<String>,
    /// Override the detected or configured language
    #[arg(long, value_enum)]
    pub language: Option<Lang>,
    /// Write records to FILE (through FILE.partial, renamed when done) instead of stdout
    #[arg(short, long, value_name = "FILE", value_parser = clover_protocol::resolved_path)]
    pub output: Option<PathBuf>,
    /// Keep the problems already in the output file and skip their ids (needs -o)
    #[arg(long, requires = "output")]
    pub resume: bool,
    /// Write only shard K of N (0-based): problems whose id's FNV-1a 64 hash mod N is K
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
    /// What to do with a test file that cannot be used (syntax error, binary, not UTF-8,
    /// unreadable, too large): report it and go on (exit 3 at the end), or stop (exit 4)
    #[arg(long, value_enum, default_value_t = OnError::Skip)]
    pub on_error: OnError,
    /// Output format: clover problem records, or CPP-UT-Bench rows (C++ only)
    #[arg(long, value_enum, default_value_t = Format::Clover)]
    pub format: Format,
    /// Also write each Python problem file (tmp_test_<stem>_<n>.py) next to its original
    #[arg(long)]
    pub write_problem_files: bool,
    /// Skip (and report) files larger than this many bytes
    #[arg(long, value_name = "BYTES", default_value_t = crate::DEFAULT_MAX_FILE_BYTES)]
    pub max_file_bytes: u64,
    /// Cut C++ sources longer than this many lines into chunks
    #[arg(long, value_name = "LINES", default_value_t = crate::DEFAULT_CHUNK_LINES)]
    pub chunk_lines: u32,
    /// Do not list notes (empty files, unpaired or superseded C++ tests) one by one; errors
    /// are always reported, and the summary counts both
    #[arg(short, long)]
    pub quiet: bool,
    /// Pair C++ tests by CPP-UT-Bench's base-name rule alone: a test no base name pairs is
    /// not paired through the headers it includes (the manifest's `pair_by_includes = false`)
    #[arg(long)]
    pub base_name_only: bool,
    /// Keep a seeded uniform sample of at most N problems of each repository (the others are
    /// not written): a suite of tens of thousands of tests is not calibrated whole to fill a
    /// benchmark's caps. The same seed gives the same sample on every machine
    #[arg(long, value_name = "N")]
    pub sample: Option<usize>,
    /// The seed of --sample
    #[arg(long, value_name = "SEED", default_value_t = 0, requires = "sample")]
    pub seed: u64,
    /// Print (to stderr) which source folders and test files were chosen, and why
    #[arg(long)]
    pub explain: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    Python,
    Cpp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// `problem` records (clover's wire format)
    Clover,
    /// CPP-UT-Bench's columns: ID, Language, Repository Name, File Name, …
    CppUtBench,
}
