use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Parser;
use clover_manifest::{RepoArgs, RepoConfig};
use clover_pack_context::{
    print_summary, run, ClozeTemplate, Options, OutputFormat, Setting, SplitRatios, Tokenizer, TOOL,
};
use clover_protocol::{exit, finish_main, StageArgs, Task};

/// Build task instances with prompts from calibrated problems, packing oracle context into
/// token budgets.
#[derive(Debug, Parser)]
#[command(name = "clover-pack-context", version)]
struct Args {
    #[command(flatten)]
    stage: StageArgs,
    /// The repositories the input names: a manifest and/or `--repo DIR` (repeatable), as
    /// calibrate and sandbox-run take them.
    #[command(flatten)]
    repos: RepoArgs,
    /// Seed of every random choice; the same input and seed give the same output bytes.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Keep a seeded uniform sample of N of the input's problems (over all repositories; a
    /// C++ pair's chunks stay together) before any task is built, as CPP-UT-Bench samples
    /// 200 pairs. The same seed gives the same sample; the input must be a file.
    #[arg(long, value_name = "N")]
    sample: Option<usize>,
    /// Tasks to build.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "assertion_cloze,targeted_test,coverage_test,cpp_unit_test"
    )]
    tasks: Vec<TaskArg>,
    /// Settings for every task (`po`, `4k`, …, `128k`, or a token count), replacing the
    /// per-task defaults (I: po,4k-128k; II: po,8k-128k; III: po,64k,128k; C++: po).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    settings: Option<Vec<Setting>>,
    /// Task I instances per repository at most.
    #[arg(long, default_value_t = 50, value_name = "N")]
    cloze_per_repo: usize,
    /// Task II problems per repository at most.
    #[arg(long, default_value_t = 25, value_name = "N")]
    targeted_per_repo: usize,
    /// Task III problems per repository at most.
    #[arg(long, default_value_t = 25, value_name = "N")]
    coverage_per_repo: usize,
    /// Task I drops references that occur in more than this share of a repository's
    /// candidates.
    #[arg(long, default_value_t = 0.01, value_name = "SHARE")]
    max_reference_share: f64,
    /// Task I templates: `filled` asks for the assertion line with the mask filled in (the
    /// paper's), `answer-only` for the masked expression alone (its §4 ablation); both are
    /// built for the same sampled candidates.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "filled",
        value_name = "LIST"
    )]
    task1_template: Vec<Task1Template>,
    /// Task II and III answer formats: `part` asks for the test's body, `full` for the whole
    /// test file (both show the setup code and the declaration).
    #[arg(long, value_delimiter = ',', default_value = "part,full")]
    answer_formats: Vec<AnswerFormat>,
    /// Few-shot demonstrations per C++ instance.
    #[arg(long, default_value_t = 2, value_name = "K")]
    shots: usize,
    /// Demonstrations longer than this many tokens are not used.
    #[arg(long, default_value_t = 3000, value_name = "TOKENS")]
    shot_max_tokens: usize,
    /// Tokenizer that counts tokens: `mistral` (default: the Mistral-7B SentencePiece model
    /// from `cargo xtask setup`, or CLOVER_TOKENIZER), `cl100k` or `o200k` (OpenAI's, built
    /// in), or a path to a SentencePiece `.model`, a Hugging Face `tokenizer.json` or a
    /// `.tiktoken` rank file.
    #[arg(long, default_value = "mistral", value_name = "SPEC")]
    tokenizer: String,
    /// Output instances, or supervised fine-tuning examples.
    #[arg(long, value_enum, default_value_t = Format::Instances)]
    format: Format,
    /// With --format sft: train,eval,test shares; repositories are split, not problems.
    #[arg(long, default_value = "0.8,0.1,0.1", value_name = "TRAIN,EVAL,TEST")]
    split: SplitRatios,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Format {
    Instances,
    Sft,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
enum TaskArg {
    AssertionCloze,
    TargetedTest,
    CoverageTest,
    CppUnitTest,
}

#[derive(Debug, Clone, Copy, PartialEq, clap::ValueEnum)]
enum Task1Template {
    Filled,
    AnswerOnly,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum AnswerFormat {
    Part,
    Full,
}

fn main() -> ExitCode {
    let args = Args::parse();
    finish_main(TOOL, real_main(args))
}

fn real_main(args: Args) -> anyhow::Result<u8> {
    if !(0.0..=1.0).contains(&args.max_reference_share) {
        eprintln!("{TOOL}: error: --max-reference-share must be between 0 and 1");
        return Ok(exit::USAGE);
    }
    if args.sample.is_some()
        && args
            .stage
            .input
            .as_deref()
            .is_none_or(|p| p == std::path::Path::new("-"))
    {
        eprintln!(
            "{TOOL}: error: {}",
            clover_pack_context::SampleError::NotAFile
        );
        return Ok(exit::USAGE);
    }
    let repos: Vec<RepoConfig> = match args.repos.resolve() {
        Ok(r) => r.into_values().collect(),
        Err(e) => {
            eprintln!("{TOOL}: error: {e}");
            return Ok(exit::USAGE);
        }
    };
    let tokenizer = Tokenizer::load(&args.tokenizer).context("cannot load the tokenizer")?;
    let options = Options {
        seed: args.seed,
        sample: args.sample,
        tasks: args
            .tasks
            .iter()
            .map(|t| match t {
                TaskArg::AssertionCloze => Task::AssertionCloze,
                TaskArg::TargetedTest => Task::TargetedTest,
                TaskArg::CoverageTest => Task::CoverageTest,
                TaskArg::CppUnitTest => Task::CppUnitTest,
            })
            .collect(),
        settings: args.settings.map(|mut s| {
            s.sort();
            s.dedup();
            s
        }),
        cloze_per_repo: args.cloze_per_repo,
        targeted_per_repo: args.targeted_per_repo,
        coverage_per_repo: args.coverage_per_repo,
        max_reference_share: args.max_reference_share,
        cloze_templates: {
            let mut templates = Vec::new();
            for t in &args.task1_template {
                let t = match t {
                    Task1Template::Filled => ClozeTemplate::Filled,
                    Task1Template::AnswerOnly => ClozeTemplate::AnswerOnly,
                };
                if !templates.contains(&t) {
                    templates.push(t);
                }
            }
            templates
        },
        answer_formats: args
            .answer_formats
            .iter()
            .map(|f| match f {
                AnswerFormat::Part => "part".to_string(),
                AnswerFormat::Full => "full".to_string(),
            })
            .collect(),
        shots: args.shots,
        shot_max_tokens: args.shot_max_tokens,
    };
    if options.tasks.is_empty() {
        bail!("no tasks given");
    }
    let format = match args.format {
        Format::Instances => OutputFormat::Instances,
        Format::Sft => OutputFormat::Sft(args.split),
    };
    let start = Instant::now();
    let (code, summary) = run(&args.stage, options, repos, &tokenizer, format)?;
    print_summary(&summary, start.elapsed().as_secs_f64());
    Ok(code)
}
