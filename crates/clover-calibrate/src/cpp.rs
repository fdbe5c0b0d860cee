//! Calibration of a C++ problem: a source paired with its GoogleTest file.
//!
//! The ground-truth test file is compiled against the repository's library (built once and
//! cached by the sandbox's GoogleTest runner) and run `runs` times as a whole: it must compile
//! and pass every time, with the same covered lines. Then every `TEST` runs alone
//! (`--gtest_filter`, fresh counters in a fresh view) for its own lines, and a file holding one
//! empty `TEST` gives the `empty` lines (static initializers and the like). The TESTs of the
//! file are each other's peers: a unique block is a run of lines one TEST covers and no other.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clover_manifest::RepoConfig;
use clover_protocol::{
    CalibratedProblem, CppProblem, Exclusion, ExclusionReason, GTestCase, LineRanges, Outcome,
    Problem, RecordKind, UniqueBlock, SCHEMA_VERSION,
};
use clover_sandbox::gtest::{CppProject, GtestRun, LibraryCache};
use clover_sandbox::{Limits, Sandbox, WriteFile};

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

/// Calibrates one C++ problem.
pub fn calibrate_cpp(
    sandbox: &Sandbox,
    cache: &LibraryCache,
    repo: &RepoConfig,
    problem: &Problem,
    runs: u32,
    limits: &Limits,
) -> Result<CalibratedProblem, GroupError> {
    let cpp: &CppProblem = problem
        .cpp
        .as_ref()
        .ok_or_else(|| err(problem, "not a C++ problem".into()))?;
    let project = CppProject::from_config(repo);
    let original = std::fs::read(repo.root.join(&cpp.test_path))
        .map_err(|e| err(problem, format!("cannot read {}: {e}", cpp.test_path)))?;
    let run = |contents: Vec<u8>, filter: Vec<String>| {
        GtestRun {
            project: &project,
            test_file: WriteFile {
                path: PathBuf::from(&cpp.test_path),
                contents,
            },
            filter,
            limits: limits.clone(),
        }
        .run(sandbox, cache)
        .map_err(|e| err(problem, e.to_string()))
    };

    let mut outcomes = Vec::new();
    let mut bases: Vec<CoverageMap> = Vec::new();
    let mut message = None;
    for _ in 0..runs.max(1) {
        let r = run(original.clone(), Vec::new())?;
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
    let record =
        |exclusion, base: &CoverageMap, empty: &CoverageMap, tiers, blocks| CalibratedProblem {
            kind: RecordKind::CalibratedProblem,
            schema_version: SCHEMA_VERSION,
            id: problem.id.clone(),
            repo: problem.repo.clone(),
            problem: problem.clone(),
            exclusion,
            base: analysis::to_records(base),
            empty: analysis::to_records(empty),
            tiers,
            unique_blocks: blocks,
            targets: Vec::new(),
            runs: outcomes.clone(),
        };
    let first = outcomes[0];
    if let Some(r) = (1..outcomes.len()).find(|&r| outcomes[r] != first || bases[r] != bases[0]) {
        let detail = if outcomes[r] != first {
            format!("run 1 {first:?}, run {} {:?}", r + 1, outcomes[r]).to_lowercase()
        } else {
            format!("covered lines differ between run 1 and run {}", r + 1)
        };
        let e = Exclusion {
            reason: ExclusionReason::Flaky,
            detail,
        };
        return Ok(record(
            Some(e),
            &bases[0],
            &CoverageMap::new(),
            Vec::new(),
            Vec::new(),
        ));
    }
    if first != Outcome::Passed {
        let reason = match first {
            Outcome::CompileError => ExclusionReason::CompileError,
            Outcome::Failed => ExclusionReason::Failed,
            Outcome::Timeout => ExclusionReason::Timeout,
            _ => ExclusionReason::Error,
        };
        let e = Exclusion {
            reason,
            detail: message.unwrap_or_default(),
        };
        return Ok(record(
            Some(e),
            &bases[0],
            &CoverageMap::new(),
            Vec::new(),
            Vec::new(),
        ));
    }

    // Each TEST alone, and the empty test.
    let mut per_test: Vec<CoverageMap> = Vec::new();
    for t in &cpp.tests {
        let r = run(original.clone(), vec![gtest_filter(t)])?;
        per_test.push(to_map(&r.coverage));
    }
    let empty = to_map(&run(EMPTY_TEST.as_bytes().to_vec(), Vec::new())?.coverage);
    let base = &bases[0];

    let sources: Vec<String> = {
        let mut s: Vec<String> = base.keys().chain(empty.keys()).cloned().collect();
        s.sort();
        s.dedup();
        s
    };
    let texts: BTreeMap<String, String> = sources
        .iter()
        .filter_map(|p| Some((p.clone(), std::fs::read_to_string(repo.root.join(p)).ok()?)))
        .collect();
    // The Cobertura reader keeps covered lines only, so the executable lines known here are
    // those some run covered: a line no run covers does not break a block. (Python blocks use
    // coverage.py's full list of executable lines.)
    let mut executable = CoverageMap::new();
    for map in per_test.iter().chain([base, &empty]) {
        for (path, lines) in map {
            let merged = executable
                .get(path)
                .map_or_else(|| lines.clone(), |l: &LineRanges| l.union(lines));
            executable.insert(path.clone(), merged);
        }
    }
    let mut blocks: Vec<UniqueBlock> = Vec::new();
    let mut unique_anywhere: BTreeMap<String, LineRanges> = BTreeMap::new();
    for (i, mine) in per_test.iter().enumerate() {
        let peers: Vec<&CoverageMap> = per_test
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, m)| m)
            .collect();
        for b in analysis::unique_blocks(mine, &peers, &executable, |p| texts.get(p).cloned()) {
            if !blocks
                .iter()
                .any(|x| x.path == b.path && x.start_line == b.start_line)
            {
                blocks.push(b);
            }
        }
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
    blocks.sort_by(|a, b| {
        (b.end_line - b.start_line)
            .cmp(&(a.end_line - a.start_line))
            .then_with(|| a.path.cmp(&b.path))
            .then(a.start_line.cmp(&b.start_line))
    });
    blocks.truncate(analysis::MAX_BLOCKS);
    let tiers = analysis::tiers_by(&sources, base, &empty, |p| unique_anywhere.contains_key(p));
    Ok(record(None, base, &empty, tiers, blocks))
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
