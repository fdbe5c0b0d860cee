//! The `sandbox-run` stage: [`Response`] records in, one [`RunResult`] per response out, in
//! input order, with several runs at once (`--jobs`, a bounded reorder window), `--resume` and
//! `--shard` as in every stage.
//!
//! This crate is the stage only; running untrusted code is `clover_sandbox`'s (namespaces,
//! limits, pytest and GoogleTest runs, report reading), and turning the model's text into the
//! candidate file is `clover_answer::assemble_candidate` (the scorer must agree on what "the
//! model's code" is); no code ⇒ outcome `no_code`, and a response whose call failed
//! (`Response::error`) ⇒ outcome `api_error`, with nothing run: a server's failure is not
//! the model's. A judge-only response (`scoring.judge_only`, a C++ pair whose ground truth
//! calibrate could not run) ⇒ outcome `judge_only`, nothing run, its code taken out for
//! score's judge. Python candidates run under pytest with
//! coverage of the repository's source folders; C++ candidates are compiled and run as
//! GoogleTest binaries (`clover_gtest`).
//!
//! The exception to "one result per response": the responses to the chunks of one C++ source
//! are joined into one test file (`clover_answer::assemble_file`), which is compiled, run and
//! measured once, with one result under the file's id ([`run_responses`] says how the stream
//! holds them).
//!
//! With [`ResponseRunner::with_mutation`] (`--mutation SIDECAR`, calibrate's kept mutants) a
//! Python candidate that passes is run again against each kept mutant of its instance's focus
//! ([`mutation`]), without coverage, pytest stopping at the first failing test, each run
//! within `pytest::mutant_limits` of the candidate's own; the result's `mutation` counts the
//! mutants killed (the run did not pass) by operator. The runs go first in one batch of a
//! warm worker (`PytestRun::run_mutants_warm`: the candidate collected once, each mutant
//! patched into a fork of it); each mutant the batch cannot judge (a function that ran while
//! collecting, a module not loaded yet, a view a run changed) then runs on its own, its file
//! written over the original beside the candidate in a fresh view; one no worker can serve
//! runs cold and is counted so. A C++ candidate that passes runs against the kept mutants of its
//! problem's focal source (the whole source: a C++ instance answers for it), its test file
//! compiled once — the object of its own run is kept for the mutants — and each mutant's
//! source alone compiled again and linked ([`mutation::run_cpp`]).
//!
//! It deliberately decides no verdict of its own: outcomes come from the runner's judges
//! (`clover_pytest::judge`, the GoogleTest runner), and metrics are score's.

pub mod cli;
pub mod mutation;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use clover_manifest::RepoConfig;
use clover_protocol::{
    ExecSpec, KeptMutant, Language, Mutation, OnError, Outcome, RecordKind, Response, RunResult,
    StageIo, Stopped, Task, Usage, SCHEMA_VERSION,
};

use clover_gtest::{CppProject, GtestRun, LibraryCache, LibraryError};
use clover_pytest::{
    BatchVerdicts, CheckedInterpreters, PytestResult, PytestRun, PythonTools, WarmPool,
};
use clover_sandbox::{
    check_relative, Limits, OnceMap, RunOutput, Sandbox, SandboxError, WriteFile,
};
use clover_screen::{Finding, Screen};

use mutation::Sidecar;

/// Bytes of stdout and stderr kept in a result (the end of each stream).
pub const TAIL_BYTES: usize = 8192;

/// Runs responses' candidates: the repositories they may name, and how to run each kind.
#[derive(Debug)]
pub struct ResponseRunner<'a> {
    sandbox: &'a Sandbox,
    repos: BTreeMap<String, Repo>,
    /// The same repositories' configurations, for messages.
    configs: BTreeMap<String, RepoConfig>,
    /// `--python`, then `$CLOVER_PYTHON`, then `python3` on `PATH`: for repositories whose
    /// manifest names no interpreter.
    default_python: Option<PathBuf>,
    cache: LibraryCache,
    /// The screen for reward hacking that Python candidates pass before they run; `None`
    /// when it is off (`--screen off`, for research on the screen itself).
    screen: Option<Screen>,
    /// Each interpreter's check, made before its first run: the versions, or why it cannot
    /// serve (then the stage stops).
    interpreters: CheckedInterpreters,
    /// Warm pytest workers ([`clover_pytest::WarmPool`]); `None` runs every Python
    /// candidate cold (`--cold`).
    warm: Option<WarmPool>,
    /// Every run made, by all that decides its result: an identical candidate (same
    /// repository, file, text, selectors and measurement) runs once, and the responses that
    /// have it share its result (its duration included).
    runs: OnceMap<RunKey, Ran>,
    /// Results that took an identical candidate's run.
    reused: AtomicU64,
    /// Calibrate's kept mutants (`--mutation`): a Python candidate that passes is run again
    /// against each one of its instance's focus.
    mutants: Option<Sidecar>,
    /// Run an equivalent mutant among a Python candidate's mutants
    /// ([`ResponseRunner::with_equivalent_mutant`]).
    equivalent_mutant: bool,
    /// Witness the files a Python run's scoring reads ([`ResponseRunner::with_witness`]).
    witness: bool,
    /// Watch pytest's machinery ([`ResponseRunner::with_machinery_watch`]).
    machinery_watch: bool,
}

/// What decides a run's result.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RunKey {
    repo: String,
    language: Language,
    path: PathBuf,
    text: String,
    selectors: Vec<String>,
    /// What the run measures, when not all of the source folders (`PytestRun::cov_only`).
    measured: Option<Vec<String>>,
    /// The ids of the kept mutants the candidate is run against when it passes.
    mutants: Vec<String>,
}

/// A run's result. Which response it was first made for is not recorded: that depends on
/// the order responses come in (`--jobs`, `--resume`, `--shard`), and results must not.
#[derive(Debug, Clone)]
struct Ran {
    run: RunOutput,
    outcome: Outcome,
    tests: Vec<clover_protocol::TestCase>,
    coverage: Vec<clover_protocol::FileCoverage>,
    message: Option<String>,
    /// The mutation pass, when the candidate passed and had mutants to run.
    mutation: Option<Mutation>,
}

#[derive(Debug)]
struct Repo {
    config: RepoConfig,
    cpp: CppProject,
}

/// Why a response has no result record. Reported with its line and id; the stage goes on.
#[derive(Debug, thiserror::Error)]
pub enum ResponseError {
    #[error("{0}")]
    UnknownRepo(String),
    #[error("no Python interpreter for repository `{0}`: set `python` in the manifest, pass --python or set CLOVER_PYTHON")]
    NoPython(String),
    #[error("invalid candidate path `{0}`: it must be relative to the repository, without `..`")]
    BadPath(String),
    #[error(transparent)]
    Join(#[from] clover_answer::JoinError),
    #[error(transparent)]
    Library(#[from] LibraryError),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Mutant(#[from] clover_mutate::MutateError),
    #[error("mutant {id}: cannot read {path}: {source}")]
    MutantSource {
        id: String,
        path: String,
        source: std::io::Error,
    },
    /// The interpreter cannot run any test: not a fault of one record, so the stage stops
    /// (exit 2, bad usage) instead of writing the same failure for every response.
    #[error("{0}")]
    Interpreter(String),
}

impl ResponseError {
    /// Whether the error is the setup's, not the record's: the stage stops at once.
    pub fn is_fatal(&self) -> bool {
        matches!(self, ResponseError::Interpreter(_))
    }
}

impl<'a> ResponseRunner<'a> {
    /// A runner over `repos` (by name). `default_python` serves repositories without one;
    /// `cache_dir` holds built C++ libraries.
    pub fn new(
        sandbox: &'a Sandbox,
        configs: BTreeMap<String, RepoConfig>,
        default_python: Option<PathBuf>,
        cache_dir: &Path,
    ) -> Result<Self, SandboxError> {
        let repos = configs
            .iter()
            .map(|(name, config)| {
                let cpp = CppProject::from_config(config);
                (
                    name.clone(),
                    Repo {
                        config: config.clone(),
                        cpp,
                    },
                )
            })
            .collect();
        Ok(ResponseRunner {
            sandbox,
            repos,
            configs,
            default_python,
            cache: LibraryCache::new(cache_dir)?,
            screen: Some(Screen::default()),
            interpreters: CheckedInterpreters::default(),
            warm: Some(WarmPool::new()),
            runs: OnceMap::default(),
            reused: AtomicU64::new(0),
            mutants: None,
            equivalent_mutant: true,
            witness: true,
            machinery_watch: true,
        })
    }

    /// Runs each Python candidate that passes against the kept mutants of its instance's
    /// focus in `sidecar` ([`mutation`]), and records the pass in `RunResult::mutation`.
    pub fn with_mutation(mut self, sidecar: Sidecar) -> Self {
        self.mutants = Some(sidecar);
        self
    }

    /// How many results took the run of an identical candidate made for another response.
    pub fn reused(&self) -> u64 {
        self.reused.load(Ordering::Relaxed)
    }

    /// Runs every Python candidate cold, in a fresh interpreter (`true`), instead of in a
    /// fork of a warm worker (`false`, the default). Verdicts are the same either way.
    pub fn with_cold(mut self, cold: bool) -> Self {
        self.warm = (!cold).then(WarmPool::new);
        self
    }

    /// Checks C++ reports against clover's record of the run (`true`, the default), or
    /// believes them as before (`false`, for comparison).
    pub fn with_report_record(mut self, on: bool) -> Self {
        self.cache = self.cache.with_report_record(on);
        self
    }

    /// Runs an equivalent mutant among each Python candidate's mutants (`true`, the default):
    /// a candidate that kills it earns no kill and is `forged`. `false` is for comparison.
    pub fn with_equivalent_mutant(mut self, on: bool) -> Self {
        self.equivalent_mutant = on;
        self
    }

    /// Witnesses the files each Python run's scoring reads (`true`, the default): a run whose
    /// coverage claims a line of them that never ran is `forged` (`PytestRun::witness`).
    /// `false` is for comparison.
    pub fn with_witness(mut self, on: bool) -> Self {
        self.witness = on;
        self
    }

    /// Has clover's pytest plugin watch pytest's own machinery in each Python run (`true`,
    /// the default): a run that changed it is `forged`. `false` is for comparison.
    pub fn with_machinery_watch(mut self, on: bool) -> Self {
        self.machinery_watch = on;
        self
    }

    /// Turns the screen for reward hacking off (`false`) or on (`true`, the default).
    pub fn with_screen(mut self, on: bool) -> Self {
        self.screen = on.then(Screen::default);
        self
    }

    /// Runs one response's candidate and says what happened. (The chunks of a C++ source are
    /// run together, by [`ResponseRunner::run_file`].)
    pub fn run(&self, response: &Response) -> Result<RunResult, ResponseError> {
        if let Some(error) = &response.error {
            return self.api_error(response, error);
        }
        if let Some(why) = &response.generation.skipped {
            return self.not_asked(response, &format!("the model was not asked: {why}"));
        }
        let candidate = clover_answer::assemble_candidate(response);
        if let Some(why) = response.judge_only() {
            return self.judge_only(response, candidate.map_err(|e| e.to_string()), why);
        }
        let started = Instant::now();
        self.execute(response, candidate, started)
    }

    /// Joins the responses to the chunks of one C++ source into one test file
    /// ([`clover_answer::assemble_file`]) and runs it: one result for the whole file, with id
    /// [`Response::file_response_id`] and instance id [`Response::file_instance_id`]. Its
    /// `scoring` is the chunks' without `chunk_index`, plus `chunk_instance_ids` (in chunk
    /// order) and, when some chunk's answer held no code, `chunks_without_code` (their
    /// indices). A chunk whose response is not among `chunks` makes a result with outcome
    /// `error` that says which, and nothing runs.
    pub fn run_file(&self, chunks: &[Response]) -> Result<RunResult, ResponseError> {
        let started = Instant::now();
        let mut sorted: Vec<&Response> = chunks.iter().collect();
        sorted.sort_by_key(|r| r.chunk().map(|c| c.index));
        let Some(first) = sorted.first() else {
            return Err(ResponseError::Join(clover_answer::JoinError::Inconsistent(
                "no chunk at all".into(),
            )));
        };
        let mut file = Response {
            id: first.file_response_id().into_owned(),
            instance_id: first.file_instance_id().to_string(),
            text: String::new(),
            error: None,
            ..(*first).clone()
        };
        // One chunk without an answer because its call failed leaves the file incomplete
        // through no fault of the model: nothing runs.
        if let Some(failed) = sorted.iter().find(|r| r.error.is_some()) {
            let why = format!(
                "chunk {}: {}",
                failed.chunk().map_or(0, |c| c.index),
                failed.error.as_deref().unwrap_or_default()
            );
            return self.api_error(&file, &why);
        }
        // A chunk generate did not send (its prompt is over the model's maximum context)
        // leaves the file as unanswerable for this model as the chunk itself.
        if let Some((index, why)) = sorted.iter().find_map(|r| {
            let why = r.generation.skipped.as_deref()?;
            Some((r.chunk().map_or(0, |c| c.index), why))
        }) {
            return self.not_asked(&file, &format!("chunk {index} was not asked: {why}"));
        }
        file.scoring.remove("chunk_index");
        file.scoring.insert(
            "chunk_instance_ids".into(),
            serde_json::json!(sorted.iter().map(|r| &r.instance_id).collect::<Vec<_>>()),
        );
        match clover_answer::assemble_file(&sorted) {
            Ok(joined) => {
                if !joined.without_code.is_empty() {
                    file.scoring.insert(
                        "chunks_without_code".into(),
                        serde_json::json!(joined
                            .without_code
                            .iter()
                            .map(|(i, _)| i)
                            .collect::<Vec<_>>()),
                    );
                }
                match file.judge_only() {
                    Some(why) => {
                        let candidate = joined.candidate.map_err(|e| e.to_string());
                        self.judge_only(&file, candidate, why)
                    }
                    None => self.execute(&file, joined.candidate, started),
                }
            }
            // A judge-only file stays out of the execution metrics whatever its chunks did.
            Err(e @ clover_answer::JoinError::Missing { .. }) if file.judge_only().is_some() => {
                let why = file.judge_only().unwrap_or_default();
                self.judge_only(&file, Err(format!("incomplete file: {e}")), why)
            }
            Err(e @ clover_answer::JoinError::Missing { .. }) => {
                let mut result = self.blank_result(&file)?;
                result.outcome = Outcome::Error;
                result.message = Some(format!("incomplete file: {e}"));
                result.duration_secs = started.elapsed().as_secs_f64();
                Ok(result)
            }
            Err(e) => Err(ResponseError::Join(e)),
        }
    }

    /// The result of `response` before anything ran (outcome `no_code`), once its repository
    /// is known to be one of ours.
    fn blank_result(&self, response: &Response) -> Result<RunResult, ResponseError> {
        let repo = self.repo_of(response)?;
        // Whatever happens next, the focus's mutants count: an answer without code, or whose
        // tests fail on the original code, kills none of them.
        let mutation = self
            .focus_mutants(response, repo)
            .map_or_else(Mutation::default, |m| mutation::unrun(&m));
        Ok(RunResult {
            mutation,
            instance_id: response.instance_id.clone(),
            model: response.model.clone(),
            task: Some(response.task),
            setting: response.setting.clone(),
            repo: response.repo.clone(),
            scoring: response.scoring.clone(),
            ..unrun_result(response.id.clone(), Outcome::NoCode)
        })
    }

    /// The result of a response without an answer because its call failed: outcome
    /// `api_error`, the call's error as the message, nothing run.
    fn api_error(&self, response: &Response, error: &str) -> Result<RunResult, ResponseError> {
        let mut result = self.blank_result(response)?;
        result.outcome = Outcome::ApiError;
        result.message = Some(format!("no answer to run, the call failed: {error}"));
        Ok(result)
    }

    /// The result of a response generate deliberately did not ask for (its prompt is over the
    /// model's maximum context): outcome `over_max_context`, nothing run.
    fn not_asked(&self, response: &Response, message: &str) -> Result<RunResult, ResponseError> {
        let mut result = self.blank_result(response)?;
        result.outcome = Outcome::OverMaxContext;
        result.message = Some(message.to_string());
        Ok(result)
    }

    /// The result of a judge-only response (`scoring.judge_only`: calibrate could not run its
    /// instance's ground truth, `why` says how it failed): outcome `judge_only`, nothing run.
    /// The answer's code is taken out as for a run, since it is what the judge compares;
    /// `candidate` is that code, or why there is none.
    fn judge_only(
        &self,
        response: &Response,
        candidate: Result<clover_answer::Candidate, String>,
        why: &str,
    ) -> Result<RunResult, ResponseError> {
        let mut result = self.blank_result(response)?;
        result.outcome = Outcome::JudgeOnly;
        let mut message = format!(
            "judge-only, not run: calibrate could not run the ground truth ({why}), so there \
             is nothing to measure the answer against"
        );
        match candidate {
            Ok(c) => {
                result.candidate = Some(c.text);
                result.answer = Some(c.answer);
            }
            Err(no_code) => message.push_str(&format!("; {no_code}")),
        }
        result.message = Some(message);
        Ok(result)
    }

    /// Checks `python` once, before its first run (see `clover_pytest::check_python`), and says on stderr
    /// what it found.
    fn check_interpreter(&self, python: &Path, repo: &Path) -> Result<PythonTools, ResponseError> {
        self.interpreters
            .check(self.sandbox, python, repo, |tools| {
                let core = if tools.sysmon() {
                    " (coverage measures with sys.monitoring)"
                } else {
                    ""
                };
                clover_protocol::diag!("clover-sandbox-run: {}: {tools}{core}", python.display());
            })?
            .map_err(ResponseError::Interpreter)
    }

    /// The kept mutants `response`'s candidate answers for, when there is a pass.
    fn focus_mutants(&self, response: &Response, repo: &Repo) -> Option<Vec<KeptMutant>> {
        let language = response.exec.language.unwrap_or(repo.config.language);
        self.mutants.as_ref()?.for_response(response, language)
    }

    fn repo_of(&self, response: &Response) -> Result<&Repo, ResponseError> {
        let name = if response.exec.repo.is_empty() {
            &response.repo
        } else {
            &response.exec.repo
        };
        self.repos.get(name).ok_or_else(|| {
            ResponseError::UnknownRepo(clover_manifest::unknown_repo(name, &self.configs))
        })
    }

    /// Runs `candidate` (or records why there is none) as `response`'s result.
    fn execute(
        &self,
        response: &Response,
        candidate: Result<clover_answer::Candidate, clover_answer::NoCode>,
        started: Instant,
    ) -> Result<RunResult, ResponseError> {
        let repo = self.repo_of(response)?;
        let cfg = &repo.config;
        let mut result = self.blank_result(response)?;
        let candidate = match candidate {
            Ok(c) => c,
            Err(no_code) => {
                result.message = Some(no_code.to_string());
                result.duration_secs = started.elapsed().as_secs_f64();
                return Ok(result);
            }
        };
        let path = PathBuf::from(&response.exec.candidate_path);
        if path.as_os_str().is_empty()
            || check_relative("candidate", &path).is_err()
            || path.file_name().is_none()
        {
            return Err(ResponseError::BadPath(response.exec.candidate_path.clone()));
        }
        let file = WriteFile {
            path: path.clone(),
            contents: candidate.text.clone().into_bytes(),
        };
        let language = response.exec.language.unwrap_or(cfg.language);
        let rejected = match (&self.screen, language) {
            (Some(screen), Language::Python) => screened(screen, &candidate.text, &response.exec),
            _ => Vec::new(),
        };
        result.candidate = Some(candidate.text);
        result.answer = Some(candidate.answer);
        if !rejected.is_empty() {
            result.outcome = Outcome::Rejected;
            result.message = Some(rejection(&rejected));
            result.duration_secs = started.elapsed().as_secs_f64();
            return Ok(result);
        }
        let limits = Limits {
            wall: Duration::from_secs(cfg.timeout_secs),
            cpu_secs: cfg.timeout_secs,
            memory_bytes: cfg.memory_mb << 20,
            pids: cfg.pids,
            cpus: cfg.cpus,
            ..Limits::default()
        };
        let measured = measured_files(response.task, &response.scoring, &cfg.source_dirs);
        let mutants = self.focus_mutants(response, repo).unwrap_or_default();
        let key = RunKey {
            repo: cfg.name.clone(),
            language,
            path: path.clone(),
            text: file_text(&file),
            selectors: response.exec.selectors.clone(),
            measured: measured.clone(),
            mutants: mutants.iter().map(|m| m.id.clone()).collect(),
        };
        // `None`: the run another response was making for this candidate failed (and is
        // reported there); it is made again here.
        let ran = loop {
            let mut ran_here = false;
            let made = self.runs.get_or_make(&key, || {
                ran_here = true;
                self.run_candidate(
                    response,
                    repo,
                    file.clone(),
                    limits.clone(),
                    measured.clone(),
                    &mutants,
                )
            })?;
            if let Some(ran) = made {
                if !ran_here {
                    self.reused.fetch_add(1, Ordering::Relaxed);
                }
                break ran;
            }
        };
        let Ran {
            run,
            outcome,
            tests,
            coverage,
            message,
            mutation,
        } = ran;
        if let Some(mutation) = mutation {
            result.mutation = mutation;
        }
        fill(&mut result, &run);
        result.outcome = outcome;
        result.tests = tests;
        result.coverage = coverage;
        // A limit the run passed is named with its value and the knob that sets it (what a
        // killed run did not write, a report, follows from it and is not said).
        result.message = match outcome {
            Outcome::Timeout => Some(format!(
                "the run passed its wall-clock limit of {} s (timeout_secs in clover.toml, or \
                 --timeout)",
                cfg.timeout_secs
            )),
            Outcome::Oom => Some(format!(
                "the run passed its memory limit of {} MiB (memory_mb in clover.toml, or \
                 --memory)",
                cfg.memory_mb
            )),
            _ => message,
        };
        result.duration_secs = started.elapsed().as_secs_f64();
        Ok(result)
    }

    /// Runs one candidate file, warm or cold (Python) or compiled (C++).
    fn run_candidate(
        &self,
        response: &Response,
        repo: &Repo,
        file: WriteFile,
        limits: Limits,
        measured: Option<Vec<String>>,
        mutants: &[KeptMutant],
    ) -> Result<Ran, ResponseError> {
        let cfg = &repo.config;
        let language = response.exec.language.unwrap_or(cfg.language);
        let mut mutation = None;
        let (run, outcome, tests, coverage, message) = match language {
            Language::Python => {
                let python = cfg
                    .python
                    .clone()
                    .or_else(|| self.default_python.clone())
                    .ok_or_else(|| ResponseError::NoPython(cfg.name.clone()))?;
                let tools = self.check_interpreter(&python, &cfg.root)?;
                let targets = if response.exec.selectors.is_empty() {
                    vec![response.exec.candidate_path.clone()]
                } else {
                    response.exec.selectors.clone()
                };
                let mut invocation = PytestRun {
                    repo: cfg.root.clone(),
                    python,
                    targets,
                    files: vec![file.clone()],
                    cov_sources: cfg
                        .source_dirs
                        .iter()
                        .map(|d| d.to_string_lossy().into_owned())
                        .collect(),
                    witness: match self.witness {
                        true => measured.clone().unwrap_or_default(),
                        false => Vec::new(),
                    },
                    cov_only: measured,
                    cov_contexts: false,
                    env: cfg
                        .env
                        .iter()
                        .map(|(k, v)| (k.into(), v.into()))
                        .chain(
                            (!self.machinery_watch).then(|| ("CLOVER_WATCH".into(), "off".into())),
                        )
                        .collect(),
                    limits,
                };
                invocation.measure_with_sysmon(&tools);
                // With mutants, a warm run judges them in the same request, after its own
                // measured run (`run_warm_measuring_mutants`).
                let started = Instant::now();
                // The equivalent mutant goes last, among the others and like them.
                let equivalent = match (self.equivalent_mutant, mutants.is_empty()) {
                    (true, false) => {
                        mutation::equivalent(&cfg.root, response.task, &response.scoring)
                    }
                    _ => None,
                };
                let all: Vec<KeptMutant> =
                    mutants.iter().cloned().chain(equivalent.clone()).collect();
                let files = match all.is_empty() {
                    true => Vec::new(),
                    false => mutation::mutated_files(&cfg.root, &all)?,
                };
                let (r, batched) = match (&self.warm, files.is_empty()) {
                    (Some(pool), false) => {
                        // Each mutant's limits are bounded by the measured run's own in the
                        // worker; here only by the candidate's.
                        let limits = clover_pytest::mutant_limits(
                            &invocation.limits,
                            invocation.limits.wall,
                        );
                        invocation.run_warm_measuring_mutants(
                            self.sandbox,
                            pool,
                            &files,
                            &limits,
                        )?
                    }
                    _ => (self.run_pytest(&invocation)?, None),
                };
                if r.outcome == Outcome::Passed && !mutants.is_empty() {
                    // The pass's time: the request's, less the candidate's own run.
                    let batch_secs = match batched.is_some() {
                        true => started.elapsed().saturating_sub(r.run.duration),
                        false => Duration::ZERO,
                    };
                    let (mut m, equivalent_killed) = self.run_mutants(
                        &invocation,
                        r.run.duration,
                        &file,
                        (&all, files),
                        batched,
                        equivalent.is_some(),
                    )?;
                    m.duration_secs += batch_secs.as_secs_f64();
                    if equivalent_killed {
                        // Its kills and its pass are not of the code's behaviour.
                        let mut none = mutation::unrun(mutants);
                        none.duration_secs = m.duration_secs;
                        mutation = Some(none);
                        let message = Some(format!(
                            "forged: the test fails on an equivalent mutant of {} (a change of \
                             the code's bytes and not of what it does): it fingerprints the code \
                             or tells a mutant's run from the plain one",
                            equivalent.as_ref().map_or("", |e| e.path.as_str())
                        ));
                        (r.run, Outcome::Forged, Vec::new(), Vec::new(), message)
                    } else {
                        mutation = Some(m);
                        (r.run, r.outcome, r.tests, r.coverage, r.message)
                    }
                } else {
                    (r.run, r.outcome, r.tests, r.coverage, r.message)
                }
            }
            Language::Cpp => {
                let gtest = GtestRun {
                    project: &repo.cpp,
                    test_file: file,
                    filter: response.exec.selectors.clone(),
                    limits,
                };
                // A candidate with mutants keeps the test object its run compiled, so the
                // mutation pass does not compile the file again.
                let (r, harness) = match mutants.is_empty() {
                    true => (gtest.run(self.sandbox, &self.cache)?, None),
                    false => gtest.run_keeping_object(self.sandbox, &self.cache)?,
                };
                if r.outcome == Outcome::Passed && !mutants.is_empty() {
                    mutation = Some(mutation::run_cpp(
                        self.sandbox,
                        &self.cache,
                        &gtest,
                        harness,
                        r.run.duration,
                        &cfg.root,
                        mutants,
                    )?);
                }
                (r.run, r.outcome, r.tests, r.coverage, r.message)
            }
        };
        Ok(Ran {
            run,
            outcome,
            tests,
            coverage,
            message,
            mutation,
        })
    }

    fn run_pytest(&self, run: &PytestRun) -> Result<PytestResult, SandboxError> {
        match &self.warm {
            Some(pool) => run.run_warm(self.sandbox, pool),
            None => run.run(self.sandbox),
        }
    }

    /// Runs `candidate` (as `original` ran it) once per mutant, without coverage, pytest
    /// stopping at the first failing test (`-x`): the candidate kills a mutant on which it
    /// does not pass. First in one batch of a warm worker (collected once, each mutant
    /// patched into a fork), unless the measured run's own request judged them (`batched`);
    /// each mutant the batch could not judge then on its own, its file
    /// written over its original beside the candidate in a fresh view. Each run ends within
    /// `pytest::mutant_limits` of the candidate's own (`plain`, its time), as calibrate's
    /// runs of the ground truth on the mutants did.
    fn run_mutants(
        &self,
        original: &PytestRun,
        plain: std::time::Duration,
        candidate: &WriteFile,
        (mutants, files): (&[KeptMutant], Vec<WriteFile>),
        batched: Option<BatchVerdicts>,
        equivalent_last: bool,
    ) -> Result<(Mutation, bool), ResponseError> {
        let started = Instant::now();
        let mut env = original.env.clone();
        match env.iter_mut().find(|(k, _)| k == "PYTEST_ADDOPTS") {
            Some((_, v)) => v.push(" -x"),
            None => env.push(("PYTEST_ADDOPTS".into(), "-x".into())),
        }
        let limits = clover_pytest::mutant_limits(&original.limits, plain);
        // First one batch in a warm worker (unless the measured run's request judged them):
        // the candidate collected once, each mutant patched into a fork of it. What it could
        // not judge runs on its own, in a fresh view.
        let batched = match (batched, &self.warm) {
            (Some(batched), _) => batched,
            (None, Some(pool)) => PytestRun {
                files: vec![candidate.clone()],
                cov_sources: Vec::new(),
                // A mutant's run reads no line: nothing to witness.
                witness: Vec::new(),
                ..original.clone()
            }
            .run_mutants_warm(self.sandbox, pool, &files, &limits),
            (None, None) => vec![None; mutants.len()],
        };
        let mut verdicts = Vec::with_capacity(mutants.len());
        let mut cold = 0;
        for ((m, file), batched) in mutants.iter().zip(files).zip(batched) {
            if let Some(batched) = batched {
                verdicts.push((m, Some(!batched.passed)));
                continue;
            }
            let run = PytestRun {
                files: vec![candidate.clone(), file],
                cov_sources: Vec::new(),
                // A mutant's run reads no line: nothing to witness.
                witness: Vec::new(),
                env: env.clone(),
                limits: limits.clone(),
                ..original.clone()
            };
            let r = self.run_pytest(&run)?;
            // The warm runner says so in the message when no worker could take the run.
            if self.warm.is_some()
                && r.message
                    .as_deref()
                    .is_some_and(|m| m.contains("ran cold: "))
            {
                cold += 1;
            }
            verdicts.push((m, Some(r.outcome != Outcome::Passed)));
        }
        // The equivalent mutant is not a kept one: it only says whether the kills count.
        let equivalent_killed =
            equivalent_last && verdicts.pop().is_some_and(|(_, v)| v == Some(true));
        Ok((
            mutation::tally(verdicts, cold, started.elapsed().as_secs_f64()),
            equivalent_killed,
        ))
    }
}

/// What the screen finds in the model's part of a candidate file: the lines between
/// `exec.prefix` and `exec.suffix`. The prefix and suffix come from the repository's own test
/// file (the ground truth's setup), which is not the model's doing; the file is screened
/// whole so that the model's lines are parsed in their context (indentation, imports).
fn screened(screen: &Screen, text: &str, exec: &ExecSpec) -> Vec<Finding> {
    let first = 1 + exec.prefix.matches('\n').count() as u32;
    let last = 1 + text.matches('\n').count() as u32 - exec.suffix.matches('\n').count() as u32;
    screen
        .python(text)
        .into_iter()
        .filter(|f| (first..=last).contains(&f.line))
        .collect()
}

/// The message of a rejected candidate: every finding, at most 20 of them.
pub fn rejection(findings: &[Finding]) -> String {
    const SHOWN: usize = 20;
    let mut m = format!(
        "rejected by the screen for reward hacking ({} finding(s)): ",
        findings.len()
    );
    let shown: Vec<String> = findings.iter().take(SHOWN).map(|f| f.to_string()).collect();
    m.push_str(&shown.join("; "));
    if findings.len() > SHOWN {
        m.push_str(&format!("; and {} more", findings.len() - SHOWN));
    }
    m
}

/// A result named `id` with `outcome` before anything ran: every other field empty.
pub fn unrun_result(id: String, outcome: Outcome) -> RunResult {
    RunResult {
        kind: RecordKind::RunResult,
        schema_version: SCHEMA_VERSION,
        id,
        instance_id: String::new(),
        model: String::new(),
        task: None,
        setting: String::new(),
        repo: String::new(),
        outcome,
        tests: Vec::new(),
        coverage: Vec::new(),
        limit_hit: None,
        exit_code: None,
        signal: None,
        candidate: None,
        answer: None,
        message: None,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        scoring: Default::default(),
        duration_secs: 0.0,
        mutation: Default::default(),
    }
}

/// What a Python response's run measures, when not all of the source folders: the files its
/// scoring reads, those under `sources` (what coverage.py would measure of them); nothing for
/// Task I, scored on its verdict alone; `None` (everything) when its facts do not name them.
fn measured_files(
    task: Task,
    scoring: &BTreeMap<String, serde_json::Value>,
    sources: &[PathBuf],
) -> Option<Vec<String>> {
    if task == Task::AssertionCloze {
        return Some(Vec::new());
    }
    let under = |file: &str, dir: &Path| {
        let dir: PathBuf = dir
            .components()
            .filter(|c| *c != std::path::Component::CurDir)
            .collect();
        Path::new(file).starts_with(dir)
    };
    let files = mutation::scored_files(task, scoring)?;
    Some(
        files
            .into_iter()
            .filter(|f| sources.iter().any(|d| under(f, d)))
            .collect(),
    )
}

/// A candidate file's text, for [`RunKey`].
fn file_text(file: &WriteFile) -> String {
    String::from_utf8_lossy(&file.contents).into_owned()
}

fn fill(result: &mut RunResult, run: &RunOutput) {
    result.limit_hit = run.limit_hit;
    result.exit_code = run.exit.code();
    result.signal = run.exit.signal();
    result.stdout_tail = run.stdout.tail(TAIL_BYTES);
    result.stderr_tail = run.stderr.tail(TAIL_BYTES);
}

/// What a stage run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub written: u64,
    /// Responses reported as errors (no result written).
    pub failed: u64,
    /// Responses whose result an earlier run (`--resume`) already wrote.
    pub skipped: u64,
    /// Results by outcome.
    pub outcomes: BTreeMap<String, u64>,
    /// C++ sources some of whose chunk responses never came (each has a result with outcome
    /// `error`).
    pub incomplete: u64,
    /// The mutation passes of the results written, summed.
    pub mutants: MutantTotals,
}

/// The mutation passes of a stage run, summed over its results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MutantTotals {
    pub kept: u64,
    pub run: u64,
    pub killed: u64,
    pub cold: u64,
    /// Seconds of mutant runs; a result sharing an identical candidate's run counts them again.
    pub secs: f64,
}

impl MutantTotals {
    fn add(&mut self, m: &Mutation) {
        self.kept += u64::from(m.kept.unwrap_or(0));
        self.run += u64::from(m.run);
        self.killed += u64::from(m.killed);
        self.cold += u64::from(m.cold);
        self.secs += m.duration_secs;
    }
}

/// What a worker runs: one response, or the responses to every chunk of one C++ source.
#[derive(Debug)]
enum Job {
    One(Box<Response>),
    File(Vec<Response>),
}

/// The chunk responses of C++ sources whose other chunks have not arrived yet.
#[derive(Debug, Default)]
struct OpenFiles {
    /// File response id → arrival number of its first chunk.
    by_id: HashMap<String, u64>,
    /// Arrival number → (line of the first chunk, file response id, chunks so far).
    files: BTreeMap<u64, (u64, String, Vec<Response>)>,
    arrivals: u64,
}

impl OpenFiles {
    /// Adds a chunk response; returns the file's job once every chunk is there.
    fn add(
        &mut self,
        line: u64,
        id: String,
        count: u32,
        r: Response,
    ) -> Option<(u64, String, Job)> {
        let arrival = *self.by_id.entry(id.clone()).or_insert_with(|| {
            self.arrivals += 1;
            self.arrivals
        });
        let entry = self
            .files
            .entry(arrival)
            .or_insert_with(|| (line, id, Vec::new()));
        entry.2.push(r);
        if entry.2.len() < count as usize {
            return None;
        }
        let (line, id, chunks) = self.files.remove(&arrival).expect("just added");
        self.by_id.remove(&id);
        Some((line, id, Job::File(chunks)))
    }

    /// Every file still open, in the order its first chunk came: each misses a chunk.
    fn drain(&mut self) -> impl Iterator<Item = (u64, String, Job)> {
        self.by_id.clear();
        std::mem::take(&mut self.files)
            .into_values()
            .map(|(line, id, chunks)| (line, id, Job::File(chunks)))
    }
}

/// Runs every response of `io`'s input with `jobs` runs at once and writes the results in
/// input order. At most `4 × jobs` runs are in flight or waiting to be written, so memory
/// stays flat however many records there are. A response that cannot be run is reported
/// with its line and id; with [`OnError::Stop`] the stage then stops.
///
/// The responses to the chunks of one C++ source (see [`clover_protocol::ChunkOf`]) are held
/// until all have arrived and then run as one file, with one result
/// ([`ResponseRunner::run_file`]) written where the last chunk stood. Only files whose chunks
/// are still coming are held: in pack-context's order, or in a sorted join of shards, that is
/// one file at a time. At the end of the input a file that misses a chunk gets a result with
/// outcome `error` naming the missing chunks. `--resume` and `--shard` go by the file's result
/// id, so a shard always holds every chunk of its files.
pub fn run_responses(
    io: &mut StageIo,
    runner: &ResponseRunner,
    jobs: usize,
    on_error: OnError,
) -> anyhow::Result<Summary> {
    let jobs = jobs.max(1);
    let window = (jobs * 4) as u64;
    // Reads run ahead of the runs by the window: progress is the results written.
    io.progress_on_writes();
    let mut summary = Summary::default();
    type Done = (u64, u64, String, Result<RunResult, ResponseError>);
    std::thread::scope(|scope| {
        let (job_tx, job_rx) = mpsc::sync_channel::<(u64, u64, String, Job)>(window as usize);
        let job_rx = Arc::new(Mutex::new(job_rx));
        let unstarted = Arc::clone(&job_rx);
        let (done_tx, done_rx) = mpsc::channel::<Done>();
        for _ in 0..jobs {
            let job_rx = Arc::clone(&job_rx);
            let done_tx = done_tx.clone();
            scope.spawn(move || loop {
                let job = job_rx.lock().expect("no worker panics").recv();
                let Ok((seq, line, id, job)) = job else {
                    break;
                };
                let r = match &job {
                    Job::One(response) => runner.run(response),
                    Job::File(chunks) => runner.run_file(chunks),
                };
                if done_tx.send((seq, line, id, r)).is_err() {
                    break;
                }
            });
        }
        drop(done_tx);
        let (mut sent, mut written) = (0u64, 0u64);
        let mut open = OpenFiles::default();
        let mut ready: VecDeque<(u64, String, Job)> = VecDeque::new();
        let mut input_done = false;
        let mut pending: HashMap<u64, (u64, String, Result<RunResult, ResponseError>)> =
            HashMap::new();
        let result = (|| -> anyhow::Result<()> {
            loop {
                while sent - written < window {
                    if let Some((line, id, job)) = ready.pop_front() {
                        job_tx.send((sent, line, id, job))?;
                        sent += 1;
                        continue;
                    }
                    if input_done {
                        break;
                    }
                    let Some((line, response)) = io.next_record::<Response>()? else {
                        input_done = true;
                        let before = ready.len();
                        ready.extend(open.drain());
                        summary.incomplete += (ready.len() - before) as u64;
                        continue;
                    };
                    let id = response.file_response_id().into_owned();
                    if io.is_done(&id) {
                        summary.skipped += 1;
                        continue;
                    }
                    match response.chunk() {
                        None => ready.push_back((line, id, Job::One(Box::new(response)))),
                        Some(chunk) => ready.extend(open.add(line, id, chunk.count, response)),
                    }
                }
                if input_done && ready.is_empty() && written == sent {
                    return Ok(());
                }
                let (seq, line, id, r) = done_rx.recv()?;
                pending.insert(seq, (line, id, r));
                while let Some((line, id, r)) = pending.remove(&written) {
                    written += 1;
                    match r {
                        Ok(result) => {
                            *summary
                                .outcomes
                                .entry(outcome_name(result.outcome))
                                .or_default() += 1;
                            summary.mutants.add(&result.mutation);
                            io.write(&result)?;
                            summary.written += 1;
                        }
                        Err(e) if e.is_fatal() => {
                            return Err(Usage(e.to_string()).into());
                        }
                        Err(e) => {
                            io.report_failed(line, &id, &e);
                            summary.failed += 1;
                            if on_error == OnError::Stop {
                                return Err(Stopped.into());
                            }
                        }
                    }
                }
            }
        })();
        // Stop feeding the workers: drop what no worker took yet; those busy finish their run
        // and then find the channel closed.
        drop(job_tx);
        while unstarted
            .lock()
            .expect("no worker panics")
            .try_recv()
            .is_ok()
        {}
        result
    })?;
    Ok(summary)
}

fn outcome_name(o: Outcome) -> String {
    serde_json::to_value(o)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_measures_the_files_its_scoring_reads_within_the_sources() {
        let scoring = |v: serde_json::Value| -> BTreeMap<String, serde_json::Value> {
            serde_json::from_value(v).unwrap()
        };
        let region = |path: &str| serde_json::json!({"path": path, "start_line": 1, "end_line": 2});
        let sources = [PathBuf::from("src/pkg"), PathBuf::from("./single.py")];
        let target = scoring(serde_json::json!({"target": region("src/pkg/a.py")}));
        assert_eq!(
            measured_files(Task::TargetedTest, &target, &sources),
            Some(vec!["src/pkg/a.py".into()])
        );
        // Task I reads its verdict alone, whatever its facts say.
        assert_eq!(
            measured_files(Task::AssertionCloze, &target, &sources),
            Some(vec![])
        );
        // Each block's file once; a file no source holds is not measured, as before.
        let blocks = scoring(serde_json::json!({"blocks": [
            region("src/pkg/b.py"), region("single.py"), region("src/pkg/b.py"),
            region("src/pkgx/c.py"), region("tests/helper.py"),
        ]}));
        assert_eq!(
            measured_files(Task::CoverageTest, &blocks, &sources),
            Some(vec!["single.py".into(), "src/pkg/b.py".into()])
        );
        assert_eq!(
            measured_files(Task::CoverageTest, &blocks, &[PathBuf::from(".")]),
            Some(
                [
                    "single.py",
                    "src/pkg/b.py",
                    "src/pkgx/c.py",
                    "tests/helper.py"
                ]
                .map(String::from)
                .to_vec()
            )
        );
        // Facts that name no file: everything is measured.
        assert_eq!(measured_files(Task::CoverageTest, &target, &sources), None);
        assert_eq!(
            measured_files(Task::TargetedTest, &BTreeMap::new(), &sources),
            None
        );
    }
}
