//! The command line of `clover-generate`, here rather than in `main.rs` so the `clover` front
//! command can build its completions and man pages from it; `main.rs` parses it and does the
//! run.

use std::ffi::OsString;

use clap::{Parser, ValueEnum};
use clover_protocol::StageArgs;

/// Answer task instances with a model: the oracle, a trivial baseline, an OpenAI-compatible
/// server or a command. Reads instances (JSON Lines), writes responses.
#[derive(Debug, Parser)]
#[command(name = "clover-generate", version)]
pub struct Cli {
    #[command(flatten)]
    pub stage: StageArgs,
    /// Which model answers.
    #[arg(long, value_enum)]
    pub model: ModelKind,
    /// The name written in each response's `model` field and id (default: the model kind, or
    /// the full --model-name for openai, `/` included).
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// openai: the API root, e.g. http://127.0.0.1:8000/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// openai: the model name sent with each request.
    #[arg(long, value_name = "NAME")]
    pub model_name: Option<String>,
    /// openai: the environment variable holding the API key (sent only when set).
    #[arg(long, default_value = "OPENAI_API_KEY", value_name = "VAR")]
    pub api_key_env: String,
    /// openai: `X` for every task, or `TASK=X` (assertion_cloze, targeted_test, coverage_test,
    /// cpp_unit_test; repeatable). Default: 0.2, and 0.1 for cpp_unit_test (CPP-UT-Bench's).
    #[arg(long, value_name = "[TASK=]X")]
    pub temperature: Vec<String>,
    /// openai: as --temperature. Default: 1.0, and 0.7 for cpp_unit_test.
    #[arg(long, value_name = "[TASK=]X")]
    pub top_p: Vec<String>,
    /// openai: as --temperature; sent only when set. Default: 0.3 for cpp_unit_test, unset for
    /// the others.
    #[arg(long, value_name = "[TASK=]X")]
    pub frequency_penalty: Vec<String>,
    /// openai: as --temperature; sent only when set. Default: unset.
    #[arg(long, value_name = "[TASK=]X")]
    pub presence_penalty: Vec<String>,
    /// openai: the `seed` sent with each request (servers that honour it sample reproducibly).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// openai: a `stop` sequence sent with each request (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub stop: Vec<String>,
    /// Max new tokens: `N` for every task, or `TASK=N`. Defaults: 200 for Task I, 4000 for
    /// Tasks II and III, 4096 for cpp_unit_test (CPP-UT-Bench's).
    #[arg(long, value_name = "[TASK=]N")]
    pub max_tokens: Vec<String>,
    /// The model's maximum context in tokens: an instance whose prompt_tokens plus its task's
    /// max tokens exceed it is not sent; its response is marked `generation.skipped =
    /// "over_max_context"` and score leaves it out (CLOVER's per-model maximum length).
    #[arg(long, value_name = "TOKENS")]
    pub max_context: Option<u32>,
    /// Requests (or commands) running at once.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub concurrency: usize,
    /// Time limit of one request attempt, or of one command run.
    #[arg(long, default_value_t = 300.0, value_name = "SECS")]
    pub timeout_secs: f64,
    /// openai: retries after the first attempt on 429, 5xx and transport errors.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub max_retries: u32,
    /// openai: the first retry's wait; it doubles with each further retry (up to 60 s).
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub backoff_ms: u64,
    /// With --resume: ask again for the responses that ended in an error (the default).
    #[arg(long, overrides_with = "no_retry_errors")]
    pub retry_errors: bool,
    /// With --resume: keep the responses that ended in an error as they are.
    #[arg(long, overrides_with = "retry_errors")]
    pub no_retry_errors: bool,
    /// cmd: the command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModelKind {
    /// The ground truth.
    Oracle,
    /// Task I: the other operand; other tasks: as assert-true.
    CopyOperand,
    /// `True` / a test whose body is `assert True`.
    AssertTrue,
    /// An OpenAI-compatible chat-completions server.
    Openai,
    /// A command: prompt on stdin, answer on stdout.
    Cmd,
}
