//! The `clover-generate` binary: flags in, [`clover_generate::generate`] does the work.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use clover_generate::cli::{Cli, ModelKind};
use clover_generate::{
    prepare_resume, Baseline, ChatClient, ChatConfig, CommandModel, MaxContext, Model,
    SamplingPlan, SettingsMismatch, TaskSampling,
};
use clover_protocol::{diag, exit, finish_main, StageIo, Task};

const TOOL: &str = "clover-generate";

/// A flag missing or invalid: exit 2, as docs/ERRORS.md says for bad usage.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Usage(String);

macro_rules! usage {
    ($($arg:tt)*) => {
        return Err(Usage(format!($($arg)*)).into())
    };
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = run(cli);
    // Flags that do not fit the run, or do not fit the file --resume adds to, are bad usage.
    if let Some(e) = result.as_ref().err().filter(|e| {
        e.downcast_ref::<Usage>().is_some() || e.downcast_ref::<SettingsMismatch>().is_some()
    }) {
        diag!("{TOOL}: error: {e}");
        return ExitCode::from(exit::USAGE);
    }
    finish_main(TOOL, result)
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    let plan = sampling_plan(&cli)?;
    let max_context = match cli.max_context {
        Some(0) => usage!("--max-context must be a positive number of tokens"),
        Some(tokens) => Some(MaxContext::new(tokens, &plan)),
        None => None,
    };
    let (model, default_name) = build_model(&cli, plan)?;
    let name = cli.label.clone().unwrap_or(default_name);
    // `@` is where a response id's instance id ends and its model begins.
    if name.is_empty() || name.contains('@') {
        usage!("model name `{name}` must be non-empty and hold no `@`; choose one with --label");
    }
    let mut kept_errors = 0;
    if let (true, Some(output)) = (cli.stage.resume, &cli.stage.output) {
        let found = prepare_resume(
            output,
            &model,
            &name,
            max_context.as_ref(),
            !cli.no_retry_errors,
        )?;
        kept_errors = found.kept_errors;
        if found.retried > 0 {
            diag!(
                "{TOOL}: {} response(s) that ended in an error will be asked again (--no-retry-errors keeps them)",
                found.retried
            );
        }
    }
    let mut io = StageIo::open(TOOL, &cli.stage).context("opening input and output")?;
    let summary = clover_generate::generate(
        &mut io,
        &model,
        &name,
        max_context.as_ref(),
        cli.concurrency,
    )?;
    diag!(
        "{TOOL}: {} response(s) from {name}, {} with an error, {} already done",
        summary.written,
        summary.errors,
        summary.skipped
    );
    if summary.over_max_context > 0 {
        diag!(
            "{TOOL}: {} instance(s) not sent: the prompt and the answer reserve exceed --max-context",
            summary.over_max_context
        );
    }
    let code = io.finish()?;
    let errors = summary.errors + kept_errors;
    if errors > 0 {
        diag!(
            "{TOOL}: {errors} response(s) hold an error instead of an answer; rerun with --resume to ask for them again"
        );
        return Ok(code.max(exit::BAD_RECORDS));
    }
    Ok(code)
}

fn build_model(cli: &Cli, sampling: SamplingPlan) -> anyhow::Result<(Model, String)> {
    let Some(timeout) = Duration::try_from_secs_f64(cli.timeout_secs)
        .ok()
        .filter(|d| !d.is_zero())
    else {
        usage!("--timeout-secs must be a positive number of seconds");
    };
    if cli.model != ModelKind::Cmd && !cli.command.is_empty() {
        usage!("a command after `--` is only for --model cmd");
    }
    Ok(match cli.model {
        ModelKind::Oracle => (Model::Oracle, "oracle".into()),
        ModelKind::CopyOperand => (
            Model::Baseline(Baseline::CopyOperand),
            "copy-operand".into(),
        ),
        ModelKind::AssertTrue => (Model::Baseline(Baseline::AssertTrue), "assert-true".into()),
        ModelKind::Cmd => {
            if cli.command.is_empty() {
                usage!(
                    "--model cmd needs a command after `--`, e.g. --model cmd -- ./my-model --fast"
                );
            }
            (
                Model::Command(CommandModel {
                    argv: cli.command.clone(),
                    timeout,
                }),
                "cmd".into(),
            )
        }
        ModelKind::Openai => {
            let Some(base_url) = cli.base_url.clone() else {
                usage!("--model openai needs --base-url, e.g. http://127.0.0.1:8000/v1");
            };
            if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
                usage!(
                    "--base-url `{base_url}` must start with http:// or https://, e.g. http://{base_url}"
                );
            }
            let Some(model_name) = cli.model_name.clone().filter(|m| !m.is_empty()) else {
                usage!("--model openai needs --model-name, the model the server serves");
            };
            let api_key = std::env::var(&cli.api_key_env)
                .ok()
                .filter(|k| !k.is_empty());
            let client = ChatClient::new(ChatConfig {
                base_url,
                model_name: model_name.clone(),
                api_key,
                timeout,
                max_retries: cli.max_retries,
                backoff: Duration::from_millis(cli.backoff_ms),
                max_backoff: Duration::from_secs(60),
            });
            (
                Model::OpenAi {
                    client: Box::new(client),
                    sampling,
                },
                model_name,
            )
        }
    })
}

/// The sampling plan: the per-task defaults, then each flag in turn.
fn sampling_plan(cli: &Cli) -> anyhow::Result<SamplingPlan> {
    let mut plan = SamplingPlan {
        seed: cli.seed,
        stop: cli.stop.clone(),
        ..SamplingPlan::default()
    };
    if plan.stop.iter().any(String::is_empty) {
        usage!("--stop needs a non-empty sequence");
    }
    // The ranges the OpenAI API accepts; a server would refuse anything else on every request.
    type Set = fn(&mut TaskSampling, f64);
    let numbers: [(&str, &[String], f64, f64, Set); 4] = [
        ("--temperature", &cli.temperature, 0.0, 2.0, |t, v| {
            t.temperature = v
        }),
        ("--top-p", &cli.top_p, 0.0, 1.0, |t, v| t.top_p = v),
        (
            "--frequency-penalty",
            &cli.frequency_penalty,
            -2.0,
            2.0,
            |t, v| t.frequency_penalty = Some(v),
        ),
        (
            "--presence-penalty",
            &cli.presence_penalty,
            -2.0,
            2.0,
            |t, v| t.presence_penalty = Some(v),
        ),
    ];
    for (flag, specs, lo, hi, set) in numbers {
        let parse = |v: &str| v.parse::<f64>().ok().filter(|v| (lo..=hi).contains(v));
        let what = format!("a number from {lo} to {hi}");
        for spec in specs {
            per_task(&mut plan, flag, spec, parse, &what, set)?;
        }
    }
    for spec in &cli.max_tokens {
        let positive = |v: &str| v.parse::<u32>().ok().filter(|&n| n > 0);
        per_task(
            &mut plan,
            "--max-tokens",
            spec,
            positive,
            "a positive number",
            |t, v| t.max_tokens = v,
        )?;
    }
    Ok(plan)
}

/// Applies one `FLAG [TASK=]VALUE`: to every task, or to the task named.
fn per_task<V: Copy>(
    plan: &mut SamplingPlan,
    flag: &str,
    spec: &str,
    parse: impl Fn(&str) -> Option<V>,
    what: &str,
    set: impl Fn(&mut TaskSampling, V),
) -> anyhow::Result<()> {
    let (task, value) = match spec.split_once('=') {
        None => (None, spec),
        Some((task, value)) => (Some(task.trim()), value),
    };
    let Some(v) = parse(value.trim()) else {
        usage!("{flag} `{spec}`: `{value}` is not {what}");
    };
    match task {
        None => plan.tasks.values_mut().for_each(|t| set(t, v)),
        Some(name) => {
            let Ok(task) = serde_json::from_value::<Task>(serde_json::Value::String(name.into()))
            else {
                usage!(
                    "{flag} `{spec}`: unknown task `{name}`; use assertion_cloze, targeted_test, coverage_test or cpp_unit_test"
                );
            };
            let mut t = plan.task(task);
            set(&mut t, v);
            plan.tasks.insert(task, t);
        }
    }
    Ok(())
}
