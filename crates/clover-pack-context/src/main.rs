use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Parser;
use clover_manifest::RepoConfig;
use clover_pack_context::cli::{AnswerFormat, Cli, Format, Task1Template, TaskArg};
use clover_pack_context::{
    print_summary, run, ClozeTemplate, Options, OutputFormat, Tokenizer, TOOL,
};
use clover_protocol::{diag, exit, finish_main, Task};

fn main() -> ExitCode {
    let args = Cli::parse();
    finish_main(TOOL, real_main(args))
}

fn real_main(args: Cli) -> anyhow::Result<u8> {
    if !(0.0..=1.0).contains(&args.max_reference_share) {
        diag!("{TOOL}: error: --max-reference-share must be between 0 and 1");
        return Ok(exit::USAGE);
    }
    if args.sample.is_some()
        && args
            .stage
            .input
            .as_deref()
            .is_none_or(|p| p == std::path::Path::new("-"))
    {
        diag!(
            "{TOOL}: error: {}",
            clover_pack_context::SampleError::NotAFile
        );
        return Ok(exit::USAGE);
    }
    if args.judge_only_excluded && matches!(args.format, Format::Sft) {
        diag!(
            "{TOOL}: error: --judge-only-excluded builds instances whose ground truth does not \
             run, which make no fine-tuning example; leave it out with --format sft"
        );
        return Ok(exit::USAGE);
    }
    let repos: Vec<RepoConfig> = match args.repos.resolve() {
        Ok(r) => r.into_values().collect(),
        Err(e) => {
            diag!("{TOOL}: error: {e}");
            return Ok(exit::USAGE);
        }
    };
    let tokenizer = Tokenizer::load(&args.tokenizer).context("cannot load the tokenizer")?;
    let options = Options {
        seed: args.seed,
        sample: args.sample,
        judge_only_excluded: args.judge_only_excluded,
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
        coverage_po: args.coverage_po,
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
