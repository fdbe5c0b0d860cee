//! pack-context: calibrated problems in, task instances with prompts out.
//!
//! For each repository it builds the benchmark's tasks from the problems calibrate kept:
//!
//! - **Task I, assertion cloze** — one operand of an assertion masked; the masked assertion is
//!   the last line shown, and the answer is the filled line or, with the answer-only
//!   template, the operand alone. References that occur in more than 1% of the repository's
//!   candidates are dropped; the rest are sampled with probability proportional to their
//!   length, at most 50 per repository. Output reserve: 200 tokens.
//! - **Task II, targeted test** — write a test that uses a given class or function; the file
//!   defining the target always goes in first, and problem-only prompts name neither that
//!   file nor the target's lines. At most 25 per repository. Output reserve: 4000 tokens.
//! - **Task III, coverage test** — write a test that executes up to 10 given unique blocks,
//!   shown with line numbers and the lines the scorer requires marked. At most 25 per
//!   repository. Output reserve: 4000 tokens.
//!
//! Tasks II and III come in two answer formats, as in CLOVER: both show the setup code and
//! the test's declaration under the original test file's name; `part` asks for the body,
//! `full` for the complete file.
//! - **C++ unit test** — one instance per source chunk with k few-shot demonstrations from
//!   other pairs; the chunk answers are appended into one test file (the join rule is in
//!   the scoring spec).
//!
//! Each instance is built for problem-only (`po`) and for context lengths (`4k` … `128k`):
//! whole source files are packed in tier order (required, `peer`, `other`, `repo`; seeded
//! order within a tier) until the budget — the length less the output reserve and the
//! problem's own text — is spent. Token counts use the real Mistral-7B SentencePiece model
//! unless `--tokenizer` says otherwise, and an instance's prompt never exceeds its setting.
//! Every random choice comes from a SplitMix64 stream keyed by the seed and by what is being
//! chosen, so the same input and seed give the same bytes, whatever the order, the shard or
//! the platform.
//!
//! Prompts are written as plain text and as chat messages; `--format sft` writes fine-tuning
//! examples (the ground truth as the assistant turn) instead, split by whole repositories
//! weighted by examples, each split also in a file of its own (`sft.train.jsonl` beside
//! `-o sft.jsonl`), with the sizes and any degenerate split on stderr; the chunks
//! of a C++ source share its test file, which goes with the first chunk only, so appended
//! chunk answers never repeat a TEST.
//!
//! It deliberately does not run anything, parse source code, or read files other than the
//! repository sources the calibrated records name: what the tests cover, which blocks are
//! unique and which targets a test uses all come from calibrate.
//!
//! Memory holds one repository's records at a time; a stream must keep each repository's
//! records together (extract and calibrate write them that way).

mod build;
pub mod cli;
mod pack;
mod prompt;
mod python;
mod rng;
mod sample;
mod setting;
mod sft;
mod source;
mod tasks;
mod tokenizer;

use std::collections::HashSet;
use std::time::Instant;

use anyhow::Context;
use clover_manifest::RepoConfig;
use clover_protocol::{CalibratedProblem, Instance, Shard, StageArgs, StageIo, Task};

pub use build::{PackError, Packer, Summary};
pub use pack::{Draft, DraftCounts};
pub use prompt::{code_block, fence, file_block};
pub use rng::{Rng, WeightedDraws};
pub use sample::{sample_input, SampleError};
pub use setting::{parse_settings, Setting};
pub use sft::{
    assign_splits, sft_example, split_file, SftSplitter, SplitRatios, SplitReport, SPLITS,
};
pub use source::{RepoSources, SourceFile};
pub use tasks::{CLOZE_RESERVE, MASK, WRITE_RESERVE};
pub use tokenizer::{
    default_data_dirs, default_model_path, Tokenizer, TokenizerError, MISTRAL_MODEL_FILE,
};

/// The name diagnostics start with.
pub const TOOL: &str = "clover-pack-context";

/// What to build and how.
#[derive(Debug, Clone)]
pub struct Options {
    pub seed: u64,
    /// Keep only this many of the input's kept problems, a seeded uniform sample of the whole
    /// input (see [`sample_input`]); the input must then be a file.
    pub sample: Option<usize>,
    /// Build the C++ pairs calibrate excluded too, as judge-only instances
    /// (`scoring.judge_only`, see [`clover_protocol::judge_only`]).
    pub judge_only_excluded: bool,
    /// Tasks to build, in output order within a problem.
    pub tasks: Vec<Task>,
    /// Settings for every task, replacing the per-task defaults.
    pub settings: Option<Vec<Setting>>,
    /// Task III in problem-only too, before its default 64k and 128k (clover's addition:
    /// CLOVER builds Task III in contextual settings only). `settings`, when given, wins.
    pub coverage_po: bool,
    pub cloze_per_repo: usize,
    pub targeted_per_repo: usize,
    pub coverage_per_repo: usize,
    /// Task I drops references that occur in more than this share of a repository's
    /// candidates.
    pub max_reference_share: f64,
    /// Task I templates, each built for the same sampled candidates.
    pub cloze_templates: Vec<ClozeTemplate>,
    /// Task II and III answer formats (`part`, `full`).
    pub answer_formats: Vec<String>,
    /// Few-shot demonstrations per C++ instance.
    pub shots: usize,
    /// A demonstration longer than this many tokens is not used.
    pub shot_max_tokens: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seed: 0,
            sample: None,
            judge_only_excluded: false,
            tasks: vec![
                Task::AssertionCloze,
                Task::TargetedTest,
                Task::CoverageTest,
                Task::CppUnitTest,
            ],
            settings: None,
            coverage_po: false,
            cloze_per_repo: 50,
            targeted_per_repo: 25,
            coverage_per_repo: 25,
            max_reference_share: 0.01,
            cloze_templates: vec![ClozeTemplate::Filled],
            answer_formats: vec!["part".into(), "full".into()],
            shots: 2,
            shot_max_tokens: 3000,
        }
    }
}

impl Options {
    /// The settings a task is built for: `--settings` if given, else the task's defaults.
    ///
    /// Defaults, CLOVER's: problem-only and 4k–128k for Task I ("context lengths ranging from
    /// 4k to 128k tokens"); problem-only and 8k–64k for Task II ("In Task II, we constructed
    /// the Problem-Only setting and contextual setting from 8k to 64k": 4k less its
    /// 4000-token output reserve leaves no room for a prompt); 64k and 128k for Task III ("In
    /// Task III, we only have the contextual setting since it heavily depends on retrieval
    /// files"), with problem-only first when [`Options::coverage_po`] asks for it; the C++
    /// task is problem-only with few-shot demonstrations, as in CPP-UT-Bench.
    pub fn settings_for(&self, task: Task) -> Vec<Setting> {
        if let Some(s) = &self.settings {
            return s.clone();
        }
        let list = match task {
            Task::AssertionCloze => "po,4k,8k,16k,32k,64k,128k",
            Task::TargetedTest => "po,8k,16k,32k,64k",
            Task::CoverageTest if self.coverage_po => "po,64k,128k",
            Task::CoverageTest => "64k,128k",
            Task::CppUnitTest => "po",
        };
        parse_settings(list).expect("the defaults parse")
    }
}

/// How Task I asks for its answer (CLOVER §4 compares the two: asking for the filled
/// assertion line scored 6.0% higher execution rate than asking for the answer alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClozeTemplate {
    /// The whole assertion line with the mask filled in (the paper's choice; the default).
    /// Instance ids end `#<n>`, `answer_format` is `line`.
    Filled,
    /// The masked expression alone. Instance ids end `#<n>#answer_only`, `answer_format` is
    /// `operand`; the reference is the operand.
    AnswerOnly,
}

impl ClozeTemplate {
    /// The name in `scoring.template` and in ids: `filled`, `answer_only`.
    pub fn name(self) -> &'static str {
        match self {
            ClozeTemplate::Filled => "filled",
            ClozeTemplate::AnswerOnly => "answer_only",
        }
    }
}

/// What the stage writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OutputFormat {
    Instances,
    Sft(SplitRatios),
}

/// Reads calibrated problems from `args`' input, builds instances and writes them (or
/// fine-tuning examples) to its output. Returns the exit code and the run's summary.
///
/// `--shard` applies to the instances written, not to the problems read: every shard sees the
/// whole repository, so the per-repository sampling is the same in each, and the shards'
/// outputs together are exactly the unsharded output. It hashes
/// [`clover_protocol::Record::shard_key`] as every stage does: the chunks of a C++ source stay
/// in one shard.
pub fn run(
    args: &StageArgs,
    options: Options,
    repos: Vec<RepoConfig>,
    tokenizer: &Tokenizer,
    format: OutputFormat,
) -> anyhow::Result<(u8, Summary)> {
    // Drawn before anything is packed, from every id of the input: the same in every shard.
    let sample = match options.sample {
        Some(n) => Some(sample_input(
            args.input.as_deref(),
            options.seed,
            n,
            options.judge_only_excluded,
        )?),
        None => None,
    };
    let mut sampled_out = 0u64;
    let mut read_args = args.clone();
    let shard: Option<Shard> = read_args.shard.take();
    let mut splitter = match format {
        OutputFormat::Instances => None,
        OutputFormat::Sft(ratios) => Some(sft_splitter(args, ratios)?),
    };
    let mut io = StageIo::open(TOOL, &read_args).context("cannot open input or output")?;
    let mut packer = Packer::new(tokenizer, options, repos);
    let mut batch: Vec<CalibratedProblem> = Vec::new();
    let mut finished: HashSet<String> = HashSet::new();
    let mut excluded = 0u64;
    let mut judge_only = 0u64;

    let mut flush = |batch: &mut Vec<CalibratedProblem>,
                     io: &mut StageIo,
                     packer: &mut Packer|
     -> anyhow::Result<()> {
        let Some(repo) = batch.first().map(|r| r.repo.clone()) else {
            return Ok(());
        };
        let done = io.done_ids().clone();
        let mut want =
            |id: &str, key: &str| !done.contains(id) && shard.is_none_or(|s| s.contains(key));
        let mut emit = |instance: Instance| -> anyhow::Result<()> {
            match splitter.as_mut() {
                None => io.writer.write(&instance)?,
                Some(splitter) => {
                    if let Some(example) = sft_example(&instance) {
                        splitter.push(&example)?
                    }
                }
            }
            Ok(())
        };
        packer.pack_repo(&repo, batch, &mut want, &mut emit)?;
        batch.clear();
        Ok(())
    };

    // A stop (--on-error stop) ends the stage without packing the repository being read:
    // instances are sampled per repository, so a part of one would give other instances.
    while let Some((line, record)) = io.next_record::<CalibratedProblem>()? {
        if !packer.knows_repo(&record.repo) {
            let why = format!(
                "unknown repository `{}`; the manifest names {}; pass --manifest FILE or \
                 --repo DIR naming it",
                record.repo,
                packer.repo_names().join(", ")
            );
            io.reject(line, &record.id, &why)?;
            continue;
        }
        if record.exclusion.is_some() {
            if !builds_judge_only(packer.options(), &record) {
                excluded += 1;
                continue;
            }
            judge_only += 1;
        }
        if sample.as_ref().is_some_and(|s| !s.contains(&record.id)) {
            sampled_out += 1;
            continue;
        }
        if batch.first().is_some_and(|b| b.repo != record.repo) {
            let repo = batch[0].repo.clone();
            flush(&mut batch, &mut io, &mut packer)?;
            finished.insert(repo);
        }
        if finished.contains(&record.repo) {
            io.reject(
                line,
                &record.id,
                &format!(
                    "the records of repository `{}` are not together in the input; sort it by \
                     repository (`clover calibrate` writes them that way)",
                    record.repo
                ),
            )?;
            continue;
        }
        batch.push(record);
    }
    flush(&mut batch, &mut io, &mut packer)?;
    if let Some(splitter) = splitter {
        let report = splitter.finish(|e| Ok(io.writer.write(e)?), args.output.as_deref())?;
        clover_protocol::diag!(
            "{TOOL}: sft split by repository, weighted by examples: {}{}",
            report.summary(),
            match &args.output {
                Some(out) => format!(" (one file each: {})", split_file(out, "SPLIT").display()),
                None => String::new(),
            }
        );
        for warning in report.warnings() {
            clover_protocol::diag!("{TOOL}: warning: {warning}");
        }
    }
    let mut summary = packer.summary.clone();
    summary.excluded = excluded;
    summary.judge_only = judge_only;
    summary.sampled_out = sampled_out;
    let code = io.finish()?;
    Ok((code, summary))
}

/// Whether `record`, which calibrate excluded, is built anyway as a judge-only instance: a
/// C++ pair, with `--judge-only-excluded`. (A Python problem's tasks are made of what its
/// ground truth's run showed — covered lines, unique blocks, targets — so an excluded one has
/// nothing to build from; a C++ prompt needs only the pair's files.)
fn builds_judge_only(options: &Options, record: &CalibratedProblem) -> bool {
    options.judge_only_excluded && record.problem.cpp.is_some()
}

/// The splitter of a `--format sft` run, spooling beside the output (or in the temporary
/// folder for stdout). The split is decided over every example at the end, so a run cannot
/// be resumed or cut into shards: each would split its own part differently.
fn sft_splitter(args: &StageArgs, ratios: SplitRatios) -> anyhow::Result<SftSplitter> {
    if args.resume || args.shard.is_some() {
        return Err(clover_protocol::Usage(
            "--format sft splits repositories by their share of all the examples, decided at \
             the end; it cannot be resumed or sharded: rerun it whole"
                .into(),
        )
        .into());
    }
    let spool = match &args.output {
        Some(out) => split_file(out, "spool"),
        None => std::env::temp_dir().join(format!("clover-sft-{}.spool.jsonl", std::process::id())),
    };
    SftSplitter::new(ratios, spool.clone())
        .with_context(|| format!("cannot write {}", spool.display()))
}

/// Throughput of pack-context on one input file, for `cargo xtask bench`: builds every
/// instance in memory (nothing written) and returns the summary with the elapsed seconds.
/// Tokens per second is `summary.prompt_tokens / secs`; instances per second is
/// `summary.total_instances() / secs`.
pub fn measure(
    input: &[CalibratedProblem],
    options: Options,
    repos: Vec<RepoConfig>,
    tokenizer: &Tokenizer,
) -> Result<(Summary, f64), PackError> {
    let start = Instant::now();
    let mut packer = Packer::new(tokenizer, options, repos);
    let mut i = 0;
    while i < input.len() {
        let repo = input[i].repo.clone();
        let mut j = i;
        while j < input.len() && input[j].repo == repo {
            j += 1;
        }
        let mut kept: Vec<CalibratedProblem> = input[i..j]
            .iter()
            .filter(|r| r.exclusion.is_none())
            .cloned()
            .collect();
        packer.pack_repo(&repo, &mut kept, &mut |_, _| true, &mut |_| Ok(()))?;
        i = j;
    }
    Ok((packer.summary, start.elapsed().as_secs_f64()))
}

/// Prints a run's summary on stderr.
pub fn print_summary(summary: &Summary, secs: f64) {
    let per_task: Vec<String> = summary
        .instances
        .iter()
        .map(|(t, n)| format!("{t} {n}"))
        .collect();
    clover_protocol::diag!(
        "{TOOL}: {} instance(s) ({}) from {} problem(s) in {} repositor{}; {} excluded by \
         calibrate; {} judge-only; {} left out by --sample; {} prompt tokens in {secs:.2}s",
        summary.total_instances(),
        if per_task.is_empty() {
            "none".to_string()
        } else {
            per_task.join(", ")
        },
        summary.problems,
        summary.repos,
        if summary.repos == 1 { "y" } else { "ies" },
        summary.excluded,
        summary.judge_only,
        summary.sampled_out,
        summary.prompt_tokens,
    );
    for (why, n) in &summary.skipped {
        clover_protocol::diag!("{TOOL}: skipped {n}: {why}");
    }
    for f in &summary.unusable_files {
        clover_protocol::diag!("{TOOL}: warning: source file left out of contexts: {f}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(settings: Vec<Setting>) -> Vec<String> {
        settings.iter().map(Setting::to_string).collect()
    }

    /// The defaults are CLOVER's settings: Task III in contextual settings only unless
    /// problem-only (clover's addition) is asked for, and `--settings` overrides both.
    #[test]
    fn default_settings_are_the_papers() {
        let o = Options::default();
        assert_eq!(
            names(o.settings_for(Task::AssertionCloze)),
            ["po", "4k", "8k", "16k", "32k", "64k", "128k"]
        );
        assert_eq!(
            names(o.settings_for(Task::TargetedTest)),
            ["po", "8k", "16k", "32k", "64k"]
        );
        assert_eq!(names(o.settings_for(Task::CoverageTest)), ["64k", "128k"]);
        assert_eq!(names(o.settings_for(Task::CppUnitTest)), ["po"]);
        let with_po = Options {
            coverage_po: true,
            ..Options::default()
        };
        assert_eq!(
            names(with_po.settings_for(Task::CoverageTest)),
            ["po", "64k", "128k"]
        );
        let given = Options {
            coverage_po: true,
            settings: Some(parse_settings("8k").unwrap()),
            ..Options::default()
        };
        assert_eq!(names(given.settings_for(Task::CoverageTest)), ["8k"]);
    }
}
