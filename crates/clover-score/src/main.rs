//! The `clover-score` binary: run results in, a report out.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use clover_generate::{ChatClient, ChatConfig};
use clover_protocol::{
    diag, exit, finish_main, BadRecords, Instance, OnError, RecordReader, RecordWriter, RunResult,
    Stopped, Task,
};
use clover_protocol::{Problem, Record, Response, Usage};
use clover_score::cli::{Cli, Format, JudgeKind, JudgeOrderArg, RerConstants, Tables};
use clover_score::{
    run_judge, Bootstrap, ConstantReading, DatasetStats, Judge, JudgeItem, JudgeOrder, RunMeta,
    Scorer,
};

const TOOL: &str = "clover-score";

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
    if cli.tables == Tables::Paper && cli.format == Format::Jsonl {
        return Err(Usage(
            "--tables paper prints tables, not ScoreRow records: use --format table, markdown, json or html".into(),
        )
        .into());
    }
    let html = cli.format == Format::Html && cli.tables == Tables::Clover;
    // The HTML report draws a chart per repository, so it always groups by repository.
    let mut scorer = Scorer::new(cli.by_repo || html)
        .with_rer_constants(match cli.rer_constants {
            RerConstants::Ast => ConstantReading::Ast,
            RerConstants::Clover => ConstantReading::Clover,
        })
        .with_bootstrap(Bootstrap {
            replicates: cli.bootstrap,
            seed: cli.bootstrap_seed,
        });
    if let (true, Some(folder)) = (html, cli.output.as_deref().and_then(samples_folder)) {
        scorer = scorer.with_samples(&folder);
    }
    let mut meta = RunMeta {
        date: run_date(&cli)?,
        version: env!("CARGO_PKG_VERSION").into(),
        ..RunMeta::default()
    };
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
        let name = input.map_or("stdin".into(), |p| p.display().to_string());
        let mut reader = RecordReader::open(input, cli.max_line_bytes)
            .with_context(|| format!("opening {name}"))?;
        let mut read = 0;
        while let Some(next) = reader.next_record::<RunResult>() {
            match next {
                Ok((_, r)) => {
                    read += 1;
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
                            judge_only: r.outcome == clover_protocol::Outcome::JudgeOnly,
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
        meta.inputs.push((name, read));
    }
    for path in &cli.responses {
        let mut read = 0;
        bad.count += read_records::<Response>(path, &cli, |r| {
            read += 1;
            meta.add_response(&r);
        })?;
        meta.responses.push((path.display().to_string(), read));
    }
    let mut stats = DatasetStats::default();
    // Problems first: a pair's problem record says what it is, its instances add tokens.
    for path in &cli.problems {
        bad.count += read_records::<Problem>(path, &cli, |p| stats.add_problem(&p))?;
    }
    if let Some(path) = &cli.instances {
        bad.count += read_records::<Instance>(path, &cli, |i| {
            stats.add(&i);
            // sandbox-run gives the chunks of a C++ source one result, under the id of the
            // whole file; every chunk holds the whole file's test as its reference.
            let file = i.file_instance_id();
            if file != i.id {
                references.insert(file.to_string(), i.reference.clone());
            }
            references.insert(i.id, i.reference);
        })?;
    }
    if scorer.untasked > 0 {
        diag!(
            "{TOOL}: warning: {} result(s) without a task were not scored",
            scorer.untasked
        );
    }
    let mut report = scorer.report();
    report.meta = RunMeta {
        bootstrap: report.meta.bootstrap,
        ..meta
    };
    let mut judge_failed = false;
    if let Some(judge) = &judge {
        let (rows, missing, failures) = run_judge(judge, &items, &references, &cli.judge_exclude);
        if missing > 0 {
            diag!("{TOOL}: warning: {missing} instance(s) had no ground truth and were not judged; pass --instances or include the oracle's results");
        }
        if failures.failed_requests + failures.unreadable_answers > 0 {
            // A judge that could not be asked is no verdict: say so, and fail the run.
            diag!(
                "{TOOL}: warning: the judge failed {} request(s) and gave {} unreadable answer(s); those pairs are `undecided`, in no rate (check --judge-base-url, --judge-model-name and the key)",
                failures.failed_requests, failures.unreadable_answers
            );
            judge_failed = true;
        }
        report.judge = rows;
    }
    if let Some(path) = &cli.manifest {
        let manifest = clover_manifest::Manifest::load(path)?;
        for repo in manifest
            .repos
            .iter()
            .filter(|r| r.language == clover_protocol::Language::Cpp)
        {
            stats.add_repo_domain(&repo.name, repo.domain.as_deref());
        }
    }
    let stats = (cli.instances.is_some() || !cli.problems.is_empty() || cli.manifest.is_some())
        .then_some(&stats);
    write_report(&cli, &report, stats)?;
    if judge_failed {
        return Ok(exit::BAD_RECORDS);
    }
    bad.summarize(TOOL);
    Ok(if bad.count > 0 {
        diag!("{TOOL}: {} bad record(s) reported above", bad.count);
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

/// The run's date: `--date` as given, else `SOURCE_DATE_EPOCH`, else none (never the clock).
fn run_date(cli: &Cli) -> anyhow::Result<Option<String>> {
    if let Some(date) = &cli.date {
        return Ok(Some(date.clone()));
    }
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.trim().is_empty() => {
            let secs: i64 = v.trim().parse().map_err(|_| {
                Usage(format!(
                    "SOURCE_DATE_EPOCH is `{v}`, not a number of seconds since 1970; unset it or pass --date"
                ))
            })?;
            Ok(Some(clover_score::date_from_epoch(secs)))
        }
        _ => Ok(None),
    }
}

/// The samples folder of an HTML report at `output`: `report.samples` beside `report.html`,
/// named relative to the report so its links work wherever the pair is moved. An output that
/// exists and is no regular file (`-o /dev/null`, a FIFO) gets none: as root, a folder beside
/// `/dev/null` would be made in the host's `/dev`.
fn samples_folder(output: &Path) -> Option<String> {
    if std::fs::metadata(output).is_ok_and(|m| !m.is_file()) {
        return None;
    }
    let stem = output.file_stem()?.to_str()?;
    Some(format!("{stem}.samples"))
}

/// Reads every record of `path` into `each`; a bad line is reported like one of the results'
/// and counted (the count is returned), and the other lines are read.
fn read_records<T: Record>(path: &Path, cli: &Cli, mut each: impl FnMut(T)) -> anyhow::Result<u64> {
    let mut reader = RecordReader::open(Some(path), cli.max_line_bytes)
        .with_context(|| format!("opening {}", path.display()))?;
    let mut bad = 0;
    while let Some(next) = reader.next_record::<T>() {
        match next {
            Ok((_, record)) => each(record),
            Err(e) if e.is_recoverable() => {
                bad += 1;
                diag!("{TOOL}: error: {e}");
                if cli.on_error == OnError::Stop {
                    return Err(Stopped.into());
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(bad)
}

/// Writes each row's samples file (under the report's folder, emptied of the `.jsonl` files
/// of an earlier run first, so no stale row is left linked to nothing).
fn write_samples(output: &Path, report: &clover_score::Report) -> anyhow::Result<()> {
    let base = output.parent().unwrap_or(Path::new(""));
    let Some(folder) = samples_folder(output) else {
        return Ok(());
    };
    let dir = base.join(&folder);
    if dir.is_dir() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing {}", path.display()))?;
            }
        }
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for (href, lines) in &report.samples {
        let path = base.join(href);
        let mut text = String::new();
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
        clover_protocol::write_whole(&path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn write_report(
    cli: &Cli,
    report: &clover_score::Report,
    stats: Option<&DatasetStats>,
) -> anyhow::Result<()> {
    if cli.tables == Tables::Paper {
        let tables = clover_score::paper_tables(report, stats);
        let text = match cli.format {
            Format::Json => {
                let mut s =
                    serde_json::to_string_pretty(&clover_score::paper_json(&tables, report))?;
                s.push('\n');
                s
            }
            Format::Html => clover_score::paper_html(&tables, report, stats),
            _ => clover_score::paper_markdown(&tables),
        };
        return write_text(cli, &text);
    }
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
        Format::Html => {
            // The samples first: the page that links to them is the last thing written.
            if let Some(path) = &cli.output {
                write_samples(path, report)?;
            }
            clover_score::to_html(report)
        }
        Format::Jsonl => unreachable!("handled above"),
    };
    write_text(cli, &text)
}

/// Writes `text` to `-o FILE` (whole, through a rename) or stdout.
fn write_text(cli: &Cli, text: &str) -> anyhow::Result<()> {
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
