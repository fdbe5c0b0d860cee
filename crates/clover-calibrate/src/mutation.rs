//! The mutation step (`--mutants K`): the ground truth of each consistent Python problem runs
//! against a seeded sample of mutants of its focal code, and the mutants it kills are kept in
//! the sidecar (`clover_protocol::ProblemMutants`), the bar of the mutation score.
//!
//! A problem is split into a [`Sample`] (drawn without running anything) and its runs
//! ([`run_ground_truth`]: one sandbox run per mutant, and one on the original code), so the
//! binary can spread the runs of all the problems it has at hand over `--jobs` threads, then
//! [`Sample::judge`] each problem from the verdicts in its sample's order.

use std::path::PathBuf;

use clover_manifest::RepoConfig;
use clover_mutate::{
    keep_killed, mutants, problem_focus, problem_mutants, problem_seed, Focus, Mutant, Mutants,
    Sampling, SourceFile, Verdict,
};
use clover_protocol::{
    CalibratedProblem, Language, LineRanges, Outcome, ProblemMutants, TestOutcome,
};
use clover_sandbox::pytest::PytestRun;
use clover_sandbox::{Limits, Sandbox, SandboxError, WriteFile};

use crate::analysis::reached_lines;
use crate::node_of_case;

/// Why a problem's mutants could not be judged (the problem's own record stands).
#[derive(Debug, thiserror::Error)]
pub enum MutationError {
    #[error("problem {id}: cannot read focal file {path}: {source}")]
    Read {
        id: String,
        path: String,
        source: std::io::Error,
    },
    #[error("problem {id}: {source}")]
    Mutate {
        id: String,
        source: clover_mutate::MutateError,
    },
    #[error(
        "problem {id}: its ground truth does not pass on the original code when run alone as \
         sandbox-run runs a test ({outcome}), so no mutant can be judged: {message}"
    )]
    Control {
        id: String,
        outcome: String,
        message: String,
    },
    #[error("problem {id}: mutant {mutant}: sandbox: {source}")]
    Sandbox {
        id: String,
        mutant: String,
        source: SandboxError,
    },
}

/// A problem's mutants, drawn and not yet run.
#[derive(Debug)]
pub struct Sample {
    pub id: String,
    sampling: Sampling,
    /// The focal files: repository-relative path, text and focus.
    files: Vec<FocalFile>,
    pub mutants: Mutants,
}

/// Whether `record` gets mutants: a Python problem calibrate kept (neither excluded nor flaky)
/// with some focal code.
pub fn wants_mutants(record: &CalibratedProblem) -> bool {
    record.exclusion.is_none()
        && record.problem.language == Language::Python
        && record.problem.python.is_some()
        && !(record.targets.is_empty() && record.unique_blocks.is_empty())
}

/// Draws the sample of at most `max_mutants` mutants of `record`'s focal code (every target's
/// body and every unique block, [`problem_focus`], on the lines its ground truth reached,
/// [`reached_lines`]) with the problem's seed (`run_seed` mixed with its id). The focal files
/// are read from the repository as they are now: calibrate has just run the ground truth on
/// them.
pub fn sample(
    repo: &RepoConfig,
    record: &CalibratedProblem,
    max_mutants: usize,
    run_seed: u64,
) -> Result<Sample, MutationError> {
    let focus = problem_focus(&record.targets, &record.unique_blocks);
    let mut files = Vec::with_capacity(focus.len());
    for (path, focus) in focus {
        let text = std::fs::read_to_string(repo.root.join(&path)).map_err(|source| {
            MutationError::Read {
                id: record.id.clone(),
                path: path.clone(),
                source,
            }
        })?;
        // A mutant of a line the ground truth never ran survives it whatever it changes: a
        // run spent, and a place in the sample taken from one the ground truth could kill.
        let covered = record
            .base
            .iter()
            .find(|f| f.path == path)
            .map(|f| f.lines.clone())
            .unwrap_or_default();
        let reached = reached_lines(&text, &covered);
        let focus = match focus {
            Focus::Lines(ranges) => {
                let lines = LineRanges::from_lines(ranges.iter().flat_map(|&[a, b]| a..=b));
                let lines = lines.difference(&lines.difference(&reached));
                Focus::Lines(lines.ranges().to_vec())
            }
            other => other,
        };
        if focus != Focus::Lines(Vec::new()) {
            files.push((path, text, focus));
        }
    }
    let sampling = Sampling {
        max_mutants,
        seed: problem_seed(run_seed, &record.id),
    };
    let mutants =
        mutants(&source_files(&files), &sampling).map_err(|source| MutationError::Mutate {
            id: record.id.clone(),
            source,
        })?;
    Ok(Sample {
        id: record.id.clone(),
        sampling,
        files,
        mutants,
    })
}

type FocalFile = (String, String, Focus);

fn source_files(files: &[FocalFile]) -> Vec<SourceFile<'_>> {
    files
        .iter()
        .map(|(path, text, focus)| SourceFile {
            path,
            language: Language::Python,
            text,
            focus: focus.clone(),
        })
        .collect()
}

impl Sample {
    /// The sidecar record, from the verdict of each mutant of the sample, in its order.
    pub fn judge(&self, verdicts: Vec<Verdict>) -> ProblemMutants {
        assert_eq!(
            verdicts.len(),
            self.mutants.mutants.len(),
            "one verdict per mutant"
        );
        let mut verdicts = verdicts.into_iter();
        let calibration = keep_killed(self.mutants.mutants.clone(), |_| verdicts.next().ok_or(()))
            .expect("as many verdicts as mutants");
        problem_mutants(
            &self.id,
            &self.sampling,
            &source_files(&self.files),
            &self.mutants,
            calibration,
        )
    }
}

/// How a mutant's ground truth runs.
#[derive(Debug, Clone)]
pub struct MutantRun<'a> {
    pub repo: &'a RepoConfig,
    pub python: PathBuf,
    pub limits: Limits,
}

/// Runs `record`'s ground truth, its node id alone, on `mutant` (on the original code for
/// `None`, the control run): a cold pytest run, as sandbox-run runs a candidate, with the
/// problem file and the mutated source written over the original in the run's view. A test
/// that fails or errors, a run that ends by a limit, and a run where every test was skipped
/// kill the mutant: it does not pass as the original did. The tests that killed it are the
/// problem's node id when a case of it failed (none when the run ended without a report).
pub fn run_ground_truth(
    sandbox: &Sandbox,
    run: &MutantRun<'_>,
    record: &CalibratedProblem,
    mutant: Option<&Mutant>,
) -> Result<Verdict, MutationError> {
    let py = record
        .problem
        .python
        .as_ref()
        .expect("wants_mutants took only Python problems");
    let pytest = PytestRun {
        repo: run.repo.root.clone(),
        python: run.python.clone(),
        targets: vec![py.node_id.clone()],
        files: std::iter::once(WriteFile {
            path: PathBuf::from(&py.problem_file),
            contents: py.problem_text.clone().into_bytes(),
        })
        .chain(mutant.map(|m| WriteFile {
            path: PathBuf::from(&m.path),
            contents: m.text.clone().into_bytes(),
        }))
        .collect(),
        cov_sources: Vec::new(),
        cov_contexts: false,
        env: run
            .repo
            .env
            .iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect(),
        limits: run.limits.clone(),
    };
    let result = pytest
        .run(sandbox)
        .map_err(|source| MutationError::Sandbox {
            id: record.id.clone(),
            mutant: mutant.map_or_else(|| "none (the control run)".into(), |m| m.id.clone()),
            source,
        })?;
    if mutant.is_none() {
        // The control run: the verdict the mutants' runs are measured against.
        return match result.outcome {
            Outcome::Passed => Ok(Verdict::Survived),
            outcome => Err(MutationError::Control {
                id: record.id.clone(),
                outcome: format!("{outcome:?}").to_lowercase(),
                message: crate::steady_text(&result.message.unwrap_or_default()),
            }),
        };
    }
    Ok(match result.outcome {
        Outcome::Passed => Verdict::Survived,
        Outcome::Failed
        | Outcome::Error
        | Outcome::Timeout
        | Outcome::Oom
        | Outcome::Killed
        | Outcome::NoTestsRun => {
            let mut tests: Vec<String> = result
                .tests
                .iter()
                .filter(|c| matches!(c.outcome, TestOutcome::Failed | TestOutcome::Error))
                .filter_map(|c| node_of_case(c, &[py.problem_file.as_str()]))
                .collect();
            tests.dedup();
            Verdict::Killed { tests }
        }
        other => Verdict::Invalid {
            reason: format!("pytest ended as {other:?}"),
        },
    })
}
