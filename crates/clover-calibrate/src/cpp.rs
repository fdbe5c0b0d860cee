//! Calibration of a C++ problem: a source paired with its GoogleTest file.
//!
//! The ground-truth test file is compiled and linked once against the repository's library
//! (itself built once and cached by the sandbox's GoogleTest runner), and that binary is run
//! `runs` times as a whole: it must compile, and pass every time with the same covered lines.
//! Then the same binary runs every `TEST` alone (`--gtest_filter`) for its own lines; every run
//! is in a fresh view of the repository, so `.gcda` counters start from zero each time. A file
//! holding one empty `TEST` gives the `empty` lines (static initializers and the like), once
//! per repository ([`EmptyRuns`]). The TESTs of the file are each other's peers: a unique
//! block is a run of executable lines (as gcovr lists them) one TEST covers and no other.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use clover_gtest::{CppProject, GtestRun, LibraryCache};
use clover_manifest::RepoConfig;
use clover_protocol::{
    CalibratedProblem, CppProblem, Exclusion, ExclusionReason, GTestCase, LineRanges, Outcome,
    Problem, RecordKind, SCHEMA_VERSION,
};
use clover_sandbox::{Limits, OnceMap, Sandbox, WriteFile};

use crate::analysis::{self, CoverageMap};
use crate::GroupError;

/// The GoogleTest filter that selects one test case of the file.
pub fn gtest_filter(t: &GTestCase) -> String {
    match t.macro_name.as_str() {
        // Instantiations prefix the suite and number the parameters: `Inst/Suite.Name/0`.
        "TEST_P" => format!("*/{}.{}/*", t.suite, t.name),
        // Typed suites number the types: `Suite/0.Name`, `Inst/Suite/0.Name`.
        "TYPED_TEST" => format!("{}/*.{}", t.suite, t.name),
        "TYPED_TEST_P" => format!("*/{}/*.{}", t.suite, t.name),
        _ => format!("{}.{}", t.suite, t.name),
    }
}

/// The text of a test file holding one empty test: what any test gets without doing anything.
const EMPTY_TEST: &str = "#include <gtest/gtest.h>\n\nTEST(CloverEmpty, Empty) {}\n";

fn to_map(coverage: &[clover_protocol::FileCoverage]) -> CoverageMap {
    coverage
        .iter()
        .map(|f| (f.path.clone(), f.lines.clone()))
        .collect()
}

fn err(problem: &Problem, message: String) -> GroupError {
    GroupError::Problem {
        id: problem.id.clone(),
        message,
    }
}

/// A calibrated C++ problem, and the work it took.
#[derive(Debug)]
pub struct CppCalibration {
    pub record: CalibratedProblem,
    /// How many times a test file was compiled and linked: the ground truth once, whatever
    /// the number of runs and TESTs, and the empty test if this problem was the first of its
    /// repository to need it.
    pub test_builds: u32,
    /// Set when the problem is kept although its lines varied between runs, in files the
    /// benchmark takes nothing from (a background thread reaching another file).
    pub note: Option<String>,
}

/// What a file of one empty `TEST` covers in each repository. It is the same for every
/// problem of the repository (a run's lines are the library's files, whichever test file
/// instantiated them, and the library is built once), so it is built and run once per
/// repository and process; problems calibrated at the same time wait for that one run.
#[derive(Debug, Default)]
pub struct EmptyRuns {
    /// Per repository: the empty run's lines, or why there are none.
    by_repo: OnceMap<String, Result<Arc<EmptyRun>, String>>,
}

/// The empty test's covered lines, and the executable lines its run listed.
#[derive(Debug)]
struct EmptyRun {
    covered: CoverageMap,
    executable: CoverageMap,
}

/// Calibrates one C++ problem.
pub fn calibrate_cpp(
    sandbox: &Sandbox,
    cache: &LibraryCache,
    empties: &EmptyRuns,
    repo: &RepoConfig,
    problem: &Problem,
    runs: u32,
    limits: &Limits,
) -> Result<CppCalibration, GroupError> {
    let cpp: &CppProblem = problem
        .cpp
        .as_ref()
        .ok_or_else(|| err(problem, "not a C++ problem".into()))?;
    let project = CppProject::from_config(repo);
    let original = std::fs::read(repo.root.join(&cpp.test_path))
        .map_err(|e| err(problem, format!("cannot read {}: {e}", cpp.test_path)))?;
    let mut test_builds = 0;
    let mut build = |contents: Vec<u8>| {
        test_builds += 1;
        GtestRun {
            project: &project,
            test_file: WriteFile {
                path: PathBuf::from(&cpp.test_path),
                contents,
            },
            filter: Vec::new(),
            limits: limits.clone(),
        }
        .build(sandbox, cache)
        .map_err(|e| err(problem, e.to_string()))
    };
    let record =
        |exclusion, outcomes: Vec<Outcome>, cov: &Coverage, tiers, blocks| CalibratedProblem {
            kind: RecordKind::CalibratedProblem,
            schema_version: SCHEMA_VERSION,
            id: problem.id.clone(),
            repo: problem.repo.clone(),
            problem: problem.clone(),
            exclusion,
            base: analysis::to_records(&cov.base),
            empty: analysis::to_records(&cov.empty),
            tiers,
            unique_blocks: blocks,
            targets: Vec::new(),
            runs: outcomes,
        };
    // A problem left out: its record keeps the lines of its first run (`base`) only.
    let left_out = |exclusion, outcomes, base, test_builds| CppCalibration {
        record: record(
            Some(exclusion),
            outcomes,
            &Coverage {
                base,
                empty: CoverageMap::new(),
            },
            Vec::new(),
            Vec::new(),
        ),
        test_builds,
        note: None,
    };

    // The ground truth is built once; every run below is that binary in a fresh view.
    let binary = match build(original)? {
        Ok(binary) => binary,
        Err(failed) => {
            let e = Exclusion {
                reason: reason_of(failed.outcome),
                detail: failed.message.unwrap_or_default(),
            };
            return Ok(left_out(
                e,
                vec![failed.outcome],
                CoverageMap::new(),
                test_builds,
            ));
        }
    };
    let mut executable = CoverageMap::new();
    let mut run = |filter: Vec<String>| {
        let r = binary
            .run(sandbox, &filter, limits)
            .map_err(|e| err(problem, e.to_string()))?;
        let what = match filter.is_empty() {
            true => "the whole file".to_string(),
            false => format!("--gtest_filter={}", filter.join(":")),
        };
        measured(&r, &what).map_err(|m| err(problem, m))?;
        analysis::merge_lines(&mut executable, &to_map(&r.executable));
        Ok::<_, GroupError>(r)
    };

    let mut outcomes = Vec::new();
    let mut bases: Vec<CoverageMap> = Vec::new();
    let mut message = None;
    for _ in 0..runs.max(1) {
        let r = run(Vec::new())?;
        outcomes.push(r.outcome);
        bases.push(to_map(&r.coverage));
        if r.outcome != Outcome::Passed && message.is_none() {
            message = r.message.clone().or_else(|| {
                r.tests.iter().find_map(|t| {
                    t.message
                        .clone()
                        .map(|m| format!("{}.{}: {m}", t.classname, t.name))
                })
            });
        }
    }
    let first = outcomes[0];
    // The benchmark takes the focal source's lines (and its header's) from a C++ problem:
    // only a change there, or of the outcome, is flaky. Lines a background thread sometimes
    // reaches in another file are noted.
    let focal = |m: &CoverageMap| {
        [Some(&cpp.file_path), cpp.header_path.as_ref()]
            .into_iter()
            .flatten()
            .map(|f| m.get(f).cloned())
            .collect::<Vec<_>>()
    };
    let exclusion = match (1..outcomes.len())
        .find(|&r| outcomes[r] != first || focal(&bases[r]) != focal(&bases[0]))
    {
        Some(r) => Some(Exclusion {
            reason: ExclusionReason::Flaky,
            detail: if outcomes[r] != first {
                format!("run 1 {first:?}, run {} {:?}", r + 1, outcomes[r]).to_lowercase()
            } else {
                format!(
                    "covered lines of {} differ between run 1 and run {}",
                    cpp.file_path,
                    r + 1
                )
            },
        }),
        None if first != Outcome::Passed => Some(Exclusion {
            reason: reason_of(first),
            detail: message.unwrap_or_default(),
        }),
        None => None,
    };
    let note = (1..bases.len()).find_map(|r| {
        let file = analysis::differing_file(&bases[0], &bases[r])?;
        Some(format!(
            "covered lines of {file} differ between run 1 and run {}, in no file the benchmark uses",
            r + 1
        ))
    });
    if let Some(e) = exclusion {
        return Ok(left_out(e, outcomes, bases.swap_remove(0), test_builds));
    }

    // Each TEST alone, and the empty test. A TEST that passes with its file but not alone
    // depends on the others: its own lines cannot be told, so the problem is left out.
    let mut per_test: Vec<CoverageMap> = Vec::new();
    for t in &cpp.tests {
        let r = run(vec![gtest_filter(t)])?;
        if r.outcome != Outcome::Passed {
            let e = Exclusion {
                reason: match r.outcome {
                    Outcome::Timeout => ExclusionReason::Timeout,
                    _ => ExclusionReason::Flaky,
                },
                detail: format!(
                    "{}.{} passes with its file but is {:?} alone{}",
                    t.suite,
                    t.name,
                    r.outcome,
                    r.message.map(|m| format!(": {m}")).unwrap_or_default()
                )
                .to_lowercase(),
            };
            return Ok(left_out(e, outcomes, bases.swap_remove(0), test_builds));
        }
        per_test.push(to_map(&r.coverage));
    }
    // A sandbox failure is no verdict on the repository: the key is forgotten and a later
    // problem tries again.
    let run_empty = empties.by_repo.get_or_make(
        &repo.name,
        || -> Result<Result<Arc<EmptyRun>, String>, GroupError> {
            let empty_binary = match build(EMPTY_TEST.as_bytes().to_vec())? {
                Ok(b) => b,
                Err(failed) => {
                    return Ok(Err(format!(
                        "a file of one empty TEST does not build: {}",
                        failed.message.unwrap_or_default()
                    )))
                }
            };
            let r = empty_binary
                .run(sandbox, &[], limits)
                .map_err(|e| err(problem, e.to_string()))?;
            if r.outcome != Outcome::Passed {
                return Ok(Err(format!(
                    "a file of one empty TEST does not pass: {:?}: {}",
                    r.outcome,
                    r.message.unwrap_or_default()
                )));
            }
            if let Err(why) = measured(&r, "a file of one empty TEST") {
                return Ok(Err(why));
            }
            Ok(Ok(Arc::new(EmptyRun {
                covered: to_map(&r.coverage),
                executable: to_map(&r.executable),
            })))
        },
    )?;
    let empty = match run_empty {
        Some(Ok(run)) => {
            analysis::merge_lines(&mut executable, &run.executable);
            run.covered.clone()
        }
        None => {
            return Err(err(
                problem,
                "the run of a file of one empty TEST could not be carried out".into(),
            ))
        }
        Some(Err(why)) => return Err(err(problem, why)),
    };
    let cov = Coverage {
        base: bases.swap_remove(0),
        empty,
    };

    let sources: Vec<String> = {
        let mut s: Vec<String> = cov.base.keys().chain(cov.empty.keys()).cloned().collect();
        s.sort();
        s.dedup();
        s
    };
    let texts: BTreeMap<String, String> = sources
        .iter()
        .filter_map(|p| Some((p.clone(), std::fs::read_to_string(repo.root.join(p)).ok()?)))
        .collect();
    // Blocks of every TEST of the file, each against the others; the TESTs' blocks are
    // disjoint, so they are pooled and the largest kept.
    let mut runs_found = Vec::new();
    let mut unique_anywhere: BTreeMap<String, LineRanges> = BTreeMap::new();
    for (i, mine) in per_test.iter().enumerate() {
        let peers: Vec<&CoverageMap> = per_test
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, m)| m)
            .collect();
        runs_found.extend(analysis::block_runs(mine, &peers, &executable));
        for (path, lines) in mine {
            let others: LineRanges = peers
                .iter()
                .filter_map(|p| p.get(path))
                .fold(LineRanges::new(), |acc, l| acc.union(l));
            let only = lines.difference(&others);
            if !only.is_empty() {
                let entry = unique_anywhere.entry(path.clone()).or_default();
                *entry = entry.union(&only);
            }
        }
    }
    let blocks = analysis::select_blocks(runs_found, |p| texts.get(p).cloned());
    let tiers = analysis::tiers_by(&sources, &cov.base, &cov.empty, |p| {
        unique_anywhere.contains_key(p)
    });
    let record = record(None, outcomes, &cov, tiers, blocks);
    Ok(CppCalibration {
        record,
        test_builds,
        note,
    })
}

/// `Err` when a run that ended by itself has no whole coverage: lines lost to the sandbox or
/// to gcovr would silently move unique blocks and tiers, so they stop the problem instead.
fn measured(r: &clover_gtest::GtestResult, what: &str) -> Result<(), String> {
    match &r.coverage_problem {
        None => Ok(()),
        Some(why) => Err(format!(
            "the coverage of the run of {what} cannot be measured: {why}"
        )),
    }
}

/// The ground truth's lines (its first run) and the empty test's.
#[derive(Debug)]
struct Coverage {
    base: CoverageMap,
    empty: CoverageMap,
}

fn reason_of(outcome: Outcome) -> ExclusionReason {
    match outcome {
        Outcome::CompileError => ExclusionReason::CompileError,
        Outcome::Failed => ExclusionReason::Failed,
        Outcome::Timeout => ExclusionReason::Timeout,
        _ => ExclusionReason::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clover_protocol::Span;

    #[test]
    fn filters_name_each_kind_of_test() {
        let t = |m: &str| GTestCase {
            macro_name: m.into(),
            suite: "Ring".into(),
            name: "Wraps".into(),
            span: Span::default(),
        };
        assert_eq!(gtest_filter(&t("TEST")), "Ring.Wraps");
        assert_eq!(gtest_filter(&t("TEST_F")), "Ring.Wraps");
        assert_eq!(gtest_filter(&t("TEST_P")), "*/Ring.Wraps/*");
        assert_eq!(gtest_filter(&t("TYPED_TEST")), "Ring/*.Wraps");
        assert_eq!(gtest_filter(&t("TYPED_TEST_P")), "*/Ring/*.Wraps");
    }
}
