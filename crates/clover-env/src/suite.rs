//! The suite's one run in the sandbox, under a time budget.

use std::path::Path;
use std::time::Duration;

use clover_protocol::{SuiteRun, TestOutcome};
use clover_pytest::{PytestRun, OUT_DIR};
use clover_sandbox::{ExitStatus, Limits, Sandbox, WriteFile};

use crate::build::Options;

/// A plugin that ends the session once the budget is spent, between two tests, as pytest's
/// own `-x` does (`session.shouldstop`): the session then ends as an interrupted one and its
/// JUnit report holds every test that ran. A sandbox's wall limit would leave no report.
const BUDGET_PLUGIN: &str = r#"import os, time

_deadline = time.monotonic() + float(os.environ.get("CLOVER_ENV_BUDGET", "0"))
_session = None


def pytest_sessionstart(session):
    global _session
    _session = session


def pytest_runtest_logfinish(nodeid, location):
    if _session is not None and time.monotonic() > _deadline:
        _session.shouldstop = "clover env: the time budget is spent"
"#;

const BUDGET_MODULE: &str = "_clover_env_budget";

/// Runs the repository's suite once with the environment's interpreter `python`, without
/// network, and counts its tests. Err: the sandbox could not run it at all.
pub fn run(opts: &Options, python: &Path, budget: Duration) -> Result<SuiteRun, String> {
    let sandbox = Sandbox::new().map_err(|e| format!("cannot make the sandbox: {e}"))?;
    let entry = opts.entry.clone().unwrap_or_default();
    let mut targets = vec!["-p".to_string(), BUDGET_MODULE.to_string()];
    targets.extend(entry.pytest_args.iter().cloned());
    for d in &entry.deselect {
        targets.push(format!("--deselect={}", d.test));
    }
    for i in &entry.ignore {
        targets.push(format!("--ignore={}", i.path));
    }
    let test_dirs: Vec<String> = if entry.test_dirs.is_empty() {
        clover_manifest::RepoConfig::detect(&opts.repo)
            .map(|r| {
                r.test_dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect()
            })
            .unwrap_or_default()
    } else {
        entry.test_dirs.clone()
    };
    targets.extend(test_dirs);
    let grace = Duration::from_secs(120);
    let limits = Limits {
        wall: budget + budget / 4 + grace,
        cpu_secs: (budget + budget / 4 + grace).as_secs() * 2,
        memory_bytes: 4 << 30,
        pids: 1024,
        tmpfs_bytes: 1 << 30,
        overlay_bytes: 2 << 30,
        cpus: 0.0,
        ..Limits::default()
    };
    let pytest = PytestRun {
        repo: opts.repo.clone(),
        python: python.to_path_buf(),
        targets,
        files: vec![WriteFile {
            path: format!("{OUT_DIR}/{BUDGET_MODULE}.py").into(),
            contents: BUDGET_PLUGIN.as_bytes().to_vec(),
        }],
        cov_sources: Vec::new(),
        cov_only: None,
        cov_contexts: false,
        witness: Vec::new(),
        env: vec![(
            "CLOVER_ENV_BUDGET".into(),
            budget.as_secs_f64().to_string().into(),
        )],
        limits,
    };
    let result = pytest
        .run(&sandbox)
        .map_err(|e| format!("the suite could not be run: {e}"))?;
    let count = |o: TestOutcome| result.tests.iter().filter(|t| t.outcome == o).count() as u64;
    let (passed, failed, errors, skipped) = (
        count(TestOutcome::Passed),
        count(TestOutcome::Failed),
        count(TestOutcome::Error),
        count(TestOutcome::Skipped),
    );
    let seconds = result.run.duration.as_secs_f64();
    let stopped = if result.run.limit_hit.is_some() {
        Some(format!(
            "the run hit its {} limit{}",
            result
                .run
                .limit_hit
                .map(|l| format!("{l:?}").to_lowercase())
                .unwrap_or_default(),
            result
                .message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        ))
    } else if result.run.exit == ExitStatus::Code(2) && result.run.duration >= budget {
        Some(format!(
            "its time budget of {} s was spent after {} tests",
            budget.as_secs(),
            passed + failed + errors + skipped
        ))
    } else {
        None
    };
    let ran = passed + failed + errors;
    Ok(SuiteRun {
        passed,
        failed,
        errors,
        skipped,
        seconds: (seconds * 10.0).round() / 10.0,
        outcome: result.outcome,
        message: result.message.clone(),
        stopped,
        usable: passed > 0 && passed * 2 >= ran,
    })
}
