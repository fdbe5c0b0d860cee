//! The command line of `clover-pack-context`, here rather than in `main.rs` so the `clover`
//! front command can build its completions and man pages from it; `main.rs` parses it and
//! does the run.

use clap::Parser;
use clover_manifest::RepoArgs;
use clover_protocol::StageArgs;

use crate::{Setting, SplitRatios};

/// Build task instances with prompts from calibrated problems, packing oracle context into
/// token budgets.
#[derive(Debug, Parser)]
#[command(name = "clover-pack-context", version)]
pub struct Cli {
    #[command(flatten)]
    pub stage: StageArgs,
    /// The repositories the input names: a manifest and/or `--repo DIR` (repeatable), as
    /// calibrate and sandbox-run take them.
    #[command(flatten)]
    pub repos: RepoArgs,
    /// Seed of every random choice; the same input and seed give the same output bytes.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Keep a seeded uniform sample of N of the input's problems (over all repositories; a
    /// C++ pair's chunks stay together) before any task is built, as CPP-UT-Bench samples
    /// 200 pairs. The same seed gives the same sample; the input must be a file.
    #[arg(long, value_name = "N")]
    pub sample: Option<usize>,
    /// Also build instances for the C++ pairs calibrate excluded (their ground truth does not
    /// compile, pass or get measured), marked judge-only (`scoring.judge_only`): they are
    /// answered and put to the LLM judge, never run, as CPP-UT-Bench evaluates its pairs with
    /// no execution filter. `--sample` then draws from them too. Not with `--format sft`.
    #[arg(long)]
    pub judge_only_excluded: bool,
    /// Tasks to build.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "assertion_cloze,targeted_test,coverage_test,cpp_unit_test"
    )]
    pub tasks: Vec<TaskArg>,
    /// Settings for every task (`po`, `4k`, …, `128k`, or a token count), replacing the
    /// per-task defaults, CLOVER's (I: po,4k-128k; II: po,8k-64k; III: 64k,128k; C++: po).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub settings: Option<Vec<Setting>>,
    /// Task III also in problem-only, before 64k and 128k: clover's addition (CLOVER builds
    /// Task III in contextual settings only, "since it heavily depends on retrieval files");
    /// score marks the setting as not the paper's. --settings, when given, wins.
    #[arg(long)]
    pub coverage_po: bool,
    /// Task I instances per repository at most.
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub cloze_per_repo: usize,
    /// Task II problems per repository at most.
    #[arg(long, default_value_t = 25, value_name = "N")]
    pub targeted_per_repo: usize,
    /// Task III problems per repository at most.
    #[arg(long, default_value_t = 25, value_name = "N")]
    pub coverage_per_repo: usize,
    /// Task I drops references that occur in more than this share of a repository's
    /// candidates.
    #[arg(long, default_value_t = 0.01, value_name = "SHARE")]
    pub max_reference_share: f64,
    /// Task I templates: `filled` asks for the assertion line with the mask filled in (the
    /// paper's), `answer-only` for the masked expression alone (its §4 ablation); both are
    /// built for the same sampled candidates.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "filled",
        value_name = "LIST"
    )]
    pub task1_template: Vec<Task1Template>,
    /// Task II and III answer formats: `part` asks for the test's body, `full` for the whole
    /// test file (both show the setup code and the declaration).
    #[arg(long, value_delimiter = ',', default_value = "part,full")]
    pub answer_formats: Vec<AnswerFormat>,
    /// Few-shot demonstrations per C++ instance.
    #[arg(long, default_value_t = 2, value_name = "K")]
    pub shots: usize,
    /// Demonstrations longer than this many tokens are not used.
    #[arg(long, default_value_t = 3000, value_name = "TOKENS")]
    pub shot_max_tokens: usize,
    /// Tokenizer that counts tokens: `mistral` (default: the Mistral-7B SentencePiece model
    /// from `cargo xtask setup`, or CLOVER_TOKENIZER), `cl100k` or `o200k` (OpenAI's, built
    /// in), or a path to a SentencePiece `.model`, a Hugging Face `tokenizer.json` or a
    /// `.tiktoken` rank file.
    #[arg(long, default_value = "mistral", value_name = "SPEC")]
    pub tokenizer: String,
    /// Output instances, or supervised fine-tuning examples.
    #[arg(long, value_enum, default_value_t = Format::Instances)]
    pub format: Format,
    /// With --format sft: train,eval,test shares; repositories are split, not problems.
    #[arg(long, default_value = "0.8,0.1,0.1", value_name = "TRAIN,EVAL,TEST")]
    pub split: SplitRatios,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Format {
    Instances,
    Sft,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum TaskArg {
    AssertionCloze,
    TargetedTest,
    CoverageTest,
    CppUnitTest,
}

#[derive(Debug, Clone, Copy, PartialEq, clap::ValueEnum)]
pub enum Task1Template {
    Filled,
    AnswerOnly,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum AnswerFormat {
    Part,
    Full,
}
