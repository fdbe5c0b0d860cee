//! `cargo xtask corpus-extract`: do the problem files extract writes run on their own as the
//! original tests did? On real packages nobody here wrote.
//!
//! For each package: extract its problems; run each original test file once in the sandbox
//! (JUnit report, no coverage) to learn which tests pass; calibrate every problem once (its
//! problem file in the sandbox, through the calibrate library); and count, among the problems
//! whose original test passed, those whose problem file passed too. Every failure is listed
//! with its reason. Results come from JUnit reports, never from pytest's console output.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use clover_manifest::RepoConfig;
use clover_protocol::{Problem, TestOutcome};
use clover_pytest::PytestRun;
use clover_sandbox::{Limits, Sandbox};
use rayon::prelude::*;

use crate::corpus;

/// One package's figures.
pub struct Share {
    pub name: String,
    pub problems: usize,
    pub original_pass: usize,
    pub problem_pass: usize,
    pub failures: Vec<String>,
}

/// Checks the named packages (default: the ones the test suite uses) and prints the figures;
/// with `write`, also replaces this command's section of `docs/BENCHMARKS.md`.
pub fn run(root: &Path, names: &[String], write: bool) -> Result<Vec<Share>> {
    let names: Vec<String> = if names.is_empty() {
        corpus::FOR_TESTS.iter().map(|s| s.to_string()).collect()
    } else {
        names.to_vec()
    };
    corpus::ensure(root, &names)?;
    let manifest = root.join("target/corpus/clover.toml");
    let sandbox = Sandbox::new().context("the sandbox is needed (run as root)")?;
    let mut shares = Vec::new();
    for name in &names {
        let repo = RepoConfig::resolve(Some(&manifest), Some(name), None)?.remove(0);
        let share = check(&sandbox, &repo)?;
        println!(
            "{}: {} problems, {} pass in the original suite, {} of those pass as problem files ({:.1}%)",
            share.name,
            share.problems,
            share.original_pass,
            share.problem_pass,
            percent(share.problem_pass, share.original_pass)
        );
        for f in &share.failures {
            println!("  {f}");
        }
        shares.push(share);
    }
    if write {
        write_section(root, &shares)?;
    }
    Ok(shares)
}

fn percent(a: usize, b: usize) -> f64 {
    100.0 * a as f64 / b.max(1) as f64
}

fn limits() -> Limits {
    Limits {
        wall: Duration::from_secs(600),
        cpu_secs: 1200,
        ..Limits::default()
    }
}

fn check(sandbox: &Sandbox, repo: &RepoConfig) -> Result<Share> {
    let opts = clover_extract::ExtractOptions::from_repo(repo);
    let problems = clover_extract::extract(&opts)?.problems;
    let python = repo
        .python
        .clone()
        .context("the corpus manifest names no interpreter")?;

    // Problems by original test file, in extract's order.
    let mut by_file: BTreeMap<String, Vec<Problem>> = BTreeMap::new();
    for p in &problems {
        if let Some(py) = &p.python {
            by_file
                .entry(py.test_file.clone())
                .or_default()
                .push(p.clone());
        }
    }
    let files: Vec<(&String, &Vec<Problem>)> = by_file.iter().collect();
    let results: Vec<Result<(usize, usize, Vec<String>)>> = files
        .par_iter()
        .map(|(file, group)| {
            // Which original tests pass: outcome per node id, parameters folded (all must pass).
            let run = PytestRun {
                repo: repo.root.clone(),
                python: python.clone(),
                targets: vec![(*file).clone()],
                files: Vec::new(),
                cov_sources: Vec::new(),
                cov_only: None,
                cov_contexts: false,
                witness: Vec::new(),
                env: repo.env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
                limits: limits(),
            }
            .run(sandbox)?;
            // A test passes when a case passed and none failed (skipped cases count neither
            // way), the rule calibrate applies to problem files.
            let mut original: HashMap<String, (bool, bool)> = HashMap::new();
            for case in &run.tests {
                if let Some(node) = clover_calibrate::node_of_case(case, &[file.as_str()]) {
                    let (passed, failed) = original.entry(node).or_default();
                    match case.outcome {
                        TestOutcome::Passed => *passed = true,
                        TestOutcome::Skipped => {}
                        TestOutcome::Failed | TestOutcome::Error => *failed = true,
                    }
                }
            }
            let opts = clover_calibrate::CalibrateOptions {
                runs: 1,
                per_test: false,
                python: python.clone(),
                limits: limits(),
                warm: None,
                statements: Default::default(),
            };
            let calibrated = clover_calibrate::calibrate_group(sandbox, repo, group, &opts)?;
            let (mut base, mut pass, mut failures) = (0, 0, Vec::new());
            for (p, c) in group.iter().zip(&calibrated) {
                let py = p.python.as_ref().expect("a Python problem");
                let original_node = match &py.class {
                    Some(class) => format!("{file}::{class}::{}", py.name),
                    None => format!("{file}::{}", py.name),
                };
                if original.get(&original_node) != Some(&(true, false)) {
                    continue;
                }
                base += 1;
                match &c.exclusion {
                    None => pass += 1,
                    Some(e) => {
                        let cause = KNOWN
                            .iter()
                            .find(|(id, _)| *id == p.id)
                            .map_or(String::new(), |(_, why)| format!(" — why: {why}"));
                        failures.push(format!(
                            "FAIL {}: {:?}: {}{cause}",
                            p.id,
                            e.reason,
                            e.detail.lines().next().unwrap_or("")
                        ))
                    }
                }
            }
            Ok((base, pass, failures))
        })
        .collect();
    let mut share = Share {
        name: repo.name.clone(),
        problems: problems.len(),
        original_pass: 0,
        problem_pass: 0,
        failures: Vec::new(),
    };
    for r in results {
        let (base, pass, failures) = r?;
        share.original_pass += base;
        share.problem_pass += pass;
        share.failures.extend(failures);
    }
    Ok(share)
}

/// Why known failures fail: (problem id, cause). A problem file is a different module from the
/// original test file, so a test that checks its own module's name cannot pass; a helper that
/// a test reaches only through a string (an import path) is not seen by extract's name tracing.
const KNOWN: &[(&str, &str)] = &[
    ("click/tests/test_options.py::test_custom_type_flag_value_dual_options", "asserts the repr of a class defined in the test module, which names the module (`test_options.Class2`)"),
    ("click/tests/test_options.py::test_callable_flag_value_not_instantiated", "asserts the repr of a class defined in the test module, which names the module"),
    ("jinja2/tests/test_utils.py::TestHelpers::test_object_type_repr", "asserts `test_utils.X object`, the test module's name"),
    ("jinja2/tests/test_debug.py::TestDebug::test_runtime_error", "matches a traceback that names the test file"),
    ("jinja2/tests/test_debug.py::TestDebug::test_regular_syntax_error", "matches a traceback that names the test file"),
    ("jinja2/tests/test_ext.py::TestExtensions::test_extension_nodes", "reaches `importable_object` only through the import string `__name__ + \":importable_object\"`, so extract drops it"),
    ("jinja2/tests/test_ext.py::TestExtensions::test_contextreference_node_passes_context", "reaches `importable_object` only through an import string"),
    ("jinja2/tests/test_ext.py::TestExtensions::test_contextreference_node_can_pass_locals", "reaches `importable_object` only through an import string"),
    ("jinja2/tests/test_async_filters.py::test_join_attribute", "not yet understood: the rendered usernames come out empty in the problem file"),
];

const BEGIN: &str = "<!-- corpus-extract: begin -->";
const END: &str = "<!-- corpus-extract: end -->";

/// Replaces this command's section of `docs/BENCHMARKS.md`, leaving the rest as it is.
fn write_section(root: &Path, shares: &[Share]) -> Result<()> {
    let mut section = String::new();
    writeln!(section, "{BEGIN}")?;
    writeln!(section, "## Problem files that pass on their own\n")?;
    writeln!(section, "Measured by `cargo xtask corpus-extract --write {}`: every problem file extracted from a test that", shares.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(" "))?;
    writeln!(
        section,
        "passes in the package's own suite, run in the sandbox (JUnit reports).\n"
    )?;
    writeln!(
        section,
        "| package | problems | original test passes | problem file passes | share |"
    )?;
    writeln!(section, "|---|---|---|---|---|")?;
    for s in shares {
        writeln!(
            section,
            "| {} | {} | {} | {} | {:.1}% |",
            s.name,
            s.problems,
            s.original_pass,
            s.problem_pass,
            percent(s.problem_pass, s.original_pass)
        )?;
    }
    let failures: Vec<&String> = shares.iter().flat_map(|s| &s.failures).collect();
    if !failures.is_empty() {
        writeln!(section, "\nFailures:\n")?;
        for f in failures {
            writeln!(section, "- {f}")?;
        }
    }
    writeln!(section, "{END}")?;
    crate::docs::replace_section(root, BEGIN, END, &section)
}
