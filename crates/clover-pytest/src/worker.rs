//! Warm pytest workers: pytest, its plugins, coverage.py and the repository's initial
//! conftests imported once per repository, interpreter and pytest setting, and a fresh child
//! forked for every candidate.
//!
//! A worker is a sandbox run like any other (its own namespaces, root, cgroups and network),
//! whose payload, `_clover_worker.py`, keeps uid 0 of the run's user namespace. It does what
//! a cold `python -m pytest` does up to its first test, then serves candidates one at a time:
//! each in a child with new mount, pid, network and IPC namespaces, a fresh overlay over the
//! worker's view of the repository, fresh `/tmp` and `/dev/shm`, its own limits and wall
//! clock, and uid 65534 with no capability left (the script's docs say how). So a candidate
//! starts from the state a cold run has when it starts collecting, and whatever it does to
//! modules, globals, files or processes dies with it.
//!
//! The verdict is made from what the child reports exactly as a cold run's: the JUnit report
//! and pytest's session record, cross-checked with the exit status ([`crate::run`]). The
//! record comes through a report channel of the candidate's own, as a cold run's does: a
//! pipe the candidate's supervisor reads and passes on in its answer, whose write end the
//! runner hands to clover's plugin before pytest starts. The
//! lines coverage.py saw are read in the child (coverage.py's own analysis, the lines its
//! XML report marks as hit) instead of through a Cobertura file. A candidate that replaces
//! a module the worker has run, or brings a file that may decide pytest's rootdir or
//! configuration file (`pytest.ini`, `pyproject.toml`, `setup.py`…), runs in a worker
//! configured per run ([`WarmRun::late`]). A candidate no worker can serve — no overlay, a
//! worker that would not start, or died — runs cold, and the result says why.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use clover_sandbox::{
    decide_limit, ChannelBytes, Collected, CollectedFile, ExitStatus, HeadTail, Limits, RepoView,
    RunOutput, RunSpec, Sandbox, WorkerProcess, WriteFile, REPORT_CHANNEL_MAX_BYTES,
};

/// The worker's program, written into its view beside clover's pytest plugin.
const WORKER: &str = include_str!("_clover_worker.py");
const WORKER_MODULE: &str = "_clover_worker";
/// Where the worker's program and settings go in its view (on its `PYTHONPATH`).
const WORKER_DIR: &str = ".clover-worker";

/// How long a worker may take to import and configure pytest before its first candidate.
const WARM_UP: Duration = Duration::from_secs(120);
/// Slack over a candidate's own wall clock before the host gives up on the worker (the
/// worker enforces the wall clock itself; this only catches a worker that stopped answering).
const ANSWER_SLACK: Duration = Duration::from_secs(30);

/// Everything a worker is made from: candidates with equal keys can share workers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct WorkerKey {
    repo: PathBuf,
    python: PathBuf,
    env: Vec<(OsString, OsString)>,
    binds: Vec<PathBuf>,
    /// The files of the worker's view (plugins, coverage settings).
    files: Vec<(PathBuf, Vec<u8>)>,
    /// The pytest arguments of the zygote before its target folders.
    args: Vec<String>,
    /// The zygote's target folders, which decide its rootdir and initial conftests (none for
    /// a worker configured per run). A worker of the same key but for these serves a
    /// candidate of other folders when pytest would configure its cold run the same way (the
    /// worker checks; [`WarmPool`] remembers).
    dirs: Vec<String>,
    coveragerc: Option<String>,
    sources: Vec<String>,
    save_coverage: bool,
    late: bool,
    /// The zygote notes which functions of the repository run before the fork, so that a
    /// candidate replacing a module it imported can be patched in.
    track: bool,
    /// The worker reports hit lines itself (it then parses the sources once, ahead).
    report_lines: bool,
    /// Files whose modules the zygote imports before it forks (a mutant batch's: its runs
    /// measure nothing).
    preload: Vec<PathBuf>,
    /// The limits the worker's root and cgroups are built with, as a cold run's.
    memory_bytes: u64,
    pids: u64,
    cpu_millis: u64,
    tmpfs_bytes: u64,
    overlay_bytes: u64,
}

/// A pytest run as a warm worker takes it: what the worker is made of, and what one run
/// adds. [`crate::PytestRun::run_warm`] makes one; a caller with plugins of its own
/// (calibrate's per-test coverage) makes its own.
#[derive(Debug, Clone)]
pub struct WarmRun<'a> {
    /// The cold run's spec but for its command, targets and run files: the repository, the
    /// files every run has (plugins, settings), binds, environment, writable folders and
    /// limits.
    pub base: &'a RunSpec,
    pub python: &'a Path,
    /// pytest's arguments before the targets, without pytest-cov's `--cov` (the worker starts
    /// coverage.py itself, where pytest-cov would); `--cov-config` and the like may stay.
    pub args: &'a [String],
    /// coverage.py's settings file (relative to the repository), when the run measures.
    pub coveragerc: Option<String>,
    /// Source folders whose bytecode the worker compiles once.
    pub sources: &'a [String],
    /// Saves the measured data to `$COVERAGE_FILE` after the run, as pytest-cov does (for a
    /// plugin that reads it at session end).
    pub save_coverage: bool,
    /// Where (relative to the repository) the lines coverage.py's XML would mark hit go: the
    /// worker reports them, for each run but one that reads none (`only`).
    pub coverage_lines: Option<&'a str>,
    /// The files of `sources` this run reads the lines of, when not all of them: the fork
    /// traces and reports only these, or stops measuring when there are none (the run's
    /// cold twin measures as much: `PytestRun::cov_only`). The worker measures all of
    /// `sources`, so it serves every such run of its key.
    pub only: Option<&'a [String]>,
    /// Files (relative to the repository) whose function bodies the run witnesses
    /// (`PytestRun::witness`): the fork points their live functions at witnessed code.
    pub witness: &'a [String],
    /// A worker that configures pytest in each run (it has imported pytest, its plugins and
    /// coverage.py, no more), for a run that replaces a file a configured worker has
    /// executed: a conftest, a module the conftests import, a mutant of the package.
    pub late: bool,
    pub targets: &'a [String],
    /// The run's own files (the candidate).
    pub files: &'a [WriteFile],
    pub writable: &'a [PathBuf],
    pub collect: &'a [PathBuf],
    /// A mutant batch ([`WarmPool::run_mutants`]): the candidate is collected once and run
    /// once per mutant file, each patched into a fork (none: a plain run).
    pub mutants: &'a [WriteFile],
}

/// Each mutant's verdict in a batch, in the batch's order; `None` where the batch did not
/// judge it (it needs a run of its own).
pub type BatchVerdicts = Vec<Option<BatchVerdict>>;

/// A mutant's run in a batch ([`WarmPool::run_mutants`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchVerdict {
    /// As a cold run's judge would have it: pytest ended with status 0 within the mutant's
    /// limits, and some test passed.
    pub passed: bool,
    /// The tests that failed (in setup, call or teardown) as its JUnit report would name
    /// them, (classname, name), when the run ended by itself.
    pub failed: Vec<(String, String)>,
}

/// Why a candidate ran cold.
#[derive(Debug, thiserror::Error)]
pub enum ColdReason {
    #[error("the warm worker could not start: {0}")]
    Start(String),
    #[error("the warm worker died while it ran the candidate")]
    Died,
    #[error("the warm worker stopped answering")]
    Silent,
    #[error("the warm worker could not serve the candidate: {0}")]
    Refused(String),
    /// The run replaces a file the worker has executed, or brings one that may decide
    /// pytest's rootdir or configuration file: a worker configured per run
    /// ([`WarmRun::late`]) can serve it.
    #[error("{0}")]
    Replaces(String),
    /// A cold run of the candidate would be configured otherwise than the worker (another
    /// rootdir or configuration file, other initial conftests).
    #[error("{0}")]
    OtherSetup(String),
    /// A measured run's request ([`WarmPool::run_measured`]) hit the worker's memory or
    /// process limit, which its cgroup counts for the whole request: whether the candidate's
    /// own run or a mutant's did, the counters cannot say, so the run goes again alone.
    #[error("the run's request hit a limit of its cgroup while its mutants may have run")]
    LimitInBatch,
}

/// One warm worker, idle or serving one candidate.
struct Worker {
    process: WorkerProcess,
    /// Answers read ahead of the current frame.
    buf: Vec<u8>,
}

/// Idle workers kept at most, over all keys: each holds an interpreter with pytest loaded
/// (tens of MiB), and a stage whose candidates live in many folders would otherwise keep one
/// per folder and job.
const MAX_IDLE: usize = 8;

/// Warm workers, by what they were made from, kept for the life of the pool (one per
/// candidate run at once, at most; the least recently used go beyond [`MAX_IDLE`]). Dropping
/// the pool kills them.
#[derive(Default)]
pub struct WarmPool {
    /// Least recently used first.
    idle: Mutex<Vec<(WorkerKey, Worker)>>,
    /// Keys whose worker could not start, with why: their candidates run cold at once.
    refused: Mutex<HashMap<WorkerKey, String>>,
    /// Whether a worker (by its key) serves candidates of other target folders than its own,
    /// as it answered for them.
    serves_dirs: Mutex<HashMap<WorkerKey, HashMap<Vec<String>, bool>>>,
    /// Workers started, for tests and figures.
    started: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for WarmPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmPool").finish_non_exhaustive()
    }
}

/// One candidate, as the worker is asked to run it.
#[derive(Clone, Copy)]
struct Request<'a> {
    files: &'a [WriteFile],
    targets: &'a [String],
    workdir: &'a Path,
    writable: &'a [PathBuf],
    collect: &'a [PathBuf],
    collect_max_bytes: u64,
    coverage_out: Option<&'a str>,
    /// The files the fork measures, when not all the worker does ([`WarmRun::only`]).
    coverage_only: Option<&'a [String]>,
    witness: &'a [String],
    /// The candidate's target folders, and whether the worker serving it is known to find
    /// the same rootdir for them as for its own.
    dirs: &'a [String],
    setup_known: bool,
    limits: &'a Limits,
    /// The candidate gets a report channel ([`RunSpec::report_channel`]).
    report_channel: bool,
    mutants: &'a [WriteFile],
    /// The limits of each mutant's run of a batch.
    mutant_limits: Option<&'a Limits>,
    /// The batch follows the candidate's own run, measured ([`WarmPool::run_measured`]).
    measured: bool,
}

impl WarmPool {
    pub fn new() -> WarmPool {
        WarmPool::default()
    }

    /// Runs `run` in a warm worker (one is started when none made of the same is idle), or
    /// says why it cannot.
    pub fn run_pytest(
        &self,
        sandbox: &Sandbox,
        run: &WarmRun<'_>,
    ) -> Result<RunOutput, ColdReason> {
        self.run(sandbox, run, None, false).map(|(out, _)| out)
    }

    /// Runs `run` as [`WarmPool::run_pytest`] does, and then, if it passed (its status 0),
    /// its candidate against each of `run.mutants` as [`WarmPool::run_mutants`] does, from
    /// the same collection: the measured run is a fork of the process that collected (the
    /// batch's control run), each mutant's another, within `limits` and three times the
    /// measured run's time and CPU time, as a batch's are within its control run's. The
    /// run's output is taken when its own run has ended, before any mutant runs. The
    /// verdicts are `None` when the worker ran the candidate without a batch (its
    /// collection failed, or left a thread running, which a fork would not have): the
    /// output is then the plain run's all the same. A request that hit the cgroup's memory or
    /// process limit once a mutant may have run is `ColdReason::LimitInBatch`.
    pub fn run_measured(
        &self,
        sandbox: &Sandbox,
        run: &WarmRun<'_>,
        limits: &Limits,
    ) -> Result<(RunOutput, Option<BatchVerdicts>), ColdReason> {
        let (out, batch) = self.run(sandbox, run, Some(limits), true)?;
        let verdicts = (!batch.is_null()).then(|| batch_verdicts(&batch, run.mutants.len()));
        Ok((out, verdicts))
    }

    /// Runs `run`'s candidate against each of `run.mutants` in one request: the candidate is
    /// collected once in a fresh view, and each mutant is patched into a fork of that
    /// process and run to its first failing test, within `limits`. Each mutant's verdict,
    /// `Some(passed)`, or `None` where the batch could not judge it (it needs a module the
    /// collection did not load, or a change the fork cannot be given, or comes after a run
    /// that changed the view or left a process): that one needs a run of its own.
    pub fn run_mutants(
        &self,
        sandbox: &Sandbox,
        run: &WarmRun<'_>,
        limits: &Limits,
    ) -> Result<BatchVerdicts, ColdReason> {
        let (_, batch) = self.run(sandbox, run, Some(limits), false)?;
        Ok(batch_verdicts(&batch, run.mutants.len()))
    }

    fn run(
        &self,
        sandbox: &Sandbox,
        run: &WarmRun<'_>,
        mutant_limits: Option<&Limits>,
        measured: bool,
    ) -> Result<(RunOutput, Value), ColdReason> {
        let base = run.base;
        let limits = &base.limits;
        let repo = base
            .repo
            .canonicalize()
            .unwrap_or_else(|_| base.repo.clone());
        // The folders of the targets decide pytest's rootdir and initial conftests, which the
        // worker has loaded before it knows its candidates.
        let mut dirs: Vec<String> = run
            .targets
            .iter()
            .map(|t| {
                let path = Path::new(t.split("::").next().unwrap_or(t));
                match path.parent().map(Path::to_string_lossy) {
                    Some(d) if !d.is_empty() => d.into_owned(),
                    _ => ".".into(),
                }
            })
            .collect();
        dirs.sort();
        dirs.dedup();
        let args = run.args.to_vec();
        if run.late {
            dirs.clear();
        }
        // A run that brings code besides its targets' (a mutant of the package) may replace
        // a module the zygote imported, which the fork can be given by patching functions
        // only if the zygote noted what ran before it: a profile hook while pytest loads and
        // configures, which costs a worker's start about 0.3 s. Other runs' workers skip it,
        // those that bring only data files besides their targets (calibrate's list of the
        // files it has parsed) included: no import reads one.
        let track = !run.late
            && (!run.mutants.is_empty()
                || run.files.iter().any(|f| {
                    may_hold_code(&f.path)
                        && !run
                            .targets
                            .iter()
                            .any(|t| Path::new(t.split("::").next().unwrap_or(t)) == f.path)
                }));
        // A batch's worker imports the packages of the mutated files before it forks (it
        // measures nothing): each batch's collection then finds them loaded. One worker serves
        // every batch of a package. A measured run's imports them as its cold run does.
        let mut preload: Vec<PathBuf> = match measured {
            true => Vec::new(),
            false => run
                .mutants
                .iter()
                .map(|f| top_package(&base.repo, &f.path))
                .collect(),
        };
        preload.sort();
        preload.dedup();
        let key = WorkerKey {
            repo: repo.clone(),
            python: run.python.to_path_buf(),
            env: base.env.clone(),
            binds: base.binds.clone(),
            files: base
                .files
                .iter()
                .map(|f| (f.path.clone(), f.contents.clone()))
                .collect(),
            args: args.clone(),
            dirs: dirs.clone(),
            coveragerc: run.coveragerc.clone(),
            sources: run.sources.to_vec(),
            save_coverage: run.save_coverage,
            late: run.late,
            track,
            report_lines: run.coverage_lines.is_some(),
            preload: preload.clone(),
            memory_bytes: limits.memory_bytes,
            pids: limits.pids,
            cpu_millis: (limits.cpus * 1000.0).round() as u64,
            tmpfs_bytes: limits.tmpfs_bytes,
            overlay_bytes: limits.overlay_bytes,
        };
        let spec = || {
            let setup = json!({
                "repo": repo.to_string_lossy(),
                "args": args.iter().chain(&dirs).collect::<Vec<_>>(),
                "dirs": dirs,
                "coveragerc": run.coveragerc,
                "sources": run.sources,
                "save_coverage": run.save_coverage,
                "late": run.late,
                "track": track,
                "preload": preload.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
                "report_lines": run.coverage_lines.is_some(),
                "tmpfs_bytes": limits.tmpfs_bytes,
                "overlay_bytes": limits.overlay_bytes,
            });
            let mut spec = base.clone();
            spec.argv = vec![
                run.python.as_os_str().to_owned(),
                "-m".into(),
                WORKER_MODULE.into(),
                format!("{WORKER_DIR}/worker.json").into(),
            ];
            spec.files.push(WriteFile {
                path: format!("{WORKER_DIR}/{WORKER_MODULE}.py").into(),
                contents: WORKER.as_bytes().to_vec(),
            });
            spec.files.push(WriteFile {
                path: format!("{WORKER_DIR}/worker.json").into(),
                contents: setup.to_string().into_bytes(),
            });
            // The worker's own module goes first on the path.
            let mut python_path = OsString::from(WORKER_DIR);
            if let Some((_, v)) = spec.env.iter().find(|(k, _)| k == "PYTHONPATH") {
                if !v.is_empty() {
                    python_path.push(":");
                    python_path.push(v);
                }
            }
            spec.env.retain(|(k, _)| k != "PYTHONPATH");
            spec.env.push(("PYTHONPATH".into(), python_path));
            // Each candidate has a report channel of its own, made in the worker; one the
            // worker's interpreter had would be shared by every candidate.
            spec.report_channel = false;
            // The worker lives as long as the pool; each candidate has its own limits.
            spec.limits.wall = Duration::from_secs(u64::from(u32::MAX));
            spec.limits.cpu_secs = u64::from(u32::MAX);
            // The next candidate's supervisor waits beside each run: one process more.
            spec.limits.pids = spec.limits.pids.saturating_add(1);
            spec
        };
        let mut writable = base.writable_dirs.clone();
        writable.extend(run.writable.iter().cloned());
        let req = Request {
            files: run.files,
            targets: run.targets,
            workdir: &base.workdir,
            writable: &writable,
            collect: run.collect,
            collect_max_bytes: base.collect_max_bytes,
            // A run that reads no lines has none written.
            coverage_out: run
                .coverage_lines
                .filter(|_| run.only.is_none_or(|o| !o.is_empty())),
            coverage_only: run.only,
            witness: run.witness,
            dirs: &key.dirs,
            setup_known: false,
            limits,
            report_channel: base.report_channel && (run.mutants.is_empty() || measured),
            mutants: run.mutants,
            mutant_limits,
            measured,
        };
        self.serve(sandbox, &key, spec, &req)
    }

    /// Runs `req` in a warm worker for `key` (started from `spec` when none is idle): an idle
    /// one of the same key, or else one of the same key but for its target folders, unless it
    /// said it cannot serve these folders' candidates as their cold runs would be configured.
    fn serve(
        &self,
        sandbox: &Sandbox,
        key: &WorkerKey,
        spec: impl FnOnce() -> RunSpec,
        req: &Request<'_>,
    ) -> Result<(RunOutput, Value), ColdReason> {
        if let Some(why) = lock(&self.refused).get(key) {
            return Err(ColdReason::Start(why.clone()));
        }
        while let Some((wkey, worker)) = self.take_idle(key) {
            if let Some(answer) = self.ask(wkey, worker, key, req) {
                return answer;
            }
        }
        let worker = match Worker::start(sandbox, &spec()) {
            Ok(w) => w,
            Err(why) => {
                lock(&self.refused).insert(key.clone(), why.clone());
                return Err(ColdReason::Start(why));
            }
        };
        self.started.fetch_add(1, Ordering::Relaxed);
        // (A worker of the key's own folders answers `Some`.)
        self.ask(key.clone(), worker, key, req)
            .unwrap_or(Err(ColdReason::Died))
    }

    /// Runs `req` (of `key`) in `worker` (of `wkey`), and keeps the worker if it answered.
    /// `None`: the worker is for other target folders, and a cold run of `req` would be
    /// configured otherwise than it is (it is remembered, and another worker must serve).
    fn ask(
        &self,
        wkey: WorkerKey,
        mut worker: Worker,
        key: &WorkerKey,
        req: &Request<'_>,
    ) -> Option<Result<(RunOutput, Value), ColdReason>> {
        let own = wkey.dirs == key.dirs;
        let known = own || self.serves(&wkey, &key.dirs) == Some(true);
        let answer = worker.serve(&Request {
            setup_known: known,
            ..*req
        });
        let answer = match answer {
            // Its own folders: a worker configured per run decides them as a cold run does.
            Err(ColdReason::OtherSetup(why)) if own => Err(ColdReason::Replaces(why)),
            Err(ColdReason::OtherSetup(_)) => {
                self.note_serves(&wkey, &key.dirs, false);
                self.put_idle(wkey, worker);
                return None;
            }
            answer => answer,
        };
        if !own && answer.is_ok() {
            self.note_serves(&wkey, &key.dirs, true);
        }
        // A worker that answered is kept, whatever it said; one that died or stopped
        // answering is not.
        if matches!(
            answer,
            Ok(_) | Err(ColdReason::Replaces(_) | ColdReason::LimitInBatch)
        ) {
            self.put_idle(wkey, worker);
        }
        Some(answer)
    }

    /// Whether the worker of `wkey` said it serves candidates of `dirs`, if it was asked.
    fn serves(&self, wkey: &WorkerKey, dirs: &[String]) -> Option<bool> {
        lock(&self.serves_dirs).get(wkey)?.get(dirs).copied()
    }

    fn note_serves(&self, wkey: &WorkerKey, dirs: &[String], serves: bool) {
        lock(&self.serves_dirs)
            .entry(wkey.clone())
            .or_default()
            .insert(dirs.to_vec(), serves);
    }

    /// The most recently used idle worker of `key`, or else of `key` but for its target
    /// folders, not known to refuse `key`'s.
    fn take_idle(&self, key: &WorkerKey) -> Option<(WorkerKey, Worker)> {
        let mut idle = lock(&self.idle);
        let at = idle.iter().rposition(|(k, _)| k == key).or_else(|| {
            idle.iter().rposition(|(k, _)| {
                k.same_but_dirs(key) && self.serves(k, &key.dirs) != Some(false)
            })
        })?;
        Some(idle.remove(at))
    }

    fn put_idle(&self, key: WorkerKey, worker: Worker) {
        let mut idle = lock(&self.idle);
        idle.push((key, worker));
        if idle.len() > MAX_IDLE {
            idle.remove(0);
        }
    }

    /// How many workers this pool has started.
    pub fn workers_started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }
}

impl WorkerKey {
    /// Whether `other` is this key but for the target folders.
    fn same_but_dirs(&self, other: &WorkerKey) -> bool {
        let without = |k: &WorkerKey| WorkerKey {
            dirs: Vec::new(),
            ..k.clone()
        };
        self.dirs != other.dirs && without(self) == without(other)
    }
}

/// Each of `n` mutants' verdict in a batch's answer (`None`: not judged there).
fn batch_verdicts(batch: &Value, n: usize) -> BatchVerdicts {
    let verdicts = batch.as_array().map(Vec::as_slice).unwrap_or_default();
    (0..n)
        .map(|i| {
            let v = verdicts.get(i)?;
            let status = v.get("status")?.as_i64()? as i32;
            let timed_out = v["timed_out"].as_bool().unwrap_or(true);
            let exited_ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
            Some(BatchVerdict {
                // As a cold run's judge: status 0 and some test that passed.
                passed: !timed_out && exited_ok && v["ok"].as_bool().unwrap_or(false),
                failed: v["failed"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|f| Some((f.get(0)?.as_str()?.into(), f.get(1)?.as_str()?.into())))
                    .collect(),
            })
        })
        .collect()
}

/// Whether an import could execute the file: Python source or bytecode, an extension
/// module, a `.pth` file.
fn may_hold_code(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_none_or(|e| matches!(e, "py" | "pyw" | "pyc" | "pyo" | "so" | "pyd" | "pth"))
}

/// The package a repository file belongs to: its outermost folder of `__init__.py` files, or
/// the file itself when it is a module of no package.
fn top_package(repo: &Path, file: &Path) -> PathBuf {
    let mut top = file.to_path_buf();
    let mut dir = file.parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
        if !repo.join(d).join("__init__.py").is_file() {
            break;
        }
        top = d.to_path_buf();
        dir = d.parent();
    }
    top
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Worker {
    fn start(sandbox: &Sandbox, spec: &RunSpec) -> Result<Worker, String> {
        let process = sandbox.start_worker(spec).map_err(|e| e.to_string())?;
        let mut w = Worker {
            process,
            buf: Vec::new(),
        };
        match w.read_frame(WARM_UP) {
            Ok(v) if v.get("ready").is_some() => Ok(w),
            Ok(v) => Err(v
                .get("fatal")
                .and_then(Value::as_str)
                .map_or_else(|| v.to_string(), last_line)),
            Err(ColdReason::Silent) => {
                Err(format!("it did not get ready in {} s", WARM_UP.as_secs()))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    fn serve(&mut self, req: &Request<'_>) -> Result<(RunOutput, Value), ColdReason> {
        let l = req.limits;
        let mut body = json!({
            "files": req.files.iter().map(|f| json!({
                "path": f.path.to_string_lossy(),
                "data": latin1(&f.contents),
            })).collect::<Vec<_>>(),
            "targets": req.targets,
            "workdir": req.workdir.to_string_lossy(),
            "writable": req.writable.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
            "collect": req.collect.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
            "collect_max_bytes": req.collect_max_bytes,
            "coverage_out": req.coverage_out,
            "coverage_only": req.coverage_only,
            "witness": req.witness,
            "dirs": req.dirs,
            "setup_known": req.setup_known,
            // The channel's cap, or none.
            "report_channel": req.report_channel.then_some(REPORT_CHANNEL_MAX_BYTES),
            "limits": {
                "wall_ms": l.wall.as_millis() as u64,
                "cpu_secs": l.cpu_secs,
                "file_size_bytes": l.file_size_bytes,
                "open_files": l.open_files,
                "pids": l.pids,
                "output_bytes": l.output_bytes,
            },
        });
        if let Some(m) = req.mutant_limits {
            body["mutants"] = req
                .mutants
                .iter()
                .map(|f| json!({"path": f.path.to_string_lossy(), "data": latin1(&f.contents)}))
                .collect();
            body["mutant_wall_ms"] = json!(m.wall.as_millis() as u64);
            body["mutant_cpu_secs"] = json!(m.cpu_secs);
            body["measured"] = json!(req.measured);
        }
        // A measured run's mutants run after it, each within its own wall clock.
        let mutants_wall = match req.mutant_limits {
            Some(m) if req.measured => m.wall * req.mutants.len() as u32,
            _ => Duration::ZERO,
        };
        let before = self.process.stats();
        self.write_frame(&body).map_err(|_| ColdReason::Died)?;
        let mut answer = self.read_frame(l.wall + mutants_wall + ANSWER_SLACK)?;
        if let Some(fatal) = answer.get("fatal").and_then(Value::as_str) {
            return Err(ColdReason::Refused(last_line(fatal)));
        }
        if let Some(why) = answer.get("refused").and_then(Value::as_str) {
            return Err(ColdReason::Replaces(why.to_string()));
        }
        if let Some(why) = answer.get("other_setup").and_then(Value::as_str) {
            return Err(ColdReason::OtherSetup(why.to_string()));
        }
        let after = self.process.stats();
        let mut stats = after;
        stats.oom_kills = after.oom_kills.saturating_sub(before.oom_kills);
        stats.pids_max_hits = after.pids_max_hits.saturating_sub(before.pids_max_hits);
        // The worker's cgroup peaked with every candidate it served: no figure of this one's.
        stats.peak_memory = None;
        if req.measured && answer["batch"].is_array() && (stats.oom_kills + stats.pids_max_hits > 0)
        {
            return Err(ColdReason::LimitInBatch);
        }
        let status = answer["status"].as_i64().unwrap_or(0) as i32;
        let exit = if libc::WIFEXITED(status) {
            ExitStatus::Code(libc::WEXITSTATUS(status))
        } else if libc::WIFSIGNALED(status) {
            ExitStatus::Signal(libc::WTERMSIG(status))
        } else {
            ExitStatus::Signal(libc::SIGKILL)
        };
        let timed_out = answer["timed_out"].as_bool().unwrap_or(false);
        let cpu_time = Duration::from_micros(answer["cpu_us"].as_u64().unwrap_or(0));
        let disk_full = answer["disk_full"].as_bool().unwrap_or(false);
        let files = answer["files"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .zip(req.collect)
            .map(|(f, path)| CollectedFile {
                path: path.clone(),
                content: if let Some(data) = f.get("data").and_then(Value::as_str) {
                    Collected::Read {
                        bytes: from_latin1(data),
                        truncated: f["truncated"].as_bool().unwrap_or(false),
                    }
                } else if let Some(why) = f.get("refused").and_then(Value::as_str) {
                    Collected::Refused(why.to_string())
                } else {
                    Collected::Missing
                },
            })
            .collect();
        let output = RunOutput {
            exit,
            limit_hit: decide_limit(timed_out, exit, &stats, cpu_time, l, disk_full),
            stdout: captured(&answer["stdout"], l.output_bytes),
            stderr: captured(&answer["stderr"], l.output_bytes),
            duration: Duration::from_micros(answer["duration_us"].as_u64().unwrap_or(0)),
            cpu_time,
            peak_memory_bytes: None,
            files,
            repo_view: RepoView::Overlay,
            limit_backend: self.process.backend(),
            host_uid: self.process.host_uid(),
            channel: req.report_channel.then(|| {
                let mut channel = ChannelBytes::default();
                let bytes = from_latin1(answer["channel"]["data"].as_str().unwrap_or_default());
                channel.push(&bytes);
                // What the worker read but did not keep is counted as written.
                channel.total = channel
                    .total
                    .max(answer["channel"]["total"].as_u64().unwrap_or(0));
                channel
            }),
        };
        Ok((output, answer["batch"].take()))
    }

    fn write_frame(&mut self, body: &Value) -> io::Result<()> {
        let fd = self
            .process
            .requests()
            .ok_or_else(|| io::Error::other("the worker has no request pipe"))?;
        let body = body.to_string().into_bytes();
        let mut data = (body.len() as u32).to_be_bytes().to_vec();
        data.extend_from_slice(&body);
        write_all(fd, &data)
    }

    /// The next answer, waiting at most `timeout`; a worker that ended or never answers is
    /// an error.
    fn read_frame(&mut self, timeout: Duration) -> Result<Value, ColdReason> {
        let fd = self.process.answers();
        let deadline = Instant::now() + timeout;
        loop {
            if self.buf.len() >= 4 {
                let n = u32::from_be_bytes(self.buf[..4].try_into().expect("4 bytes")) as usize;
                if self.buf.len() >= 4 + n {
                    let v = serde_json::from_slice(&self.buf[4..4 + n])
                        .map_err(|e| ColdReason::Refused(format!("an unreadable answer: {e}")))?;
                    self.buf.drain(..4 + n);
                    return Ok(v);
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ColdReason::Silent);
            }
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: pfd is one valid pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(60_000) as i32) };
            if r <= 0 {
                continue;
            }
            let mut chunk = [0u8; 65536];
            // SAFETY: chunk is a valid buffer of its length.
            let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
            match n {
                0 => return Err(ColdReason::Died),
                n if n < 0 => {
                    if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                        return Err(ColdReason::Died);
                    }
                }
                n => self.buf.extend_from_slice(&chunk[..n as usize]),
            }
        }
    }
}

fn write_all(fd: RawFd, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        // SAFETY: data is a valid buffer of its length.
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        data = &data[n as usize..];
    }
    Ok(())
}

/// Bytes as a JSON string, one character per byte (the worker decodes it as Latin-1).
fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

fn from_latin1(s: &str) -> Vec<u8> {
    s.chars().map(|c| c as u32 as u8).collect()
}

/// A stream the worker kept the head and tail of, as the host keeps a cold run's.
fn captured(v: &Value, cap: usize) -> clover_sandbox::Captured {
    let mut kept = HeadTail::new(cap);
    kept.push(&from_latin1(v["head"].as_str().unwrap_or_default()));
    kept.push(&from_latin1(v["tail"].as_str().unwrap_or_default()));
    kept.set_total(v["total"].as_u64().unwrap_or(0));
    kept.finish()
}

fn last_line(text: &str) -> String {
    text.trim_end()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}
