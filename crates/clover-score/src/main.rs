//! The `clover-score` binary: run results in, a report out.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, ValueEnum};
use clover_generate::{ChatClient, ChatConfig};
use clover_protocol::{
    exit, finish_main, BadRecords, Instance, OnError, RecordReader, RecordWriter, RunResult,
    Stopped, Task, DEFAULT_MAX_LINE_BYTES,
};
use clover_score::{run_judge, ConstantReading, Judge, JudgeItem, JudgeOrder, Scorer};

const TOOL: &str = "clover-score";

/// Score run results: metrics per model × task × setting (× repository), context
/// utilization, an optional LLM judge; as a table, JSON, ScoreRow JSON Lines or HTML.
#[derive(Debug, Parser)]
#[command(name = TOOL, version)]
struct Cli {
    /// Run-result files (JSON Lines); `-` or nothing reads stdin. Several models' results
    /// combine into one report.
    #[arg(value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// Write the report to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Add a row per repository besides the all-repository rows.
    #[arg(long)]
    by_repo: bool,
    /// What RER counts as a constant: `ast` is Python's `ast.Constant`, CLOVER's definition
    /// (`-3` and `(1, 2)` are not constants); `clover` also counts signed numbers and tuples of
    /// constants.
    #[arg(long, value_enum, default_value_t = RerConstants::Ast)]
    rer_constants: RerConstants,
    /// What to do with a bad input record.
    #[arg(long, value_enum, default_value_t = OnError::Skip)]
    on_error: OnError,
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES, value_name = "BYTES")]
    max_line_bytes: usize,
    /// Ask a judge model to compare answers pairwise (CPP-UT-Bench's evaluation).
    #[arg(long, value_enum)]
    judge: Option<JudgeKind>,
    /// judge: the API root, e.g. http://127.0.0.1:8000/v1.
    #[arg(long, value_name = "URL")]
    judge_base_url: Option<String>,
    /// judge: the model name sent with each request.
    #[arg(long, value_name = "NAME")]
    judge_model_name: Option<String>,
    /// judge: the environment variable holding the API key.
    #[arg(long, default_value = "OPENAI_API_KEY", value_name = "VAR")]
    judge_api_key_env: String,
    /// judge: the tasks judged (repeatable).
    #[arg(long, value_name = "TASK", default_value = "cpp_unit_test")]
    judge_task: Vec<String>,
    /// judge: models left out of the pairs (repeatable; the oracle's answer is the ground truth).
    #[arg(long, value_name = "MODEL", default_value = "oracle")]
    judge_exclude: Vec<String>,
    #[arg(long, default_value_t = 4, value_name = "N")]
    judge_concurrency: usize,
    #[arg(long, default_value_t = 120.0, value_name = "SECS")]
    judge_timeout_secs: f64,
    #[arg(long, default_value_t = 5, value_name = "N")]
    judge_max_retries: u32,
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    judge_backoff_ms: u64,
    /// judge: `both` asks each pair in both orders and counts a win only when both agree
    /// (clover's reading, the default); `single` asks once, as CPP-UT-Bench does, the first
    /// model by name in position A (see --judge-swap-seed).
    #[arg(long, value_enum, default_value_t = JudgeOrderArg::Both)]
    judge_order: JudgeOrderArg,
    /// judge, with --judge-order single: swap A and B for the pairs a hash of this seed picks
    /// (about half), instead of always showing the first model as A.
    #[arg(long, value_name = "SEED", requires = "judge_order")]
    judge_swap_seed: Option<u64>,
    /// judge: the instances file, for the ground truth; without it, the oracle's results in
    /// the input serve as the ground truth.
    #[arg(long, value_name = "FILE")]
    instances: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Markdown tables, readable on a terminal.
    Table,
    Markdown,
    Json,
    /// ScoreRow records, one per line.
    Jsonl,
    Html,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RerConstants {
    Ast,
    Clover,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum JudgeOrderArg {
    Both,
    Single,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum JudgeKind {
    /// An OpenAI-compatible chat-completions server.
    Openai,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    finish_main(TOOL, run(cli))
}

fn parse_task(s: &str) -> anyhow::Result<Task> {
    serde_json::from_value(serde_json::Value::String(s.into())).map_err(|_| {
        anyhow::anyhow!("unknown task `{s}`; use assertion_cloze, targeted_test, coverage_test or cpp_unit_test")
    })
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    let judge = match cli.judge {
        None => None,
        Some(JudgeKind::Openai) => Some(build_judge(&cli)?),
    };
    let judge_tasks: Vec<Task> = cli
        .judge_task
        .iter()
        .map(|t| parse_task(t))
        .collect::<anyhow::Result<_>>()?;
    let mut scorer = Scorer::new(cli.by_repo).with_rer_constants(match cli.rer_constants {
        RerConstants::Ast => ConstantReading::Ast,
        RerConstants::Clover => ConstantReading::Clover,
    });
    let mut items: Vec<JudgeItem> = Vec::new();
    let mut references: HashMap<String, String> = HashMap::new();
    let mut bad = BadRecords::default();
    let inputs: Vec<Option<&Path>> = if cli.inputs.is_empty() {
        vec![None]
    } else {
        cli.inputs
            .iter()
            .map(|p| (p.as_os_str() != "-").then_some(p.as_path()))
            .collect()
    };
    for input in inputs {
        let mut reader = RecordReader::open(input, cli.max_line_bytes).with_context(|| {
            format!(
                "opening {}",
                input.map_or("stdin".into(), |p| p.display().to_string())
            )
        })?;
        while let Some(next) = reader.next_record::<RunResult>() {
            match next {
                Ok((_, r)) => {
                    scorer.add(&r);
                    if judge.is_some() && r.task.is_some_and(|t| judge_tasks.contains(&t)) {
                        let answer = r.answer.clone().or(r.candidate.clone()).unwrap_or_default();
                        if r.model == "oracle" && cli.instances.is_none() {
                            references.insert(r.instance_id.clone(), answer.clone());
                        }
                        items.push(JudgeItem {
                            instance_id: r.instance_id,
                            task: r.task.expect("checked"),
                            setting: r.setting,
                            model: r.model,
                            answer,
                        });
                    }
                }
                Err(e) => {
                    if !e.is_recoverable() {
                        return Err(e.into());
                    }
                    bad.report(TOOL, &e);
                    if cli.on_error == OnError::Stop {
                        return Err(Stopped.into());
                    }
                }
            }
        }
    }
    if scorer.untasked > 0 {
        eprintln!(
            "{TOOL}: warning: {} result(s) without a task were not scored",
            scorer.untasked
        );
    }
    let mut report = scorer.report();
    let mut judge_failed = false;
    if let Some(judge) = &judge {
        if let Some(path) = &cli.instances {
            bad.count += read_references(path, &cli, &mut references)?;
        }
        let (rows, missing, failures) = run_judge(judge, &items, &references, &cli.judge_exclude);
        if missing > 0 {
            eprintln!("{TOOL}: warning: {missing} instance(s) had no ground truth and were not judged; pass --instances or include the oracle's results");
        }
        if failures.failed_requests + failures.unreadable_answers > 0 {
            // A judge that could not be asked is no verdict: say so, and fail the run.
            eprintln!(
                "{TOOL}: warning: the judge failed {} request(s) and gave {} unreadable answer(s); those pairs are `undecided`, in no rate (check --judge-base-url, --judge-model-name and the key)",
                failures.failed_requests, failures.unreadable_answers
            );
            judge_failed = true;
        }
        report.judge = rows;
    }
    write_report(&cli, &report)?;
    if judge_failed {
        return Ok(exit::BAD_RECORDS);
    }
    bad.summarize(TOOL);
    Ok(if bad.count > 0 {
        eprintln!("{TOOL}: {} bad record(s) reported above", bad.count);
        exit::BAD_RECORDS
    } else {
        exit::OK
    })
}

fn build_judge(cli: &Cli) -> anyhow::Result<Judge> {
    let base_url = cli
        .judge_base_url
        .clone()
        .context("--judge openai needs --judge-base-url, e.g. http://127.0.0.1:8000/v1")?;
    let model_name = cli
        .judge_model_name
        .clone()
        .context("--judge openai needs --judge-model-name")?;
    let timeout = Duration::try_from_secs_f64(cli.judge_timeout_secs)
        .ok()
        .filter(|d| !d.is_zero())
        .context("--judge-timeout-secs must be a positive number of seconds")?;
    Ok(Judge {
        client: ChatClient::new(ChatConfig {
            base_url,
            model_name,
            api_key: std::env::var(&cli.judge_api_key_env)
                .ok()
                .filter(|k| !k.is_empty()),
            timeout,
            max_retries: cli.judge_max_retries,
            backoff: Duration::from_millis(cli.judge_backoff_ms),
            max_backoff: Duration::from_secs(60),
        }),
        concurrency: cli.judge_concurrency,
        order: match cli.judge_order {
            JudgeOrderArg::Both => JudgeOrder::Both,
            JudgeOrderArg::Single => JudgeOrder::Single {
                swap_seed: cli.judge_swap_seed,
            },
        },
    })
}

/// Reads the ground truth of each instance in `path`; a bad line is reported like one of the
/// results' and counted (the count is returned), and the other lines are read.
fn read_references(
    path: &Path,
    cli: &Cli,
    into: &mut HashMap<String, String>,
) -> anyhow::Result<u64> {
    let mut reader = RecordReader::open(Some(path), cli.max_line_bytes)
        .with_context(|| format!("opening {}", path.display()))?;
    let mut bad = 0;
    while let Some(next) = reader.next_record::<Instance>() {
        let i = match next {
            Ok((_, i)) => i,
            Err(e) if e.is_recoverable() => {
                bad += 1;
                eprintln!("{TOOL}: error: {e}");
                if cli.on_error == OnError::Stop {
                    return Err(Stopped.into());
                }
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        // sandbox-run gives the chunks of a C++ source one result, under the id of the whole
        // file; every chunk holds the whole file's test as its reference.
        let file = i.file_instance_id();
        if file != i.id {
            into.insert(file.to_string(), i.reference.clone());
        }
        into.insert(i.id, i.reference);
    }
    Ok(bad)
}

fn write_report(cli: &Cli, report: &clover_score::Report) -> anyhow::Result<()> {
    if cli.format == Format::Jsonl {
        let (mut writer, _) = match &cli.output {
            Some(path) => RecordWriter::create(path, false)?,
            None => (RecordWriter::stdout(), Default::default()),
        };
        for row in clover_score::to_score_rows(report) {
            writer.write(&row)?;
        }
        writer.finish()?;
        return Ok(());
    }
    let text = match cli.format {
        Format::Table | Format::Markdown => clover_score::to_markdown(report),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&clover_score::to_json(report))?;
            s.push('\n');
            s
        }
        Format::Html => clover_score::to_html(report),
        Format::Jsonl => unreachable!("handled above"),
    };
    match &cli.output {
        Some(path) => {
            // Written beside the target and renamed, so FILE is always whole.
            clover_protocol::write_whole(path, text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(())
}
