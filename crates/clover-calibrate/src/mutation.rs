//! The mutation step (`--mutants K`): the ground truth of each consistent problem runs against
//! a seeded sample of mutants of its focal code, and the mutants it kills are kept in the
//! sidecar (`clover_protocol::ProblemMutants`), the bar of the mutation score.
//!
//! A Python problem's focal code is its targets' bodies and unique blocks; a C++ problem's is
//! its focal source (a translation unit of the library, or a header), both on the lines the
//! ground truth reached. A C++ ground truth is compiled once per problem
//! (`clover_gtest::MutantHarness`) and each mutant recompiles only the focal source
//! (a header: the test file and the library sources that include it) and relinks; a mutant
//! that does not compile is `invalid`.
//!
//! A problem is split into a [`Sample`] (drawn without running anything) and its runs
//! ([`run_ground_truth`]: one sandbox run per mutant, and one on the original code), so the
//! binary can spread the runs of all the problems it has at hand over `--jobs` threads, then
//! [`Sample::judge`] each problem from the verdicts in its sample's order.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use clover_gtest::{
    mutant_limits, CppProject, GtestRun, LibraryCache, LibraryError, MutantHarness, Replacement,
};
use clover_manifest::RepoConfig;
use clover_mutate::{
    keep_killed, mutants, problem_focus, problem_mutants, problem_seed, Focus, Mutant, Mutants,
    Sampling, SourceFile, Verdict,
};
use clover_protocol::{
    CalibratedProblem, Language, LineRanges, Outcome, ProblemMutants, TestCase, TestOutcome,
};
use clover_pytest::PytestRun;
use clover_pytest::WarmPool;
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
    #[error("problem {id}: mutant {mutant}: {source}")]
    Gtest {
        id: String,
        mutant: String,
        source: LibraryError,
    },
    #[error(
        "problem {id}: its ground truth {test} cannot be built for the mutant runs, so no \
         mutant can be judged: {message}"
    )]
    Harness {
        id: String,
        test: String,
        message: String,
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
    language: Language,
    /// A C++ ground truth compiled for the mutant runs and run once on the original code, by
    /// the first of them; or why it could not be.
    harness: OnceLock<Result<Prepared, String>>,
}

/// A C++ ground truth ready for its mutants: compiled, its control run made, and the limits
/// of a mutant run taken from the two.
#[derive(Debug)]
struct Prepared {
    harness: MutantHarness,
    /// The control run's outcome and message.
    control: (Outcome, Option<String>),
    limits: Limits,
}

/// Whether `record` gets mutants: a problem calibrate kept (neither excluded nor flaky) with
/// some focal code: a Python problem with targets or unique blocks, a C++ problem with its
/// pair (a translation unit or a header: the harness compiles a mutated header into every
/// object that includes it).
pub fn wants_mutants(record: &CalibratedProblem) -> bool {
    let p = &record.problem;
    record.exclusion.is_none()
        && match p.language {
            Language::Python => {
                p.python.is_some()
                    && !(record.targets.is_empty() && record.unique_blocks.is_empty())
            }
            Language::Cpp => p.cpp.is_some(),
        }
}

/// Draws the sample of at most `max_mutants` mutants of `record`'s focal code (Python: every
/// target's body and every unique block, [`problem_focus`], on the lines its ground truth
/// reached, [`reached_lines`]; C++: the focal source on the lines its ground truth covered)
/// with the problem's seed (`run_seed` mixed with its id). The focal files are read from the
/// repository as they are now: calibrate has just run the ground truth on them.
pub fn sample(
    repo: &RepoConfig,
    record: &CalibratedProblem,
    max_mutants: usize,
    run_seed: u64,
) -> Result<Sample, MutationError> {
    let language = record.problem.language;
    let focus = match &record.problem.cpp {
        Some(cpp) if language == Language::Cpp => {
            std::iter::once((cpp.file_path.clone(), Focus::Whole)).collect()
        }
        _ => problem_focus(&record.targets, &record.unique_blocks),
    };
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
        // gcov reports each line that has code, so a C++ run's covered lines are the lines
        // it reached.
        let reached = match language {
            Language::Python => reached_lines(&text, &covered),
            Language::Cpp => covered,
        };
        let focus = match focus {
            Focus::Lines(ranges) => {
                let lines = LineRanges::from_lines(ranges.iter().flat_map(|&[a, b]| a..=b));
                let lines = lines.difference(&lines.difference(&reached));
                Focus::Lines(lines.ranges().to_vec())
            }
            Focus::Whole => Focus::Lines(reached.ranges().to_vec()),
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
    let mutants = mutants(&source_files(&files, language), &sampling).map_err(|source| {
        MutationError::Mutate {
            id: record.id.clone(),
            source,
        }
    })?;
    Ok(Sample {
        id: record.id.clone(),
        sampling,
        files,
        mutants,
        language,
        harness: OnceLock::new(),
    })
}

type FocalFile = (String, String, Focus);

fn source_files(files: &[FocalFile], language: Language) -> Vec<SourceFile<'_>> {
    files
        .iter()
        .map(|(path, text, focus)| SourceFile {
            path,
            language,
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
            &source_files(&self.files, self.language),
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
    /// A Python mutant's run ends within `mutant_limits` of its control run (which takes the
    /// limits of the problem's own runs); the C++ harness sets its own.
    pub limits: Limits,
    /// The C++ library builds, shared with the problems' own calibration.
    pub cache: &'a LibraryCache,
    /// Warm pytest workers (none: every Python run cold). A mutant of a function body the
    /// worker has loaded is patched into the fork, as sandbox-run's mutant runs are.
    pub warm: Option<&'a WarmPool>,
}

/// Runs `record`'s ground truth, its node id alone, on `mutant` (on the original code for
/// `None`, the control run): a pytest run, as sandbox-run runs a candidate, with the
/// problem file and the mutated source written over the original in the run's view. A test
/// that fails or errors, a run that ends by a limit, and a run where every test was skipped
/// kill the mutant: it does not pass as the original did. The tests that killed it are the
/// problem's node id when a case of it failed (none when the run ended without a report).
pub fn run_ground_truth(
    sandbox: &Sandbox,
    run: &MutantRun<'_>,
    record: &CalibratedProblem,
    sample: &Sample,
    mutant: Option<&Mutant>,
) -> Result<Verdict, MutationError> {
    if sample.language == Language::Cpp {
        return run_cpp_ground_truth(sandbox, run, record, sample, mutant);
    }
    let py = record
        .problem
        .python
        .as_ref()
        .expect("wants_mutants took only Python problems");
    let pytest = ground_truth_run(run, py, mutant);
    let result = match run.warm {
        Some(pool) => pytest.run_warm(sandbox, pool),
        None => pytest.run(sandbox),
    }
    .map_err(|source| MutationError::Sandbox {
        id: record.id.clone(),
        mutant: mutant.map_or_else(|| "none (the control run)".into(), |m| m.id.clone()),
        source,
    })?;
    verdict_of(
        record,
        mutant,
        result.outcome,
        result.message,
        &result.tests,
        |c| node_of_case(c, &[py.problem_file.as_str()]),
    )
}

/// Runs `record`'s ground truth against `sample`'s mutants in one batch of a warm worker
/// (`PytestRun::run_mutants_warm`: the problem file collected once, each mutant patched into
/// a fork), each within `run.limits`: each mutant's verdict, made from what the batch saw as
/// [`run_ground_truth`] makes it from a run of its own (the tests that failed as the run's
/// JUnit report names them), or `None` where the batch could not judge it (that one needs a
/// run of its own).
pub fn batch_ground_truth(
    sandbox: &Sandbox,
    run: &MutantRun<'_>,
    pool: &WarmPool,
    record: &CalibratedProblem,
    sample: &Sample,
) -> Vec<Option<Verdict>> {
    let mutants = &sample.mutants.mutants;
    let Some(py) = record.problem.python.as_ref() else {
        return vec![None; mutants.len()];
    };
    let pytest = ground_truth_run(run, py, None);
    let files: Vec<WriteFile> = mutants
        .iter()
        .map(|m| WriteFile {
            path: PathBuf::from(&m.path),
            contents: m.text.clone().into_bytes(),
        })
        .collect();
    let batch = pytest.run_mutants_warm(sandbox, pool, &files, &run.limits);
    mutants
        .iter()
        .zip(batch)
        .map(|(m, v)| {
            let v = v?;
            let (outcome, cases) = if v.passed {
                (Outcome::Passed, Vec::new())
            } else {
                let cases: Vec<TestCase> = v
                    .failed
                    .into_iter()
                    .map(|(classname, name)| TestCase {
                        name,
                        classname,
                        outcome: TestOutcome::Failed,
                        message: None,
                        duration_secs: 0.0,
                    })
                    .collect();
                (Outcome::Failed, cases)
            };
            verdict_of(record, Some(m), outcome, None, &cases, |c| {
                node_of_case(c, &[py.problem_file.as_str()])
            })
            .ok()
        })
        .collect()
}

/// The run of `py`'s ground truth, its node id alone, with the problem file and `mutant`'s
/// source (none: the original) written over the repository's.
fn ground_truth_run(
    run: &MutantRun<'_>,
    py: &clover_protocol::PythonProblem,
    mutant: Option<&Mutant>,
) -> PytestRun {
    PytestRun {
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
        cov_only: None,
        cov_contexts: false,
        witness: Vec::new(),
        env: run
            .repo
            .env
            .iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect(),
        limits: run.limits.clone(),
    }
}

/// What a run on `mutant` says of it (`None`: the control run, which must pass: the verdict
/// the mutants' runs are measured against). A run that does not pass as the original did
/// kills the mutant, and the tests that failed (named by `name`) killed it; one whose mutant
/// does not compile is invalid.
fn verdict_of(
    record: &CalibratedProblem,
    mutant: Option<&Mutant>,
    outcome: Outcome,
    message: Option<String>,
    tests: &[TestCase],
    name: impl Fn(&TestCase) -> Option<String>,
) -> Result<Verdict, MutationError> {
    if mutant.is_none() {
        return match outcome {
            Outcome::Passed => Ok(Verdict::Survived),
            outcome => Err(MutationError::Control {
                id: record.id.clone(),
                outcome: format!("{outcome:?}").to_lowercase(),
                message: crate::steady_text(&message.unwrap_or_default()),
            }),
        };
    }
    Ok(match outcome {
        Outcome::Passed => Verdict::Survived,
        Outcome::CompileError => Verdict::Invalid {
            reason: format!("does not compile: {}", message.unwrap_or_default()),
        },
        Outcome::Failed
        | Outcome::Error
        | Outcome::Timeout
        | Outcome::Oom
        | Outcome::Killed
        | Outcome::NoTestsRun => {
            let mut tests: Vec<String> = tests
                .iter()
                .filter(|c| matches!(c.outcome, TestOutcome::Failed | TestOutcome::Error))
                .filter_map(name)
                .collect();
            tests.dedup();
            Verdict::Killed { tests }
        }
        other => Verdict::Invalid {
            reason: format!("the run ended as {other:?}"),
        },
    })
}

/// The C++ half of [`run_ground_truth`]: the problem's test file, compiled once per problem,
/// linked against the library with the mutant's source recompiled in place of its object (the
/// library as built for the control run, made once with the compile), run whole until its
/// first failing test, within `mutant_limits` of the compile and the control run, its binary
/// within `mutant_cpu_secs` of the control run's CPU time. A failing
/// test, a crash and a run that ends by a limit kill the mutant; one that does not compile or
/// link is invalid. The tests that killed it are the failed `Suite.Name`s.
fn run_cpp_ground_truth(
    sandbox: &Sandbox,
    run: &MutantRun<'_>,
    record: &CalibratedProblem,
    sample: &Sample,
    mutant: Option<&Mutant>,
) -> Result<Verdict, MutationError> {
    let cpp = record
        .problem
        .cpp
        .as_ref()
        .expect("wants_mutants took only C++ problems with their part");
    let prepared = sample
        .harness
        .get_or_init(|| prepare(sandbox, run, &cpp.test_path))
        .as_ref()
        .map_err(|message| MutationError::Harness {
            id: record.id.clone(),
            test: cpp.test_path.clone(),
            message: message.clone(),
        })?;
    let Some(m) = mutant else {
        let (outcome, message) = prepared.control.clone();
        return verdict_of(record, None, outcome, message, &[], |_| None);
    };
    let replaced = Replacement {
        source: Path::new(&m.path),
        text: m.text.as_bytes(),
    };
    let result = prepared
        .harness
        .run(sandbox, Some(replaced), &prepared.limits)
        .map_err(|source| MutationError::Gtest {
            id: record.id.clone(),
            mutant: m.id.clone(),
            source,
        })?;
    verdict_of(
        record,
        mutant,
        result.outcome,
        result.message,
        &result.tests,
        |c| Some(format!("{}.{}", c.classname, c.name)),
    )
}

/// The problem's ground truth, as the repository holds it, compiled for the mutant runs and
/// run on the original code; or why it could not be.
fn prepare(sandbox: &Sandbox, run: &MutantRun<'_>, test_path: &str) -> Result<Prepared, String> {
    let started = Instant::now();
    let mut harness = build_harness(sandbox, run, test_path)?;
    let control = harness
        .control(sandbox, &run.limits)
        .map_err(|e| format!("the control run could not be made: {e}"))?;
    Ok(Prepared {
        harness,
        control: (control.outcome, control.message),
        limits: mutant_limits(&run.limits, started.elapsed()),
    })
}

/// The problem's ground truth, as the repository holds it, compiled for the mutant runs; or
/// why it could not be.
fn build_harness(
    sandbox: &Sandbox,
    run: &MutantRun<'_>,
    test_path: &str,
) -> Result<MutantHarness, String> {
    let project = CppProject::from_config(run.repo);
    let contents = std::fs::read(run.repo.root.join(test_path))
        .map_err(|e| format!("cannot read {test_path}: {e}"))?;
    let truth = GtestRun {
        project: &project,
        test_file: WriteFile {
            path: PathBuf::from(test_path),
            contents,
        },
        filter: Vec::new(),
        limits: run.limits.clone(),
    };
    match truth.mutant_harness(sandbox, run.cache) {
        Ok(Ok(harness)) => Ok(harness),
        Ok(Err(failed)) => Err(format!(
            "{:?}: {}",
            failed.outcome,
            failed.message.unwrap_or_default()
        )),
        Err(e) => Err(e.to_string()),
    }
}
