//! The command line of `clover-score`, here rather than in `main.rs` so the `clover` front
//! command can build its completions and man pages from it; `main.rs` parses it and does the
//! run.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use clover_protocol::{OnError, DEFAULT_MAX_LINE_BYTES};

/// Score run results: metrics per model × task × setting (× repository), context
/// utilization, an optional LLM judge; as a table, JSON, ScoreRow JSON Lines or HTML.
#[derive(Debug, Parser)]
#[command(name = "clover-score", version)]
pub struct Cli {
    /// Run-result files (JSON Lines); `-` or nothing reads stdin. Several models' results
    /// combine into one report.
    #[arg(value_name = "INPUT", value_parser = clover_protocol::resolved_path)]
    pub inputs: Vec<PathBuf>,
    /// Write the report to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE", value_parser = clover_protocol::resolved_path)]
    pub output: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Add a row per repository besides the all-repository rows.
    #[arg(long)]
    pub by_repo: bool,
    /// What RER counts as a constant: `ast` is Python's `ast.Constant`, CLOVER's definition
    /// (`-3` and `(1, 2)` are not constants); `clover` also counts signed numbers and tuples of
    /// constants.
    #[arg(long, value_enum, default_value_t = RerConstants::Ast)]
    pub rer_constants: RerConstants,
    /// What to do with a bad input record.
    #[arg(long, value_enum, default_value_t = OnError::Skip)]
    pub on_error: OnError,
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES, value_name = "BYTES")]
    pub max_line_bytes: usize,
    /// Ask a judge model to compare answers pairwise (CPP-UT-Bench's evaluation).
    #[arg(long, value_enum)]
    pub judge: Option<JudgeKind>,
    /// judge: the API root, e.g. http://127.0.0.1:8000/v1.
    #[arg(long, value_name = "URL")]
    pub judge_base_url: Option<String>,
    /// judge: the model name sent with each request.
    #[arg(long, value_name = "NAME")]
    pub judge_model_name: Option<String>,
    /// judge: the environment variable holding the API key.
    #[arg(long, default_value = "OPENAI_API_KEY", value_name = "VAR")]
    pub judge_api_key_env: String,
    /// judge: the tasks judged (repeatable).
    #[arg(long, value_name = "TASK", default_value = "cpp_unit_test")]
    pub judge_task: Vec<String>,
    /// judge: models left out of the pairs (repeatable; the oracle's answer is the ground truth).
    #[arg(long, value_name = "MODEL", default_value = "oracle")]
    pub judge_exclude: Vec<String>,
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub judge_concurrency: usize,
    #[arg(long, default_value_t = 120.0, value_name = "SECS")]
    pub judge_timeout_secs: f64,
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub judge_max_retries: u32,
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub judge_backoff_ms: u64,
    /// judge: `both` asks each pair in both orders and counts a win only when both agree
    /// (clover's reading, the default); `single` asks once, as CPP-UT-Bench does, the first
    /// model by name in position A (see --judge-swap-seed).
    #[arg(long, value_enum, default_value_t = JudgeOrderArg::Both)]
    pub judge_order: JudgeOrderArg,
    /// judge, with --judge-order single: swap A and B for the pairs a hash of this seed picks
    /// (about half), instead of always showing the first model as A.
    #[arg(long, value_name = "SEED", requires = "judge_order")]
    pub judge_swap_seed: Option<u64>,
    /// The instances file (pack-context's output): the judge's ground truth (without it, the
    /// oracle's results in the input serve), and the dataset statistics of `--tables paper`.
    #[arg(long, value_name = "FILE", value_parser = clover_protocol::resolved_path)]
    pub instances: Option<PathBuf>,
    /// Problem files (extract's output, repeatable): the {code, unit test} pairs' source and
    /// test lengths for CPP-UT-Bench's Table 1 and Figs. 2–3 in `--tables paper`.
    #[arg(long, value_name = "FILE", value_parser = clover_protocol::resolved_path)]
    pub problems: Vec<PathBuf>,
    /// The repo manifest (clover.toml): the `domain` of each C++ repository, CPP-UT-Bench's
    /// Table 1 in `--tables paper`.
    #[arg(long, value_name = "FILE", value_parser = clover_protocol::resolved_path)]
    pub manifest: Option<PathBuf>,
    /// `clover`: score's tables per model × task × setting; `paper`: the papers' tables, each
    /// as the paper's table of that number holds it (CLOVER Tables 2–8, CPP-UT-Bench Table 1,
    /// the data of its Figs. 2–3), with clover's own (the EM-vs-RER gap, Task II's called
    /// rate) under their own names, in --format table, markdown, json or html.
    /// docs/FIDELITY.md maps them.
    #[arg(long, value_enum, default_value_t = Tables::Clover)]
    pub tables: Tables,
    /// Response files (generate's output, repeatable): the models' full ids, servers and
    /// sampling for the report's metadata.
    #[arg(long, value_name = "FILE", value_parser = clover_protocol::resolved_path)]
    pub responses: Vec<PathBuf>,
    /// The run's date as the report shows it, verbatim. Without it SOURCE_DATE_EPOCH is used,
    /// else the date is "not recorded": score never reads the clock, so the same inputs give
    /// the same bytes.
    #[arg(long, value_name = "TEXT")]
    pub date: Option<String>,
    /// Bootstrap replicates for each row's 95% intervals (resampling its instances); 0 draws
    /// none.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub bootstrap: u32,
    /// The bootstrap's seed; each row's stream comes from it and the row's id.
    #[arg(long, default_value_t = 0, value_name = "SEED")]
    pub bootstrap_seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Tables {
    Clover,
    Paper,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Markdown tables, readable on a terminal.
    Table,
    Markdown,
    Json,
    /// ScoreRow records, one per line.
    Jsonl,
    Html,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RerConstants {
    Ast,
    Clover,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JudgeOrderArg {
    Both,
    Single,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JudgeKind {
    /// An OpenAI-compatible chat-completions server.
    Openai,
}
